/* ref_allreduce_norm.c: the reference of family allreduce_norm (ref_allreduce_norm.h). */
#include <stdlib.h>

#include "check_internal.h"
#include "ref_allreduce_norm.h"

static float load_f(hr_dtype dt, const void *p, size_t i) { return (float)hr_load(dt, p, i); }   /* exact */

int ref_allreduce_norm(hr_dtype dt, int nranks, long rows, long cols, ref_fill_fn fill, void *fill_ud, const void *r,
                       const void *w, float eps, void *s, void *h, double *y) {
  size_t n = (size_t)rows * (size_t)cols, es = hr_dtype_size(dt);
  float *acc = malloc(n ? n * sizeof *acc : 1);
  void *x = malloc(n ? n * es : 1);
  if (!acc || !x) {
    free(acc);
    free(x);
    return -1;
  }
  for (int p = 0; p < nranks; p++) {
    fill(fill_ud, p, n, x);
    for (size_t i = 0; i < n; i++) acc[i] = p == 0 ? load_f(dt, x, i) : acc[i] + load_f(dt, x, i);
  }
  for (size_t i = 0; i < n; i++) {
    switch (dt) {
    case HR_F32: ((float *)s)[i] = acc[i]; break;
    case HR_F16: ((uint16_t *)s)[i] = hr_f32_to_f16(acc[i]); break;
    case HR_BF16: ((uint16_t *)s)[i] = hr_f32_to_bf16(acc[i]); break;
    }
  }
  free(acc);
  free(x);
  ref_rmsnorm(dt, s, r, w, rows, cols, eps, h, y, NULL);
  return 0;
}
