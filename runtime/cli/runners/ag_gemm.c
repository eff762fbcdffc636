/* runners/ag_gemm.c: `weft run` for the ag_gemm family, on every rank of an MPI job (one process
 * is a world of one).  C[M,N] = A[M,K].B (f16/bf16, f32 accumulation); b_layout "row" stores B
 * as K x N, "col" as N x K (a linear layer's weight).  A is row-sharded: rank r owns rows
 * r*M/P .. (r+1)*M/P-1 and every rank computes the whole C.
 *   check: per shape, random data that every rank can regenerate for every rank (no
 *          communication for the reference), C poisoned, a double reference (every element, or
 *          sampled rows of big problems), then 20 back-to-back launches must reproduce the
 *          bits, and every rank must hold the same bits (SHA-256 compared); cuBLASLt is checked
 *          against the same reference, so its timings are of a right answer.
 *   time:  per shape, CUDA events around back-to-back launches and the same launches replayed
 *          as one CUDA graph (the slowest rank counts), beside cuBLASLt on the whole gathered
 *          problem and, at P > 1, NCCL all-gather + cuBLASLt; weft's C is cross-checked with
 *          cuBLAS's.
 * cuBLASLt and NCCL are opened at run time (never linked), so the binary starts anywhere; the
 * few types and enum values used are declared here, copied from cublasLt.h, cublas_api.h,
 * library_types.h and nccl.h.  Graph capture is reached through cuGetProcAddress, beside the
 * driver table of driver.h. */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "runner.h"
#include "driver.h"
#include "hostref.h"
#include "internal.h"
#include "ranks.h"

/* A GEMM shape, M x N x K. */
typedef struct gshape { long long m, n, k; } gshape;

static const drv_table *D;
static int RANK, SIZE;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, RANK, r, what); }

/* ---- cuBLASLt, opened at run time ----------------------------------------------------------- */

enum {
  BLT_R_32F = 0, BLT_R_16F = 2, BLT_R_16BF = 14, /* cudaDataType (library_types.h) */
  BLT_COMPUTE_32F = 68,                          /* cublasComputeType_t (cublas_api.h) */
  BLT_OP_N = 0, BLT_OP_T = 1,                    /* cublasOperation_t */
  BLT_DESC_TRANSA = 3, BLT_DESC_TRANSB = 4,      /* cublasLtMatmulDescAttributes_t (int32_t values) */
  BLT_PREF_MAX_WORKSPACE_BYTES = 1               /* cublasLtMatmulPreferenceAttributes_t (uint64_t) */
};
#define BLT_WORKSPACE ((size_t)32 << 20)

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

static const char *blt_status(const blt *L, int st) {
  const char *s = L->status_name ? L->status_name(st) : NULL;
  return s ? s : "cublasStatus";
}

static int blt_open(blt *L, char *why, size_t len) {
  static const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                                "/usr/local/cuda/lib64/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.12",
                                "/usr/local/cuda/lib64/libcublasLt.so"};
  const char *env = getenv("WEFT_CUBLASLT_LIB");
  char last[256] = "";
  if (env && *env) {
    L->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    L->path = env;
    if (!L->lib) { snprintf(why, len, "cannot open WEFT_CUBLASLT_LIB=%s: %s", env, dlerror()); return -1; }
  } else {
    for (size_t i = 0; i < sizeof names / sizeof *names && !L->lib; i++) {
      L->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      L->path = names[i];
      if (!L->lib) snprintf(last, sizeof last, "%s", dlerror());
    }
    if (!L->lib) {
      snprintf(why, len, "cannot open libcublasLt.so.13/.12 (also in /usr/local/cuda/lib64; set WEFT_CUBLASLT_LIB): %s",
               last);
      return -1;
    }
  }
#define BLT_SYM(field, name)                                                           \
  if (!(*(void **)&L->field = dlsym(L->lib, name))) {                                  \
    snprintf(why, len, "%s lacks %s", L->path, name);                                  \
    return -1;                                                                         \
  }
  BLT_SYM(create, "cublasLtCreate") BLT_SYM(destroy, "cublasLtDestroy") BLT_SYM(version, "cublasLtGetVersion")
  BLT_SYM(desc_create, "cublasLtMatmulDescCreate") BLT_SYM(desc_destroy, "cublasLtMatmulDescDestroy")
  BLT_SYM(desc_set, "cublasLtMatmulDescSetAttribute") BLT_SYM(layout_create, "cublasLtMatrixLayoutCreate")
  BLT_SYM(layout_destroy, "cublasLtMatrixLayoutDestroy") BLT_SYM(pref_create, "cublasLtMatmulPreferenceCreate")
  BLT_SYM(pref_destroy, "cublasLtMatmulPreferenceDestroy")
  BLT_SYM(pref_set, "cublasLtMatmulPreferenceSetAttribute")
  BLT_SYM(heuristic, "cublasLtMatmulAlgoGetHeuristic") BLT_SYM(matmul, "cublasLtMatmul")
#undef BLT_SYM
  *(void **)&L->status_name = dlsym(L->lib, "cublasLtGetStatusName");
  *(void **)&L->algo_get = dlsym(L->lib, "cublasLtMatmulAlgoConfigGetAttribute");
  int st = L->create(&L->h);
  if (st) { L->h = NULL; snprintf(why, len, "cublasLtCreate failed: %s (%d)", blt_status(L, st), st); return -1; }
  if (D->cuMemAlloc(&L->ws, BLT_WORKSPACE) != CUDA_SUCCESS) {
    L->ws = 0;
    snprintf(why, len, "cannot allocate cuBLASLt's %zu MiB workspace", BLT_WORKSPACE >> 20);
    return -1;
  }
  return 0;
}

static void blt_close(blt *L) {
  if (L->ws) D->cuMemFree(L->ws);
  if (L->h) L->destroy(L->h);
  /* the library stays mapped: its static CUDA runtime may still hold exit handlers */
  memset(L, 0, sizeof *L);
}

static void blt_plan_free(blt *L, blt_plan *p) {
  if (p->desc) L->desc_destroy(p->desc);
  if (p->la) L->layout_destroy(p->la);
  if (p->lb) L->layout_destroy(p->lb);
  if (p->lc) L->layout_destroy(p->lc);
  memset(p, 0, sizeof *p);
}

/* Column-major view: cuBLAS's A is our B, its B is our A (K x M, ld K), its C is N x M (ld N).
 * b_layout "row": B is K x N row-major = column-major N x K (ld N), no transpose.
 * b_layout "col": B is N x K row-major = column-major K x N (ld K), transposed. */
static int blt_plan_make(blt *L, blt_plan *p, hr_dtype dt, int bcol, long long M, long long N, long long K,
                         char *why, size_t len) {
  memset(p, 0, sizeof *p);
  int type = dt == HR_BF16 ? BLT_R_16BF : dt == HR_F16 ? BLT_R_16F : BLT_R_32F;
  int32_t ta = bcol ? BLT_OP_T : BLT_OP_N, tb = BLT_OP_N;
  uint64_t ws = BLT_WORKSPACE;
  void *pref = NULL;
  int st, found = 0;
  const char *what = "cublasLtMatmulDescCreate";
  if ((st = L->desc_create(&p->desc, BLT_COMPUTE_32F, BLT_R_32F))) goto fail;
  what = "cublasLtMatmulDescSetAttribute";
  if ((st = L->desc_set(p->desc, BLT_DESC_TRANSA, &ta, sizeof ta)) || (st = L->desc_set(p->desc, BLT_DESC_TRANSB, &tb, sizeof tb)))
    goto fail;
  what = "cublasLtMatrixLayoutCreate";
  if ((st = bcol ? L->layout_create(&p->la, type, (uint64_t)K, (uint64_t)N, K)
                 : L->layout_create(&p->la, type, (uint64_t)N, (uint64_t)K, N)))
    goto fail;
  if ((st = L->layout_create(&p->lb, type, (uint64_t)K, (uint64_t)M, K))) goto fail;
  if ((st = L->layout_create(&p->lc, type, (uint64_t)N, (uint64_t)M, N))) goto fail;
  what = "cublasLtMatmulPreferenceCreate";
  if ((st = L->pref_create(&pref))) goto fail;
  what = "cublasLtMatmulPreferenceSetAttribute";
  if ((st = L->pref_set(pref, BLT_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws))) goto fail;
  what = "cublasLtMatmulAlgoGetHeuristic";
  if ((st = L->heuristic(L->h, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &p->heur, &found))) goto fail;
  L->pref_destroy(pref);
  if (found < 1 || p->heur.state) {
    snprintf(why, len, "cuBLASLt has no algorithm for %lldx%lldx%lld %s (b_layout %s)", M, N, K, hr_dtype_name(dt),
             bcol ? "col" : "row");
    blt_plan_free(L, p);
    return -1;
  }
  p->ready = 1;
  return 0;
fail:
  if (pref) L->pref_destroy(pref);
  snprintf(why, len, "%s failed: %s (%d)", what, blt_status(L, st), st);
  blt_plan_free(L, p);
  return -1;
}

/* What the heuristic chose, as cublasLt.h numbers it (cublasLtMatmulAlgoConfigAttributes_t 0-8:
 * algo id, tile id, split-K, reduction scheme, CTA swizzling, custom option, stages id, inner
 * shape id, cluster shape id; the enums that name the ids are in cublasLt.h).  Empty if the
 * library cannot say. */
static void blt_describe(const blt *L, const blt_plan *p, char *buf, size_t len) {
  static const char *const names[] = {"algo", "tile", "splitK", "reduction", "swizzle", "custom", "stages", "inner", "cluster"};
  size_t at = 0;
  buf[0] = 0;
  if (!L->algo_get || !p->ready) return;
  for (int a = 0; a < 9 && at < len; a++) {
    /* the size must match the attribute's (2 or 4 bytes): ask first, then read it into the low
     * bytes of a zeroed word (little-endian) */
    uint32_t v = 0;
    size_t need = 0, got = 0;
    if (L->algo_get(p->heur.algo, a, NULL, 0, &need) || need == 0 || need > sizeof v ||
        L->algo_get(p->heur.algo, a, &v, need, &got))
      continue;
    at += (size_t)snprintf(buf + at, len - at, "%s%s %d", at ? ", " : "", names[a], (int)v);
  }
  if (at < len) snprintf(buf + at, len - at, "%swaves %.2f", at ? ", " : "", p->heur.waves);
}

static int blt_run(blt *L, blt_plan *p, CUdeviceptr c, CUdeviceptr a, CUdeviceptr b, CUstream s) {
  const float one = 1.0f, zero = 0.0f;
  int st = L->matmul(L->h, p->desc, &one, (const void *)(uintptr_t)b, p->la, (const void *)(uintptr_t)a, p->lb, &zero,
                     (const void *)(uintptr_t)c, p->lc, (void *)(uintptr_t)c, p->lc, p->heur.algo,
                     (void *)(uintptr_t)L->ws, BLT_WORKSPACE, s);
  if (st) fprintf(stderr, "weft run: rank %d: cublasLtMatmul failed: %s (%d)\n", RANK, blt_status(L, st), st);
  return st ? -1 : 0;
}

/* ---- NCCL, opened at run time (as bench/nccl_bench.c does) ---------------------------------- */

typedef struct nccl_id { char internal[128]; } nccl_id;   /* ncclUniqueId */
enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_BF16 = 9 };      /* ncclDataType_t */

typedef struct nccl {
  void *lib, *comm;
  int version;
  int (*get_id)(nccl_id *);
  int (*init_rank)(void **, int, nccl_id, int);
  int (*allgather)(const void *, void *, size_t, int, void *, CUstream);
  int (*destroy)(void *);
  int (*get_version)(int *);
  const char *(*error_string)(int);   /* optional */
} nccl;

static const char *nccl_err(const nccl *n, int st) {
  const char *s = n->error_string ? n->error_string(st) : NULL;
  return s ? s : "ncclResult";
}

/* Collective.  0: ready on every rank; else `why` (the same on every rank) says why not. */
static int nccl_open(nccl *n, int device, char *why, int len) {
  memset(n, 0, sizeof *n);
  const char *lib = getenv("WEFT_NCCL_LIB");
  if (!lib || !*lib) lib = "libnccl.so.2";
  int ok = 1;
  why[0] = 0;
  if (!(n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
    snprintf(why, (size_t)len, "cannot open %s (set WEFT_NCCL_LIB): %s", lib, dlerror());
    ok = 0;
  } else {
    *(void **)&n->get_id = dlsym(n->lib, "ncclGetUniqueId");
    *(void **)&n->init_rank = dlsym(n->lib, "ncclCommInitRank");
    *(void **)&n->allgather = dlsym(n->lib, "ncclAllGather");
    *(void **)&n->destroy = dlsym(n->lib, "ncclCommDestroy");
    *(void **)&n->get_version = dlsym(n->lib, "ncclGetVersion");
    *(void **)&n->error_string = dlsym(n->lib, "ncclGetErrorString");
    if (!n->get_id || !n->init_rank || !n->allgather || !n->destroy || !n->get_version) {
      snprintf(why, (size_t)len, "%s lacks NCCL's symbols (ncclGetUniqueId, ncclCommInitRank, ncclAllGather, ...)", lib);
      ok = 0;
    } else {
      n->get_version(&n->version);
    }
  }
  /* NCCL refuses two ranks on one GPU (ranks sharing it through MPS): find out before
   * ncclCommInitRank, which would fail or hang */
  char bus[32] = "", *all = malloc((size_t)SIZE * sizeof bus);
  CUdevice dev;
  if (!all || D->cuDeviceGet(&dev, device) != CUDA_SUCCESS || D->cuDeviceGetPCIBusId(bus, sizeof bus, dev) != CUDA_SUCCESS)
    snprintf(bus, sizeof bus, "unknown-%d", RANK);
  if (ranks_all(all != NULL)) {
    MPI_Allgather(bus, (int)sizeof bus, MPI_CHAR, all, (int)sizeof bus, MPI_CHAR, MPI_COMM_WORLD);
    for (int q = 0; q < SIZE && ok; q++)
      if (q != RANK && !strncmp(all + q * sizeof bus, bus, sizeof bus)) {
        snprintf(why, (size_t)len, "ranks %d and %d share the GPU %s, and NCCL takes one rank per GPU",
                 q < RANK ? q : RANK, q < RANK ? RANK : q, bus);
        ok = 0;
      }
  } else {
    snprintf(why, (size_t)len, "out of host memory");
    ok = 0;
  }
  free(all);
  if (!ranks_first_why(ok, why, len)) return -1;
  nccl_id id;
  memset(&id, 0, sizeof id);
  int st = RANK == 0 ? n->get_id(&id) : 0;
  MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (st) { snprintf(why, (size_t)len, "ncclGetUniqueId failed: %s (%d)", nccl_err(n, st), st); return -1; }
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  st = n->init_rank(&n->comm, SIZE, id, RANK);
  if (st) {
    n->comm = NULL;
    snprintf(why, (size_t)len, "ncclCommInitRank failed on rank %d: %s (%d)", RANK, nccl_err(n, st), st);
  }
  if (!ranks_first_why(st == 0, why, len)) {
    if (n->comm) n->destroy(n->comm);
    n->comm = NULL;
    return -1;
  }
  return 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

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
  int kind, bcol, device, nthreads;
  hr_dtype dt;
  size_t es;
  CUstream s;
  CUevent ev[2];
  int have_blt, have_nccl;
  blt L;
  nccl nc;
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

static const char *kind_kernels(int kind) {
  return kind == V_GEMM ? "a plain GEMM" : kind == V_TWO ? "gather kernel + GEMM kernel" : "one kernel";
}

static int bind(const weft_manifest *m, bound *b, const named *v, int nv) {
  if (m->n_args > MAX_ARGS) { fprintf(stderr, "weft run: %s: %d arguments, at most %d\n", m->name, m->n_args, MAX_ARGS); return -1; }
  for (int i = 0; i < m->n_args; i++) {
    const weft_arg *a = &m->args[i];
    const named *x = NULL;
    for (int j = 0; j < nv && !x; j++)
      if (!strcmp(v[j].name, a->name)) x = &v[j];
    if (!x) {
      fprintf(stderr, "weft run: %s: kernel argument '%s' is not one ag_gemm gives (", m->name, a->name);
      for (int j = 0; j < nv; j++) fprintf(stderr, "%s%s", j ? ", " : "", v[j].name);
      fprintf(stderr, ")\n");
      return -1;
    }
    if (!strcmp(a->type, "ptr") && x->ptr) b->val[i].p = x->p;
    else if (!strcmp(a->type, "i64") && !x->ptr) b->val[i].l = x->v;
    else if (!strcmp(a->type, "i32") && !x->ptr && x->v <= INT32_MAX) b->val[i].i = (int32_t)x->v;
    else {
      fprintf(stderr, "weft run: %s: argument '%s' is %s, which does not fit %s\n", m->name, a->name, a->type,
              x->ptr ? "a device pointer" : "this size");
      return -1;
    }
    b->slot[i] = &b->val[i];
  }
  return 0;
}

/* 1 if every size argument is within the kernel's limits; else why not */
static int within_limits(const weft_manifest *m, const named *v, int nv, char *why, size_t len) {
  for (int i = 0; i < m->n_limits; i++)
    for (int j = 0; j < nv; j++)
      if (!v[j].ptr && !strcmp(v[j].name, m->limits[i].arg)) {
        const weft_limit *l = &m->limits[i];
        if (v[j].v < l->min || v[j].v > l->max || (l->multiple > 0 && v[j].v % l->multiple)) {
          char mul[48] = "";
          if (l->multiple > 0) snprintf(mul, sizeof mul, ", a multiple of %ld", l->multiple);
          snprintf(why, len, "%s = %lld is outside the kernel's limits [%ld, %ld]%s", v[j].name, v[j].v, l->min, l->max, mul);
          return 0;
        }
      }
  return 1;
}

/* the arguments of the shape in hand; 1 if the kernels take this shape (else why not) */
static int bind_shape(agg *r, int do_bind, char *why, size_t len) {
  named gemm[] = {{"c", 1, r->cmat, 0}, {"a", 1, r->kind == V_TWO ? r->ag : r->afull, 0}, {"b", 1, r->b, 0},
                  {"m", 0, 0, r->M}, {"n", 0, 0, r->N}, {"k", 0, 0, r->K}};
  named comm[] = {{"c", 1, r->cmat, 0}, {"a", 1, r->a, 0}, {"b", 1, r->b, 0},
                  {"m", 0, 0, r->M}, {"n", 0, 0, r->N}, {"k", 0, 0, r->K}};
  named gather[] = {{"ag", 1, r->ag, 0}, {"a", 1, r->a, 0}, {"m", 0, 0, r->M}, {"k", 0, 0, r->K}};
  switch (r->kind) {
  case V_GEMM:
    if (!within_limits(r->m, gemm, 6, why, len)) return 0;
    return !do_bind || !bind(r->m, &r->gemm_args, gemm, 6) ? 1 : -1;
  case V_COMM:
    if (!within_limits(r->m, comm, 6, why, len)) return 0;
    return !do_bind || !bind(r->m, &r->main_args, comm, 6) ? 1 : -1;
  default:
    if (!within_limits(r->m, gather, 4, why, len) || !within_limits(weft_kernel_manifest(r->k2), gemm, 6, why, len)) return 0;
    return !do_bind || (!bind(r->m, &r->main_args, gather, 4) && !bind(weft_kernel_manifest(r->k2), &r->gemm_args, gemm, 6))
               ? 1 : -1;
  }
}

/* Every shape is fresh data: seeds from the run's seed, the shape, and the shard's rank. */
static uint64_t data_seed(const agg *r, int what) {   /* what: shard rank 0..P-1, or -1 for B */
  uint64_t s = hr_mix64(r->o->seed ^ hr_mix64((uint64_t)r->M * 1000003ull + (uint64_t)r->N * 10007ull + (uint64_t)r->K));
  return hr_mix64(s + (uint64_t)(what + 2));
}

static void fill_host(agg *r) {
  size_t shard = (size_t)r->Ms * (size_t)r->K;
  for (int p = 0; p < r->shards; p++)
    hr_fill_uniform(r->dt, (char *)r->hA + (size_t)p * shard * r->es, shard, data_seed(r, p), -1.0, 1.0);
  hr_fill_uniform(r->dt, r->hB, (size_t)r->K * (size_t)r->N, data_seed(r, -1), -1.0, 1.0);
}

static int dev_alloc(CUdeviceptr *p, size_t bytes) {
  return cu_ok(D->cuMemAlloc(p, bytes ? bytes : 16), "cuMemAlloc") ? 0 : -1;
}

static void shape_free(agg *r) {
  CUdeviceptr *ps[] = {&r->a, &r->afull, &r->b, &r->cmat, &r->ag, &r->cb, &r->agn, &r->cn};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    if (*ps[i]) D->cuMemFree(*ps[i]);
    *ps[i] = 0;
  }
  free(r->hA); free(r->hB);
  r->hA = r->hB = NULL;
  if (r->plan.ready) blt_plan_free(&r->L, &r->plan);
}

/* Buffers for M x N x K, random data in them, the arguments bound.  Local; 0 on success. */
static int shape_begin(agg *r, long long M, long long N, long long K, int timing) {
  r->M = M; r->N = N; r->K = K;
  r->shards = M % SIZE == 0 ? SIZE : 1;
  r->Ms = M / r->shards;
  size_t es = r->es, a_bytes = (size_t)M * (size_t)K * es, b_bytes = (size_t)K * (size_t)N * es;
  size_t c_bytes = (size_t)M * (size_t)N * es, shard_bytes = (size_t)r->Ms * (size_t)K * es;
  if (!(r->hA = malloc(a_bytes)) || !(r->hB = malloc(b_bytes))) {
    fprintf(stderr, "weft run: rank %d: out of host memory for %lldx%lldx%lld\n", RANK, M, N, K);
    return -1;
  }
  fill_host(r);
  if (dev_alloc(&r->afull, a_bytes) || dev_alloc(&r->b, b_bytes) || dev_alloc(&r->cmat, c_bytes)) return -1;
  if (r->kind != V_GEMM && dev_alloc(&r->a, shard_bytes)) return -1;
  if (r->kind == V_TWO && dev_alloc(&r->ag, a_bytes)) return -1;
  if (r->have_blt && dev_alloc(&r->cb, c_bytes)) return -1;
  if (timing && r->have_nccl && (dev_alloc(&r->agn, a_bytes) || dev_alloc(&r->cn, c_bytes))) return -1;
  if (!cu_ok(D->cuMemcpyHtoD(r->afull, r->hA, a_bytes), "cuMemcpyHtoD") ||
      !cu_ok(D->cuMemcpyHtoD(r->b, r->hB, b_bytes), "cuMemcpyHtoD"))
    return -1;
  if (r->a && !cu_ok(D->cuMemcpyHtoD(r->a, (char *)r->hA + (size_t)RANK * shard_bytes, shard_bytes), "cuMemcpyHtoD"))
    return -1;
  /* the copies ran on the legacy stream; the launches go to r->s, which does not wait for it */
  if (!cu_ok(D->cuCtxSynchronize(), "uploading the inputs")) return -1;
  char why[256];
  if (bind_shape(r, 1, why, sizeof why) != 1) return -1;
  if (r->have_blt && blt_plan_make(&r->L, &r->plan, r->dt, r->bcol, M, N, K, why, sizeof why)) {
    fprintf(stderr, "weft run: rank %d: cuBLAS baseline: %s\n", RANK, why);
    return -1;
  }
  return 0;
}

/* ---- launching ------------------------------------------------------------------------------- */

/* A GEMM kernel (no communicator) with these arguments on the run's stream; 0 on success. */
static int launch_gemm(agg *r, weft_kernel *k, bound *args) {
  if (weft_launch(k, args->slot, r->s)) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_kernel_error(k));
    return -1;
  }
  return 0;
}

static int launch_weft(agg *r) {
  if (r->kind == V_GEMM) return launch_gemm(r, r->k, &r->gemm_args);
  if (weft_comm_launch(r->comm, r->main_args.slot, r->s)) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_comm_error(r->comm));
    return -1;
  }
  return r->kind == V_TWO ? launch_gemm(r, r->k2, &r->gemm_args) : 0;
}

static int launch_op(agg *r, int op) {
  switch (op) {
  case OP_WEFT: return launch_weft(r);
  case OP_CUBLAS: return blt_run(&r->L, &r->plan, r->cb, r->afull, r->b, r->s);
  default: {
    size_t shard = (size_t)r->Ms * (size_t)r->K;
    int type = r->dt == HR_BF16 ? NCCL_BF16 : r->dt == HR_F16 ? NCCL_F16 : NCCL_F32;
    int st = r->nc.allgather((const void *)(uintptr_t)r->a, (void *)(uintptr_t)r->agn, shard, type, r->nc.comm, r->s);
    if (st) {
      fprintf(stderr, "weft run: rank %d: ncclAllGather failed: %s (%d)\n", RANK, nccl_err(&r->nc, st), st);
      return -1;
    }
    return blt_run(&r->L, &r->plan, r->cn, r->agn, r->b, r->s);
  }
  }
}

/* wait for the stream; a timed-out signal becomes this rank's error */
static int finish(agg *r) {
  if (!cu_ok(D->cuStreamSynchronize(r->s), "the kernels")) return -1;
  if (r->comm && weft_comm_check(r->comm)) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_comm_error(r->comm));
    return -1;
  }
  return 0;
}

/* ---- checking -------------------------------------------------------------------------------- */

static double unit_roundoff(hr_dtype dt) { return dt == HR_BF16 ? ldexp(1, -8) : dt == HR_F16 ? ldexp(1, -11) : ldexp(1, -24); }

typedef struct ref_job {
  const agg *r;
  const float *bkn;         /* B as K x N floats (exact for f16/bf16), whatever its layout */
  const long long *rows;
  long long nrows;
  double *want, *scale;     /* nrows x N: the sum, and the sum of |a||b| */
  long long begin, end;
} ref_job;

static void *ref_rows(void *arg) {
  ref_job *j = arg;
  const agg *r = j->r;
  long long N = r->N, K = r->K;
  double *arow = malloc((size_t)K * sizeof *arow);
  if (!arow) return arg;   /* non-NULL: this range failed */
  for (long long t = j->begin; t < j->end; t++) {
    long long i = j->rows[t];
    double *want = j->want + (size_t)t * (size_t)N, *scale = j->scale + (size_t)t * (size_t)N;
    for (long long kk = 0; kk < K; kk++) arow[kk] = hr_load(r->dt, r->hA, (size_t)i * (size_t)K + (size_t)kk);
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
  return NULL;
}

/* The reference rows in double, on this rank's share of the host's cores. */
static int reference(const agg *r, const long long *rows, long long nrows, double *want, double *scale) {
  long long N = r->N, K = r->K;
  float *bkn = malloc((size_t)K * (size_t)N * sizeof *bkn);
  if (!bkn) return -1;
  for (long long kk = 0; kk < K; kk++)
    for (long long jj = 0; jj < N; jj++)
      bkn[(size_t)kk * (size_t)N + (size_t)jj] =
          (float)hr_load(r->dt, r->hB, r->bcol ? (size_t)jj * (size_t)K + (size_t)kk : (size_t)kk * (size_t)N + (size_t)jj);
  int nt = r->nthreads;
  if (nt > nrows) nt = (int)nrows;
  if (nt < 1) nt = 1;
  ref_job job[64];
  pthread_t th[64];
  int started[64] = {0}, bad = 0;
  for (int t = 0; t < nt; t++) {
    job[t] = (ref_job){r, bkn, rows, nrows, want, scale, nrows * t / nt, nrows * (t + 1) / nt};
    started[t] = t > 0 && pthread_create(&th[t], NULL, ref_rows, &job[t]) == 0;
  }
  for (int t = 0; t < nt; t++)
    if (!started[t]) bad |= ref_rows(&job[t]) != NULL;
  for (int t = 1; t < nt; t++)
    if (started[t]) {
      void *ret = NULL;
      pthread_join(th[t], &ret);
      bad |= ret != NULL;
    }
  free(bkn);
  return bad ? -1 : 0;
}

/* Which rows the reference covers: all of them for small problems; else per shard its first
 * and last row and a few random ones (every column of each). */
static long long *pick_rows(const agg *r, long long *nrows, int *all) {
  long long M = r->M;
  *all = (double)M * (double)r->N * (double)r->K <= 2147483648.0;
  long long n = 0, *rows;
  if (*all) {
    if (!(rows = malloc((size_t)M * sizeof *rows))) return NULL;
    for (long long i = 0; i < M; i++) rows[n++] = i;
    *nrows = n;
    return rows;
  }
  int extra = 64 / r->shards < 2 ? 2 : 64 / r->shards;
  if (!(rows = malloc((size_t)r->shards * (size_t)(extra + 2) * sizeof *rows))) return NULL;
  uint64_t rng = data_seed(r, -2);
  for (int p = 0; p < r->shards; p++) {
    long long first = (long long)p * r->Ms;
    rows[n++] = first;
    rows[n++] = first + r->Ms - 1;
    for (int e = 0; e < extra; e++) {
      rng = hr_mix64(rng);
      rows[n++] = first + (long long)(rng % (uint64_t)r->Ms);
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

typedef struct verdict {
  long long checked, bad, unwritten, nans;
  double worst;                /* largest |got - want| / tolerance */
  long long wi, wj;
  double wgot, wwant, wtol;
} verdict;

static int is_poison(const agg *r, const void *c, size_t i) {
  if (r->es == 2) return ((const uint16_t *)c)[i] == 0xffffu;
  return ((const uint32_t *)c)[i] == 0xffffffffu;
}

/* |c - ref| <= 2u|ref| (the output's rounding, twice over) + 2^-16 sum|a||b| (f32 accumulation
 * in any order) + the smallest f16 subnormal */
static void compare_rows(const agg *r, const void *c, const long long *rows, long long nrows, const double *want,
                         const double *scale, verdict *v) {
  memset(v, 0, sizeof *v);
  double u2 = 2 * unit_roundoff(r->dt), tiny = ldexp(1, -24);
  for (long long t = 0; t < nrows; t++)
    for (long long j = 0; j < r->N; j++) {
      size_t at = (size_t)rows[t] * (size_t)r->N + (size_t)j, w = (size_t)t * (size_t)r->N + (size_t)j;
      v->checked++;
      if (is_poison(r, c, at)) { v->unwritten++; continue; }
      double got = hr_load(r->dt, c, at);
      if (isnan(got)) { v->nans++; continue; }
      double tol = u2 * fabs(want[w]) + ldexp(scale[w], -16) + tiny, e = fabs(got - want[w]);
      if (e > tol) v->bad++;
      if (e / tol > v->worst) {
        v->worst = e / tol;
        v->wi = rows[t]; v->wj = j; v->wgot = got; v->wwant = want[w]; v->wtol = tol;
      }
    }
}

static int verdict_ok(const verdict *v) { return !v->bad && !v->unwritten && !v->nans; }

static void verdict_format(const verdict *v, char *buf, size_t len) {
  size_t at = 0;
  if (v->unwritten)
    at += (size_t)snprintf(buf + at, len - at, "%lld elements never written (still the 0xFF poison); ", v->unwritten);
  if (v->nans && at < len) at += (size_t)snprintf(buf + at, len - at, "%lld other NaNs; ", v->nans);
  if (v->bad && at < len) at += (size_t)snprintf(buf + at, len - at, "%lld of %lld outside tolerance; ", v->bad, v->checked);
  if (at < len && v->worst > 0)
    snprintf(buf + at, len - at, "%lld elements compared, worst |err|/tol %.3g at row %lld col %lld: got %.6g want %.6g (tol %.3g)",
             v->checked, v->worst, v->wi, v->wj, v->wgot, v->wwant, v->wtol);
  else if (at < len)
    snprintf(buf + at, len - at, "%lld elements compared, every finite one equal", v->checked);
}

static const char *label(const agg *r, char *buf, size_t len) {
  snprintf(buf, len, "%s %s b=%s %lldx%lldx%lld P=%d", r->variant, hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->M,
           r->N, r->K, SIZE);
  return buf;
}

/* PDL (family gemm, pdl = true): the second of two launches reads what the first wrote.  Y =
 * X B2, where X = A B is the first launch's C (poisoned before each pair) and B2 is random N x N:
 * a launch that touched A before its griddepcontrol.wait would read the first's unfinished
 * output.  x_host: X as the checked launches left it (bit-identical every time).  0 on failure. */
static int check_pdl_chain(agg *r, const void *x_host) {
  char name[160], line[512], why[256];
  long long M = r->M, N = r->N;
  size_t x_bytes = (size_t)M * (size_t)N * r->es, b2_bytes = (size_t)N * (size_t)N * r->es;
  label(r, name, sizeof name);
  agg q = *r;   /* the second launch's problem: M x N x N, A = X, B = B2 */
  q.K = N; q.shards = 1; q.Ms = M; q.hA = (void *)x_host;
  named second[] = {{"c", 1, 0, 0}, {"a", 1, r->cmat, 0}, {"b", 1, 0, 0}, {"m", 0, 0, M}, {"n", 0, 0, N}, {"k", 0, 0, N}};
  if (!within_limits(r->m, second, 6, why, sizeof why)) {
    if (RANK == 0) printf("check: %s: pdl chain not run: its second launch (%lldx%lldx%lld) does not fit: %s\n", name, M, N, N, why);
    return 1;
  }
  CUdeviceptr y = 0, b2 = 0;
  long long nrows = 0, *rows = NULL;
  int all = 0, ok = 0;
  double *want = NULL, *scale = NULL;
  void *hb2 = malloc(b2_bytes), *y0 = malloc(x_bytes), *yi = malloc(x_bytes);
  bound args;
  if (hb2 && y0 && yi) {
    hr_fill_uniform(r->dt, hb2, (size_t)N * (size_t)N, data_seed(r, -3), -1.0, 1.0);
    q.hB = hb2;
    rows = pick_rows(&q, &nrows, &all);
  }
  want = rows ? malloc((size_t)nrows * (size_t)N * sizeof *want) : NULL;
  scale = rows ? malloc((size_t)nrows * (size_t)N * sizeof *scale) : NULL;
  if (!want || !scale || reference(&q, rows, nrows, want, scale)) {
    fprintf(stderr, "weft run: rank %d: out of host memory for the pdl chain's reference\n", RANK);
    goto out;
  }
  if (dev_alloc(&y, x_bytes) || dev_alloc(&b2, b2_bytes) || !cu_ok(D->cuMemcpyHtoD(b2, hb2, b2_bytes), "cuMemcpyHtoD"))
    goto out;
  second[0].p = y; second[2].p = b2;
  if (bind(r->m, &args, second, 6)) goto out;
  ok = 1;
  for (int it = 0; it < 10 && ok; it++) {
    ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, x_bytes, r->s), "cuMemsetD8Async") &&
         cu_ok(D->cuMemsetD8Async(y, 0xff, x_bytes, r->s), "cuMemsetD8Async") && !launch_weft(r) &&
         !launch_gemm(r, r->k, &args);
    ok = ok && !finish(r) && cu_ok(D->cuMemcpyDtoH(it ? yi : y0, y, x_bytes), "cuMemcpyDtoH");
    if (!ok) break;
    if (!it) {
      verdict v;
      compare_rows(&q, y0, rows, nrows, want, scale, &v);
      if (!verdict_ok(&v)) {
        verdict_format(&v, line, sizeof line);
        fprintf(stderr, "check: rank %d: %s: pdl chain FAIL: the second launch (C2 = C B2) read the first's C before "
                        "it was complete (%s)\n", RANK, name, line);
        ok = 0;
      }
    } else if (memcmp(y0, yi, x_bytes)) {
      fprintf(stderr, "check: rank %d: %s: pdl chain FAIL: pair %d's C2 differs from the first pair's: the second "
                      "launch read the first's C before it was complete\n", RANK, name, it + 1);
      ok = 0;
    }
  }
  if (ok && RANK == 0 && !r->o->quiet)
    printf("check: %s: PASS (pdl chain: 10 pairs, the second launch reading the first's freshly poisoned C, "
           "%s against the reference)\n", name, all ? "every element" : "sampled rows");
out:
  if (y) D->cuMemFree(y);
  if (b2) D->cuMemFree(b2);
  free(hb2); free(y0); free(yi); free(rows); free(want); free(scale);
  return ok;
}

/* One shape: 0 if this rank saw it fail (the caller takes every rank's verdict).  Each step
 * ends with every rank's verdict, so a rank that fails never leaves the others waiting for its
 * signals in the next launch. */
static int check_shape(agg *r, long long M, long long N, long long K) {
  char name[160], line[512], who[256];
  size_t c_bytes = (size_t)M * (size_t)N * r->es;
  long long nrows = 0, *rows = NULL;
  int all_rows = 0, ok;
  double *want = NULL, *scale = NULL;
  void *first = NULL, *again = NULL;
  ok = !shape_begin(r, M, N, K, 0);
  label(r, name, sizeof name);
  if (ok) {
    rows = pick_rows(r, &nrows, &all_rows);
    want = rows ? malloc((size_t)nrows * (size_t)N * sizeof *want) : NULL;
    scale = rows ? malloc((size_t)nrows * (size_t)N * sizeof *scale) : NULL;
    first = malloc(c_bytes);
    again = malloc(c_bytes);
    ok = want && scale && first && again && !reference(r, rows, nrows, want, scale);
    if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the reference of %s\n", RANK, name);
  }
  if (!ranks_all(ok)) goto out;
  /* one launch into poisoned outputs */
  ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, c_bytes, r->s), "cuMemsetD8Async") &&
       (!r->ag || cu_ok(D->cuMemsetD8Async(r->ag, 0xff, (size_t)M * (size_t)K * r->es, r->s), "cuMemsetD8Async")) &&
       !launch_weft(r) && !finish(r) && cu_ok(D->cuMemcpyDtoH(first, r->cmat, c_bytes), "cuMemcpyDtoH");
  if (ok) {
    verdict v;
    compare_rows(r, first, rows, nrows, want, scale, &v);
    if (!verdict_ok(&v)) {
      verdict_format(&v, line, sizeof line);
      fprintf(stderr, "check: rank %d: %s: FAIL (%s)\n", RANK, name, line);
      ok = 0;
    } else if (RANK == 0 && !r->o->quiet) {
      verdict_format(&v, line, sizeof line);
      printf("check: %s: reference%s: %s\n", name, all_rows ? "" : " (sampled rows)", line);
    }
  }
  if (!ranks_all(ok)) goto out;
  /* back to back: epochs advance, buffers are reused; the bits must not move */
  ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, c_bytes, r->s), "cuMemsetD8Async");
  for (int i = 0; i < 20 && ok; i++) ok = !launch_weft(r);
  ok = ok && !finish(r) && cu_ok(D->cuMemcpyDtoH(again, r->cmat, c_bytes), "cuMemcpyDtoH");
  if (ok && memcmp(first, again, c_bytes)) {
    size_t n = 0;
    for (size_t i = 0; i < c_bytes / r->es; i++) n += memcmp((char *)first + i * r->es, (char *)again + i * r->es, r->es) != 0;
    fprintf(stderr, "check: rank %d: %s: 20 back-to-back launches changed %zu elements of the result\n", RANK, name, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (!ranks_same_bytes(first, c_bytes, who, sizeof who)) {
    if (RANK == 0) fprintf(stderr, "check: %s: ranks %s hold different bits from rank 0\n", name, who);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (r->kind == V_GEMM && r->m->pdl) {
    ok = check_pdl_chain(r, first);
    if (!ranks_all(ok)) goto out;
  }
  /* the baseline must be right too, or its timings mean nothing */
  if (r->have_blt) {
    ok = cu_ok(D->cuMemsetD8Async(r->cb, 0xff, c_bytes, r->s), "cuMemsetD8Async") && !launch_op(r, OP_CUBLAS) &&
         !finish(r) && cu_ok(D->cuMemcpyDtoH(again, r->cb, c_bytes), "cuMemcpyDtoH");
    if (ok) {
      verdict v;
      compare_rows(r, again, rows, nrows, want, scale, &v);
      if (!verdict_ok(&v)) {
        verdict_format(&v, line, sizeof line);
        fprintf(stderr, "check: rank %d: %s: the cuBLAS baseline FAILS the reference (%s): a bug in this runner\n",
                RANK, name, line);
        ok = 0;
      }
    }
    if (!ranks_all(ok)) goto out;
  }
  if (RANK == 0 && !r->o->quiet)
    printf("check: %s: PASS (%s, 20 back-to-back launches bit-identical, bit-identical on %d rank%s%s)\n", name,
           all_rows ? "every element" : "sampled rows", SIZE, SIZE == 1 ? "" : "s",
           r->have_blt ? ", cuBLAS within the same tolerance" : "");
out:
  free(rows); free(want); free(scale); free(first); free(again);
  shape_free(r);
  return ok;
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* CUDA events around `iters` back-to-back launches, after a barrier and a heat-up (below); the
 * slowest rank counts.
 * A slow op (a scalar variant at 8192^3) first lowers *iters so one loop stays near 2 s.
 * Returns microseconds per launch, or -1 on every rank if any failed. */
#define HEAT_MS 250.0
static double time_events(agg *r, int op, int *iters) {
  int ok = cu_ok(D->cuEventRecord(r->ev[0], r->s), "cuEventRecord");
  for (int i = 0; i < r->o->warmup && ok; i++) ok = !launch_op(r, op);
  ok = ok && cu_ok(D->cuEventRecord(r->ev[1], r->s), "cuEventRecord") && !finish(r);
  float ms = 0;
  if (ok) ok = cu_ok(D->cuEventElapsedTime(&ms, r->ev[0], r->ev[1]), "cuEventElapsedTime");
  if (!ranks_all(ok)) return -1;
  double one = ranks_max(r->o->warmup > 0 ? ms / r->o->warmup : 0);
  if (one * *iters > 2000.0) *iters = one > 666.0 ? 3 : (int)(2000.0 / one);
  /* Heat first: under sustained load the clocks settle lower (at 8192^3 a GEMM measured in the
   * first ~50 ms of load ran 12-15 % faster than the same GEMM measured after it), so every op,
   * weft's and the baselines', is measured after ~250 ms of itself back-to-back. */
  int heat = one > 0 ? (int)(HEAT_MS / one) : 0;
  if (heat > 20000) heat = 20000;
  for (int i = 0; i < heat && ok; i++) ok = !launch_op(r, op);
  ok = ok && !finish(r);
  if (!ranks_all(ok)) return -1;
  MPI_Barrier(MPI_COMM_WORLD);
  ok = cu_ok(D->cuEventRecord(r->ev[0], r->s), "cuEventRecord");
  for (int i = 0; i < *iters && ok; i++) ok = !launch_op(r, op);
  ok = ok && cu_ok(D->cuEventRecord(r->ev[1], r->s), "cuEventRecord") && !finish(r) &&
       cu_ok(D->cuEventElapsedTime(&ms, r->ev[0], r->ev[1]), "cuEventElapsedTime");
  if (!ranks_all(ok)) return -1;
  return ranks_max(ms * 1e3 / *iters);
}

/* The same `iters` launches captured once into a CUDA graph; one replay to warm up, then the
 * median of 3 timed replays (each after a barrier), the slowest rank (a slow op: one replay).
 * -1 if any rank failed. */
static double time_graph(agg *r, int op, int iters) {
  CUgraph g = NULL;
  CUgraphExec ge = NULL;
  double us = -1;
  /* relaxed: a first launch may still load a module, which global mode forbids while capturing */
  int ok = cu_ok(D->cuStreamBeginCapture(r->s, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  if (ok) {
    for (int i = 0; i < iters && ok; i++) ok = !launch_op(r, op);
    CUresult e = D->cuStreamEndCapture(r->s, &g);   /* always end a capture that began */
    ok = ok && cu_ok(e, "cuStreamEndCapture");
  }
  ok = ok && cu_ok(D->cuGraphInstantiateWithFlags(&ge, g, 0), "cuGraphInstantiate");
  /* a slow op (iters lowered: seconds per replay) is replayed once, without the warm-up */
  const int reps = iters < r->o->iters ? 1 : 3;
  if (reps == 3) ok = ok && cu_ok(D->cuGraphLaunch(ge, r->s), "cuGraphLaunch") && !finish(r);
  if (!ranks_all(ok)) goto out;
  double t[3];
  for (int rep = 0; rep < reps; rep++) {
    MPI_Barrier(MPI_COMM_WORLD);
    float ms = 0;
    ok = cu_ok(D->cuEventRecord(r->ev[0], r->s), "cuEventRecord") && cu_ok(D->cuGraphLaunch(ge, r->s), "cuGraphLaunch") &&
         cu_ok(D->cuEventRecord(r->ev[1], r->s), "cuEventRecord") && !finish(r) &&
         cu_ok(D->cuEventElapsedTime(&ms, r->ev[0], r->ev[1]), "cuEventElapsedTime");
    if (!ranks_all(ok)) goto out;
    t[rep] = ms * 1e3 / iters;
  }
  us = ranks_max(measure_median(t, reps));
out:
  if (ge) D->cuGraphExecDestroy(ge);
  if (g) D->cuGraphDestroy(g);
  return us;
}

/* What one timed shape measured; -1: not measured. */
typedef struct row {
  double w_ev, w_gr, b_ev, b_gr, n_ev, n_gr;
  int iters;
  const char *xcheck;
} row;

static void fmt(char *buf, size_t len, double v, const char *f) {
  if (v < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, f, v);
}

static void print_header(const agg *r) {
  printf("time: %s (%s), %s, b_layout %s, %d rank%s; us per launch: CUDA events around back-to-back launches "
         "(ev) and one CUDA graph of them (gr), the slowest rank, each op heated ~250 ms first, the median of 3 rounds "
         "that alternate weft and its baselines; TF = 2*M*N*K / time per rank; vs_* = weft's "
         "TFLOP/s over the baseline's (>1: weft faster)\n",
         r->m->name, kind_kernels(r->kind), hr_dtype_name(r->dt), r->bcol ? "col" : "row", SIZE, SIZE == 1 ? "" : "s");
  printf("#ag_gemm %-17s %-4s %-3s %6s %6s %6s %2s %5s %10s %10s %8s %8s %10s %10s %8s %8s %8s %8s %10s %10s %8s %8s %6s\n",
         "variant", "type", "b", "M", "N", "K", "P", "iters", "weft_ev", "weft_gr", "TF_ev", "TF_gr", "cublas_ev",
         "cublas_gr", "cbTF_ev", "cbTF_gr", "vs_cb_ev", "vs_cb_gr", "nccl_ev", "nccl_gr", "vs_nc_ev", "vs_nc_gr", "xcheck");
}

static void print_row(const agg *r, const row *w) {
  double fl = 2.0 * (double)r->M * (double)r->N * (double)r->K;
  char c[16][24];
  double v[16] = {w->w_ev, w->w_gr, w->w_ev > 0 ? fl / w->w_ev * 1e-6 : -1, w->w_gr > 0 ? fl / w->w_gr * 1e-6 : -1,
                  w->b_ev, w->b_gr, w->b_ev > 0 ? fl / w->b_ev * 1e-6 : -1, w->b_gr > 0 ? fl / w->b_gr * 1e-6 : -1,
                  w->w_ev > 0 && w->b_ev > 0 ? w->b_ev / w->w_ev : -1, w->w_gr > 0 && w->b_gr > 0 ? w->b_gr / w->w_gr : -1,
                  w->n_ev, w->n_gr, w->w_ev > 0 && w->n_ev > 0 ? w->n_ev / w->w_ev : -1,
                  w->w_gr > 0 && w->n_gr > 0 ? w->n_gr / w->w_gr : -1};
  const char *f[14] = {"%.2f", "%.2f", "%.1f", "%.1f", "%.2f", "%.2f", "%.1f", "%.1f", "%.3f", "%.3f", "%.2f", "%.2f",
                       "%.3f", "%.3f"};
  for (int i = 0; i < 14; i++) fmt(c[i], sizeof c[i], v[i], f[i]);
  printf("ag_gemm  %-17s %-4s %-3s %6lld %6lld %6lld %2d %5d %10s %10s %8s %8s %10s %10s %8s %8s %8s %8s %10s %10s %8s %8s %6s\n",
         r->variant, hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->M, r->N, r->K, SIZE, w->iters, c[0], c[1], c[2],
         c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], w->xcheck);
  fflush(stdout);
}

/* weft's C against cuBLAS's, every element: each is within 2u|ref| + 2^-16 sum|a||b| of the
 * truth, so they differ by at most twice that; sum|a||b| is bounded by sum_k|a_ik| max_k|b_kj|
 * (no reference GEMM on the host at 8192^3).  1 if they agree. */
static int cross_check(agg *r, const void *cw, const void *cb, char *line, size_t len) {
  long long M = r->M, N = r->N, K = r->K;
  double *rowabs = malloc((size_t)M * sizeof *rowabs), *colmax = calloc((size_t)N, sizeof *colmax);
  if (!rowabs || !colmax) { free(rowabs); free(colmax); snprintf(line, len, "out of host memory"); return 0; }
  for (long long i = 0; i < M; i++) {
    double s = 0;
    for (long long k = 0; k < K; k++) s += fabs(hr_load(r->dt, r->hA, (size_t)i * (size_t)K + (size_t)k));
    rowabs[i] = s;
  }
  for (long long k = 0; k < K; k++)
    for (long long j = 0; j < N; j++) {
      double b = fabs(hr_load(r->dt, r->hB, r->bcol ? (size_t)j * (size_t)K + (size_t)k : (size_t)k * (size_t)N + (size_t)j));
      if (b > colmax[j]) colmax[j] = b;
    }
  verdict v;
  memset(&v, 0, sizeof v);
  double u4 = 4 * unit_roundoff(r->dt), tiny = ldexp(1, -23);
  for (long long i = 0; i < M; i++)
    for (long long j = 0; j < N; j++) {
      size_t at = (size_t)i * (size_t)N + (size_t)j;
      v.checked++;
      if (is_poison(r, cw, at)) { v.unwritten++; continue; }
      double w = hr_load(r->dt, cw, at), b = hr_load(r->dt, cb, at);
      if (isnan(w) || isnan(b)) { v.nans++; continue; }
      double tol = u4 * fmax(fabs(w), fabs(b)) + ldexp(rowabs[i] * colmax[j], -15) + tiny, e = fabs(w - b);
      if (e > tol) v.bad++;
      if (e / tol > v.worst) { v.worst = e / tol; v.wi = i; v.wj = j; v.wgot = w; v.wwant = b; v.wtol = tol; }
    }
  free(rowabs); free(colmax);
  verdict_format(&v, line, len);
  return verdict_ok(&v);
}

#define ROUNDS 3
static int time_shape(agg *r, long long M, long long N, long long K) {
  char name[160], line[512];
  row w = {-1, -1, -1, -1, -1, -1, r->o->iters, "-"};
  size_t c_bytes = (size_t)M * (size_t)N * r->es;
  void *cw = NULL, *cb = NULL;
  int ok = !shape_begin(r, M, N, K, 1), pass = 1;
  label(r, name, sizeof name);
  if (!ranks_all(ok)) { pass = 0; goto out; }
  /* Rounds of weft, cuBLAS, NCCL + cuBLAS in turn, the median of each: the clocks drift under
   * load for seconds, and alternating puts weft and its baselines under the same drift.  A slow
   * op (lowered iters: a scalar kernel at 8192^3) gets one round. */
  double t[6][ROUNDS];
  int rounds = ROUNDS;
  for (int rd = 0; rd < rounds; rd++) {
    for (int i = 0; i < 6; i++) t[i][rd] = -1;
    if ((t[0][rd] = time_events(r, OP_WEFT, &w.iters)) < 0) { pass = 0; goto out; }
    if (w.iters < r->o->iters) rounds = 1;
    if ((t[1][rd] = time_graph(r, OP_WEFT, w.iters)) < 0) { pass = 0; goto out; }
    if (r->have_blt) {
      int it = r->o->iters;
      if ((t[2][rd] = time_events(r, OP_CUBLAS, &it)) < 0) { pass = 0; goto out; }
      if ((t[3][rd] = time_graph(r, OP_CUBLAS, it)) < 0) { pass = 0; goto out; }
    }
    if (r->have_nccl) {
      int it = r->o->iters;
      if ((t[4][rd] = time_events(r, OP_NCCL, &it)) < 0) { pass = 0; goto out; }
      if ((t[5][rd] = time_graph(r, OP_NCCL, it)) < 0) { pass = 0; goto out; }
    }
  }
  w.w_ev = measure_median(t[0], rounds); w.w_gr = measure_median(t[1], rounds);
  w.b_ev = measure_median(t[2], rounds); w.b_gr = measure_median(t[3], rounds);
  w.n_ev = measure_median(t[4], rounds); w.n_gr = measure_median(t[5], rounds);
  if (r->have_blt) {   /* every launch above wrote the same C: compare the last ones */
    cw = malloc(c_bytes);
    cb = malloc(c_bytes);
    ok = cw && cb && cu_ok(D->cuMemcpyDtoH(cw, r->cmat, c_bytes), "cuMemcpyDtoH") &&
         cu_ok(D->cuMemcpyDtoH(cb, r->cb, c_bytes), "cuMemcpyDtoH");
    if (ok && !cross_check(r, cw, cb, line, sizeof line)) {
      fprintf(stderr, "check: rank %d: %s: weft and cuBLAS disagree (%s)\n", RANK, name, line);
      ok = 0;
    } else if (ok && RANK == 0 && !r->o->quiet) {
      printf("check: %s: weft agrees with cuBLAS (%s)\n", name, line);
      char algo[256];
      blt_describe(&r->L, &r->plan, algo, sizeof algo);
      if (algo[0]) printf("baseline: %s: cuBLASLt's algorithm (cublasLt.h's ids): %s\n", name, algo);
    }
    if (ok && r->have_nccl && cu_ok(D->cuMemcpyDtoH(cw, r->cn, c_bytes), "cuMemcpyDtoH") && memcmp(cw, cb, c_bytes))
      fprintf(stderr, "weft run: rank %d: %s: NCCL all-gather + cuBLAS gave other bits than cuBLAS on the whole A: "
              "its gather is suspect\n", RANK, name);
    w.xcheck = ranks_all(ok) ? "ok" : "FAIL";
    if (!ok || strcmp(w.xcheck, "ok")) pass = 0;
  }
out:
  if (RANK == 0) {
    print_row(r, &w);
    if (!pass) fprintf(stderr, "time: %s: FAILED (rank messages above)\n", name);
  }
  if (r->o->result && pass && w.w_ev > 0) {
    double fl = 2.0 * (double)M * (double)N * (double)K, t = w.w_gr > 0 ? w.w_gr : w.w_ev;
    double bt = w.w_gr > 0 ? w.b_gr : w.b_ev;
    r->o->result->timed = 1;
    r->o->result->us = t;
    r->o->result->metric = fl / t * 1e-6;
    r->o->result->baseline = bt > 0 ? bt / t : 0;
    snprintf(r->o->result->metric_name, sizeof r->o->result->metric_name, "TFLOP/s");
    snprintf(r->o->result->baseline_name, sizeof r->o->result->baseline_name, "cuBLAS");
  }
  free(cw); free(cb);
  shape_free(r);
  return pass;
}

/* ---- entry ----------------------------------------------------------------------------------- */

/* gather_then_gemm's GEMM: its config's second kernel, compiled with it (weft_kernel_part) */
static int second_kernel(agg *r, char *why, size_t len) {
  r->k2 = weft_kernel_part(r->k, 1);
  const weft_manifest *m2 = r->k2 ? weft_kernel_manifest(r->k2) : NULL;
  if (weft_kernel_count(r->k) != 2 || !m2 || strcmp(m2->family, "gemm") != 0 || m2->comm.signals) {
    snprintf(why, len, "%s: gather_then_gemm compiles to a gather and a GEMM (family gemm, no comm), but its config "
             "gave %d kernel(s)%s%s", r->m->name, weft_kernel_count(r->k), m2 ? ", the second " : "", m2 ? m2->name : "");
    return -1;
  }
  if (RANK == 0)
    printf("compile: %s in %.1f ms (%s; gather_then_gemm's GEMM)\n", m2->name, weft_kernel_compile_ms(r->k2),
           weft_kernel_cache_hit(r->k2) ? "cache hit" : "NVRTC");
  return 0;
}

static int host_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int local = ls && atoi(ls) > 0 ? atoi(ls) : 1;
  n = n > 0 ? n / local : 1;
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static int run_ag_gemm(weft_kernel *k, const run_opts *o) {
  /* a plain `weft run`: a world of one.  MPI stays up until the process exits: `weft tune`
   * runs many kernels in one process, and MPI cannot be initialised again once finalized. */
  ranks_ensure();
  MPI_Comm_rank(MPI_COMM_WORLD, &RANK);
  MPI_Comm_size(MPI_COMM_WORLD, &SIZE);
  int rc = CLI_FAIL, pass = 1;
  char why[512] = "";
  agg r = {.o = o, .k = k, .m = weft_kernel_manifest(k), .device = cli_device(), .nthreads = host_threads()};
  gshape checks[CLI_MAX_SHAPES + 1], times[CLI_MAX_SHAPES];
  int n_checks = 0, n_times = 0;
  D = drv_get(why, sizeof why);
  if (!D) {
    fprintf(stderr, "weft run: %s\n", why);
    rc = CLI_NO_GPU;
    goto out;
  }
  /* family gemm is this runner's plain GEMM (P = 1 in its kernel, no comm) */
  r.variant = !strcmp(r.m->family, "gemm") ? "gemm" : weft_manifest_param(r.m, "variant");
  const char *bl = weft_manifest_param(r.m, "b_layout");
  if (!r.variant || hr_dtype_parse(weft_manifest_param(r.m, "dtype"), &r.dt) || !bl ||
      (strcmp(bl, "row") && strcmp(bl, "col"))) {
    fprintf(stderr, "weft run: %s: the manifest lacks variant, dtype or b_layout (row|col)\n", r.m->name);
    goto out;
  }
  r.bcol = !strcmp(bl, "col");
  r.es = hr_dtype_size(r.dt);
  if (!strcmp(r.variant, "gemm")) r.kind = V_GEMM;
  else if (!strcmp(r.variant, "gather_then_gemm")) r.kind = V_TWO;
  else if (!strcmp(r.variant, "naive_remote") || !strcmp(r.variant, "threadload_gather") ||
           !strcmp(r.variant, "multimem_gather") || !strcmp(r.variant, "fused")) r.kind = V_COMM;
  else {
    fprintf(stderr, "weft run: %s: variant '%s': this runner knows gemm, naive_remote, threadload_gather, "
            "multimem_gather, gather_then_gemm, fused\n", r.m->name, r.variant);
    goto out;
  }
  /* the shapes: the family's and the user's (run_opts), and one that depends on the world size */
  for (int i = 0; i < o->n_check && n_checks < CLI_MAX_SHAPES; i++) {
    const weft_shape *s = &o->check_shapes[i];
    checks[n_checks++] = (gshape){cli_size(r.m, s, "m"), cli_size(r.m, s, "n"), cli_size(r.m, s, "k")};
  }
  if (!o->shapes_only) checks[n_checks++] = (gshape){1024ll * SIZE, 1536, 512};   /* big enough to sample rows */
  for (int i = 0; i < o->n_time && n_times < CLI_MAX_SHAPES; i++) {
    const weft_shape *s = &o->time_shapes[i];
    times[n_times++] = (gshape){cli_size(r.m, s, "m"), cli_size(r.m, s, "n"), cli_size(r.m, s, "k")};
  }
  if (!o->check) n_checks = 0;
  if (!o->timing) n_times = 0;
  /* The communicator's buffer holds the gathered A (max_elems = M*K); weft_comm_launch also
   * holds every size argument to max_elems, so N and K count too. */
  long long max_elems = 1;
  for (int i = 0; i < n_checks + n_times; i++) {
    const gshape *s = i < n_checks ? &checks[i] : &times[i - n_checks];
    long long e = s->m * s->k;
    if (s->n > e) e = s->n;
    if (e > max_elems) max_elems = e;
  }
  if (r.kind == V_TWO && !ranks_all(!second_kernel(&r, why, sizeof why))) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, why[0] ? why : "another rank has no GEMM kernel");
    goto out;
  }
  if (r.kind != V_GEMM) {
    if (weft_world_create(NULL, &r.w)) { fprintf(stderr, "weft run: rank %d: cannot create the world\n", RANK); goto out; }
    if (weft_comm_create(k, r.w, max_elems, &r.comm)) {
      fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_kernel_error(k));
      goto out;
    }
  }
  {
    int ok = cu_ok(D->cuStreamCreate(&r.s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
             cu_ok(D->cuEventCreate(&r.ev[0], 0), "cuEventCreate") && cu_ok(D->cuEventCreate(&r.ev[1], 0), "cuEventCreate");
    if (!ranks_all(ok)) goto out;
  }
  r.have_blt = ranks_first_why(!blt_open(&r.L, r.no_blt, sizeof r.no_blt), r.no_blt, (int)sizeof r.no_blt);
  if (!r.have_blt) blt_close(&r.L);
  /* the gemm variant has nothing to gather: cuBLAS alone is its baseline */
  if (SIZE > 1 && n_times > 0 && r.have_blt && r.kind != V_GEMM)
    r.have_nccl = !nccl_open(&r.nc, r.device, r.no_nccl, (int)sizeof r.no_nccl);
  else
    snprintf(r.no_nccl, sizeof r.no_nccl, "%s", !r.have_blt ? "no cuBLAS" : "nothing to gather");
  if (RANK == 0) {
    printf("run: %s: variant %s (%s), %s, b_layout %s, on %d rank%s", r.m->name, r.variant, kind_kernels(r.kind),
           hr_dtype_name(r.dt), bl, SIZE, SIZE == 1 ? "" : "s");
    if (r.comm)
      printf(" (%d per GPU; file descriptors by %s)%s", weft_symm_gpu_share(weft_comm_symm(r.comm)),
             weft_symm_method(weft_comm_symm(r.comm)),
             r.m->comm.multimem ? (weft_comm_multicast(r.comm) ? ", multicast" : ", emulated multimem (unicast fan-out)") : "");
    printf("\n");
    long held = 0;   /* what the persistent grid is capped at: co-resident clusters (or CTAs) */
    const unsigned *cl = r.m->cluster;
    if (api_kernel_load(r.k, &held) == WEFT_OK)
      printf("launch: block %u, cluster %u, %u bytes of shared memory; the GPU holds %ld %s at once\n",
             r.m->block[0], cl[0] * cl[1] * cl[2], r.m->smem, held, cl[0] * cl[1] * cl[2] > 1 ? "clusters" : "CTAs");
    if (r.have_blt) printf("baseline: cuBLASLt %zu (%s)\n", r.L.version(), r.L.path);
    else printf("baseline: cuBLAS NOT run: %s\n", r.no_blt);
    if (SIZE > 1 && n_times > 0 && r.kind != V_GEMM) {
      if (r.have_nccl) printf("baseline: NCCL %d all-gather + cuBLASLt\n", r.nc.version);
      else printf("baseline: NCCL all-gather + cuBLAS NOT run: %s\n", r.no_nccl);
    }
    fflush(stdout);
  }
  for (int i = 0; i < n_checks; i++) {
    const gshape *s = &checks[i];
    r.M = s->m; r.N = s->n; r.K = s->k;
    if (r.kind != V_GEMM && s->m % SIZE) {
      if (RANK == 0) printf("check: %s %lldx%lldx%lld: skipped: M is not a multiple of the %d ranks\n", r.variant, s->m, s->n, s->k, SIZE);
      continue;
    }
    if (!bind_shape(&r, 0, why, sizeof why)) {
      if (RANK == 0) printf("check: %s %lldx%lldx%lld: skipped: %s\n", r.variant, s->m, s->n, s->k, why);
      continue;
    }
    if (!ranks_all(check_shape(&r, s->m, s->n, s->k))) {   /* a rank's own verdict may be "pass" */
      if (RANK == 0) printf("check: %s: FAIL at %lldx%lldx%lld (rank messages above)\n", r.m->name, s->m, s->n, s->k);
      goto out;
    }
  }
  if (n_checks > 0 && o->result) { o->result->checked = 1; o->result->passed = 1; }
  if (n_times > 0 && RANK == 0) print_header(&r);
  for (int i = 0; i < n_times; i++) {
    const gshape *s = &times[i];
    r.M = s->m; r.N = s->n; r.K = s->k;
    if ((r.kind != V_GEMM && s->m % SIZE) || !bind_shape(&r, 0, why, sizeof why)) {
      if (RANK == 0)
        printf("time: %s %lldx%lldx%lld: skipped: %s\n", r.variant, s->m, s->n, s->k,
               s->m % SIZE && r.kind != V_GEMM ? "M is not a multiple of the ranks" : why);
      continue;
    }
    if (!ranks_all(time_shape(&r, s->m, s->n, s->k))) {
      pass = 0;
      /* a timed-out communicator (on any rank) refuses every launch */
      if (!ranks_all(!r.comm || !weft_comm_check(r.comm))) break;
    }
  }
  rc = pass ? CLI_OK : CLI_FAIL;
out:
  if (D) {
    if (r.nc.comm) r.nc.destroy(r.nc.comm);
    if (r.have_blt) blt_close(&r.L);
    if (r.ev[0]) D->cuEventDestroy(r.ev[0]);
    if (r.ev[1]) D->cuEventDestroy(r.ev[1]);
    if (r.s) D->cuStreamDestroy(r.s);
  }
  if (r.comm) weft_comm_destroy(r.comm);
  weft_world_destroy(r.w);
  if (rc != CLI_NO_GPU) rc = ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
  return rc;
}

WEFT_RUNNER(ag_gemm, run_ag_gemm)
WEFT_RUNNER(gemm, run_ag_gemm)   /* the plain GEMM: the same runner at P = 1, no comm */
