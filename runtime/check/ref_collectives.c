/* ref_collectives.c: the references of reduce_scatter and all_gather (ref_collectives.h). */
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "ref_collectives.h"

/* ref_allreduce over one chunk: each rank's whole input regenerated, its chunk `rank` handed on */
typedef struct chunk_fill { ref_fill_fn fill; void *ud; int nranks, rank; size_t es; void *tmp; } chunk_fill;

static void fill_chunk(void *ud, int p, size_t n, void *dst) {
  chunk_fill *c = ud;
  c->fill(c->ud, p, (size_t)c->nranks * n, c->tmp);
  memcpy(dst, (char *)c->tmp + (size_t)c->rank * n * c->es, n * c->es);
}

int ref_reduce_scatter(hr_dtype dt, hr_op op, ref_fold_fn fold, void *fold_ud, int nranks, int rank, size_t n,
                       ref_fill_fn fill, void *fill_ud, double *want, double *scale) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return -1;
  chunk_fill c = {fill, fill_ud, nranks, rank, hr_dtype_size(dt), NULL};
  if (!(c.tmp = malloc((size_t)nranks * (n ? n : 1) * c.es))) return -1;
  int rc = ref_allreduce(dt, op, fold, fold_ud, nranks, n, fill_chunk, &c, want, scale);
  free(c.tmp);
  return rc;
}

int ref_all_gather(hr_dtype dt, int nranks, size_t n, ref_fill_fn fill, void *fill_ud, void *want) {
  size_t es = hr_dtype_size(dt);
  for (int p = 0; p < nranks; p++) fill(fill_ud, p, n, (char *)want + (size_t)p * n * es);
  return 0;
}

long long ref_first_diff(hr_dtype dt, const void *got, const void *want, size_t n) {
  size_t es = hr_dtype_size(dt);
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) return (long long)i;
  return -1;
}
