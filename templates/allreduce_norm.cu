// templates/allreduce_norm.cu: family allreduce_norm -- s = sum over the ranks of x (${ctype}, folded in
// rank order in f32), h = s${residual_text}, y = h * rsqrt(mean(h^2) + eps) * w along each row;
// ${rows_per_cta} row(s) per CTA, ${cluster} CTA(s) per row (weft/allreduce_norm.cuh has the data path and
// the protocol).  The parameter list (y, x, w, then r, eps as the config has them, rows, cols, then
// comm) is rendered from the manifest by gen/core/weft.lua.
#include "weft/allreduce_norm.cuh"

extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(${params}) {
  weft::RmsArgs<weft::${ctype}> a;
  a.y = ${rms_y};
  a.x = x;
  a.w = w;
  a.r = ${r};
  a.rstd = nullptr;
  a.eps = ${eps};
  a.rows = rows;
  a.cols = cols;
  const weft::ArnFp8 q{${fp8_y}, ${fp8_scale}};
  weft::allreduce_norm<weft::${ctype}, ${cluster}, ${threads}, ${rows_per_cta}, ${pt}, ${residual}, ${push}, ${algo},
                       ${multimem}, ${mop}, ${pdl}, ${ranks}, ${fp8}>(a, q, comm);
}
