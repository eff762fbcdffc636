/* test_ref_cluster.c: runtime/check/ref_cluster.c on the CPU: the fold over a cluster's CTAs
 * and threads worked by hand, the bit-identity check across CTAs, an unwritten output, a value
 * outside tolerance, and a custom fold that sees the inputs in CTA, then thread order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_cluster.h"

/* 2 clusters of C = 2 CTAs, T = 3 threads, W = 2 lanes, I = 1 iteration:
 * in[(cl*C + c)*T + t)*W + w] = 1 + cl*100 + c*10 + t + w*0.5 */
enum { CL = 2, CC = 2, TT = 3, WW = 2 };
static float in[CL * CC * TT * WW], out[CL * CC * WW];
static const ref_cluster_shape shape = {CL, CC, TT, WW, 1};

static double sum_of(int cl, int w) {
  double s = 0;
  for (int c = 0; c < CC; c++)
    for (int t = 0; t < TT; t++) s += 1 + cl * 100 + c * 10 + t + w * 0.5;
  return s;
}

static void setup(void) {
  for (int cl = 0; cl < CL; cl++)
    for (int c = 0; c < CC; c++)
      for (int t = 0; t < TT; t++)
        for (int w = 0; w < WW; w++) in[(((cl * CC + c) * TT) + t) * WW + w] = (float)(1 + cl * 100 + c * 10 + t + w * 0.5);
  for (int cl = 0; cl < CL; cl++)
    for (int c = 0; c < CC; c++)
      for (int w = 0; w < WW; w++) out[(cl * CC + c) * WW + w] = (float)sum_of(cl, w);
}

static void test_pass_and_known_sum(void **state) {
  (void)state;
  setup();
  assert_true(sum_of(0, 0) == 6 + 6 + 30 && sum_of(1, 1) == 6 + 6 + 30 + 600 + 3);
  ref_cluster_report r;
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 1, NULL, NULL, &r), 0);
  assert_int_equal(r.differ, 0);
  assert_int_equal(r.unwritten, 0);
  assert_int_equal(r.values.n, CL * WW);   /* CTA 0's outputs against the fold */
  assert_int_equal(r.values.bad, 0);
}

static void test_catches(void **state) {
  (void)state;
  ref_cluster_report r;
  setup();
  out[(1 * CC + 1) * WW + 0] += 1;   /* CTA 1 of cluster 1 holds other bits */
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 1, NULL, NULL, &r), 1);
  assert_int_equal(r.differ, 1);
  assert_int_equal(r.values.bad, 0);
  setup();
  out[0] -= 1;                        /* CTA 0 off by a whole element (a missed thread) */
  out[WW] = out[0];                   /* and CTA 1 agreeing with it: bit-identical but wrong */
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 1, NULL, NULL, &r), 1);
  assert_int_equal(r.differ, 0);
  assert_int_equal(r.values.bad, 1);
  assert_true(r.values.max_abs_err == 1);
  setup();
  uint32_t poison = 0xffffffffu;
  memcpy(&out[(0 * CC + 1) * WW + 1], &poison, 4);   /* CTA 1 never wrote lane 1 */
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 1, NULL, NULL, &r), 1);
  assert_int_equal(r.unwritten, 1);
  assert_int_equal(r.differ, 1);
  /* bit-identity only (a custom op without a reference): a wrong value everywhere passes */
  setup();
  for (int i = 0; i < CL * CC * WW; i++) out[i] = 7;
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 0, NULL, NULL, &r), 0);
  /* max is exact: one ulp off fails */
  setup();
  for (int cl = 0; cl < CL; cl++)
    for (int c = 0; c < CC; c++)
      for (int w = 0; w < WW; w++) out[(cl * CC + c) * WW + w] = (float)(1 + cl * 100 + 10 + 2 + w * 0.5);
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_MAX, 1, NULL, NULL, &r), 0);
  out[0] = nextafterf(out[0], 100);
  out[WW] = out[0];
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_MAX, 1, NULL, NULL, &r), 1);
}

/* records the order of the inputs it sees, and answers their sum */
static double seen[CC * TT];
static int fold_order(void *ud, const double *v, size_t n, double *o) {
  (void)ud;
  double s = 0;
  for (size_t i = 0; i < n; i++) { seen[i] = v[i]; s += v[i]; }
  *o = s;
  return 0;
}

static void test_custom_fold(void **state) {
  (void)state;
  ref_cluster_report r;
  setup();
  assert_int_equal(ref_cluster_check(&shape, in, out, HR_SUM, 1, fold_order, NULL, &r), 0);
  /* the last fold was cluster 1, lane 1: CTA 0's threads, then CTA 1's */
  for (int c = 0; c < CC; c++)
    for (int t = 0; t < TT; t++) assert_true(seen[c * TT + t] == 1 + 100 + c * 10 + t + 0.5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pass_and_known_sum), cmocka_unit_test(test_catches), cmocka_unit_test(test_custom_fold),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
