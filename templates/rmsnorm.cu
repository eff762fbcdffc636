// templates/rmsnorm.cu: family rmsnorm -- y = h * rsqrt(mean(h^2) + eps) * w along each row, h = x
// (residual: h = x + r, stored back to r); ${rows_per_cta} row(s) per CTA, ${cluster} CTA(s) per row
// (weft/rmsnorm.cuh has the data path).  The parameter list (y, x, w, then r, rstd, eps as the
// config has them, rows, cols) is rendered from the manifest by gen/core/weft.lua.
#include "weft/rmsnorm.cuh"

extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(${params}) {
  weft::RmsArgs<weft::${ctype}> a;
  a.y = y;
  a.x = x;
  a.w = w;
  a.r = ${r};
  a.rstd = ${rstd};
  a.eps = ${eps};
  a.rows = rows;
  a.cols = cols;
  weft::rmsnorm<weft::${ctype}, ${cluster}, ${threads}, ${rows_per_cta}, ${pt}, ${residual}, ${cta_rstd}, ${push}>(a);
}
