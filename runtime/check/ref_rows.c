/* ref_rows.c: the references of row_reduce and row_softmax (hostref.h), in double.  Rows are
 * computed over fixed chunks whose partial results combine in chunk order, so the result never
 * depends on the number of threads. */
#include <stdio.h>
#include <stdlib.h>

#include "check_internal.h"

/* Each row is cut into chunks of ROW_CHUNK elements (the last may be shorter); a work item is
 * one (row, chunk). Chunk results are combined per row in chunk order. */
#define ROW_CHUNK 32768L

enum rk { RK_SUM, RK_ABS, RK_MAX, RK_MIN, RK_PROD, RK_EXPSUM, RK_DIV };

#define LD_F32(p, i) ((double)((const float *)(p))[i])
#define LD_F16(p, i) ((double)f16_to_f32_inline(((const uint16_t *)(p))[i]))
#define LD_BF16(p, i) ((double)bf16_to_f32_inline(((const uint16_t *)(p))[i]))

#define CHUNK_KERNELS(SFX, LD)                                                               \
  static double sum_##SFX(const void *p, long n) {                                           \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                   \
    long i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) {                                                             \
      s0 += LD(p, i); s1 += LD(p, i + 1); s2 += LD(p, i + 2); s3 += LD(p, i + 3);            \
    }                                                                                        \
    for (; i < n; i++) s0 += LD(p, i);                                                       \
    return (s0 + s1) + (s2 + s3);                                                            \
  }                                                                                          \
  static double abs_##SFX(const void *p, long n) {                                           \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                   \
    long i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) {                                                             \
      s0 += fabs(LD(p, i)); s1 += fabs(LD(p, i + 1));                                        \
      s2 += fabs(LD(p, i + 2)); s3 += fabs(LD(p, i + 3));                                    \
    }                                                                                        \
    for (; i < n; i++) s0 += fabs(LD(p, i));                                                 \
    return (s0 + s1) + (s2 + s3);                                                            \
  }                                                                                          \
  static double prod_##SFX(const void *p, long n) {                                          \
    double s = 1;                                                                            \
    for (long i = 0; i < n; i++) s *= LD(p, i);                                              \
    return s;                                                                                \
  }                                                                                          \
  static double max_##SFX(const void *p, long n) {                                           \
    double m = -INFINITY;                                                                    \
    int nan = 0;                                                                             \
    for (long i = 0; i < n; i++) {                                                           \
      double v = LD(p, i);                                                                   \
      nan |= v != v;                                                                         \
      m = v > m ? v : m;                                                                     \
    }                                                                                        \
    return nan ? NAN : m;                                                                    \
  }                                                                                          \
  static double min_##SFX(const void *p, long n) {                                           \
    double m = INFINITY;                                                                     \
    int nan = 0;                                                                             \
    for (long i = 0; i < n; i++) {                                                           \
      double v = LD(p, i);                                                                   \
      nan |= v != v;                                                                         \
      m = v < m ? v : m;                                                                     \
    }                                                                                        \
    return nan ? NAN : m;                                                                    \
  }                                                                                          \
  static double expsum_##SFX(const void *p, long n, double mx, double *o) {                  \
    double s = 0;                                                                            \
    for (long i = 0; i < n; i++) {                                                           \
      double e = exp(LD(p, i) - mx);                                                         \
      o[i] = e;                                                                              \
      s += e;                                                                                \
    }                                                                                        \
    return s;                                                                                \
  }

CHUNK_KERNELS(f32, LD_F32)
CHUNK_KERNELS(f16, LD_F16)
CHUNK_KERNELS(bf16, LD_BF16)

typedef struct {
  hr_dtype dt;
  enum rk kind;
  const void *x;
  long cols, nch;
  double *part;        /* [rows * nch] chunk results */
  double *out;         /* softmax: [rows * cols] */
  const double *rowv;  /* softmax: per-row max (RK_EXPSUM) or sum (RK_DIV) */
} row_job;

#define DISPATCH(FN, ...)                                                                    \
  (j->dt == HR_F32 ? FN##_f32(__VA_ARGS__)                                                   \
                   : j->dt == HR_F16 ? FN##_f16(__VA_ARGS__) : FN##_bf16(__VA_ARGS__))

static void row_range(void *ctx, size_t w0, size_t w1, int tid) {
  const row_job *j = ctx;
  size_t esz = hr_dtype_size(j->dt);
  (void)tid;
  for (size_t w = w0; w < w1; w++) {
    long r = (long)(w / (size_t)j->nch), c = (long)(w % (size_t)j->nch);
    long c0 = c * ROW_CHUNK, n = j->cols - c0 < ROW_CHUNK ? j->cols - c0 : ROW_CHUNK;
    size_t e0 = (size_t)r * (size_t)j->cols + (size_t)c0; /* first element of the chunk */
    const void *p = (const char *)j->x + e0 * esz;
    double v = 0;
    switch (j->kind) {
    case RK_SUM: v = DISPATCH(sum, p, n); break;
    case RK_ABS: v = DISPATCH(abs, p, n); break;
    case RK_MAX: v = DISPATCH(max, p, n); break;
    case RK_MIN: v = DISPATCH(min, p, n); break;
    case RK_PROD: v = DISPATCH(prod, p, n); break;
    case RK_EXPSUM: v = DISPATCH(expsum, p, n, j->rowv[r], j->out + e0); break;
    case RK_DIV: {
      double s = j->rowv[r], *o = j->out + e0;
      for (long i = 0; i < n; i++) o[i] /= s;
      break;
    }
    }
    j->part[w] = v;
  }
}

/* Combine the chunk results of each row in chunk order. */
static void row_combine(enum rk kind, const double *part, long rows, long nch, double *out) {
  for (long r = 0; r < rows; r++) {
    const double *p = part + (size_t)r * (size_t)nch;
    double v = p[0];
    int nan = v != v;
    for (long c = 1; c < nch; c++) {
      double u = p[c];
      nan |= u != u;
      switch (kind) {
      case RK_MAX: v = u > v ? u : v; break;
      case RK_MIN: v = u < v ? u : v; break;
      case RK_PROD: v *= u; break;
      default: v += u; break;
      }
    }
    out[r] = (kind == RK_MAX || kind == RK_MIN) && nan ? NAN : v;
  }
}

static void row_pass(row_job *j, long rows) {
  size_t items = (size_t)rows * (size_t)j->nch;
  hr_parallel_for(items, (size_t)rows * (size_t)j->cols, row_range, j);
}

static long row_nchunks(long cols) { return cols > 0 ? (cols + ROW_CHUNK - 1) / ROW_CHUNK : 1; }

static void row_reduce(hr_dtype dt, enum rk kind, const void *x, long rows, long cols,
                       double *out) {
  if (rows <= 0 || !out) return;
  if (cols < 0) cols = 0;
  long nch = row_nchunks(cols);
  double *part = hr_xmalloc((size_t)rows * (size_t)nch * sizeof(double));
  row_job j = {dt, kind, x, cols, nch, part, NULL, NULL};
  row_pass(&j, rows);
  row_combine(kind, part, rows, nch, out);
  free(part);
}

void hr_row_reduce_ref(hr_dtype dt, hr_op op, const void *x, long rows, long cols, double *out) {
  enum rk kind = RK_SUM;
  switch (op) {
  case HR_SUM: kind = RK_SUM; break;
  case HR_MAX: kind = RK_MAX; break;
  case HR_MIN: kind = RK_MIN; break;
  case HR_PROD: kind = RK_PROD; break;
  }
  row_reduce(dt, kind, x, rows, cols, out);
}

void hr_row_abs_sum(hr_dtype dt, const void *x, long rows, long cols, double *out) {
  row_reduce(dt, RK_ABS, x, rows, cols, out);
}

void hr_row_softmax_ref(hr_dtype dt, const void *x, long rows, long cols, double *out) {
  if (rows <= 0 || cols <= 0 || !out) return;
  long nch = row_nchunks(cols);
  double *part = hr_xmalloc((size_t)rows * (size_t)nch * sizeof(double));
  double *rowv = hr_xmalloc((size_t)rows * sizeof(double));
  row_job j = {dt, RK_MAX, x, cols, nch, part, out, rowv};
  row_pass(&j, rows); /* 1: max of each row */
  row_combine(RK_MAX, part, rows, nch, rowv);
  for (long r = 0; r < rows; r++) /* a row of -inf only: exp(-inf - 0) = 0, then 0/0 = NaN */
    if (rowv[r] == -INFINITY) rowv[r] = 0;
  j.kind = RK_EXPSUM; /* 2: out = exp(x - max), and the sum of each row */
  row_pass(&j, rows);
  row_combine(RK_SUM, part, rows, nch, rowv);
  j.kind = RK_DIV; /* 3: out /= sum */
  row_pass(&j, rows);
  free(rowv);
  free(part);
}
