/* ref_rmsnorm.h: the CPU reference of family rmsnorm, in double precision.
 *   h = x (or, with r, h = round_T(x + r) with the add in f32, as the kernel forms it),
 *   y = h * (1 / sqrt(mean(h^2) + eps)) * w, every row of x[rows][cols].
 * h is exact (the kernel must produce it to the bit); y and rstd are doubles, compared with
 * ref_rmsnorm_rtol / ref_rmsnorm_atol. */
#ifndef WEFT_REF_RMSNORM_H
#define WEFT_REF_RMSNORM_H
#include "hostref.h"

/* x, r (NULL: no residual), w: dt.  h: dt [rows * cols], written when r is given (else may be
 * NULL).  y: [rows * cols].  rstd: [rows] or NULL.  eps: the f32 value the kernel adds.
 * Multi-threaded over rows (a thread that cannot start leaves its rows to the caller's; the
 * results never depend on the threads). */
void ref_rmsnorm(hr_dtype dt, const void *x, const void *r, const void *w, long rows, long cols, float eps,
                 void *h, double *y, double *rstd);

/* Tolerances for y, per output dtype: one rounding of the output (half an ulp, relative) plus
 * the f32 arithmetic before it, which is bounded by the sum of squares' rounding (at most ~85
 * dependent adds in any config weft builds: about 5e-6 relative on the sum, half that on its
 * rsqrt) and rsqrt.approx's 2^-22.9.  atol: half the output's subnormal spacing. */
double ref_rmsnorm_rtol(hr_dtype dt);
double ref_rmsnorm_atol(hr_dtype dt);

#endif
