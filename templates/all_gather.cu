// templates/all_gather.cu: family all_gather -- every rank gets y[p*n + i] = x_p[i] (${ctype}), the
// same bits everywhere (weft/collectives.cuh: data path and protocol).
#include "weft/collectives.cuh"

// The parameter list (y, x, n, then comm) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}) ${name}(${params}) {
  weft::all_gather<weft::${ctype}, ${multimem}, ${pdl}, ${np}>(y, x, (long)n, comm);
}
