/* test_ref_collectives.c: runtime/check/ref_collectives.c on the CPU: reduce_scatter's chunk is
 * the rank's own (worked by hand, every rank), folded in rank order through a custom fold; the
 * all-gather's layout; the bit comparison, which must catch a swapped chunk and a sign bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_collectives.h"

/* rank p's element i = (p + 1) * 100 + i */
static void fill(void *ud, int rank, size_t n, void *dst) {
  int *calls = ud;
  if (calls) (*calls)++;
  float *f = dst;
  for (size_t i = 0; i < n; i++) f[i] = (float)((rank + 1) * 100 + (int)i);
}

static int digits(void *ud, const double *v, size_t n, double *out) {
  (void)ud;
  double w = 0;
  for (size_t i = 0; i < n; i++) w = w * 1000 + v[i];
  *out = w;
  return 0;
}

static void test_reduce_scatter_chunks(void **state) {
  (void)state;
  double want[2], scale[2];
  /* 3 ranks, n = 2: rank r's chunk is elements 2r, 2r+1 of every rank's 6 */
  for (int r = 0; r < 3; r++) {
    int calls = 0;
    assert_int_equal(ref_reduce_scatter(HR_F32, HR_SUM, NULL, NULL, 3, r, 2, fill, &calls, want, scale), 0);
    assert_int_equal(calls, 3);   /* every rank's input regenerated once */
    for (int i = 0; i < 2; i++) {
      double e = 0;
      for (int p = 0; p < 3; p++) e += (p + 1) * 100 + 2 * r + i;
      assert_true(want[i] == e);
      assert_true(scale[i] == e);
    }
  }
  assert_int_equal(ref_reduce_scatter(HR_F32, HR_MAX, NULL, NULL, 4, 3, 1, fill, NULL, want, scale), 0);
  assert_true(want[0] == 403);   /* rank 3's chunk (element 3) of rank 3, the largest */
  assert_int_equal(ref_reduce_scatter(HR_F32, HR_MIN, NULL, NULL, 4, 2, 1, fill, NULL, want, scale), 0);
  assert_true(want[0] == 102);
  /* the rank order through a custom fold: ranks 0, 1, 2 as digits of base 1000 */
  assert_int_equal(ref_reduce_scatter(HR_F32, HR_SUM, digits, NULL, 3, 1, 2, fill, NULL, want, scale), 0);
  assert_true(want[0] == 102.0 * 1e6 + 202.0 * 1e3 + 302.0);
  assert_true(want[1] == 103.0 * 1e6 + 203.0 * 1e3 + 303.0);
  /* one rank: its own input */
  assert_int_equal(ref_reduce_scatter(HR_F32, HR_SUM, NULL, NULL, 1, 0, 2, fill, NULL, want, scale), 0);
  assert_true(want[0] == 100 && want[1] == 101);
  /* a rank outside the world */
  assert_int_equal(ref_reduce_scatter(HR_F32, HR_SUM, NULL, NULL, 2, 2, 2, fill, NULL, want, scale), -1);
}

static void test_all_gather_layout(void **state) {
  (void)state;
  float want[3 * 4];
  assert_int_equal(ref_all_gather(HR_F32, 3, 4, fill, NULL, want), 0);
  for (int p = 0; p < 3; p++)
    for (int i = 0; i < 4; i++) assert_true(want[p * 4 + i] == (float)((p + 1) * 100 + i));
}

static void test_first_diff(void **state) {
  (void)state;
  float want[8], got[8];
  assert_int_equal(ref_all_gather(HR_F32, 2, 4, fill, NULL, want), 0);
  memcpy(got, want, sizeof want);
  assert_int_equal(ref_first_diff(HR_F32, got, want, 8), -1);
  /* chunks of ranks 0 and 1 swapped: caught at the first element */
  memcpy(got, want + 4, 4 * sizeof(float));
  memcpy(got + 4, want, 4 * sizeof(float));
  assert_int_equal(ref_first_diff(HR_F32, got, want, 8), 0);
  /* -0.0 against 0.0 is a different bit pattern, though equal as numbers */
  float a[2] = {1.0f, 0.0f}, b[2] = {1.0f, -0.0f};
  assert_int_equal(ref_first_diff(HR_F32, a, b, 2), 1);
  /* 16-bit: one element's low byte */
  uint16_t h1[3] = {1, 2, 3}, h2[3] = {1, 2, 0x103};
  assert_int_equal(ref_first_diff(HR_BF16, h1, h2, 3), 2);
  assert_int_equal(ref_first_diff(HR_BF16, h1, h2, 2), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reduce_scatter_chunks),
    cmocka_unit_test(test_all_gather_layout),
    cmocka_unit_test(test_first_diff),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
