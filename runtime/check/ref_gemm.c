/* ref_gemm.c: the GEMM's reference and checks (ref_gemm.h). */
#include <stdio.h>
#include <stdlib.h>

#include "check_internal.h"
#include "ref_gemm.h"

double ref_gemm_unit_roundoff(hr_dtype dt) {
  return dt == HR_BF16 ? ldexp(1, -8) : dt == HR_F16 ? ldexp(1, -11) : ldexp(1, -24);
}

long long *ref_gemm_pick_rows(long long M, long long N, long long K, int shards, long long ms, unsigned long long seed,
                              long long *nrows, int *all) {
  *all = (double)M * (double)N * (double)K <= 2147483648.0;
  long long n = 0, *rows;
  if (*all) {
    if (!(rows = malloc((size_t)(M > 0 ? M : 1) * sizeof *rows))) return NULL;
    for (long long i = 0; i < M; i++) rows[n++] = i;
    *nrows = n;
    return rows;
  }
  int extra = 64 / shards < 2 ? 2 : 64 / shards;
  if (!(rows = malloc((size_t)shards * (size_t)(extra + 2) * sizeof *rows))) return NULL;
  uint64_t rng = seed;
  for (int p = 0; p < shards; p++) {
    long long first = (long long)p * ms;
    rows[n++] = first;
    rows[n++] = first + ms - 1;
    for (int e = 0; e < extra; e++) {
      rng = hr_mix64(rng);
      rows[n++] = first + (long long)(rng % (uint64_t)ms);
    }
  }
  /* sort, unique: the reference does each row once */
  for (long long i = 1; i < n; i++)
    for (long long j = i; j > 0 && rows[j - 1] > rows[j]; j--) { long long t = rows[j]; rows[j] = rows[j - 1]; rows[j - 1] = t; }
  long long u = 0;
  for (long long i = 0; i < n; i++)
    if (!u || rows[u - 1] != rows[i]) rows[u++] = rows[i];
  *nrows = u;
  return rows;
}

typedef struct gemm_job {
  hr_dtype dt;
  const void *a;
  const float *bkn;   /* B as K x N floats (exact for f16/bf16), whatever its layout */
  long long N, K;
  const long long *rows;
  double *want, *scale;
  int failed[HR_MAX_THREADS];
} gemm_job;

static void gemm_range(void *ctx, size_t t0, size_t t1, int tid) {
  gemm_job *j = ctx;
  long long N = j->N, K = j->K;
  double *arow = malloc((size_t)(K > 0 ? K : 1) * sizeof *arow);
  if (!arow) { j->failed[tid] = 1; return; }
  for (size_t t = t0; t < t1; t++) {
    long long i = j->rows[t];
    double *want = j->want + t * (size_t)N, *scale = j->scale + t * (size_t)N;
    for (long long kk = 0; kk < K; kk++) arow[kk] = hr_load(j->dt, j->a, (size_t)i * (size_t)K + (size_t)kk);
    for (long long jj = 0; jj < N; jj++) want[jj] = scale[jj] = 0;
    for (long long kk = 0; kk < K; kk++) {
      double a = arow[kk];
      if (a == 0) continue;
      const float *b = j->bkn + (size_t)kk * (size_t)N;
      for (long long jj = 0; jj < N; jj++) {
        double p = a * (double)b[jj];   /* exact: two 11- or 8-bit significands */
        want[jj] += p;
        scale[jj] += fabs(p);
      }
    }
  }
  free(arow);
}

static size_t b_at(int bcol, long long N, long long K, long long k, long long j) {
  return bcol ? (size_t)j * (size_t)K + (size_t)k : (size_t)k * (size_t)N + (size_t)j;
}

int ref_gemm(hr_dtype dt, const void *a, const void *b, int bcol, long long N, long long K, const long long *rows,
             long long nrows, double *want, double *scale) {
  gemm_job *j = calloc(1, sizeof *j);
  float *bkn = malloc((size_t)(K * N > 0 ? K * N : 1) * sizeof *bkn);
  if (!j || !bkn) { free(j); free(bkn); return -1; }
  for (long long kk = 0; kk < K; kk++)
    for (long long jj = 0; jj < N; jj++)
      bkn[(size_t)kk * (size_t)N + (size_t)jj] = (float)hr_load(dt, b, b_at(bcol, N, K, kk, jj));
  *j = (gemm_job){.dt = dt, .a = a, .bkn = bkn, .N = N, .K = K, .rows = rows, .want = want, .scale = scale};
  double work = (double)nrows * (double)N * (double)K;
  int nt = hr_parallel_for((size_t)nrows, work > 1e18 ? (size_t)-1 : (size_t)work, gemm_range, j), bad = 0;
  for (int t = 0; t < nt; t++) bad |= j->failed[t];
  free(bkn);
  free(j);
  return bad ? -1 : 0;
}

int ref_gemm_compare(hr_dtype dt, const void *got, long long N, const long long *rows, long long nrows,
                     const double *want, const double *scale, hr_report *r) {
  size_t n = (size_t)nrows * (size_t)N;
  double *atol = hr_xmalloc(n * sizeof *atol), tiny = ldexp(1, -24);
  for (size_t i = 0; i < n; i++) atol[i] = ldexp(scale[i], -16) + tiny;
  hr_tol tol = {atol, n, 2 * ref_gemm_unit_roundoff(dt), 0};
  hr_report_init(r, (size_t)N);
  int bad = hr_compare_rows(r, dt, got, rows, (size_t)nrows, want, &tol);
  free(atol);
  return bad;
}

int ref_gemm_compare_split(hr_dtype dt, const void *got, long long N, const long long *rows, long long nrows,
                           const double *want, const double *scale, int split, hr_report *r) {
  size_t n = (size_t)nrows * (size_t)N;
  double *atol = hr_xmalloc((n ? n : 1) * sizeof *atol), u = ref_gemm_unit_roundoff(dt);
  for (size_t i = 0; i < n; i++) atol[i] = (split + 1) * u * scale[i];
  hr_tol tol = {atol, n, 0, 0};
  hr_report_init(r, (size_t)N);
  int bad = hr_compare_rows(r, dt, got, rows, (size_t)nrows, want, &tol);
  free(atol);
  return bad;
}

int ref_gemm_cross_check(hr_dtype dt, const void *a, const void *b, int bcol, long long M, long long N, long long K,
                         const void *x, const void *y, hr_report *r) {
  double *rowabs = malloc((size_t)(M > 0 ? M : 1) * sizeof *rowabs), *colmax = calloc((size_t)(N > 0 ? N : 1), sizeof *colmax);
  double *want = malloc((size_t)(N > 0 ? N : 1) * sizeof *want), *atol = malloc((size_t)(N > 0 ? N : 1) * sizeof *atol);
  hr_report_init(r, (size_t)N);
  if (!rowabs || !colmax || !want || !atol) { free(rowabs); free(colmax); free(want); free(atol); return -1; }
  for (long long i = 0; i < M; i++) {
    double s = 0;
    for (long long k = 0; k < K; k++) s += fabs(hr_load(dt, a, (size_t)i * (size_t)K + (size_t)k));
    rowabs[i] = s;
  }
  for (long long k = 0; k < K; k++)
    for (long long j = 0; j < N; j++) {
      double v = fabs(hr_load(dt, b, b_at(bcol, N, K, k, j)));
      if (v > colmax[j]) colmax[j] = v;
    }
  hr_tol tol = {atol, (size_t)N, 4 * ref_gemm_unit_roundoff(dt), 1};
  double tiny = ldexp(1, -23);
  int bad = 0;
  for (long long i = 0; i < M; i++) {   /* a row at a time: an M x N tolerance would not fit */
    for (long long j = 0; j < N; j++) {
      want[j] = hr_load(dt, y, (size_t)i * (size_t)N + (size_t)j);
      atol[j] = ldexp(rowabs[i] * colmax[j], -15) + tiny;
    }
    bad = hr_compare_rows(r, dt, x, &i, 1, want, &tol);
  }
  free(rowabs); free(colmax); free(want); free(atol);
  return bad;
}
