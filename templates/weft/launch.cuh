// weft/launch.cuh: programmatic dependent launch (PDL).  A kernel launched with programmatic
// stream serialisation may start while the kernel before it in the stream is still running; it
// may set up shared memory and barriers, but must wait before it touches global memory.
#pragma once

namespace weft {

// Wait until the grids this one depends on have completed and their memory operations are
// visible (a no-op when the kernel was launched without the attribute).
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Let the next kernel in the stream be scheduled (its CTAs start as SMs free up, and wait in
// their own griddep_wait until this grid is done).
__device__ __forceinline__ void griddep_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }

}  // namespace weft
