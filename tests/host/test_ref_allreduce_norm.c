/* test_ref_allreduce_norm.c: the reference of family allreduce_norm (runtime/check/ref_allreduce_norm). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_allreduce_norm.h"

typedef struct { hr_dtype dt; const void *const *ranks; } fixed_inputs;
static void fill_fixed(void *ud, int rank, size_t n, void *dst) {
  const fixed_inputs *f = ud;
  memcpy(dst, f->ranks[rank], n * hr_dtype_size(f->dt));
}

/* The fold is f32 adds in rank order: 1 + 2^-24 + 2^-24 is 1 in f32 (each add rounds back to 1),
 * though the exact sum 1 + 2^-23 is an f32; in the other order (2^-24 + 2^-24 + 1) it is 1 + 2^-23. */
static void test_fold_order(void **state) {
  (void)state;
  float a[1] = {1.0f}, b[1] = {0x1p-24f}, c[1] = {0x1p-24f}, w[1] = {1.0f}, s[1];
  double y[1];
  const void *order1[3] = {a, b, c}, *order2[3] = {b, c, a};
  fixed_inputs f1 = {HR_F32, order1}, f2 = {HR_F32, order2};
  assert_int_equal(ref_allreduce_norm(HR_F32, 3, 1, 1, fill_fixed, &f1, NULL, w, 0.0f, s, NULL, y), 0);
  assert_true(s[0] == 1.0f);
  assert_int_equal(ref_allreduce_norm(HR_F32, 3, 1, 1, fill_fixed, &f2, NULL, w, 0.0f, s, NULL, y), 0);
  assert_true(s[0] == 1.0f + 0x1p-23f);
  assert_true(fabs(y[0] - 1.0) < 1e-15);   /* one column, eps 0: y = sign(h) * w */
}

/* bf16: the sum rounds once to bf16, then h = round(s + r) rounds again (as an allreduce followed by
 * rmsnorm with the residual would), and the rounded h is what gets normalised */
static void test_bf16_two_roundings(void **state) {
  (void)state;
  uint16_t x0[2] = {0x3f80, 0x4000}, x1[2] = {hr_f32_to_bf16(0x1p-8f), hr_f32_to_bf16(3.0f)};   /* 1, 2 and 2^-8, 3 */
  uint16_t r[2] = {hr_f32_to_bf16(0x1p-8f), hr_f32_to_bf16(-1.0f)}, w[2] = {0x3f80, 0x4000}, s[2], h[2];
  double y[2];
  const void *ranks[2] = {x0, x1};
  fixed_inputs f = {HR_BF16, ranks};
  assert_int_equal(ref_allreduce_norm(HR_BF16, 2, 1, 2, fill_fixed, &f, r, w, 0.0f, s, h, y), 0);
  assert_int_equal(s[0], 0x3f80);   /* 1 + 2^-8 is a tie: to the even 1.0 */
  assert_int_equal(s[1], hr_f32_to_bf16(5.0f));
  assert_int_equal(h[0], 0x3f80);   /* 1 + 2^-8 again: 1.0, not the 1 + 2^-7 of one rounding of x0 + x1 + r */
  assert_int_equal(h[1], hr_f32_to_bf16(4.0f));
  double ms = (1.0 + 16.0) / 2;
  assert_true(fabs(y[0] - 1.0 / sqrt(ms)) < 1e-12);
  assert_true(fabs(y[1] - 4.0 * 2.0 / sqrt(ms)) < 1e-12);
}

/* one rank: the reference is rmsnorm's of x itself */
static void test_one_rank_is_rmsnorm(void **state) {
  (void)state;
  enum { R = 3, C = 37 };
  uint16_t x[R * C], rr[R * C], w[C], s[R * C], h[R * C], h2[R * C];
  double y[R * C], y2[R * C];
  hr_fill_uniform(HR_F16, x, R * C, 1, -1, 1);
  hr_fill_uniform(HR_F16, rr, R * C, 2, -1, 1);
  hr_fill_uniform(HR_F16, w, C, 3, -2, 2);
  const void *ranks[1] = {x};
  fixed_inputs f = {HR_F16, ranks};
  assert_int_equal(ref_allreduce_norm(HR_F16, 1, R, C, fill_fixed, &f, rr, w, 1e-6f, s, h, y), 0);
  assert_memory_equal(s, x, sizeof x);
  ref_rmsnorm(HR_F16, x, rr, w, R, C, 1e-6f, h2, y2, NULL);
  assert_memory_equal(h, h2, sizeof h);
  assert_memory_equal(y, y2, sizeof y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_order),
      cmocka_unit_test(test_bf16_two_roundings),
      cmocka_unit_test(test_one_rank_is_rmsnorm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
