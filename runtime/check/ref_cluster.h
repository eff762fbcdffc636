/* ref_cluster.h: cluster_reduce's reference.  The kernel folds, for every cluster, iteration
 * and lane w, the values of all T threads of all C CTAs, and every CTA of the cluster writes
 * the result: the check is the fold in double (in CTA, then thread order) and that all C copies
 * hold the same bits.
 * Layout (f32): in[((cl*C + c)*I + it)*T + t)*W + w], out[((cl*C + c)*I + it)*W + w]. */
#ifndef WEFT_REF_CLUSTER_H
#define WEFT_REF_CLUSTER_H
#include "hostref.h"
#include "ref_allreduce.h"

typedef struct ref_cluster_shape { long clusters; int C, T, W, I; } ref_cluster_shape;

typedef struct ref_cluster_report {
  size_t differ;     /* outputs whose bits differ from CTA 0's in the same cluster */
  size_t unwritten;  /* outputs (of any CTA) still holding the poison */
  hr_report values;  /* CTA 0's outputs against the fold (not filled when values are not checked) */
} ref_cluster_report;

/* check_values 0: bit-identity only (a custom operator without a reference).  fold NULL: the
 * built-in op (tolerance: 2^-22 sum|x| for sum, exact for max, min and prod, whose inputs make
 * it exact); else the custom reference, with sum's tolerance.  0 if every check passes, 1 if
 * one fails, -1 if out of memory or the fold failed. */
int ref_cluster_check(const ref_cluster_shape *s, const float *in, const float *out, hr_op op, int check_values,
                      ref_fold_fn fold, void *fold_ud, ref_cluster_report *r);

#endif
