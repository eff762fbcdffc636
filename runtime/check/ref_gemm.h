/* ref_gemm.h: the GEMM's reference (ag_gemm and gemm): C = A.B in double over chosen rows, the
 * rows to choose, the tolerance, and the cross-check of two computed answers (weft's and
 * cuBLAS's) where no reference is affordable.  A is M x K row-major; B is K x N ("row") or
 * N x K ("col", a linear layer's weight). */
#ifndef WEFT_REF_GEMM_H
#define WEFT_REF_GEMM_H
#include "hostref.h"

/* The unit roundoff of dt: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16). */
double ref_gemm_unit_roundoff(hr_dtype dt);

/* The rows the reference covers, sorted and distinct (malloc'd; NULL if out of memory): every
 * row when M*N*K <= 2^31 (*all = 1); else, per shard of ms rows (shards of them), its first and
 * last row and max(2, 64/shards) rows drawn from `seed`. */
long long *ref_gemm_pick_rows(long long M, long long N, long long K, int shards, long long ms, unsigned long long seed,
                              long long *nrows, int *all);

/* want[t][j] = sum_k A[rows[t]][k] B[k][j] and scale[t][j] = sum_k |A B| (nrows x N), in double
 * (each product is exact: 16-bit inputs).  0, or -1 if out of memory. */
int ref_gemm(hr_dtype dt, const void *a, const void *b, int bcol, long long N, long long K, const long long *rows,
             long long nrows, double *want, double *scale);

/* got's rows (M x N, dt) against ref_gemm's: |got - want| <= 2u|want| (the output's rounding,
 * twice over) + 2^-16 scale (f32 accumulation in any order) + 2^-24 (the smallest f16
 * subnormal).  r is initialised here.  1 if some element is bad. */
int ref_gemm_compare(hr_dtype dt, const void *got, long long N, const long long *rows, long long nrows,
                     const double *want, const double *scale, hr_report *r);

/* The same rows against a looser bound: an S-way split-K whose parts (and their running sum) are
 * rounded to dt, as cuBLASLt's "inplace" and "output type" reductions do: |got - want| <= (S + 1)
 * u scale.  NaN and the poison fail.  r is initialised here.  1 if some element is bad. */
int ref_gemm_compare_split(hr_dtype dt, const void *got, long long N, const long long *rows, long long nrows,
                           const double *want, const double *scale, int split, hr_report *r);

/* Two computed C's (x: weft's, y: cuBLAS's), every element: each is within 2u|C| + 2^-16
 * sum|a||b| of the truth, so they differ by at most 4u max(|x|,|y|) + 2^-15 sum_k|a_ik| max_k|b_kj|
 * (a bound on sum|a||b| that needs no GEMM on the host) + 2^-23.  r is initialised here; 1 if
 * they disagree somewhere, -1 if out of memory. */
int ref_gemm_cross_check(hr_dtype dt, const void *a, const void *b, int bcol, long long M, long long N, long long K,
                         const void *x, const void *y, hr_report *r);

#endif
