/* api.c: the public C API (weft.h): contexts, compile through the cache, launch. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "cache.h"
#include "driver.h"
#include "hash.h"
#include "util.h"
#include "internal.h"
#include "manifest.h"
#include "tunedb.h"
#include "jit.h"
#include "util.h"
#include "weft.h"
#include "workspace.h"

#define ERRLEN 16384

struct weft_ctx {
  bridge *gen;
  cache *cache;            /* opened at the first compile: `weft gen` needs no cache folder */
  char *cache_root;
  int device;
  const drv_table *drv;    /* set at the first launch */
  CUdevice cudev;
  CUcontext cuctx;
  ws_table *ws;            /* the workspaces of manifests that have one (stream-K), or NULL */
  weft_kernel *kernels;    /* the first kernels compiled in it and not destroyed (next/prev;
                              kernels_mu) */
  char err[ERRLEN];
};

struct weft_kernel {
  weft_ctx *ctx;
  weft_manifest *m;
  cache_entry bin;
  int hit;
  double compile_ms;
  CUlibrary lib;
  const drv_table *drv;    /* what loaded lib and unloads it: the context may be destroyed first */
  CUfunction fn;
  int grid_arg[3];         /* index of the size argument behind each grid dimension, or -1 */
  int grid_by[3];          /* index of its second size argument (weft_grid_dim.by), or -1 */
  long coresident;         /* clusters (or blocks) the device holds at once; 0 until loaded */
  /* A config's kernels (manifest parts): the first holds them all, parts[0] being itself, and
   * frees them; the others point back at it and own neither their manifest nor themselves. */
  weft_kernel **parts;
  weft_kernel *owner;
  weft_kernel *next, *prev;   /* a first kernel in its context's list; ctx is cleared when it goes */
  char err[ERRLEN];
};

/* Every context's kernel list and every kernel's ctx pointer: a kernel may be destroyed on another
 * thread than its context's (Python's garbage collector does), even while the context compiles
 * or is destroyed. */
static pthread_mutex_t kernels_mu = PTHREAD_MUTEX_INITIALIZER;

const char *weft_status_name(weft_status s) {
  static const char *names[] = {"ok", "config error", "compile error", "cache error", "no driver",
                                "no device", "CUDA error", "launch error", "I/O error",
                                "out of memory", "invalid use", "internal error", "ranks disagree",
                                "multicast unavailable", "signal timeout"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown status";
}

/* st, with the message in buf (an error buffer of ERRLEN bytes; NULL: none) */
static weft_status vfail(char *buf, weft_status st, const char *fmt, va_list ap) {
  if (buf) vsnprintf(buf, ERRLEN, fmt, ap);
  return st;
}

static weft_status fail(char *buf, weft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static weft_status fail(char *buf, weft_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(buf, st, fmt, ap);
  va_end(ap);
  return st;
}

weft_status api_refuse(char *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(err, WEFT_ERR_INVALID, fmt, ap);
  va_end(ap);
  return WEFT_ERR_INVALID;
}

weft_status api_read_status(int read_rc) {
  return read_rc == UTIL_READ_SETTING ? WEFT_ERR_INVALID : read_rc == UTIL_READ_NOMEM ? WEFT_ERR_NOMEM : WEFT_ERR_IO;
}

weft_status weft_ctx_create(weft_ctx **out, const weft_ctx_options *opts) {
  if (!out) return WEFT_ERR_INVALID;
  *out = NULL;
  weft_ctx *c = calloc(1, sizeof *c);
  if (!c) return WEFT_ERR_NOMEM;
  const char *src = opts && opts->source_dir && *opts->source_dir ? opts->source_dir : getenv("WEFT_SOURCE_DIR");
  char err[1024];
  /* (bridge_open fails only out of memory: a bad source_dir is reported by the first generate) */
  if (bridge_open(&c->gen, src, 0, err, sizeof err) != 0) { free(c); return WEFT_ERR_NOMEM; }
  c->device = opts ? opts->device : 0;
  /* "" is unset, as for WEFT_CACHE_DIR and source_dir */
  if (opts && opts->cache_dir && *opts->cache_dir && !(c->cache_root = util_strdup(opts->cache_dir))) {
    weft_ctx_destroy(c);
    return WEFT_ERR_NOMEM;
  }
  *out = c;
  return WEFT_OK;
}

void weft_ctx_destroy(weft_ctx *c) {
  if (!c) return;
  /* kernels may outlive their context: they keep their binary and manifest, and the calls that
   * need the context say it is gone (kernel_ctx) instead of reading freed memory */
  pthread_mutex_lock(&kernels_mu);
  for (weft_kernel *k = c->kernels, *next; k; k = next) {
    next = k->next;
    for (int i = 0; k->parts && i < k->m->n_parts; i++) k->parts[i]->ctx = NULL;
    k->ctx = NULL;
    k->next = k->prev = NULL;
  }
  pthread_mutex_unlock(&kernels_mu);
  bridge_close(c->gen);
  cache_close(c->cache);
  free(c->cache_root);
  if (c->ws) {   /* (cuMemFree waits for the kernels that may still use them) */
    if (c->cuctx) c->drv->cuCtxSetCurrent(c->cuctx);
    ws_table_free(c->ws, c->drv);
  }
  if (c->cuctx && c->drv) c->drv->cuDevicePrimaryCtxRelease(c->cudev);
  free(c);
}

const char *weft_ctx_error(const weft_ctx *c) { return c ? c->err : "no context"; }

/* ---- generate --------------------------------------------------------------------------- */

weft_status weft_generate_string(weft_ctx *c, const char *chunkname, const char *text,
                                 const char *const *ov, int n_ov, weft_manifest **out) {
  if (!c) return WEFT_ERR_INVALID;
  if (!text || !out) return api_refuse(c->err, "weft_generate_string: %s is NULL", !text ? "text" : "out");
  return bridge_generate(c->gen, chunkname ? chunkname : "(config string)", text, ov, n_ov, out,
                         c->err, sizeof c->err);
}

weft_status weft_generate_file(weft_ctx *c, const char *path, const char *const *ov, int n_ov,
                               weft_manifest **out) {
  if (!c) return WEFT_ERR_INVALID;
  if (!path || !out) return api_refuse(c->err, "weft_generate_file: %s is NULL", !path ? "path" : "out");
  char *text;
  size_t n;
  int rc = util_read_file(path, &text, &n, c->err, sizeof c->err);
  if (rc != 0) return api_read_status(rc);
  const char *nul = memchr(text, 0, n);
  if (nul) {   /* the generator sees C strings: text after a NUL would silently vanish */
    util_set_err(c->err, sizeof c->err, "%s: holds a NUL byte at offset %zu: a config must be Lua source text",
                 path, (size_t)(nul - text));
    free(text);
    return WEFT_ERR_CONFIG;
  }
  weft_status st = weft_generate_string(c, path, text, ov, n_ov, out);
  free(text);
  return st;
}

/* ---- compile ---------------------------------------------------------------------------- */

typedef struct build_job { const weft_manifest *m; } build_job;

static int build_cb(void *ud, cache_entry *out, char *err, size_t errlen) {
  const build_job *j = ud;
  return jit_compile(j->m->name, j->m->source, j->m->options, j->m->n_options, out, err, errlen);
}

static void cache_key(const weft_manifest *m, const char *nvrtc, unsigned char key[32]) {
  hash_ctx *h = hash_begin();
  hash_add_str(h, "weft-cache-v1");
  hash_add_str(h, nvrtc);
  hash_add_str(h, "sm_90a");
  hash_add_str(h, m->source);
  for (int i = 0; i < m->n_options; i++) hash_add_str(h, m->options[i]);
  hash_end(h, key);
}

/* The context's cache folder for this NVRTC: 0, or -1 with c->err. */
static int ctx_cache_open(weft_ctx *c, const char *nv) {
  char sub[64];
  if (snprintf(sub, sizeof sub, "v1-nvrtc%s-sm_90a", nv) >= (int)sizeof sub) {
    snprintf(c->err, sizeof c->err, "NVRTC version %s: too long for the cache's folder name", nv);
    return -1;
  }
  return cache_open(&c->cache, c->cache_root, sub, c->err, sizeof c->err);
}

/* One kernel through the cache; k->m = m, which the caller still owns on failure. */
static weft_status kernel_build(weft_ctx *c, weft_manifest *m, const char *nv, weft_kernel **out) {
  weft_kernel *k = calloc(1, sizeof *k);
  if (!k) return fail(c->err, WEFT_ERR_NOMEM, "out of memory");
  k->ctx = c;
  k->m = m;
  for (int i = 0; i < 3; i++) {
    k->grid_arg[i] = m->grid[i].arg ? manifest_arg_index(m, m->grid[i].arg) : -1;
    k->grid_by[i] = m->grid[i].by ? manifest_arg_index(m, m->grid[i].by) : -1;
  }
  unsigned char key[32];
  cache_key(m, nv, key);
  build_job job = {m};
  cache_result res;
  double t0 = util_now_ms();
  int got = cache_get(c->cache, key, m->name, build_cb, &job, &k->bin, &res, c->err, sizeof c->err);
  if (got == CACHE_FAIL && cache_gone(c->cache)) {
    /* the cache folder was removed while this context used it: made again, once (every later
     * compile failed: its entries and locks were opened in the removed folder) */
    cache_entry_free(&k->bin);
    cache_close(c->cache);
    c->cache = NULL;
    if (ctx_cache_open(c, nv) != 0) { free(k); return WEFT_ERR_CACHE; }
    got = cache_get(c->cache, key, m->name, build_cb, &job, &k->bin, &res, c->err, sizeof c->err);
  }
  if (got != 0) {
    cache_entry_free(&k->bin);
    free(k);
    /* (NVRTC's failure is a compile error; the folder's, a file's or the lock's the cache's) */
    return got == CACHE_FAIL_ENV ? WEFT_ERR_INVALID : got == CACHE_FAIL_BUILD ? WEFT_ERR_COMPILE : WEFT_ERR_CACHE;
  }
  k->compile_ms = util_now_ms() - t0;
  k->hit = res == CACHE_HIT;
  *out = k;
  return WEFT_OK;
}

weft_status weft_compile_manifest(weft_ctx *c, weft_manifest *m, weft_kernel **out) {
  if (out) *out = NULL;
  /* a part is its first kernel's (weft_manifest_part): refused, and left to it */
  if (m && m->part != 0)
    return api_refuse(c ? c->err : NULL, "%s: kernel %d of %d of its config: compile the first, which compiles them "
                      "all (weft_kernel_part)", m->name, m->part + 1, m->n_parts);
  /* otherwise m is taken in every case, freed on failure (the caller never frees it after) */
  if (!c || !m || !out) {
    weft_manifest_free(m);
    return api_refuse(c ? c->err : NULL, "weft_compile_manifest: %s is NULL", !m ? "the manifest" : "out");
  }
  char nv[32];
  jit_nvrtc_version(nv, sizeof nv);
  if (!c->cache && ctx_cache_open(c, nv) != 0) {
    weft_manifest_free(m);
    return WEFT_ERR_CACHE;
  }
  weft_kernel *k;
  weft_status st = kernel_build(c, m, nv, &k);
  if (st) { weft_manifest_free(m); return st; }
  if (m->n_parts > 1) {
    k->parts = calloc((size_t)m->n_parts, sizeof *k->parts);
    if (!k->parts) { weft_kernel_destroy(k); return fail(c->err, WEFT_ERR_NOMEM, "out of memory"); }
    k->parts[0] = k;
    for (int i = 1; i < m->n_parts; i++) {
      /* weft_manifest_part is const for users; the kernel owns m, and with it the parts */
      if ((st = kernel_build(c, (weft_manifest *)weft_manifest_part(m, i), nv, &k->parts[i]))) {
        weft_kernel_destroy(k);
        return st;
      }
      k->parts[i]->owner = k;
    }
  }
  pthread_mutex_lock(&kernels_mu);
  k->next = c->kernels;
  if (c->kernels) c->kernels->prev = k;
  c->kernels = k;
  pthread_mutex_unlock(&kernels_mu);
  *out = k;
  return WEFT_OK;
}

weft_status weft_compile_string(weft_ctx *c, const char *chunkname, const char *text,
                                const char *const *ov, int n_ov, weft_kernel **out) {
  weft_manifest *m;
  weft_status st = weft_generate_string(c, chunkname, text, ov, n_ov, &m);
  return st ? st : weft_compile_manifest(c, m, out);
}

weft_status weft_compile_file(weft_ctx *c, const char *path, const char *const *ov, int n_ov,
                              weft_kernel **out) {
  weft_manifest *m;
  weft_status st = weft_generate_file(c, path, ov, n_ov, &m);
  return st ? st : weft_compile_manifest(c, m, out);
}

const weft_manifest *weft_kernel_manifest(const weft_kernel *k) { return k ? k->m : NULL; }
const char *weft_kernel_ptx(const weft_kernel *k, size_t *size) {
  if (size) *size = k ? k->bin.ptx_size : 0;
  return k ? k->bin.ptx : NULL;
}
const void *weft_kernel_cubin(const weft_kernel *k, size_t *size) {
  if (size) *size = k ? k->bin.cubin_size : 0;
  return k ? k->bin.cubin : NULL;
}
const char *weft_kernel_log(const weft_kernel *k) { return k && k->bin.log ? k->bin.log : ""; }
int weft_kernel_cache_hit(const weft_kernel *k) { return k ? k->hit : 0; }
double weft_kernel_compile_ms(const weft_kernel *k) { return k ? k->compile_ms : 0; }
const char *weft_kernel_error(const weft_kernel *k) { return k ? k->err : "no kernel"; }

int weft_kernel_count(const weft_kernel *k) { return k ? k->m->n_parts : 0; }

weft_kernel *weft_kernel_part(weft_kernel *k, int i) {
  if (!k || k->owner || i < 0 || i >= k->m->n_parts) return NULL;
  return i == 0 ? k : k->parts[i];
}

/* Reads nothing of k->ctx: a kernel may outlive its context (weft_ctx_destroy clears it). */
static void kernel_free(weft_kernel *k) {
  if (k->lib && k->drv) k->drv->cuLibraryUnload(k->lib);
  cache_entry_free(&k->bin);
  free(k);
}

void weft_kernel_destroy(weft_kernel *k) {
  if (!k || k->owner) return;   /* a later kernel of a config goes with its first */
  pthread_mutex_lock(&kernels_mu);
  if (k->ctx) {
    if (k->prev) k->prev->next = k->next;
    else if (k->ctx->kernels == k) k->ctx->kernels = k->next;
    if (k->next) k->next->prev = k->prev;
  }
  pthread_mutex_unlock(&kernels_mu);
  for (int i = 1; k->parts && i < k->m->n_parts; i++)
    if (k->parts[i]) kernel_free(k->parts[i]);
  free(k->parts);
  weft_manifest *m = k->m;
  kernel_free(k);
  weft_manifest_free(m);
}

/* The kernel's context, or NULL with k->err saying it was destroyed. */
static weft_ctx *kernel_ctx(weft_kernel *k) {
  if (!k->ctx)
    api_refuse(k->err, "%s: its context was destroyed (weft_ctx_destroy): create one and compile the kernel again",
               k->m->name);
  return k->ctx;
}

weft_status weft_reference_fold(weft_kernel *k, const double *x, size_t n, double *out) {
  if (!k) return WEFT_ERR_INVALID;
  if (!x && n) return api_refuse(k->err, "weft_reference_fold: x is NULL with n = %zu", n);
  if (!out) return api_refuse(k->err, "weft_reference_fold: out is NULL");
  if (!kernel_ctx(k)) return WEFT_ERR_INVALID;
  if (bridge_fold(k->ctx->gen, k->m, x, n, out, k->err, sizeof k->err) != 0) return WEFT_ERR_INVALID;
  return WEFT_OK;
}

/* ---- the device ------------------------------------------------------------------------- */

#define CU(call, what)                                                                    \
  do {                                                                                    \
    CUresult r_ = (call);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                             \
      char d_[512];                                                                       \
      drv_describe(d, r_, what, d_, sizeof d_);                                           \
      return fail(err, WEFT_ERR_CUDA, "%s", d_);                                          \
    }                                                                                     \
  } while (0)

static weft_status ctx_device(weft_ctx *c, char *err) {
  if (c->cuctx) {
    CUcontext cur = NULL;
    c->drv->cuCtxGetCurrent(&cur);
    if (cur != c->cuctx) c->drv->cuCtxSetCurrent(c->cuctx);
    return WEFT_OK;
  }
  char e[1024];
  const drv_table *d = drv_get(e, sizeof e);
  if (!d) return fail(err, WEFT_ERR_NO_DRIVER, "cannot launch: %s", e);
  int n = 0;
  CU(d->cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (c->device < 0 || c->device >= n)
    return fail(err, WEFT_ERR_NO_DEVICE, "cannot launch: device %d requested, but %d GPU%s visible",
                c->device, n, n == 1 ? " is" : "s are");
  CU(d->cuDeviceGet(&c->cudev, c->device), "cuDeviceGet");
  int major = 0, minor = 0;
  CU(d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->cudev), "cuDeviceGetAttribute");
  CU(d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->cudev), "cuDeviceGetAttribute");
  if (major != 9 || minor != 0) {
    char name[256] = "";
    d->cuDeviceGetName(name, sizeof name, c->cudev);
    return fail(err, WEFT_ERR_NO_DEVICE,
                "cannot launch: device %d (%s) is sm_%d%d; weft's kernels are built for sm_90a (H100/H200)",
                c->device, name, major, minor);
  }
  CU(d->cuDevicePrimaryCtxRetain(&c->cuctx, c->cudev), "cuDevicePrimaryCtxRetain");
  c->drv = d;
  CU(d->cuCtxSetCurrent(c->cuctx), "cuCtxSetCurrent");
  return WEFT_OK;
}

bridge *api_bridge(weft_ctx *c) { return c->gen; }

weft_status api_device_info(weft_ctx *c, char *name, size_t len, int *sm, int *driver) {
  weft_status st = ctx_device(c, c->err);
  if (st) return st;
  int major = 0, minor = 0;
  c->drv->cuDeviceGetName(name, (int)len, c->cudev);
  c->drv->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->cudev);
  c->drv->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->cudev);
  *sm = major * 10 + minor;
  *driver = c->drv->driver_version;
  return WEFT_OK;
}

weft_status weft_compile_tuned(weft_ctx *c, const char *path, const char *const *ov, int n_ov, const char *shape,
                               int ranks, const char *db_path, weft_kernel **out, int *tuned) {
  if (!c) return WEFT_ERR_INVALID;
  if (!path || !shape || !out || !tuned)
    return api_refuse(c->err, "weft_compile_tuned: %s is NULL", !path ? "path" : !shape ? "shape" : !out ? "out" : "tuned");
  if (ranks < 1) return api_refuse(c->err, "weft_compile_tuned: ranks = %d: the world's size, 1 or more", ranks);
  *out = NULL;
  *tuned = 0;
  weft_manifest *m;
  weft_status st = weft_generate_file(c, path, ov, n_ov, &m);
  if (st) return st;
  char gpu[256], nv[32], err[1024] = "";
  int sm = 0, driver = 0;
  st = api_device_info(c, gpu, sizeof gpu, &sm, &driver);
  if (st) { weft_manifest_free(m); return st; }
  jit_nvrtc_version(nv, sizeof nv);
  const char *dtype = weft_manifest_param(m, "dtype");
  tune_key key = {gpu, sm, driver, nv, ranks, m->family, dtype ? dtype : "", shape};
  tunedb *db = NULL;
  tune_row best;
  /* read-only: a lookup never makes a folder, a file or a schema (a mistyped --db made them and
   * then said only "no tuned config") */
  int opened = tunedb_open_readonly(&db, db_path, err, sizeof err);   /* (1: err says there is none) */
  int found = opened == 0 ? tunedb_best(db, &key, &best, err, sizeof err) : -1;
  char notice[2048];
  if (found == 0) {
    /* the stored candidate: its base config plus its overrides, one per line */
    enum { MAX_SETS = 128 };   /* (a sweep's candidate sets a handful of fields) */
    const char *sets[MAX_SETS];
    int n = 0;
    char *save = NULL, *p = strtok_r(best.config, "\n", &save);
    for (; p && n < MAX_SETS; p = strtok_r(NULL, "\n", &save)) sets[n++] = p;
    /* The tuned config must share the family's key fields (its run spec's key: what changes the
     * result, as op, eps, residual, b_layout) with the user's config, unless its sweep set them:
     * a tuned result never swaps what the user asked for.  Otherwise the config as given, with a
     * notice saying what differed. */
    weft_manifest *mt = NULL;
    char differs[1024] = "";
    if (p)   /* more lines than any candidate weft tune stores: refused, not cut short */
      st = api_refuse(c->err, "%s: the tuned row of %s holds more than %d overrides: not a row weft tune writes",
                      tunedb_path(db), best.kernel, MAX_SETS);
    else
      st = weft_generate_string(c, best.sweep, best.base, sets, n, &mt);
    for (int i = 0; !st && i < m->n_params && !differs[0]; i++) {
      const char *k = m->params[i].key, *mine = m->params[i].value, *theirs = weft_manifest_param(mt, k);
      int swept = 0;
      for (int j = 0; j < n && !swept; j++) {
        size_t kl = strcspn(sets[j], "=");
        swept = (strlen(k) == kl || (strlen(k) > kl && k[kl] == '.')) && !strncmp(sets[j], k, kl);
      }
      int keyed = m->run.n_key == 0;   /* no key declared: every field the sweep did not set */
      for (int j = 0; j < m->run.n_key && !keyed; j++) {
        size_t kl = strlen(m->run.key[j]);
        keyed = !strncmp(k, m->run.key[j], kl) && (k[kl] == 0 || k[kl] == '.');
      }
      if (keyed && !swept && (!theirs || strcmp(theirs, mine)))
        snprintf(differs, sizeof differs, "%.80s = %.120s there, %.120s in %.200s", k, theirs ? theirs : "(absent)", mine,
                 path);
    }
    if (st) {
      weft_manifest_free(mt);
      mt = NULL;
    } else if (differs[0]) {
      snprintf(notice, sizeof notice, "%s %s %s: the tuned config %s was tuned for another config (%s, which its sweep "
               "did not vary); using %s as given", m->family, key.dtype, shape, best.kernel, differs, path);
      weft_manifest_free(mt);
      mt = NULL;
      st = weft_compile_manifest(c, m, out);
      m = NULL;
    } else {
      snprintf(notice, sizeof notice, "%s %s %s: tuned config %s (%.2f us when tuned by %s; from %s)", m->family, key.dtype,
               shape, best.kernel, best.time_us, best.sweep, tunedb_path(db));
      st = weft_compile_manifest(c, mt, out);
      mt = NULL;
      if (!st) *tuned = 1;
    }
    tunedb_row_free(&best);
  } else {
    snprintf(notice, sizeof notice, "%s %s %s: no tuned config for %s (sm_%d, driver %d, NVRTC %s) on %d rank%s%s%s; "
             "using %s as given", m->family, key.dtype, shape, gpu, sm, driver, nv, ranks, ranks == 1 ? "" : "s",
             found < 0 ? ": " : "", found < 0 ? err : "", path);
    st = weft_compile_manifest(c, m, out);
    m = NULL;
  }
  if (db) tunedb_close(db);
  weft_manifest_free(m);
  if (!st) snprintf(c->err, sizeof c->err, "%s", notice);
  return st;
}

weft_status weft_ctx_cuda(weft_ctx *c, void **cucontext) {
  if (!c) return WEFT_ERR_INVALID;
  if (!cucontext) return api_refuse(c->err, "weft_ctx_cuda: cucontext is NULL");
  weft_status st = ctx_device(c, c->err);
  *cucontext = st ? NULL : (void *)c->cuctx;
  return st;
}

static weft_status kernel_load(weft_kernel *k) {
  char *err = k->err;
  if (!kernel_ctx(k)) return WEFT_ERR_INVALID;
  weft_status st = ctx_device(k->ctx, err);
  if (st) return st;
  if (k->fn) return WEFT_OK;
  const drv_table *d = k->drv = k->ctx->drv;
  CU(d->cuLibraryLoadData(&k->lib, k->bin.cubin, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  CUkernel kern;
  CU(d->cuLibraryGetKernel(&kern, k->lib, k->m->entry), "cuLibraryGetKernel");
  CU(d->cuKernelGetFunction(&k->fn, kern), "cuKernelGetFunction");
  if (k->m->smem > 48 * 1024)
    CU(d->cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->m->smem),
       "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (k->m->nonportable_cluster)
    CU(d->cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
       "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
  const unsigned *cl = k->m->cluster, *bl = k->m->block;
  int n = 0;
  if (cl[0] * cl[1] * cl[2] > 1) {
    CUlaunchAttribute attr;
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cl[0]; attr.value.clusterDim.y = cl[1]; attr.value.clusterDim.z = cl[2];
    CUlaunchConfig cfg = {0};
    cfg.gridDimX = cl[0]; cfg.gridDimY = cl[1]; cfg.gridDimZ = cl[2];
    cfg.blockDimX = bl[0]; cfg.blockDimY = bl[1]; cfg.blockDimZ = bl[2];
    cfg.sharedMemBytes = k->m->smem;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CU(d->cuOccupancyMaxActiveClusters(&n, k->fn, &cfg), "cuOccupancyMaxActiveClusters");
  } else {
    int per_sm = 0, sms = 0;
    CU(d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k->fn, (int)(bl[0] * bl[1] * bl[2]), k->m->smem),
       "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    CU(d->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, k->ctx->cudev), "cuDeviceGetAttribute");
    n = per_sm * sms;
  }
  if (n < 1)
    return fail(k->err, WEFT_ERR_LAUNCH, "%s: no cluster of this kernel fits on the device (block %u, cluster %u, "
                "%u bytes of dynamic shared memory)", k->m->name, bl[0] * bl[1] * bl[2], cl[0] * cl[1] * cl[2], k->m->smem);
  k->coresident = n;
  return WEFT_OK;
}

weft_status weft_kernel_resources(weft_kernel *k, weft_resources *out) {
  if (!k) return WEFT_ERR_INVALID;
  if (!out) return api_refuse(k->err, "weft_kernel_resources: out is NULL");
  weft_status st = kernel_load(k);
  if (st) return st;
  const drv_table *d = k->ctx->drv;
  char *err = k->err;
  CU(d->cuFuncGetAttribute(&out->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn), "cuFuncGetAttribute");
  CU(d->cuFuncGetAttribute(&out->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn), "cuFuncGetAttribute");
  CU(d->cuFuncGetAttribute(&out->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn), "cuFuncGetAttribute");
  CU(d->cuFuncGetAttribute(&out->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn), "cuFuncGetAttribute");
  return WEFT_OK;
}

/* element size behind a pointer argument (1 when the manifest names no dtype) */
static size_t dtype_size(const char *dt) {
  int n = manifest_dtype_bytes(dt);
  return n ? (size_t)n : 1;
}

/* Everything the kernel assumes about its arguments, checked before launch. */
static weft_status check_args(weft_kernel *k, void **args) {
  const weft_manifest *m = k->m;
  for (int i = 0; i < m->n_args; i++)
    if (!args[i]) return fail(k->err, WEFT_ERR_INVALID, "%s: argument %d (%s) is NULL", m->name, i, m->args[i].name);
  for (int i = 0; i < m->n_limits; i++) {
    int a = manifest_arg_index(m, m->limits[i].arg);
    char why[512];
    if (weft_manifest_check_size(m, m->limits[i].arg, manifest_arg_long(&m->args[a], args[a]), why, sizeof why))
      return fail(k->err, WEFT_ERR_LAUNCH, "%s", why);
  }
  for (int i = 0; i < m->n_args; i++) {
    const weft_arg *a = &m->args[i];
    if (strcmp(a->type, "ptr") != 0) continue;
    CUdeviceptr p = *(CUdeviceptr *)args[i];
    if (!p) return fail(k->err, WEFT_ERR_LAUNCH, "%s: pointer argument %s is 0", m->name, a->name);
    if (a->align > 0 && p % (CUdeviceptr)a->align)
      return fail(k->err, WEFT_ERR_LAUNCH, "%s: %s = 0x%llx: this kernel moves %d-byte vectors; pass %d-byte aligned "
                  "buffers", m->name, a->name, (unsigned long long)p, a->align, a->align);
    if (p % dtype_size(a->dtype))
      return fail(k->err, WEFT_ERR_LAUNCH, "%s: %s = 0x%llx is not aligned to its element size (%zu bytes)",
                  m->name, a->name, (unsigned long long)p, dtype_size(a->dtype));
    if (a->congruent) {
      int j = manifest_arg_index(m, a->congruent);
      CUdeviceptr q = *(CUdeviceptr *)args[j];
      if ((p - q) % 16)
        return fail(k->err, WEFT_ERR_LAUNCH,
                    "%s: %s and %s must have the same address modulo 16 (0x%llx vs 0x%llx), so their rows "
                    "split the same way into 16-byte vectors", m->name, a->name, a->congruent,
                    (unsigned long long)p, (unsigned long long)q);
    }
  }
  return WEFT_OK;
}

long api_grid_items(const weft_grid_dim *g, long v, long w, int ranks) {
  if (ranks < 1) ranks = 1;
  long items = (v + g->per - 1) / g->per;
  if (g->shards) {   /* one shard of ceil(v / ranks) per rank, each tiled on its own */
    long shard = (v + ranks - 1) / ranks;
    items = (shard + g->per - 1) / g->per;
    items = items > 2147483647L / ranks ? 2147483647L : items * ranks;
  }
  if (g->by) {   /* sizes are checked positive (limits) before this; saturate, never overflow */
    long by = (w + g->by_per - 1) / g->by_per;
    items = by > 0 && items > 2147483647L / by ? 2147483647L : items * by;
  }
  if (g->split) items = (items + ranks - 1) / ranks;
  if (g->max > 0 && items > g->max) items = g->max;
  return items;
}

/* The grid from the size arguments, as the manifest says.  ranks: the world size (split =
 * "ranks"); share: processes sharing this GPU, which divide its co-resident capacity. */
static weft_status launch_grid(weft_kernel *k, void **args, int ranks, int share, long coresident, unsigned grid[3]) {
  const weft_manifest *m = k->m;
  for (int i = 0; i < 3; i++) {
    long g = m->grid[i].times;
    if (k->grid_arg[i] >= 0) {
      long v = manifest_arg_long(&m->args[k->grid_arg[i]], args[k->grid_arg[i]]);
      long w = k->grid_by[i] >= 0 ? manifest_arg_long(&m->args[k->grid_by[i]], args[k->grid_by[i]]) : 1;
      long items = api_grid_items(&m->grid[i], v, w, ranks);
      /* Ranks sharing a GPU (MPS) split its capacity (comm.c passes it counted at one block per SM
       * there), and a kernel that waits on other ranks gets half of its share: blocks spinning on a
       * rank that has not started must leave SMs free for whatever that rank (or any process on the
       * GPU) queued before its own launch -- seen on the H200 under MPS: with grids covering every
       * SM (132 + 132 blocks of 512 threads at two ranks; 4 x 66 at four, two per SM), a rank's
       * kernel never started and the others timed out.  A pdl kernel halves it again: the next
       * launch's blocks may park beside it (scheduled early, waiting in griddepcontrol.wait), so a
       * rank can hold two grids.  With a GPU of its own a rank keeps the whole capacity. */
      int shared = share > 1 && m->comm.n_signals > 0;
      long cap = (coresident > 0 ? coresident : k->coresident) / (share > 0 ? share : 1) / (shared ? 2 : 1) /
                 (shared && m->pdl ? 2 : 1);
      if (m->grid[i].cap && items > cap) items = cap;
      if (items < 1) items = 1;
      g *= items;
    }
    if (g < 1 || g > (i == 0 ? 2147483647L : 65535L))
      return fail(k->err, WEFT_ERR_LAUNCH, "%s: grid dimension %d = %ld is out of range", m->name, i, g);
    grid[i] = (unsigned)g;
  }
  return WEFT_OK;
}

/* WEFT_LOG_LAUNCH=1: one line per launch on stderr (the grid and what capped it), read once.  A
 * debugging switch: a value neither on nor off is said once and leaves it off (no launch fails for it). */
static int log_launches(void) {
  static int v = -1;
  if (v < 0) {
    char why[256];
    int on = 0;
    if (util_env_bool("WEFT_LOG_LAUNCH", "one line per launch on stderr: the grid and what capped it", &on, why,
                      sizeof why))
      util_warn("weft: warning: %s; launches are not logged\n", why);
    v = on;
  }
  return v;
}

weft_status weft_ctx_check(weft_ctx *c) {
  if (!c) return WEFT_ERR_INVALID;
  return c->ws && ws_table_fault(c->ws, c->err, ERRLEN) ? WEFT_ERR_TIMEOUT : WEFT_OK;
}

weft_status api_launch(weft_kernel *k, void **args, const api_tmap_env *env, void *tail, int share, long coresident,
                       void *stream) {
  if (!kernel_ctx(k)) return WEFT_ERR_INVALID;
  weft_status st = check_args(k, args);
  if (st) return st;
  const weft_manifest *m = k->m;
  api_tmap_plan plan[MANIFEST_MAX_TMAPS];
  for (int i = 0; i < m->n_tmaps; i++)
    if ((st = api_tmap_plan_make(m, i, args, env, &plan[i], k->err, ERRLEN))) return st;
  st = kernel_load(k);
  if (st) return st;
  unsigned grid[3];
  st = launch_grid(k, args, env->ranks, share, coresident, grid);
  if (st) return st;
  const drv_table *d = k->ctx->drv;
  /* the kernel's parameters: args, tensor maps (by value), then the tail */
  CUtensorMap maps[MANIFEST_MAX_TMAPS];
  void *params[MANIFEST_MAX_PARAMS];
  int n = 0;
  for (int i = 0; i < m->n_args; i++) params[n++] = args[i];
  for (int i = 0; i < m->n_tmaps; i++) {
    if ((st = api_tmap_encode(d, m, i, &plan[i], &maps[i], k->err, ERRLEN))) return st;
    params[n++] = &maps[i];
  }
  CUdeviceptr ws = 0;
  if (m->workspace_per_cta > 0) {
    weft_ctx *c = k->ctx;
    if (!c->ws && !(c->ws = ws_table_new())) return fail(k->err, WEFT_ERR_NOMEM, "out of memory for the workspaces");
    if (ws_table_fault(c->ws, k->err, ERRLEN)) return WEFT_ERR_TIMEOUT;
    long blocks = (long)grid[0] * grid[1] * grid[2];
    if (blocks > m->workspace_flags)
      return fail(k->err, WEFT_ERR_INTERNAL, "%s: a grid of %ld blocks and a workspace with %ld flags", m->name, blocks,
                  m->workspace_flags);
    size_t flag_bytes = WEFT_WORKSPACE_HEADER + (size_t)m->workspace_flags * 4;
    if ((st = ws_table_get(c->ws, d, (CUstream)stream, flag_bytes + (size_t)blocks * (size_t)m->workspace_per_cta,
                           flag_bytes, &ws, k->err, ERRLEN)))
      return st;
    params[n++] = &ws;
  }
  if (tail) params[n++] = tail;
  CUlaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  CUlaunchConfig cfg = {0};
  cfg.gridDimX = grid[0]; cfg.gridDimY = grid[1]; cfg.gridDimZ = grid[2];
  cfg.blockDimX = m->block[0]; cfg.blockDimY = m->block[1]; cfg.blockDimZ = m->block[2];
  cfg.sharedMemBytes = m->smem;
  cfg.hStream = (CUstream)stream;
  cfg.attrs = attr;
  if (m->cluster[0] * m->cluster[1] * m->cluster[2] > 1) {
    CUlaunchAttribute *a = &attr[cfg.numAttrs++];
    a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a->value.clusterDim.x = m->cluster[0];
    a->value.clusterDim.y = m->cluster[1];
    a->value.clusterDim.z = m->cluster[2];
  }
  if (m->pdl) {   /* the kernel itself waits (griddepcontrol.wait) before it touches global memory */
    CUlaunchAttribute *a = &attr[cfg.numAttrs++];
    a->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a->value.programmaticStreamSerializationAllowed = 1;
  }
  char *err = k->err;
  if (log_launches())
    util_warn("weft: launch %s grid %u,%u,%u block %u,%u,%u smem %u rank %d of %d share %d coresident %ld\n",
            m->name, grid[0], grid[1], grid[2], m->block[0], m->block[1], m->block[2], m->smem, env->rank, env->ranks,
            share, k->coresident);
  CUresult r = d->cuLaunchKernelEx(&cfg, k->fn, params, NULL);
  if (r != CUDA_SUCCESS) {
    if (k->ctx->ws && ws_table_fault(k->ctx->ws, err, ERRLEN)) return WEFT_ERR_TIMEOUT;
    CU(r, "cuLaunchKernelEx");
  }
  return WEFT_OK;
}

weft_status weft_launch(weft_kernel *k, void **args, void *stream) {
  if (!k) return WEFT_ERR_INVALID;
  if (!args) return api_refuse(k->err, "weft_launch: %s: args is NULL (it takes %d arguments: a pointer to each value)",
                               k->m->name, k->m->n_args);
  if (k->m->comm.signals)
    return fail(k->err, WEFT_ERR_INVALID, "%s: a %s kernel talks to other ranks: launch it with weft_comm_launch "
                "(after weft_comm_create), not weft_launch", k->m->name, k->m->family);
  api_tmap_env one = {.ranks = 1, .rank = 0, .halves = 1};
  return api_launch(k, args, &one, NULL, 1, 0, stream);
}

weft_status api_kernel_load(weft_kernel *k, long *coresident) {
  weft_status st = kernel_load(k);
  if (!st && coresident) *coresident = k->coresident;
  return st;
}

weft_ctx *api_kernel_ctx(weft_kernel *k) { return k->ctx; }
char *api_kernel_err(weft_kernel *k) { return k->err; }

weft_status api_device(weft_ctx *c, const drv_table **d, CUdevice *dev) {
  if (!c) return WEFT_ERR_INVALID;   /* (a kernel's context destroyed: kernel_ctx) */
  weft_status st = ctx_device(c, c->err);
  if (st) return st;
  *d = c->drv;
  *dev = c->cudev;
  return WEFT_OK;
}

char *api_ctx_err(weft_ctx *c) { return c->err; }
