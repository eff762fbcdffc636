/* cublaslt.c: cuBLASLt opened at run time (cublaslt.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublaslt.h"

enum {
  BLT_R_32F = 0, BLT_R_16F = 2, BLT_R_16BF = 14, /* cudaDataType (library_types.h) */
  BLT_COMPUTE_32F = 68,                          /* cublasComputeType_t (cublas_api.h) */
  BLT_OP_N = 0, BLT_OP_T = 1,                    /* cublasOperation_t */
  BLT_DESC_TRANSA = 3, BLT_DESC_TRANSB = 4,      /* cublasLtMatmulDescAttributes_t (int32_t values) */
  BLT_PREF_MAX_WORKSPACE_BYTES = 1               /* cublasLtMatmulPreferenceAttributes_t (uint64_t) */
};
#define BLT_WORKSPACE ((size_t)32 << 20)

static const char *blt_status(const blt *L, int st) {
  const char *s = L->status_name ? L->status_name(st) : NULL;
  return s ? s : "cublasStatus";
}

int blt_open(blt *L, const drv_table *d, char *why, size_t len) {
  L->d = d;
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
  if (d->cuMemAlloc(&L->ws, BLT_WORKSPACE) != CUDA_SUCCESS) {
    L->ws = 0;
    snprintf(why, len, "cannot allocate cuBLASLt's %zu MiB workspace", BLT_WORKSPACE >> 20);
    return -1;
  }
  return 0;
}

void blt_close(blt *L) {
  if (L->ws && L->d) L->d->cuMemFree(L->ws);
  if (L->h) L->destroy(L->h);
  /* the library stays mapped: its static CUDA runtime may still hold exit handlers */
  memset(L, 0, sizeof *L);
}

void blt_plan_free(blt *L, blt_plan *p) {
  if (p->desc) L->desc_destroy(p->desc);
  if (p->la) L->layout_destroy(p->la);
  if (p->lb) L->layout_destroy(p->lb);
  if (p->lc) L->layout_destroy(p->lc);
  memset(p, 0, sizeof *p);
}

/* Column-major view: cuBLAS's A is our B, its B is our A (K x M, ld K), its C is N x M (ld N).
 * b_layout "row": B is K x N row-major = column-major N x K (ld N), no transpose.
 * b_layout "col": B is N x K row-major = column-major K x N (ld K), transposed. */
int blt_plan_make(blt *L, blt_plan *p, hr_dtype dt, int bcol, long long M, long long N, long long K,
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
void blt_describe(const blt *L, const blt_plan *p, char *buf, size_t len) {
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

static int algo_attr(const blt *L, const blt_plan *p, int a, uint32_t *v) {
  size_t need = 0, got = 0;
  *v = 0;
  return L->algo_get && p->ready && !L->algo_get(p->heur.algo, a, NULL, 0, &need) && need > 0 && need <= sizeof *v &&
         !L->algo_get(p->heur.algo, a, v, need, &got);
}

int blt_output_type_split(const blt *L, const blt_plan *p) {
  enum { SPLITK = 2, REDUCTION = 3, INPLACE = 1, OUTPUT_TYPE = 4 };   /* cublasLt.h's ids and schemes */
  uint32_t split, scheme;
  int yes = algo_attr(L, p, SPLITK, &split) && split > 1 && split < 1024 && algo_attr(L, p, REDUCTION, &scheme) &&
            (scheme & (INPLACE | OUTPUT_TYPE)) != 0;
  return yes ? (int)split : 0;
}

int blt_run(blt *L, blt_plan *p, CUdeviceptr c, CUdeviceptr a, CUdeviceptr b, CUstream s, char *why, size_t len) {
  const float one = 1.0f, zero = 0.0f;
  int st = L->matmul(L->h, p->desc, &one, (const void *)(uintptr_t)b, p->la, (const void *)(uintptr_t)a, p->lb, &zero,
                     (const void *)(uintptr_t)c, p->lc, (void *)(uintptr_t)c, p->lc, p->heur.algo,
                     (void *)(uintptr_t)L->ws, BLT_WORKSPACE, s);
  if (st) snprintf(why, len, "cublasLtMatmul failed: %s (%d)", blt_status(L, st), st);
  return st ? -1 : 0;
}

