/* compare.c: the one comparison of runtime/check/ (hostref.h): every family's output, and the
 * GEMM's sampled rows and its cross-check with cuBLAS, go through hr_compare_rows, so "bad",
 * "unwritten" and the tolerance mean the same thing everywhere. */
#include <stdio.h>
#include <stdlib.h>

#include "check_internal.h"

typedef struct {
  hr_dtype dt;
  const void *got;
  size_t cols;
  const long long *rows;
  const double *want;
  const hr_tol *tol;
  hr_report rep[HR_MAX_THREADS];
} cmp_job;

/* element t of the compared set is got[at] */
static inline void cmp_one(hr_report *r, size_t at, int poison, double g, double w, double atol,
                           const hr_tol *t) {
  int bad;
  if (poison) {
    r->unwritten++;
    bad = 1;
  } else if (g != g) {
    r->nans++;
    bad = 1;
  } else if (g == w) { /* also equal infinities */
    bad = 0;
  } else {
    double err = fabs(g - w), mag = t->rtol_of_larger && fabs(g) > fabs(w) ? fabs(g) : fabs(w);
    double tol = atol + t->rtol * mag;
    bad = !(err <= tol); /* NaN in want or atol: bad */
    if (err > r->max_abs_err) r->max_abs_err = err;
    if (w != 0) {
      double rel = err / fabs(w);
      if (rel > r->max_rel_err) r->max_rel_err = rel;
    }
    double ratio = tol > 0 ? err / tol : INFINITY;
    if (ratio > r->worst) {
      r->worst = ratio;
      r->worst_at = at;
      r->worst_got = g;
      r->worst_want = w;
      r->worst_tol = tol;
    }
  }
  if (bad) {
    if (r->bad == 0) {
      r->first_bad = at;
      r->first_got = g;
      r->first_want = w;
    }
    r->bad++;
  }
}

#define CMP_LOOP(BITS_T, POISON, VALUE)                                                      \
  do {                                                                                       \
    const BITS_T *gp = j->got;                                                               \
    for (size_t t = i0; t < i1; t++) {                                                       \
      size_t row = t / j->cols, col = t % j->cols;                                           \
      size_t at = (j->rows ? (size_t)j->rows[row] : row) * j->cols + col;                    \
      BITS_T b = gp[at];                                                                     \
      double atol = j->tol->n_atol == 1 ? j->tol->atol[0] : j->tol->atol[t];                 \
      cmp_one(r, at, b == (POISON), (VALUE), j->want[t], atol, j->tol);                      \
    }                                                                                        \
  } while (0)

static void cmp_range(void *ctx, size_t i0, size_t i1, int tid) {
  cmp_job *j = ctx;
  hr_report *r = &j->rep[tid];
  memset(r, 0, sizeof *r);
  r->n = i1 - i0;
  switch (j->dt) {
  case HR_F32: CMP_LOOP(uint32_t, 0xffffffffu, (double)f32_from_bits(b)); break;
  case HR_F16: CMP_LOOP(uint16_t, 0xffffu, (double)f16_to_f32_inline(b)); break;
  case HR_BF16: CMP_LOOP(uint16_t, 0xffffu, (double)bf16_to_f32_inline(b)); break;
  }
}

void hr_report_init(hr_report *r, size_t cols) {
  memset(r, 0, sizeof *r);
  r->cols = cols ? cols : 1;
}

/* p's counts into r; p covers later elements than r (the order of the first bad and the worst) */
static void report_merge(hr_report *r, const hr_report *p) {
  if (p->bad && r->bad == 0) {
    r->first_bad = p->first_bad;
    r->first_got = p->first_got;
    r->first_want = p->first_want;
  }
  if (p->worst > r->worst) {
    r->worst = p->worst;
    r->worst_at = p->worst_at;
    r->worst_got = p->worst_got;
    r->worst_want = p->worst_want;
    r->worst_tol = p->worst_tol;
  }
  r->n += p->n;
  r->bad += p->bad;
  r->unwritten += p->unwritten;
  r->nans += p->nans;
  if (p->max_abs_err > r->max_abs_err) r->max_abs_err = p->max_abs_err;
  if (p->max_rel_err > r->max_rel_err) r->max_rel_err = p->max_rel_err;
}

int hr_compare_rows(hr_report *r, hr_dtype dt, const void *got, const long long *rows, size_t nrows,
                    const double *want, const hr_tol *tol) {
  static const double zero = 0;
  size_t cols = r->cols, n = nrows * cols;
  hr_tol t = *tol;
  if (!t.atol || t.n_atol == 0) { t.atol = &zero; t.n_atol = 1; }
  if (t.n_atol != 1 && t.n_atol != n) { /* a caller error: every element is bad */
    hr_report p;
    hr_report_init(&p, cols);
    p.n = p.bad = n;
    p.first_got = p.first_want = NAN;
    report_merge(r, &p);
    return r->bad ? 1 : 0;
  }
  if (n == 0) return r->bad ? 1 : 0;
  cmp_job *j = hr_xmalloc(sizeof *j);
  j->dt = dt;
  j->got = got;
  j->cols = cols;
  j->rows = rows;
  j->want = want;
  j->tol = &t;
  int nt = hr_parallel_for(n, n, cmp_range, j);
  for (int i = 0; i < nt; i++) report_merge(r, &j->rep[i]); /* in index order */
  free(j);
  return r->bad ? 1 : 0;
}

int hr_compare(hr_dtype out_dt, const void *got, const double *want, size_t n,
               const double *atol, size_t n_atol, double rtol, hr_report *r) {
  hr_report local;
  if (!r) r = &local;
  hr_report_init(r, n);
  hr_tol t = {atol, n_atol, rtol, 0};
  return hr_compare_rows(r, out_dt, got, NULL, n ? 1 : 0, want, &t);
}

void hr_report_format(const hr_report *r, char *buf, size_t len) {
  if (!buf || len == 0) return;
  if (!r) { snprintf(buf, len, "no report"); return; }
  if (r->bad)
    snprintf(buf, len,
             "%zu/%zu outside tolerance, first at [%zu]: got %.9g want %.9g; "
             "max abs err %.3g, max rel err %.3g; %zu unwritten",
             r->bad, r->n, r->first_bad, r->first_got, r->first_want, r->max_abs_err,
             r->max_rel_err, r->unwritten);
  else
    snprintf(buf, len,
             "0/%zu outside tolerance; max abs err %.3g, max rel err %.3g; %zu unwritten", r->n,
             r->max_abs_err, r->max_rel_err, r->unwritten);
}

void hr_report_format_worst(const hr_report *r, char *buf, size_t len) {
  if (!buf || len == 0) return;
  size_t at = 0, outside = r->bad - r->unwritten - r->nans;
  int w;
  /* each piece is clipped at the buffer's end: a short line, never an overrun */
#define PIECE(...)                                                  \
  do {                                                              \
    if (at < len && (w = snprintf(buf + at, len - at, __VA_ARGS__)) > 0) at += (size_t)w; \
  } while (0)
  buf[0] = 0;
  if (r->unwritten) PIECE("%zu elements never written (still the 0xFF poison); ", r->unwritten);
  if (r->nans) PIECE("%zu other NaNs; ", r->nans);
  if (outside) PIECE("%zu of %zu outside tolerance; ", outside, r->n);
  if (r->worst > 0)
    PIECE("%zu elements compared, worst |err|/tol %.3g at row %zu col %zu: got %.6g want %.6g (tol %.3g)", r->n,
          r->worst, r->worst_at / r->cols, r->worst_at % r->cols, r->worst_got, r->worst_want, r->worst_tol);
  else
    PIECE("%zu elements compared, every finite one equal", r->n);
#undef PIECE
}

/* ---- tolerances --------------------------------------------------------------------------- */

double hr_softmax_rtol(hr_dtype out_dt) {
  switch (out_dt) {
  case HR_F32: return 2e-5;
  case HR_F16: return 2e-3;
  case HR_BF16: return 1.6e-2;
  }
  return 2e-5;
}

double hr_softmax_atol(hr_dtype out_dt) {
  switch (out_dt) {
  case HR_F32: return 1e-7;
  case HR_F16: return 0x1p-15;   /* half the smallest normal 2^-14: 3.05e-5 */
  case HR_BF16: return 0x1p-127; /* half the smallest normal 2^-126: 5.88e-39 */
  }
  return 1e-7;
}

