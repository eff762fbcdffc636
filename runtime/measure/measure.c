/* measure.c: the timing policy (measure.h). */
#include <stdio.h>
#include <stdlib.h>

#include "measure.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double measure_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int measure_rotation_sets(size_t bytes_per_set) {
  const size_t l2x3 = (size_t)192 << 20;
  if (bytes_per_set >= l2x3) return 1;
  size_t n = (l2x3 + bytes_per_set - 1) / (bytes_per_set ? bytes_per_set : 1);
  return n > 16 ? 16 : (int)n;
}

#define CU(call, what)                                         \
  do {                                                         \
    CUresult r_ = (call);                                      \
    if (r_ != CUDA_SUCCESS) {                                  \
      drv_describe(d, r_, what, err, errlen);                  \
      goto out;                                                \
    }                                                          \
  } while (0)

int measure_each_ms(const drv_table *d, const measure_op *op, int warmup, int iters, double *ms, char *err,
                    size_t errlen) {
  CUevent a = NULL, b = NULL;
  int rc = -1;
  double *v = calloc((size_t)(iters > 0 ? iters : 1), sizeof *v);
  if (!v) { snprintf(err, errlen, "out of host memory for %d timings", iters); return -1; }
  CU(d->cuEventCreate(&a, 0), "cuEventCreate");
  CU(d->cuEventCreate(&b, 0), "cuEventCreate");
  for (int i = -warmup; i < iters; i++) {
    int set = (i + warmup) % op->nsets;
    CU(d->cuEventRecord(a, NULL), "cuEventRecord");
    if (op->launch(op->ud, set, NULL, err, errlen)) goto out;
    CU(d->cuEventRecord(b, NULL), "cuEventRecord");
    CU(d->cuEventSynchronize(b), "the timed launch");
    float f;
    CU(d->cuEventElapsedTime(&f, a, b), "cuEventElapsedTime");
    if (i >= 0) v[i] = f;
  }
  *ms = measure_median(v, iters);
  rc = 0;
out:
  free(v);
  if (a) d->cuEventDestroy(a);
  if (b) d->cuEventDestroy(b);
  return rc;
}

int measure_back_to_back_ms(const drv_table *d, const measure_op *op, int warmup, int iters, double *ms,
                            char *err, size_t errlen) {
  CUevent a = NULL, b = NULL;
  int rc = -1;
  CU(d->cuEventCreate(&a, 0), "cuEventCreate");
  CU(d->cuEventCreate(&b, 0), "cuEventCreate");
  for (int i = 0; i < warmup; i++)
    if (op->launch(op->ud, i % op->nsets, NULL, err, errlen)) goto out;
  CU(d->cuEventRecord(a, NULL), "cuEventRecord");
  for (int i = 0; i < iters; i++)
    if (op->launch(op->ud, i % op->nsets, NULL, err, errlen)) goto out;
  CU(d->cuEventRecord(b, NULL), "cuEventRecord");
  CU(d->cuEventSynchronize(b), "the timed launches");
  float f = 0;
  CU(d->cuEventElapsedTime(&f, a, b), "cuEventElapsedTime");
  *ms = f / (iters > 0 ? iters : 1);
  rc = 0;
out:
  if (a) d->cuEventDestroy(a);
  if (b) d->cuEventDestroy(b);
  return rc;
}

int measure_copy_launch(void *ud, int set, CUstream stream, char *err, size_t errlen) {
  const measure_copy *c = ud;
  const drv_table *d = c->d;
  (void)set;
  CU(d->cuMemcpyDtoDAsync(c->dst, c->src, c->bytes, stream), "cuMemcpyDtoDAsync");
  return 0;
out:
  return -1;
}
