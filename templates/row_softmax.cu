// templates/row_softmax.cu: family row_softmax -- y = softmax(x) along each row, one row per
// cluster of ${cluster} CTAs; mode ${mode} (see weft/row_softmax.cuh).
#include "weft/row_softmax.cuh"

// The parameter list (y, x, rows, cols) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(${params}) {
  weft::row_softmax_${mode}<weft::${ctype}, ${cluster}, ${threads}, ${depth}, ${prefetch}, ${push}>(y, x, rows, cols);
}
