// templates/row_softmax.cu: family row_softmax -- y = softmax(x) along each row, one row per
// cluster of ${cluster} CTAs; mode ${mode} (see weft/row_softmax.cuh).
#include "weft/row_softmax.cuh"

extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(weft::${ctype} *y, const weft::${ctype} *x, int rows, int cols) {
  weft::row_softmax_${mode}<weft::${ctype}, ${cluster}, ${threads}, ${depth}, ${prefetch}, ${push}>(y, x, rows, cols);
}
