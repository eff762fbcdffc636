/* test_ref_gemm.c: runtime/check/ref_gemm.c on the CPU: a product worked by hand, both B
 * layouts, row sampling, the tolerance's edges, and wrong answers that must be caught (a missed
 * element, a swapped row, the poison) through the one comparison (hr_compare_rows). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_gemm.h"

/* A = [[1, 2], [3, 4], [-1, 0.5]] (3 x 2), B = [[1, -1, 2], [0.5, 0, 1]] (2 x 3):
 * C = [[2, -1, 4], [5, -3, 10], [-0.75, 1, -1.5]]; scale = sum |a||b| per element. */
static const float A[6] = {1, 2, 3, 4, -1, 0.5f};
static const float B_row[6] = {1, -1, 2, 0.5f, 0, 1};
static const float B_col[6] = {1, 0.5f, -1, 0, 2, 1};   /* N x K: B's transpose */
static const double C[9] = {2, -1, 4, 5, -3, 10, -0.75, 1, -1.5};
static const double S[9] = {2, 1, 4, 5, 3, 10, 1.25, 1, 2.5};

static void to_f16(const float *x, uint16_t *h, int n) {
  for (int i = 0; i < n; i++) h[i] = hr_f32_to_f16(x[i]);
}

static void test_known_product(void **state) {
  (void)state;
  uint16_t a[6], brow[6], bcol[6];
  to_f16(A, a, 6); to_f16(B_row, brow, 6); to_f16(B_col, bcol, 6);
  long long rows[3] = {0, 1, 2};
  double want[9], scale[9];
  assert_int_equal(ref_gemm(HR_F16, a, brow, 0, 3, 2, rows, 3, want, scale), 0);
  for (int i = 0; i < 9; i++) { assert_true(want[i] == C[i]); assert_true(scale[i] == S[i]); }
  memset(want, 0, sizeof want);
  assert_int_equal(ref_gemm(HR_F16, a, bcol, 1, 3, 2, rows, 3, want, scale), 0);
  for (int i = 0; i < 9; i++) assert_true(want[i] == C[i]);
  /* chosen rows: row 2 then row 0, in the order given */
  long long some[2] = {2, 0};
  assert_int_equal(ref_gemm(HR_F16, a, brow, 0, 3, 2, some, 2, want, scale), 0);
  assert_true(want[0] == C[6] && want[2] == C[8] && want[3] == C[0] && want[5] == C[2]);
}

static void test_compare_catches(void **state) {
  (void)state;
  uint16_t a[6], b[6], got[9];
  to_f16(A, a, 6); to_f16(B_row, b, 6);
  long long rows[3] = {0, 1, 2};
  double want[9], scale[9];
  hr_report r;
  char line[512];
  assert_int_equal(ref_gemm(HR_F16, a, b, 0, 3, 2, rows, 3, want, scale), 0);
  for (int i = 0; i < 9; i++) got[i] = hr_f32_to_f16((float)C[i]);
  assert_int_equal(ref_gemm_compare(HR_F16, got, 3, rows, 3, want, scale, &r), 0);
  assert_int_equal(r.n, 9);
  hr_report_format_worst(&r, line, sizeof line);
  assert_non_null(strstr(line, "9 elements compared, every finite one equal"));
  /* a missed element of the sum: C[1][2] = 10 - 4*1 = 6 */
  got[5] = hr_f32_to_f16(6.0f);
  assert_int_equal(ref_gemm_compare(HR_F16, got, 3, rows, 3, want, scale, &r), 1);
  assert_int_equal(r.bad, 1);
  assert_int_equal(r.first_bad, 5);
  hr_report_format_worst(&r, line, sizeof line);
  assert_non_null(strstr(line, "1 of 9 outside tolerance"));
  assert_non_null(strstr(line, "at row 1 col 2: got 6 want 10"));
  /* rows 0 and 1 swapped */
  for (int i = 0; i < 9; i++) got[i] = hr_f32_to_f16((float)C[i]);
  for (int j = 0; j < 3; j++) { uint16_t t = got[j]; got[j] = got[3 + j]; got[3 + j] = t; }
  assert_int_equal(ref_gemm_compare(HR_F16, got, 3, rows, 3, want, scale, &r), 1);
  assert_int_equal(r.bad, 6);
  /* the poison, and a NaN that is not the poison */
  for (int i = 0; i < 9; i++) got[i] = hr_f32_to_f16((float)C[i]);
  got[4] = 0xffff;
  got[7] = 0x7e00;
  assert_int_equal(ref_gemm_compare(HR_F16, got, 3, rows, 3, want, scale, &r), 1);
  assert_int_equal(r.unwritten, 1);
  assert_int_equal(r.nans, 1);
  assert_int_equal(r.bad, 2);
  hr_report_format_worst(&r, line, sizeof line);
  assert_non_null(strstr(line, "1 elements never written (still the 0xFF poison); 1 other NaNs; "));
  assert_null(strstr(line, "outside tolerance"));
  /* sampled rows: only rows 0 and 2 are compared, so a wrong row 1 goes unseen */
  for (int i = 0; i < 9; i++) got[i] = hr_f32_to_f16((float)C[i]);
  got[3] = hr_f32_to_f16(-5.0f);
  long long some[2] = {0, 2};
  double w2[6], s2[6];
  assert_int_equal(ref_gemm(HR_F16, a, b, 0, 3, 2, some, 2, w2, s2), 0);
  assert_int_equal(ref_gemm_compare(HR_F16, got, 3, some, 2, w2, s2, &r), 0);
  assert_int_equal(r.n, 6);
}

/* the tolerance: 2u|want| + 2^-16 scale + 2^-24; just inside passes, just outside fails */
static void test_tolerance_edges(void **state) {
  (void)state;
  long long row = 0;
  double want = 1000.0, scale = 65536.0;            /* tol = 2*2^-24*1000 + 1 + 2^-24 (f32) */
  double tol = 2 * ldexp(1, -24) * 1000.0 + 1.0 + ldexp(1, -24);
  float inside = (float)(want + tol * 0.99), outside = (float)(want + tol * 1.01);
  hr_report r;
  assert_int_equal(ref_gemm_compare(HR_F32, &inside, 1, &row, 1, &want, &scale, &r), 0);
  assert_true(r.worst > 0.9 && r.worst <= 1.0);
  assert_int_equal(ref_gemm_compare(HR_F32, &outside, 1, &row, 1, &want, &scale, &r), 1);
  assert_true(r.worst > 1.0);
  assert_true(ref_gemm_unit_roundoff(HR_BF16) == ldexp(1, -8) && ref_gemm_unit_roundoff(HR_F16) == ldexp(1, -11));
}

static void test_pick_rows(void **state) {
  (void)state;
  long long n = 0;
  int all = 0;
  long long *rows = ref_gemm_pick_rows(100, 100, 100, 1, 100, 7, &n, &all);
  assert_non_null(rows);
  assert_true(all);
  assert_int_equal(n, 100);
  for (long long i = 0; i < n; i++) assert_int_equal(rows[i], i);
  free(rows);
  /* 8192^3 over 4 shards of 2048: each shard's first and last row, sorted and distinct */
  rows = ref_gemm_pick_rows(8192, 8192, 8192, 4, 2048, 7, &n, &all);
  assert_non_null(rows);
  assert_false(all);
  assert_true(n >= 8 && n <= 4 * 18);
  for (long long i = 1; i < n; i++) assert_true(rows[i - 1] < rows[i]);
  for (int p = 0; p < 4; p++) {
    int first = 0, last = 0;
    for (long long i = 0; i < n; i++) { first |= rows[i] == p * 2048; last |= rows[i] == p * 2048 + 2047; }
    assert_true(first && last);
  }
  long long n2 = 0;
  long long *again = ref_gemm_pick_rows(8192, 8192, 8192, 4, 2048, 7, &n2, &all);
  assert_int_equal(n, n2);
  assert_memory_equal(rows, again, (size_t)n * sizeof *rows);   /* every rank picks the same rows */
  free(rows); free(again);
}

/* weft's C against cuBLAS's: equal passes; a difference past 4u max + 2^-15 bound fails */
static void test_cross_check(void **state) {
  (void)state;
  uint16_t a[6], b[6], x[9], y[9];
  to_f16(A, a, 6); to_f16(B_row, b, 6);
  for (int i = 0; i < 9; i++) x[i] = y[i] = hr_f32_to_f16((float)C[i]);
  hr_report r;
  assert_int_equal(ref_gemm_cross_check(HR_F16, a, b, 0, 3, 3, 2, x, y, &r), 0);
  x[8] = hr_f32_to_f16(-1.0f);   /* -1.5 computed as -1: far outside */
  assert_int_equal(ref_gemm_cross_check(HR_F16, a, b, 0, 3, 3, 2, x, y, &r), 1);
  assert_int_equal(r.bad, 1);
  assert_int_equal(r.first_bad, 8);
  x[8] = 0xffff;
  assert_int_equal(ref_gemm_cross_check(HR_F16, a, b, 0, 3, 3, 2, x, y, &r), 1);
  assert_int_equal(r.unwritten, 1);
}

/* cuBLASLt's output-type split-K: (S + 1) u scale around the f64 sum, u bf16's 2^-8 here; the
 * poison and NaN fail whatever the bound */
static void test_compare_split(void **state) {
  (void)state;
  long long row = 0;
  double want = 1.0, scale = 64.0;                   /* S = 2: tol = 3 * 2^-8 * 64 = 0.75 */
  uint16_t inside = hr_f32_to_bf16(1.5f), outside = hr_f32_to_bf16(2.0f), poison = 0xffff;
  hr_report r;
  assert_int_equal(ref_gemm_compare(HR_BF16, &inside, 1, &row, 1, &want, &scale, &r), 1);   /* the f32-sum bound fails */
  assert_int_equal(ref_gemm_compare_split(HR_BF16, &inside, 1, &row, 1, &want, &scale, 2, &r), 0);
  assert_int_equal(ref_gemm_compare_split(HR_BF16, &outside, 1, &row, 1, &want, &scale, 2, &r), 1);
  assert_int_equal(ref_gemm_compare_split(HR_BF16, &outside, 1, &row, 1, &want, &scale, 4, &r), 0);   /* 1.25 */
  assert_int_equal(ref_gemm_compare_split(HR_BF16, &poison, 1, &row, 1, &want, &scale, 8, &r), 1);
  assert_int_equal(r.unwritten, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_product), cmocka_unit_test(test_compare_catches),
      cmocka_unit_test(test_tolerance_edges), cmocka_unit_test(test_compare_split), cmocka_unit_test(test_pick_rows), cmocka_unit_test(test_cross_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
