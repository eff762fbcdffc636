/* cublaslt.h: cuBLASLt, opened at run time (never linked, so the binary starts anywhere):
 * WEFT_CUBLASLT_LIB, else libcublasLt.so.13/.12 (also in /usr/local/cuda/lib64).  One plan is
 * one GEMM, row-major C[M,N] = A[M,K].B, with B K x N ("row") or N x K ("col").  The few types
 * and enum values used are declared in cublaslt.c, copied from cublasLt.h, cublas_api.h and
 * library_types.h. */
#ifndef WEFT_MEASURE_CUBLASLT_H
#define WEFT_MEASURE_CUBLASLT_H
#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "hostref.h"

typedef struct blt_heur {   /* cublasLtMatmulHeuristicResult_t */
  uint64_t algo[8];         /* cublasLtMatmulAlgo_t */
  size_t workspace;
  int state;                /* cublasStatus_t */
  float waves;
  int reserved[4];
} blt_heur;

typedef struct blt {
  void *lib, *h;
  const char *path;
  const drv_table *d;
  CUdeviceptr ws;
  int (*create)(void **);
  int (*destroy)(void *);
  size_t (*version)(void);
  const char *(*status_name)(int);   /* optional */
  int (*desc_create)(void **, int, int);
  int (*desc_destroy)(void *);
  int (*desc_set)(void *, int, const void *, size_t);
  int (*layout_create)(void **, int, uint64_t, uint64_t, int64_t);
  int (*layout_destroy)(void *);
  int (*pref_create)(void **);
  int (*pref_destroy)(void *);
  int (*pref_set)(void *, int, const void *, size_t);
  int (*heuristic)(void *, void *, void *, void *, void *, void *, void *, int, blt_heur *, int *);
  int (*matmul)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                const void *, void *, void *, void *, const void *, void *, size_t, CUstream);
  int (*algo_get)(const void *, int, void *, size_t, size_t *);   /* optional: the chosen algorithm's config */
} blt;

/* One GEMM, row-major C[M,N] = A[M,K].B, as cuBLAS's column-major C^T = B^T.A^T. */
typedef struct blt_plan {
  void *desc, *la, *lb, *lc;
  blt_heur heur;
  int ready;
} blt_plan;

/* Opens the library, makes a handle and a 32 MiB workspace on the current context.  0, or -1
 * and why (then blt_close it). */
int blt_open(blt *L, const drv_table *d, char *why, size_t len);
void blt_close(blt *L);
int blt_plan_make(blt *L, blt_plan *p, hr_dtype dt, int bcol, long long M, long long N, long long K, char *why,
                  size_t len);
void blt_plan_free(blt *L, blt_plan *p);
/* What the heuristic chose, as cublasLt.h numbers it; empty if the library cannot say. */
void blt_describe(const blt *L, const blt_plan *p, char *buf, size_t len);
/* S > 1 if the chosen algorithm splits K into S parts and adds them in the output type (cuBLASLt's
 * reduction schemes "inplace" and "output type": bf16 / f16 partial sums, less precise than one
 * f32 sum); 0 if not, or if the library cannot say */
int blt_output_type_split(const blt *L, const blt_plan *p);
/* C = A.B on stream s.  0, or -1 and why. */
int blt_run(blt *L, blt_plan *p, CUdeviceptr c, CUdeviceptr a, CUdeviceptr b, CUstream s, char *why, size_t len);

#endif
