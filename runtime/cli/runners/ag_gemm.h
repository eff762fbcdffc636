/* ag_gemm.h: what the two files of the ag_gemm runner share: ag_gemm.c (binding, inputs,
 * launches, the checks, the entry) and ag_gemm_time.c (the timing rounds and the results
 * table).  Split so neither file passes ~800 lines. */
#ifndef WEFT_RUNNER_AG_GEMM_H
#define WEFT_RUNNER_AG_GEMM_H
#include <stdint.h>

#include "cublaslt.h"
#include "hostref.h"
#include "nccl.h"
#include "runner.h"

enum { V_GEMM, V_COMM, V_TWO };              /* plain GEMM; one comm kernel; gather + GEMM */
enum { OP_WEFT, OP_CUBLAS, OP_NCCL };        /* what a timing loop launches */
#define MAX_ARGS 16

typedef struct named { const char *name; int ptr; CUdeviceptr p; long long v; } named;

/* A kernel's arguments in manifest order, each slot pointing at its value in val[]. */
typedef struct bound {
  void *slot[MAX_ARGS];
  union { CUdeviceptr p; long long l; int32_t i; } val[MAX_ARGS];
} bound;

typedef struct agg {
  const run_opts *o;
  weft_kernel *k, *k2;    /* k2: gather_then_gemm's GEMM, its config's second kernel (owned by k) */
  weft_world *w;
  weft_comm *comm;
  const weft_manifest *m;
  const char *variant;
  int kind, bcol, device;
  const drv_table *d;
  int rank, size;         /* this rank, of size ranks */
  hr_dtype dt;
  size_t es;
  CUstream s;
  CUevent ev[2];
  int have_blt, have_nccl;
  blt L;
  nccl_lib nc;
  char no_blt[256], no_nccl[256];
  /* the shape in hand */
  long long M, N, K, Ms;  /* Ms: rows per shard */
  int shards;             /* P when M is a multiple of P, else 1 (gemm only) */
  void *hA, *hB;          /* the whole A (shards in rank order) and B, on the host */
  CUdeviceptr a;          /* this rank's shard (comm variants) */
  CUdeviceptr afull;      /* the whole A: the gemm variant's input and cuBLAS's */
  CUdeviceptr b, cmat;    /* B, and weft's C */
  CUdeviceptr ag;         /* gather_then_gemm: the gathered A */
  CUdeviceptr cb;         /* cuBLAS's C */
  CUdeviceptr agn, cn;    /* NCCL's gathered A and the C cuBLAS makes from it */
  bound main_args, gemm_args;   /* V_COMM: main; V_GEMM: gemm; V_TWO: main (gather) + gemm */
  blt_plan plan;
} agg;


const char *ag_kind_kernels(int kind);
const char *ag_label(const agg *r, char *buf, size_t len);
/* Buffers for M x N x K, random data in them, the arguments bound.  Local; 0 on success. */
int ag_shape_begin(agg *r, long long M, long long N, long long K, int timing);
void ag_shape_free(agg *r);
/* One launch of op (OP_*) on the run's stream; a failure is printed.  0 on success. */
int ag_launch_op(agg *r, int op);
/* Waits for the stream; a timed-out signal becomes this rank's error (printed).  0 on success. */
int ag_finish(agg *r);

/* ag_gemm_time.c */
void ag_print_header(const agg *r);
/* Times one shape (every rank); 1 if it passed (the cross-check with cuBLAS included). */
int ag_time_shape(agg *r, long long M, long long N, long long K);

#endif
