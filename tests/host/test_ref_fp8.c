/* test_ref_fp8.c: the FP8 E4M3 reference (runtime/check/ref_fp8): the decoding, and a check that passes
 * correct roundings and catches a code one step off, a wrong scale, the poison and saturation errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ref_fp8.h"

static void test_decode(void **state) {
  (void)state;
  assert_true(ref_e4m3_value(0x00) == 0.0);
  assert_true(ref_e4m3_value(0x01) == 0x1p-9);          /* the smallest subnormal */
  assert_true(ref_e4m3_value(0x07) == 7 * 0x1p-9);
  assert_true(ref_e4m3_value(0x08) == 0x1p-6);          /* the smallest normal */
  assert_true(ref_e4m3_value(0x38) == 1.0);
  assert_true(ref_e4m3_value(0x39) == 1.125);
  assert_true(ref_e4m3_value(0xb8) == -1.0);
  assert_true(ref_e4m3_value(0x7e) == 448.0);           /* the largest finite: S.1111.110 */
  assert_true(ref_e4m3_value(0x78) == 256.0);
  assert_true(isnan(ref_e4m3_value(0x7f)) && isnan(ref_e4m3_value(0xff)));
  assert_true(ref_e4m3_spacing(1.0) == 0.125 && ref_e4m3_spacing(1.99) == 0.125 && ref_e4m3_spacing(2.0) == 0.25);
  assert_true(ref_e4m3_spacing(300) == 32 && ref_e4m3_spacing(0x1p-7) == 0x1p-9);
}

/* the nearest E4M3 code of t, by search (ties: either; the check takes both) */
static uint8_t nearest(double t) {
  uint8_t best = 0;
  double bd = INFINITY;
  for (int c = 0; c < 256; c++) {
    double v = ref_e4m3_value((uint8_t)c);
    if (!isnan(v) && fabs(v - t) < bd) { bd = fabs(v - t); best = (uint8_t)c; }
  }
  return best;
}

#define COLS 64
static void quantise(const double *y, long rows, uint8_t *q, float *scale) {
  for (long r = 0; r < rows; r++) {
    double amax = REF_E4M3_MIN_AMAX;
    for (int c = 0; c < COLS; c++) amax = fmax(amax, fabs(y[r * COLS + c]));
    scale[r] = (float)(amax / REF_E4M3_MAX);
    for (int c = 0; c < COLS; c++) q[r * COLS + c] = nearest(y[r * COLS + c] / scale[r]);
  }
}

static void test_check(void **state) {
  (void)state;
  enum { ROWS = 3 };
  double y[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) y[i] = sin(i * 0.37) * (i < COLS ? 3.0 : 1e-3);
  for (int c = 0; c < COLS; c++) y[2 * COLS + c] = 0.0;   /* a row of zeros: amax is 1/512, every code 0 */
  uint8_t q[ROWS * COLS];
  float scale[ROWS];
  char msg[256];
  quantise(y, ROWS, q, scale);
  assert_int_equal(ref_fp8_check(y, ROWS, COLS, q, scale, msg, sizeof msg), 0);
  assert_string_equal(msg, "");
  assert_true(scale[2] == (float)(1.0 / (512.0 * 448.0)) && q[2 * COLS] == 0);
  /* the row's largest element maps to 448 */
  int top = 0;
  for (int c = 1; c < COLS; c++) if (fabs(y[c]) > fabs(y[top])) top = c;
  assert_true(fabs(ref_e4m3_value(q[top])) == 448.0);

  uint8_t bad[ROWS * COLS];
  memcpy(bad, q, sizeof q);
  bad[5] = (uint8_t)(bad[5] + 1);   /* one step off (the same sign, the next magnitude) */
  assert_int_equal(ref_fp8_check(y, ROWS, COLS, bad, scale, msg, sizeof msg), 1);
  assert_non_null(strstr(msg, "y[0][5]"));
  memcpy(bad, q, sizeof q);
  bad[COLS + 7] = 0xff;   /* the poison */
  assert_int_equal(ref_fp8_check(y, ROWS, COLS, bad, scale, msg, sizeof msg), 1);
  float s2[ROWS];
  memcpy(s2, scale, sizeof scale);
  s2[1] *= 1.001f;   /* the scale off by 0.1 % */
  assert_int_equal(ref_fp8_check(y, ROWS, COLS, q, s2, msg, sizeof msg), 1);
  assert_non_null(strstr(msg, "scale[1]"));
  /* a value over 448 after the division must saturate, not wrap or stay NaN */
  double y2[COLS];
  for (int c = 0; c < COLS; c++) y2[c] = c == 0 ? 1.0 : 0.5;
  uint8_t q2[COLS];
  float sc2 = (float)(1.0 / 448.0) * 0.999999f;   /* 1 / scale slightly over 448: within the tolerance */
  for (int c = 0; c < COLS; c++) q2[c] = nearest(y2[c] / sc2);
  assert_int_equal(ref_fp8_check(y2, 1, COLS, q2, &sc2, msg, sizeof msg), 0);
  q2[0] = 0x7f;
  assert_int_equal(ref_fp8_check(y2, 1, COLS, q2, &sc2, msg, sizeof msg), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_decode), cmocka_unit_test(test_check)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
