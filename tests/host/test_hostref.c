/* test_hostref.c: conversions, random fills, the row references and the comparison of runtime/check/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostref.h"

static const hr_dtype all_dt[] = {HR_F32, HR_F16, HR_BF16};

static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void *xalloc(size_t n) {
  void *p = malloc(n);
  assert_non_null(p);
  return p;
}

/* ---- 1. conversions ----------------------------------------------------------------------- */

static void test_known_values(void **state) {
  (void)state;
  assert_true(hr_bf16_to_f32(0x3f80) == 1.0f);
  assert_true(hr_bf16_to_f32(0xc000) == -2.0f);
  assert_true(hr_bf16_to_f32(0x0000) == 0.0f);
  assert_true(hr_bf16_to_f32(0x7f80) == INFINITY);
  assert_true(hr_bf16_to_f32(0x0001) == 0x1p-133f); /* bf16 subnormal */
  assert_true(hr_f16_to_f32(0x3c00) == 1.0f);
  assert_true(hr_f16_to_f32(0xc000) == -2.0f);
  assert_true(hr_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(hr_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(hr_f16_to_f32(0x8001) == -0x1p-24f);
  assert_true(hr_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
  assert_true(hr_f16_to_f32(0x0400) == 0x1p-14f);
  assert_true(hr_f16_to_f32(0x3555) == 0x1.554p-2f);
  assert_true(hr_f16_to_f32(0x7c00) == INFINITY);
  assert_true(hr_f16_to_f32(0xfc00) == -INFINITY);
  assert_int_equal(f32_bits(hr_f16_to_f32(0x8000)), 0x80000000u); /* -0 */

  assert_int_equal(hr_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(hr_f32_to_bf16(-2.0f), 0xc000);
  assert_int_equal(hr_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(hr_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(hr_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(hr_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(hr_f32_to_bf16(-0.0f), 0x8000);
}

static void test_round_nearest_even(void **state) {
  (void)state;
  /* bf16 has 8 significand bits: near 1 the spacing is 2^-7, ties at odd multiples of 2^-8 */
  assert_int_equal(hr_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);           /* tie -> even 1.0 */
  assert_int_equal(hr_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);       /* tie -> even up */
  assert_int_equal(hr_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-23f), 0x3f81); /* above the tie */
  assert_int_equal(hr_f32_to_bf16(1.0f + 0x1p-8f - 0x1p-23f), 0x3f80); /* below the tie */
  assert_int_equal(hr_f32_to_bf16(-(1.0f + 3 * 0x1p-8f)), 0xbf82);
  /* f16 has 11: spacing 2^-10 near 1 */
  assert_int_equal(hr_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(hr_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  assert_int_equal(hr_f32_to_f16(1.0f + 0x1p-11f + 0x1p-23f), 0x3c01);
  assert_int_equal(hr_f32_to_f16(-(1.0f + 0x1p-11f)), 0xbc00);
  /* f16 subnormals: spacing 2^-24 */
  assert_int_equal(hr_f32_to_f16(0x1p-25f), 0x0000);           /* tie -> 0 */
  assert_int_equal(hr_f32_to_f16(0x1p-25f * 1.0000001f), 0x0001);
  assert_int_equal(hr_f32_to_f16(3 * 0x1p-25f), 0x0002);       /* tie -> even 2 */
  assert_int_equal(hr_f32_to_f16(5 * 0x1p-25f), 0x0002);       /* tie -> even 2 */
  assert_int_equal(hr_f32_to_f16(1023.5f * 0x1p-24f), 0x0400); /* tie -> smallest normal */
  assert_int_equal(hr_f32_to_f16(0x1p-30f), 0x0000);
  assert_int_equal(hr_f32_to_f16(-0x1p-30f), 0x8000);
  assert_int_equal(hr_f32_to_f16(FLT_TRUE_MIN), 0x0000);
  /* mantissa carry into the exponent */
  assert_int_equal(hr_f32_to_f16(2.0f - 0x1p-12f), 0x4000);
  assert_int_equal(hr_f32_to_bf16(2.0f - 0x1p-9f), 0x4000);
}

static void test_overflow_nan(void **state) {
  (void)state;
  assert_int_equal(hr_f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(hr_f32_to_f16(65520.0f), 0x7c00); /* tie between 65504 (odd) and 65536 */
  assert_int_equal(hr_f32_to_f16(1e10f), 0x7c00);
  assert_int_equal(hr_f32_to_f16(-1e10f), 0xfc00);
  assert_int_equal(hr_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(hr_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(hr_f32_to_bf16(FLT_MAX), 0x7f80);
  assert_int_equal(hr_f32_to_bf16(-FLT_MAX), 0xff80);
  assert_int_equal(hr_f32_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(hr_f32_to_bf16(bits_f32(0x7f7f7fffu)), 0x7f7f); /* just below the tie */

  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xff800001u,
                           0x7fffffffu};
  for (size_t k = 0; k < sizeof nans / sizeof nans[0]; k++) {
    float f = bits_f32(nans[k]);
    uint16_t h = hr_f32_to_f16(f), b = hr_f32_to_bf16(f);
    assert_int_equal(h & 0x7c00, 0x7c00);
    assert_true(h & 0x0200); /* quiet */
    assert_true(isnan(hr_f16_to_f32(h)));
    assert_int_equal(b & 0x7f80, 0x7f80);
    assert_true(b & 0x0040); /* quiet */
    assert_true(isnan(hr_bf16_to_f32(b)));
    assert_int_equal(h >> 15, nans[k] >> 31); /* sign kept */
    assert_int_equal(b >> 15, nans[k] >> 31);
  }
  /* signalling NaNs in f16/bf16 come back as quiet f32 NaNs */
  assert_true(isnan(hr_f16_to_f32(0x7d00)));
  assert_true(f32_bits(hr_f16_to_f32(0x7d00)) & 0x400000u);
  assert_true(isnan(hr_f16_to_f32(0x7c01)));
  assert_true(isnan(hr_bf16_to_f32(0x7f81)));
  assert_true(f32_bits(hr_bf16_to_f32(0x7f81)) & 0x400000u);
  assert_true(isnan(hr_bf16_to_f32(0xffff)));
  assert_true(isnan(hr_f16_to_f32(0xffff)));
}

static int f16_is_nan(unsigned h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static int bf16_is_nan(unsigned h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

/* Every 16-bit pattern: exact round trip, and every rounding boundary between neighbours. */
static void test_exhaustive(void **state) {
  (void)state;
  for (unsigned h = 0; h < 65536; h++) {
    float f = hr_f16_to_f32((uint16_t)h), b = hr_bf16_to_f32((uint16_t)h);
    if (f16_is_nan(h)) {
      assert_true(isnan(f));
      assert_true(f16_is_nan(hr_f32_to_f16(f)));
    } else {
      assert_int_equal(hr_f32_to_f16(f), h);
      assert_true(hr_load(HR_F16, &(uint16_t){(uint16_t)h}, 0) == (double)f);
    }
    if (bf16_is_nan(h)) {
      assert_true(isnan(b));
      assert_true(bf16_is_nan(hr_f32_to_bf16(b)));
    } else {
      assert_int_equal(hr_f32_to_bf16(b), h);
      assert_int_equal(f32_bits(b), (uint32_t)h << 16);
    }
  }
  /* For each finite non-negative pattern h and its successor h+1: the midpoint (exact in f32)
   * goes to the even one, one f32 ulp either side goes to the nearer one. */
  for (int which = 0; which < 2; which++) {
    unsigned maxfin = which == 0 ? 0x7bffu : 0x7f7fu;
    for (unsigned h = 0; h <= maxfin; h++) {
      double lo = which == 0 ? hr_f16_to_f32((uint16_t)h) : hr_bf16_to_f32((uint16_t)h);
      double hi = h < maxfin ? (which == 0 ? hr_f16_to_f32((uint16_t)(h + 1))
                                           : hr_bf16_to_f32((uint16_t)(h + 1)))
                             : (which == 0 ? 65536.0 : 0x1p128);
      float mid = (float)((lo + hi) / 2);
      assert_true((double)mid == (lo + hi) / 2);
      unsigned even = (h & 1) ? h + 1 : h;
      for (int s = 0; s < 2; s++) {
        float sg = s ? -1.0f : 1.0f;
        unsigned sb = s ? 0x8000u : 0;
        uint16_t (*cv)(float) = which == 0 ? hr_f32_to_f16 : hr_f32_to_bf16;
        assert_int_equal(cv(sg * mid), sb | even);
        assert_int_equal(cv(sg * nextafterf(mid, 0.0f)), sb | h);
        assert_int_equal(cv(sg * nextafterf(mid, INFINITY)), sb | (h + 1));
      }
    }
  }
}

/* fill_uniform with lo == hi rounds that double once (no double rounding through f32) */
static void test_fill_single_rounding(void **state) {
  (void)state;
  uint16_t h = 0;
  double d = 1.0 + 0x1p-11 + 0x1p-30; /* just above an f16 tie; (float)d sits on the tie */
  hr_fill_uniform(HR_F16, &h, 1, 1, d, d);
  assert_int_equal(h, 0x3c01);
  d = 1.0 + 0x1p-8 + 0x1p-40;
  hr_fill_uniform(HR_BF16, &h, 1, 1, d, d);
  assert_int_equal(h, 0x3f81);
  d = -(1.0 + 0x1p-11 - 0x1p-30); /* just below a tie */
  hr_fill_uniform(HR_F16, &h, 1, 1, d, d);
  assert_int_equal(h, 0xbc00);
  d = 1e6;
  hr_fill_uniform(HR_F16, &h, 1, 1, d, d);
  assert_int_equal(h, 0x7c00);
  float f = 0;
  hr_fill_uniform(HR_F32, &f, 1, 1, 0.1, 0.1);
  assert_true(f == 0.1f);
}

/* ---- 2. fill_uniform ---------------------------------------------------------------------- */

static void check_uniform(hr_dtype dt, size_t n, double lo, double hi) {
  size_t esz = hr_dtype_size(dt);
  unsigned char *a = xalloc(n * esz), *b = xalloc(n * esz), *c = xalloc(n * esz);
  hr_fill_uniform(dt, a, n, 42, lo, hi);
  hr_fill_uniform(dt, b, n, 42, lo, hi);
  hr_fill_uniform(dt, c, n, 43, lo, hi);
  assert_memory_equal(a, b, n * esz);
  size_t differ = 0;
  double sum = 0, vmin = INFINITY, vmax = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double v = hr_load(dt, a, i);
    assert_true(v >= lo && v <= hi); /* rounding to dt may reach hi */
    sum += v;
    vmin = fmin(vmin, v);
    vmax = fmax(vmax, v);
    if (hr_load(dt, c, i) != v) differ++;
  }
  assert_true(differ > n / 2);
  assert_true(vmax > vmin);
  assert_true(vmin < lo + 0.01 * (hi - lo) && vmax > hi - 0.01 * (hi - lo));
  double mean = sum / (double)n, sd_mean = (hi - lo) / sqrt(12.0 * (double)n);
  assert_true(fabs(mean - (lo + hi) / 2) < 6 * sd_mean);
  free(a);
  free(b);
  free(c);
}

static void test_fill_uniform(void **state) {
  (void)state;
  for (size_t k = 0; k < 3; k++) {
    check_uniform(all_dt[k], 100000, -2.0, 3.0);
    check_uniform(all_dt[k], 100000, 0.0, 1.0);
    check_uniform(all_dt[k], 3000000, -1.0, 1.0); /* threaded */
  }
}

static void test_fill_uniform_layout(void **state) {
  (void)state;
  /* the values do not depend on n (or on the thread count): a prefix of a long fill equals a
   * short fill with the same seed */
  size_t nbig = 5000003, nsmall = 100001;
  float *big = xalloc(nbig * 4), *small = xalloc(nsmall * 4);
  hr_fill_uniform(HR_F32, big, nbig, 7, -1, 1);
  hr_fill_uniform(HR_F32, small, nsmall, 7, -1, 1);
  assert_memory_equal(big, small, nsmall * 4);
  /* seed 0 is as good as any other; adjacent seeds do not share shifted streams */
  hr_fill_uniform(HR_F32, small, nsmall, 0, -1, 1);
  size_t zeros = 0, same = 0;
  for (size_t i = 0; i < nsmall; i++) zeros += small[i] == 0;
  assert_true(zeros < 10);
  hr_fill_uniform(HR_F32, big, nbig, 1, -1, 1);
  for (size_t i = 0; i + 65536 < nsmall; i++) same += small[i] == big[i + 65536];
  assert_true(same < 10);
  /* no repeats at any power-of-two stride within one fill */
  for (size_t stride = 1; stride < nbig; stride *= 2) {
    same = 0;
    for (size_t i = 0; i < 1000 && i + stride < nbig; i++) same += big[i] == big[i + stride];
    assert_true(same < 10);
  }
  /* never all zeros, even when the whole range rounds to zero */
  uint16_t h[8];
  hr_fill_uniform(HR_F16, h, 8, 1, 0, 1e-12);
  int nonzero = 0;
  for (int i = 0; i < 8; i++) nonzero |= (h[i] & 0x7fff) != 0;
  assert_true(nonzero);
  free(big);
  free(small);
}

/* ---- 3. row reductions -------------------------------------------------------------------- */

static double naive_reduce(hr_dtype dt, int op, const void *x, long r, long cols) {
  /* op: 0 sum, 1 max, 2 min, 3 prod, 4 abs sum */
  double v = op == 1 ? -INFINITY : op == 2 ? INFINITY : op == 3 ? 1.0 : 0.0;
  for (long c = 0; c < cols; c++) {
    double e = hr_load(dt, x, (size_t)r * (size_t)cols + (size_t)c);
    switch (op) {
    case 0: v += e; break;
    case 1: v = e > v ? e : v; break;
    case 2: v = e < v ? e : v; break;
    case 3: v *= e; break;
    case 4: v += fabs(e); break;
    }
  }
  return v;
}

/* Compare hr_row_reduce_ref / hr_row_abs_sum with the naive loop; rel is relative to sum|x|
 * for sums and to |result| for products; max/min must be exact. */
static void check_reduce(hr_dtype dt, long rows, long cols, double rel, uint64_t seed) {
  size_t n = (size_t)rows * (size_t)cols, esz = hr_dtype_size(dt);
  void *x = xalloc(n * esz), *xp = xalloc(n * esz);
  double *out = xalloc((size_t)rows * sizeof(double));
  double *out2 = xalloc((size_t)rows * sizeof(double));
  double *abs = xalloc((size_t)rows * sizeof(double));
  hr_fill_uniform(dt, x, n, seed, -1.0, 1.0);
  hr_fill_for_prod(dt, xp, n, (size_t)cols, seed + 1);
  hr_row_abs_sum(dt, x, rows, cols, abs);
  for (long r = 0; r < rows; r++) {
    double want = naive_reduce(dt, 4, x, r, cols);
    assert_true(fabs(abs[r] - want) <= rel * want);
    assert_true(abs[r] > 0);
  }
  for (int op = 0; op < 4; op++) {
    const void *in = op == HR_PROD ? xp : x;
    hr_row_reduce_ref(dt, (hr_op)op, in, rows, cols, out);
    hr_row_reduce_ref(dt, (hr_op)op, in, rows, cols, out2);
    assert_memory_equal(out, out2, (size_t)rows * sizeof(double)); /* deterministic */
    for (long r = 0; r < rows; r++) {
      double want = naive_reduce(dt, op, in, r, cols);
      switch (op) {
      case HR_SUM: assert_true(fabs(out[r] - want) <= rel * abs[r]); break;
      case HR_PROD:
        assert_true(isfinite(want) && want != 0);
        assert_true(fabs(out[r] - want) <= rel * fabs(want));
        break;
      default:
        if (out[r] != want) fail_msg("op %d row %ld: %.17g != %.17g", op, r, out[r], want);
      }
    }
  }
  free(x);
  free(xp);
  free(out);
  free(out2);
  free(abs);
}

static void test_reduce_small(void **state) {
  (void)state;
  for (size_t k = 0; k < 3; k++) {
    check_reduce(all_dt[k], 7, 1001, 1e-13, 11);
    check_reduce(all_dt[k], 1, 1, 0, 12);
    check_reduce(all_dt[k], 5, 32769, 1e-13, 13); /* one element past a chunk */
  }
}

static void test_reduce_many_rows(void **state) {
  (void)state;
  for (size_t k = 0; k < 3; k++) check_reduce(all_dt[k], 4099, 300, 1e-13, 21); /* threaded */
}

static void test_reduce_long_rows(void **state) {
  (void)state;
  check_reduce(HR_F32, 3, 3000001, 1e-9, 31); /* rows split across threads */
  check_reduce(HR_BF16, 2, 1500007, 1e-9, 32);
  /* all-positive data: the sum itself is large, relative error against it */
  long rows = 3, cols = 3000001;
  float *x = xalloc((size_t)rows * (size_t)cols * 4);
  double out[3];
  hr_fill_uniform(HR_F32, x, (size_t)rows * (size_t)cols, 33, 0.0, 1.0);
  hr_row_reduce_ref(HR_F32, HR_SUM, x, rows, cols, out);
  for (long r = 0; r < rows; r++) {
    double want = naive_reduce(HR_F32, 0, x, r, cols);
    assert_true(fabs(out[r] - want) <= 1e-9 * fabs(want));
    assert_true(fabs(out[r] / (double)cols - 0.5) < 0.01);
  }
  /* a NaN anywhere in a row makes its max/min NaN, whichever chunk it is in */
  x[cols + 2000000] = NAN;
  hr_row_reduce_ref(HR_F32, HR_MAX, x, rows, cols, out);
  assert_false(isnan(out[0]));
  assert_true(isnan(out[1]));
  assert_false(isnan(out[2]));
  hr_row_reduce_ref(HR_F32, HR_MIN, x, rows, cols, out);
  assert_true(isnan(out[1]));
  free(x);
}

/* ---- 4. softmax --------------------------------------------------------------------------- */

static void check_softmax(hr_dtype dt, long rows, long cols, double lo, double hi, double rel) {
  size_t n = (size_t)rows * (size_t)cols;
  void *x = xalloc(n * hr_dtype_size(dt));
  double *out = xalloc(n * sizeof(double));
  hr_fill_uniform(dt, x, n, 5, lo, hi);
  hr_row_softmax_ref(dt, x, rows, cols, out);
  for (long r = 0; r < rows; r++) {
    const double *o = out + (size_t)r * (size_t)cols;
    double m = -INFINITY, s = 0, so = 0, comp = 0; /* so + comp: Neumaier sum of the row */
    for (long c = 0; c < cols; c++) m = fmax(m, hr_load(dt, x, (size_t)r * (size_t)cols + c));
    for (long c = 0; c < cols; c++) s += exp(hr_load(dt, x, (size_t)r * (size_t)cols + c) - m);
    for (long c = 0; c < cols; c++) {
      double want = exp(hr_load(dt, x, (size_t)r * (size_t)cols + c) - m) / s;
      assert_true(o[c] >= 0 && o[c] <= 1);
      if (!(fabs(o[c] - want) <= rel * want + 1e-300)) /* slack for subnormal quotients */
        fail_msg("row %ld col %ld: %.17g want %.17g", r, c, o[c], want);
      double t = so + o[c];
      comp += fabs(so) >= o[c] ? (so - t) + o[c] : (o[c] - t) + so;
      so = t;
    }
    if (!(fabs(so + comp - 1.0) <= 1e-12)) fail_msg("row %ld sums to 1%+.3g", r, so + comp - 1);
  }
  free(x);
  free(out);
}

static void test_softmax(void **state) {
  (void)state;
  for (size_t k = 0; k < 3; k++) {
    check_softmax(all_dt[k], 5, 1001, -10, 10, 1e-13);
    check_softmax(all_dt[k], 3, 1, -1, 1, 0);          /* one column: all ones */
    check_softmax(all_dt[k], 2, 70001, -1000, 1000, 1e-12); /* needs the max shift */
  }
  check_softmax(HR_F32, 3000, 400, -5, 5, 1e-13);    /* threaded over rows */
  check_softmax(HR_F32, 2, 2000001, -20, 20, 1e-9);  /* rows split across threads */
}

/* ---- 5. compare --------------------------------------------------------------------------- */

static void test_compare(void **state) {
  (void)state;
  enum { N = 100 };
  float got[N];
  double want[N], atol1 = 1e-3, atolv[N];
  hr_report r;
  char buf[256];
  hr_fill_uniform(HR_F32, got, N, 9, -1, 1);
  for (int i = 0; i < N; i++) want[i] = got[i];

  assert_int_equal(hr_compare(HR_F32, got, want, N, &atol1, 1, 1e-3, &r), 0);
  assert_int_equal(r.n, N);
  assert_int_equal(r.bad, 0);
  assert_int_equal(r.unwritten, 0);
  assert_true(r.max_abs_err == 0 && r.max_rel_err == 0);
  hr_report_format(&r, buf, sizeof buf);
  assert_non_null(strstr(buf, "0/100 outside tolerance"));
  assert_non_null(strstr(buf, "0 unwritten"));
  assert_null(strchr(buf, '\n'));

  /* within tolerance through rtol */
  for (int i = 0; i < N; i++) want[i] = got[i] / (1 + 5e-4);
  assert_int_equal(hr_compare(HR_F32, got, want, N, &atol1, 1, 1e-3, &r), 0);
  assert_true(r.max_rel_err > 4e-4 && r.max_rel_err < 6e-4);
  assert_int_equal(hr_compare(HR_F32, got, want, N, (double[]){0}, 1, 1e-4, &r), 1);
  assert_int_equal(r.bad, N);
  for (int i = 0; i < N; i++) want[i] = got[i];

  /* out of tolerance */
  got[37] = (float)(want[37] + 0.5);
  got[60] = (float)(want[60] - 0.25);
  assert_int_equal(hr_compare(HR_F32, got, want, N, &atol1, 1, 1e-3, &r), 1);
  assert_int_equal(r.bad, 2);
  assert_int_equal(r.unwritten, 0);
  assert_int_equal(r.first_bad, 37);
  assert_true(r.first_got == (double)got[37]);
  assert_true(r.first_want == want[37]);
  assert_true(fabs(r.max_abs_err - 0.5) < 1e-6);
  hr_report_format(&r, buf, sizeof buf);
  assert_non_null(strstr(buf, "2/100 outside tolerance, first at [37]: got "));
  assert_non_null(strstr(buf, "max abs err 0.5"));
  assert_non_null(strstr(buf, "0 unwritten"));
  got[37] = (float)want[37];
  got[60] = (float)want[60];

  /* NaN */
  got[10] = NAN;
  assert_int_equal(hr_compare(HR_F32, got, want, N, &atol1, 1, 1e9, &r), 1);
  assert_int_equal(r.bad, 1);
  assert_int_equal(r.unwritten, 0);
  assert_int_equal(r.first_bad, 10);
  assert_true(isnan(r.first_got));
  got[10] = (float)want[10];

  /* poison: unwritten and bad */
  hr_fill_poison(&got[5], sizeof got[5]);
  hr_fill_poison(&got[99], sizeof got[99]);
  assert_int_equal(hr_compare(HR_F32, got, want, N, &atol1, 1, 1e9, &r), 1);
  assert_int_equal(r.bad, 2);
  assert_int_equal(r.unwritten, 2);
  assert_int_equal(r.first_bad, 5);
  hr_report_format(&r, buf, sizeof buf);
  assert_non_null(strstr(buf, "2 unwritten"));
  got[5] = (float)want[5];
  got[99] = (float)want[99];

  /* per-element atol */
  for (int i = 0; i < N; i++) atolv[i] = 0;
  atolv[3] = 1.0;
  got[3] = (float)(want[3] + 0.5);
  got[4] = (float)(want[4] + 0.5);
  assert_int_equal(hr_compare(HR_F32, got, want, N, atolv, N, 0, &r), 1);
  assert_int_equal(r.bad, 1);
  assert_int_equal(r.first_bad, 4);
  atolv[4] = 0.4;
  assert_int_equal(hr_compare(HR_F32, got, want, N, atolv, N, 0, &r), 1);
  atolv[4] = 0.6;
  assert_int_equal(hr_compare(HR_F32, got, want, N, atolv, N, 0, &r), 0);
  /* an atol array of the wrong length is a failure */
  assert_int_equal(hr_compare(HR_F32, got, want, N, atolv, 2, 0, &r), 1);
}

static void test_compare_16bit(void **state) {
  (void)state;
  enum { N = 64 };
  for (int k = 1; k < 3; k++) {
    hr_dtype dt = all_dt[k];
    uint16_t got[N];
    double want[N], atol = 0;
    hr_report r;
    hr_fill_uniform(dt, got, N, 3, -4, 4);
    for (int i = 0; i < N; i++) want[i] = hr_load(dt, got, i);
    assert_int_equal(hr_compare(dt, got, want, N, &atol, 1, 0, &r), 0);
    hr_fill_poison(&got[7], 2);
    got[9] = dt == HR_F16 ? 0x7e00 : 0x7fc0; /* a NaN that is not the poison */
    assert_int_equal(hr_compare(dt, got, want, N, &atol, 1, 1, &r), 1);
    assert_int_equal(r.bad, 2);
    assert_int_equal(r.unwritten, 1);
    assert_int_equal(r.first_bad, 7);
    /* one ulp off with rtol just below / above one ulp */
    for (int i = 0; i < N; i++) got[i] = dt == HR_F16 ? hr_f32_to_f16(1.0f) : hr_f32_to_bf16(1.0f);
    for (int i = 0; i < N; i++) want[i] = 1.0;
    got[20]++;
    double ulp = dt == HR_F16 ? 0x1p-10 : 0x1p-7;
    assert_int_equal(hr_compare(dt, got, want, N, &atol, 1, 0.9 * ulp, &r), 1);
    assert_int_equal(r.first_bad, 20);
    assert_true(r.first_got == 1.0 + ulp);
    assert_int_equal(hr_compare(dt, got, want, N, &atol, 1, 1.1 * ulp, &r), 0);
  }
}

static void test_compare_large(void **state) {
  (void)state;
  size_t n = 3000000;
  float *got = xalloc(n * 4);
  double *want = xalloc(n * sizeof(double)), atol = 1e-6;
  hr_report r;
  hr_fill_uniform(HR_F32, got, n, 4, -1, 1);
  for (size_t i = 0; i < n; i++) want[i] = got[i];
  assert_int_equal(hr_compare(HR_F32, got, want, n, &atol, 1, 0, &r), 0);
  assert_int_equal(r.n, n);
  /* bad elements in the ranges of several threads: the first one is reported */
  got[2999999] = (float)(want[2999999] + 1);
  got[1000001] = (float)(want[1000001] + 0.5);
  got[1800001] = (float)(want[1800001] + 0.5);
  hr_fill_poison(&got[2000000], 4);
  assert_int_equal(hr_compare(HR_F32, got, want, n, &atol, 1, 0, &r), 1);
  assert_int_equal(r.n, n);
  assert_int_equal(r.bad, 4);
  assert_int_equal(r.unwritten, 1);
  assert_int_equal(r.first_bad, 1000001);
  assert_true(r.first_want == want[1000001]);
  assert_true(fabs(r.max_abs_err - 1) < 1e-6);
  free(got);
  free(want);
}

/* ---- 6. fill_for_prod --------------------------------------------------------------------- */

static void test_fill_for_prod(void **state) {
  (void)state;
  size_t n = 1000000;
  for (size_t k = 0; k < 3; k++) {
    hr_dtype dt = all_dt[k];
    void *x = xalloc(n * hr_dtype_size(dt));
    hr_fill_for_prod(dt, x, n, n, 77);
    float pf = 1.0f;
    double pd = 1.0;
    for (size_t i = 0; i < n; i++) {
      double v = hr_load(dt, x, i);
      assert_true(v > 0.99 && v < 1.01);
      pf *= (float)v;
      pd *= v;
    }
    assert_true(isfinite(pf) && pf != 0.0f);
    assert_true(pd > 1e-6 && pd < 1e6);
    free(x);
  }
  /* Rows of 640000: a = 0.0025, where rounding exp(u) to bf16 straight would be most biased
   * (about 11% of the factors round down to 1 - 2^-8, none up: a product of e^-270 per row).
   * The log of each row's product stays with the f32 one (the same u, rounded finer). */
  long rows = 3, cols = 640000;
  n = (size_t)rows * (size_t)cols;
  float *x32 = xalloc(n * 4);
  uint16_t *x16 = xalloc(n * 2);
  hr_fill_for_prod(HR_F32, x32, n, (size_t)cols, 99);
  for (int k = 1; k < 3; k++) {
    hr_fill_for_prod(all_dt[k], x16, n, (size_t)cols, 99);
    for (long r = 0; r < rows; r++) {
      double l32 = 0, l16 = 0;
      for (long c = 0; c < cols; c++) {
        l32 += log((double)x32[r * cols + c]);
        l16 += log(hr_load(all_dt[k], x16, (size_t)(r * cols + c)));
      }
      if (!(fabs(l32) < 10 && fabs(l16 - l32) < 0.05))
        fail_msg("%s row %ld: log of product %g, f32 %g", hr_dtype_name(all_dt[k]), r, l16, l32);
    }
  }
  free(x32);
  free(x16);
  /* short rows: factors up to exp(0.5) */
  float y[1000];
  hr_fill_for_prod(HR_F32, y, 1000, 4, 3);
  float mn = INFINITY, mx = 0;
  for (int i = 0; i < 1000; i++) { mn = fminf(mn, y[i]); mx = fmaxf(mx, y[i]); }
  assert_true(mn >= expf(-0.5f) * 0.999f && mx <= expf(0.5f) * 1.001f);
  assert_true(mn < 0.7f && mx > 1.5f);
}

/* ---- misc --------------------------------------------------------------------------------- */

static void test_misc(void **state) {
  (void)state;
  hr_dtype dt;
  hr_op op;
  assert_int_equal(hr_dtype_parse("f32", &dt), 0);
  assert_int_equal(dt, HR_F32);
  assert_int_equal(hr_dtype_parse("f16", &dt), 0);
  assert_int_equal(dt, HR_F16);
  assert_int_equal(hr_dtype_parse("bf16", &dt), 0);
  assert_int_equal(dt, HR_BF16);
  assert_int_equal(hr_dtype_parse("f64", &dt), -1);
  assert_string_equal(hr_dtype_name(HR_BF16), "bf16");
  assert_int_equal(hr_dtype_size(HR_F32), 4);
  assert_int_equal(hr_dtype_size(HR_F16), 2);
  assert_int_equal(hr_op_parse("prod", &op), 0);
  assert_int_equal(op, HR_PROD);
  assert_int_equal(hr_op_parse("min", &op), 0);
  assert_int_equal(op, HR_MIN);
  assert_int_equal(hr_op_parse("avg", &op), -1);
  assert_true(hr_softmax_rtol(HR_F32) == 2e-5 && hr_softmax_atol(HR_F32) == 1e-7);
  assert_true(hr_softmax_rtol(HR_F16) == 2e-3 && hr_softmax_atol(HR_F16) == 0x1p-15);
  assert_true(hr_softmax_rtol(HR_BF16) == 1.6e-2 && hr_softmax_atol(HR_BF16) == 0x1p-127);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_round_nearest_even),
      cmocka_unit_test(test_overflow_nan),
      cmocka_unit_test(test_exhaustive),
      cmocka_unit_test(test_fill_single_rounding),
      cmocka_unit_test(test_fill_uniform),
      cmocka_unit_test(test_fill_uniform_layout),
      cmocka_unit_test(test_reduce_small),
      cmocka_unit_test(test_reduce_many_rows),
      cmocka_unit_test(test_reduce_long_rows),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_compare),
      cmocka_unit_test(test_compare_16bit),
      cmocka_unit_test(test_compare_large),
      cmocka_unit_test(test_fill_for_prod),
      cmocka_unit_test(test_misc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
