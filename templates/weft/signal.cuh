// weft/signal.cuh: signals between ranks, through symmetric memory.
//
// The protocol (every family that talks to other ranks uses it):
//   * A signal is a u64 slot in the receiver's pad, pad[signal][sender][block], written only
//     by the sender's block of the same index, with st.release.sys: everything that block
//     wrote before (its threads' stores, ordered by the barrier before the signal) is visible
//     to whoever acquires the value.  The receiver polls with ld.acquire.sys, then a barrier
//     hands the acquired view to the whole block.
//   * Values are epochs.  The runtime owns one epoch counter per rank in device memory
//     (CommState); every launch runs at epoch = counter + 1 and the last block to finish stores
//     it back, so epochs only grow, across launches, graphs and streams alike, and a wait is
//     "slot >= epoch": a peer that is already further along never looks behind.
//   * A bounded wait: %globaltimer measures the time spent polling; past timeout_ns the waiter
//     writes an ErrorRecord (rank, peer, signal, expected and seen epoch) to host-mapped
//     memory, raises the rank's abort flag so its other blocks stop waiting too, and the block
//     returns.  No trap: the context survives, and the host reads the record and says why.
#pragma once
#include "weft/order.cuh"
#include "weft/types.cuh"

namespace weft {

constexpr int MAX_RANKS = 8;

// The world size a kernel was generated for: NP (a family's `ranks` field; the host refuses any
// other world) or, with NP = 0, the communicator's.  A known count lets the folds keep only that
// many peers' vectors in flight, and a kernel for one rank drop the exchange altogether.
template <int NP> __host__ __device__ constexpr int rank_slots() { return NP ? NP : MAX_RANKS; }

// Local to each rank, in device memory (runtime: comm.c keeps the same layout).
struct CommState {
  u64 epoch;     // the epoch of the last launch that finished
  u32 arrived;   // blocks of the current launch that finished (the last one resets it)
  u32 abort;     // 1 once a wait timed out on this rank: every wait returns at once
};

// Host-mapped (pinned) memory; the host reads it after a launch.  flag is written last.
struct ErrorRecord {
  u64 expected, seen, waited_ns;
  int rank, peer, block, signal;
  volatile u32 flag;
  u32 pad_;
};

// The kernel's last parameter, passed by value; every field is uniform across the grid.
struct Comm {
  char *peers[MAX_RANKS];   // each rank's symmetric buffer, mapped here: signal pads, then data
  char *mc;                 // the multicast address of the same buffer, or null
  CommState *state;
  ErrorRecord *err;
  u64 timeout_ns;
  long long data_offset;    // bytes from a buffer's base to its data (after the pads)
  long long half_bytes;     // data is two halves of this size, used by alternate epochs
  int rank, size;
  int max_blocks;           // slots per (signal, sender) in a pad
  int mute_rank, mute_signal; // fault injection for tests: that rank never sends that signal
  template <int NP> __device__ __forceinline__ int ranks() const { return NP ? NP : size; }
};

// slot pad[signal][sender][block] in `base`'s pad
__device__ __forceinline__ u64 *signal_slot(const Comm &c, char *base, int signal, int sender, int block) {
  return (u64 *)base + ((long)signal * MAX_RANKS + sender) * c.max_blocks + block;
}

// This block tells every rank (itself included) that it reached `signal` at epoch e.  Call
// from all threads after the writes the signal publishes; a barrier orders them first.
__device__ __forceinline__ void signal_peers(const Comm &c, int signal, u64 e) {
  __syncthreads();
  int t = threadIdx.x;
  if (t < c.size && !(c.rank == c.mute_rank && signal == c.mute_signal))
    st_release_sys(signal_slot(c, c.peers[t], signal, c.rank, blockIdx.x), e);
}

// Record the first timeout of this rank; later ones (other blocks, other peers) only stop.
__device__ __forceinline__ void report_timeout(const Comm &c, int peer, int signal, u64 want, u64 seen, u64 waited) {
  if (atomicCAS(&c.state->abort, 0u, 1u) != 0u) return;
  c.err->expected = want;
  c.err->seen = seen;
  c.err->waited_ns = waited;
  c.err->rank = c.rank;
  c.err->peer = peer;
  c.err->block = blockIdx.x;
  c.err->signal = signal;
  __threadfence_system();
  c.err->flag = 1;
  __threadfence_system();
}

// What a timed-out wait saw; reported once the waiter is out of its loops (report_timeout
// inlined inside a polling loop makes ptxas spill in the loop).
struct Timeout {
  u64 seen = 0, waited = 0;
  int peer = -1;
  __device__ __forceinline__ void report(const Comm &c, int signal, u64 want) const {
    if (peer >= 0) report_timeout(c, peer, signal, want, seen, waited);
  }
};

// The bounded wait: poll `slot` until arrived(v).  On a timeout (noted in `to` with what
// seen(v) says the slot held) or an abort raised elsewhere on this rank, sets stop and returns.
// `patience` multiplies the timeout: a wait that depends on other waits of this rank gives them
// the first word, so the report names the cause rather than a consequence.
template <bool ACQUIRE, class Arrived, class Seen>
__device__ __forceinline__ u64 poll_bounded(const Comm &c, const u64 *slot, int peer, Arrived arrived, Seen seen,
                                            int &stop, Timeout &to, u64 patience = 1) {
  u64 v = ld_sys<ACQUIRE>(slot);
  if (arrived(v)) return v;
  const u64 t0 = globaltimer();
  for (;;) {
    v = ld_sys<ACQUIRE>(slot);
    if (arrived(v)) return v;
    if (ld_volatile(&c.state->abort)) { stop = 1; return v; }
    const u64 waited = globaltimer() - t0;
    if (waited > c.timeout_ns * patience) {
      to.seen = seen(v);
      to.waited = waited;
      to.peer = peer;
      stop = 1;
      return v;
    }
  }
}

// Wait until every rank's block of this index reached `signal` at epoch e (thread t polls
// rank t).  Returns false on every thread of the block when it must stop: a timeout here or
// anywhere on this rank.  Call from all threads.
__device__ __forceinline__ bool wait_peers(const Comm &c, int signal, u64 e) {
  int t = threadIdx.x, stop = 0;
  Timeout to;
  if (t < c.size)
    poll_bounded<true>(c, signal_slot(c, c.peers[c.rank], signal, t, blockIdx.x), t, [e](u64 v) { return v >= e; },
                       [](u64 v) { return v; }, stop, to);
  to.report(c, signal, e);
  return !__syncthreads_or(stop);
}

// The epoch this launch runs at (every block reads the same value: the counter only moves
// when the last block retires), and whether a timeout earlier aborted this rank: thread 0 has
// both loads in flight at once.
__device__ __forceinline__ u64 launch_epoch(const Comm &c, bool &aborted) {
  __shared__ u64 e;
  __shared__ u32 ab;
  if (threadIdx.x == 0) {
    const u64 v = *(volatile u64 *)&c.state->epoch;
    const u32 a = ld_volatile(&c.state->abort);
    e = v + 1;
    ab = a;
  }
  __syncthreads();
  aborted = ab != 0;
  return e;
}
__device__ __forceinline__ u64 launch_epoch(const Comm &c) {
  bool aborted;
  return launch_epoch(c, aborted);
}

// The block is done with this launch; the last block of the grid publishes the epoch for
// the next launch.  Every block read the counter before arriving (thread 0 used the value
// before its atomic), so none can see it move.  No fence: the next launch reads the counter
// only after this grid has completed (stream order, or griddepcontrol.wait), which makes every
// write of this grid visible.  A grid of one block publishes without counting.
// (`epoch()`: the value published; the publishing thread calls it once)
template <class Epoch> __device__ __forceinline__ void launch_retire_with(const Comm &c, Epoch epoch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (gridDim.x * gridDim.y * gridDim.z == 1) {
      *(volatile u64 *)&c.state->epoch = epoch();
    } else if (atomicAdd(&c.state->arrived, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
      c.state->arrived = 0;
      *(volatile u64 *)&c.state->epoch = epoch();
    }
  }
}
__device__ __forceinline__ void launch_retire(const Comm &c, u64 e) {
  launch_retire_with(c, [e] { return e; });
}

// launch_retire for a launch that never read the epoch (ag_gemm at one rank: nothing in it
// needs the epoch before the end): the block that publishes reads the counter itself and
// publishes the next value, as launch_epoch then launch_retire would have.
__device__ __forceinline__ void launch_retire_unread(const Comm &c) {
  launch_retire_with(c, [&c] { return *(volatile u64 *)&c.state->epoch + 1; });
}

}  // namespace weft
