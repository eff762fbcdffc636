/* ref_fp8.c: FP8 E4M3 outputs with a scale per row (ref_fp8.h). */
#include "ref_fp8.h"

#include <math.h>
#include <stdio.h>

/* The f32 arithmetic between the norm's inputs and the quantised value, relative (the norm's
 * 4e-6 of ref_rmsnorm_rtol(f32), the reciprocal and the two products): generous by 2x. */
#define FP8_REL 1e-5

double ref_e4m3_value(uint8_t code) {
  int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return NAN;
  double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
  return s ? -v : v;
}

double ref_e4m3_spacing(double t) {
  t = fabs(t);
  if (t < 0x1p-6) return 0x1p-9;
  int e;
  frexp(t, &e);   /* t = f * 2^e, f in [0.5, 1): the binade [2^(e-1), 2^e) */
  return ldexp(1.0, e - 1 - 3);
}

size_t ref_fp8_check(const double *y, long rows, long cols, const uint8_t *q, const float *scale, char *msg,
                     size_t len) {
  size_t bad = 0;
  if (len) msg[0] = 0;
  for (long r = 0; r < rows; r++) {
    const double *yr = y + (size_t)r * (size_t)cols;
    double amax = 0;
    for (long c = 0; c < cols; c++) amax = fmax(amax, fabs(yr[c]));
    amax = fmax(amax, REF_E4M3_MIN_AMAX);
    const double want = amax / REF_E4M3_MAX, got = scale[r];
    if (!(fabs(got - want) <= FP8_REL * want)) {
      if (!bad && len) snprintf(msg, len, "scale[%ld] = %.9g, want %.9g (max |y| = %.9g)", r, got, want, amax);
      bad++;
      continue;   /* its codes are judged against a scale that is wrong: one failure is enough */
    }
    for (long c = 0; c < cols; c++) {
      const size_t i = (size_t)r * (size_t)cols + (size_t)c;
      const double t = yr[c] / got, v = ref_e4m3_value(q[i]);
      /* a rounding of t (up to the f32 error) to E4M3, saturated: |v - t| within half a spacing */
      const double tc = fmax(-REF_E4M3_MAX, fmin(REF_E4M3_MAX, t));
      const double tol = 0.5 * ref_e4m3_spacing(tc) + FP8_REL * fabs(t);
      if (!(fabs(v - tc) <= tol)) {
        if (!bad && len)
          snprintf(msg, len, "y[%ld][%ld]: code 0x%02x (%.9g) for y / scale = %.9g (y = %.9g, scale = %.9g)", r, c,
                   q[i], v, t, yr[c], got);
        bad++;
      }
    }
  }
  return bad;
}
