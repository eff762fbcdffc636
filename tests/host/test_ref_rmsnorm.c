/* test_ref_rmsnorm.c: the CPU reference of family rmsnorm (runtime/check/ref_rmsnorm). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_rmsnorm.h"

static void *xalloc(size_t n) {
  void *p = malloc(n);
  assert_non_null(p);
  return p;
}

/* a row worked by hand: [3, 4] -> mean(x^2) = 12.5 */
static void test_known_row(void **state) {
  (void)state;
  float x[2] = {3, 4}, w[2] = {1, -2};
  double y[2], rs;
  ref_rmsnorm(HR_F32, x, NULL, w, 1, 2, 0.0f, NULL, y, &rs);
  assert_true(fabs(rs - 1 / sqrt(12.5)) < 1e-15);
  assert_true(fabs(y[0] - 3 / sqrt(12.5)) < 1e-15);
  assert_true(fabs(y[1] + 8 / sqrt(12.5)) < 1e-15);
  /* eps is added before the root: a zero row gets rstd = 1 / sqrt(eps) and y = 0 */
  float z[2] = {0, 0};
  ref_rmsnorm(HR_F32, z, NULL, w, 1, 2, 0.25f, NULL, y, &rs);
  assert_true(rs == 2.0 && y[0] == 0 && y[1] == 0);
  /* one column: y = x / sqrt(x^2 + eps) * w */
  float one = -0.5f, w1 = 3;
  ref_rmsnorm(HR_F32, &one, NULL, &w1, 1, 1, 0.75f, NULL, y, &rs);
  assert_true(fabs(y[0] + 1.5) < 1e-15);
}

/* h = round_T(x + r): the add in f32, then one rounding to T, ties to even */
static void test_residual_rounding(void **state) {
  (void)state;
  uint16_t x[3] = {0x3f80, 0x3f80, 0x3f80};                      /* bf16 1.0 */
  uint16_t r[3] = {hr_f32_to_bf16(0x1p-8f), hr_f32_to_bf16(0x1.8p-7f), hr_f32_to_bf16(-1.0f)};
  uint16_t w[3] = {0x3f80, 0x3f80, 0x3f80}, h[3];
  double y[3], rs;
  ref_rmsnorm(HR_BF16, x, r, w, 1, 3, 0.0f, h, y, &rs);
  assert_int_equal(h[0], 0x3f80);   /* 1 + 2^-8: a tie, to the even 1.0 */
  assert_int_equal(h[1], 0x3f82);   /* 1 + 3 * 2^-8: a tie, to the even 1 + 2^-6 */
  assert_int_equal(h[2], 0x0000);   /* 1 - 1 */
  /* the rounded h is what gets normalised */
  double h1 = 1 + 0x1p-6, ms = (1 + h1 * h1) / 3;
  assert_true(fabs(rs - 1 / sqrt(ms)) < 1e-15);
  assert_true(fabs(y[1] - h1 / sqrt(ms)) < 1e-15);
  /* f32: x + r is one f32 add, not the exact sum */
  float fx = 1.0f, fr = 0x1p-25f, fh, fw = 1;
  ref_rmsnorm(HR_F32, &fx, &fr, &fw, 1, 1, 0.0f, &fh, y, &rs);
  assert_true(fh == 1.0f);
}

/* big enough to be threaded: every row matches a plain computation of its own */
static void test_threaded_rows(void **state) {
  (void)state;
  const long rows = 601, cols = 2003;
  size_t n = (size_t)rows * (size_t)cols;
  uint16_t *x = xalloc(n * 2), *r = xalloc(n * 2), *h = xalloc(n * 2), *w = xalloc((size_t)cols * 2);
  double *y = xalloc(n * sizeof *y), *rs = xalloc((size_t)rows * sizeof *rs);
  hr_fill_uniform(HR_F16, x, n, 1, -2, 2);
  hr_fill_uniform(HR_F16, r, n, 2, -2, 2);
  hr_fill_uniform(HR_F16, w, (size_t)cols, 3, -1, 1);
  ref_rmsnorm(HR_F16, x, r, w, rows, cols, 1e-3f, h, y, rs);
  for (long row = 0; row < rows; row += 37) {
    double ss = 0;
    for (long c = 0; c < cols; c++) {
      size_t i = (size_t)row * (size_t)cols + (size_t)c;
      float s = hr_f16_to_f32(x[i]) + hr_f16_to_f32(r[i]);
      assert_int_equal(h[i], hr_f32_to_f16(s));
      double v = hr_f16_to_f32(h[i]);
      ss += v * v;
    }
    double want = 1 / sqrt(ss / (double)cols + (double)1e-3f);
    assert_true(fabs(rs[row] - want) <= 1e-13 * want);
    for (long c = 0; c < cols; c += 101) {
      size_t i = (size_t)row * (size_t)cols + (size_t)c;
      double e = hr_f16_to_f32(h[i]) * want * hr_f16_to_f32(w[c]);
      assert_true(fabs(y[i] - e) <= 1e-13 * fabs(e) + 1e-300);
    }
  }
  free(x); free(r); free(h); free(w); free(y); free(rs);
}

/* the tolerances pass a correctly rounded output and fail one ulp off */
static void test_tolerances(void **state) {
  (void)state;
  double want = 1.0 + 0x1p-9;   /* not a bf16 value */
  hr_report rep;
  double a;
  /* bf16: correctly rounded is 1.0 (2^-9 away); 1 + 2^-7, one ulp up, must fail */
  uint16_t good = hr_f32_to_bf16((float)want), bad = 0x3f81;
  a = ref_rmsnorm_atol(HR_BF16);
  assert_int_equal(hr_compare(HR_BF16, &good, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_BF16), &rep), 0);
  assert_int_equal(hr_compare(HR_BF16, &bad, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_BF16), &rep), 1);
  /* f16: 1 + 2^-12 rounds to 1.0; 1 + 2^-10, one ulp up, must fail */
  want = 1.0 + 0x1p-12;
  uint16_t g16 = hr_f32_to_f16((float)want), b16 = (uint16_t)(hr_f32_to_f16(1.0f) + 1);
  a = ref_rmsnorm_atol(HR_F16);
  assert_int_equal(hr_compare(HR_F16, &g16, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_F16), &rep), 0);
  assert_int_equal(hr_compare(HR_F16, &b16, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_F16), &rep), 1);
  /* f32: a few ulps of f32 arithmetic pass, 1e-5 relative does not */
  float gf = (float)want * (1 + 8 * 0x1p-24f), bf = (float)(want * (1 + 1e-5));
  a = ref_rmsnorm_atol(HR_F32);
  assert_int_equal(hr_compare(HR_F32, &gf, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_F32), &rep), 0);
  assert_int_equal(hr_compare(HR_F32, &bf, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_F32), &rep), 1);
  /* a poisoned (never written) output fails in every dtype */
  uint16_t poison = 0xffff;
  assert_int_equal(hr_compare(HR_BF16, &poison, &want, 1, &a, 1, ref_rmsnorm_rtol(HR_BF16), &rep), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_row),
      cmocka_unit_test(test_residual_rounding),
      cmocka_unit_test(test_threaded_rows),
      cmocka_unit_test(test_tolerances),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
