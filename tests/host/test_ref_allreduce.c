/* test_ref_allreduce.c: runtime/check/ref_allreduce.c on the CPU: the rank-order fold over
 * regenerated inputs, worked by hand; a custom fold; the tolerances; and wrong results that the
 * comparison must catch (a rank left out, the poison). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_allreduce.h"

/* rank p's element i = (p + 1) * (i + 1) * s, s = -1 for odd i */
static void fill(void *ud, int rank, size_t n, void *dst) {
  (void)ud;
  float *f = dst;
  for (size_t i = 0; i < n; i++) f[i] = (float)((rank + 1) * (int)(i + 1) * (i % 2 ? -1 : 1));
}

/* the fold in order, written so the order shows: ((v0 * 10 + v1) * 10 + v2) ... */
static int digits(void *ud, const double *v, size_t n, double *out) {
  int *calls = ud;
  (*calls)++;
  double w = 0;
  for (size_t i = 0; i < n; i++) w = w * 10 + v[i];
  *out = w;
  return 0;
}
static int failing(void *ud, const double *v, size_t n, double *out) { (void)ud, (void)v, (void)n, (void)out; return -1; }

static void test_builtin(void **state) {
  (void)state;
  double want[3], scale[3];
  /* 4 ranks: element 0 = 1+2+3+4 = 10, element 1 = -2(1+2+3+4) = -20, element 2 = 30 */
  assert_int_equal(ref_allreduce(HR_F32, HR_SUM, NULL, NULL, 4, 3, fill, NULL, want, scale), 0);
  assert_true(want[0] == 10 && want[1] == -20 && want[2] == 30);
  assert_true(scale[0] == 10 && scale[1] == 20 && scale[2] == 30);
  assert_int_equal(ref_allreduce(HR_F32, HR_MAX, NULL, NULL, 4, 3, fill, NULL, want, scale), 0);
  assert_true(want[0] == 4 && want[1] == -2 && want[2] == 12);
  assert_int_equal(ref_allreduce(HR_F32, HR_MIN, NULL, NULL, 4, 3, fill, NULL, want, scale), 0);
  assert_true(want[0] == 1 && want[1] == -8);
  assert_int_equal(ref_allreduce(HR_F32, HR_PROD, NULL, NULL, 3, 2, fill, NULL, want, scale), 0);
  assert_true(want[0] == 6 && want[1] == -48);
}

static void test_custom_fold_order(void **state) {
  (void)state;
  double want[2], scale[2];
  int calls = 0;
  assert_int_equal(ref_allreduce(HR_F32, HR_SUM, digits, &calls, 3, 2, fill, NULL, want, scale), 0);
  assert_int_equal(calls, 2);
  assert_true(want[0] == 123);               /* ranks 0, 1, 2 in that order */
  assert_true(want[1] == -2 * 100 - 40 - 6); /* -2, -4, -6 */
  assert_int_equal(ref_allreduce(HR_F32, HR_SUM, failing, NULL, 2, 2, fill, NULL, want, scale), -1);
}

static void test_tolerance_and_catches(void **state) {
  (void)state;
  enum { N = 5, P = 4 };
  double want[N], scale[N], atol[N];
  float got[N];
  assert_int_equal(ref_allreduce(HR_F32, HR_SUM, NULL, NULL, P, N, fill, NULL, want, scale), 0);
  for (int i = 0; i < N; i++) { got[i] = (float)want[i]; atol[i] = ref_allreduce_atol(HR_SUM, 0, scale[i]); }
  hr_report r;
  double rtol = ref_allreduce_rtol(HR_F32, HR_SUM, 0);
  assert_true(rtol == 0);
  assert_int_equal(hr_compare(HR_F32, got, want, N, atol, N, rtol, &r), 0);
  /* a rank left out of element 3: short by rank 3's 16 */
  got[3] = (float)(want[3] + 16);
  assert_int_equal(hr_compare(HR_F32, got, want, N, atol, N, rtol, &r), 1);
  assert_int_equal(r.first_bad, 3);
  /* within the f32 rounding allowed: 2^-22 * scale */
  got[3] = (float)(want[3] + ldexp(scale[3], -23));
  assert_int_equal(hr_compare(HR_F32, got, want, N, atol, N, rtol, &r), 0);
  uint32_t poison = 0xffffffffu;
  memcpy(&got[0], &poison, 4);
  assert_int_equal(hr_compare(HR_F32, got, want, N, atol, N, rtol, &r), 1);
  assert_int_equal(r.unwritten, 1);
  /* max and min are exact; 16-bit outputs allow one rounding of the result */
  assert_true(ref_allreduce_rtol(HR_BF16, HR_MAX, 0) == 0 && ref_allreduce_atol(HR_MAX, 0, 100) == 0);
  assert_true(ref_allreduce_rtol(HR_F16, HR_SUM, 0) == ldexp(1, -11) * 1.01);
  assert_true(ref_allreduce_rtol(HR_BF16, HR_MAX, 1) == ldexp(1, -8) * 1.01);   /* custom: may add */
  assert_true(ref_allreduce_atol(HR_MAX, 1, 4.0) == ldexp(4.0, -22) + 1e-30);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtin), cmocka_unit_test(test_custom_fold_order),
      cmocka_unit_test(test_tolerance_and_catches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
