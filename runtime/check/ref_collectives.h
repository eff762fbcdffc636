/* ref_collectives.h: the references of reduce_scatter and all_gather, over inputs the caller
 * regenerates from their seeds (no communication), as the allreduce's (ref_allreduce.h, whose
 * tolerances reduce_scatter shares: the same fold, rounded once). */
#ifndef WEFT_REF_COLLECTIVES_H
#define WEFT_REF_COLLECTIVES_H
#include "ref_allreduce.h"

/* reduce_scatter on `rank` of nranks: fill writes a rank's whole input (nranks * n elements);
 * want[i] = x_0[rank*n + i] op x_1[rank*n + i] op ... (rank order), scale[i] = sum |x_p[rank*n + i]|.
 * 0, -1 if out of memory or the fold failed. */
int ref_reduce_scatter(hr_dtype dt, hr_op op, ref_fold_fn fold, void *fold_ud, int nranks, int rank, size_t n,
                       ref_fill_fn fill, void *fill_ud, double *want, double *scale);

/* all_gather: want (nranks * n elements of dt) = x_0 | x_1 | ... | x_{P-1}, fill writing a rank's
 * n.  The result must equal it to the bit.  Returns 0. */
int ref_all_gather(hr_dtype dt, int nranks, size_t n, ref_fill_fn fill, void *fill_ud, void *want);

/* The first element where got and want (n elements of dt) differ in bits, or -1. */
long long ref_first_diff(hr_dtype dt, const void *got, const void *want, size_t n);

#endif
