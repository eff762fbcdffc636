/* workspace.c: the per-stream workspaces of a context (workspace.h). */
#include "workspace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct ws_entry {
  unsigned long long stream;    /* cuStreamGetId; while capturing, the handle */
  cuuint64_t capture;           /* the capture sequence's id, 0 outside a capture */
  CUdeviceptr ptr;
  size_t bytes;                 /* its size */
  size_t zeroed;                /* the header and flag bytes set up when it was made */
} ws_entry;

struct ws_table {
  ws_entry *ws;                 /* the live workspaces, one per stream or capture */
  int n, cap;
  CUdeviceptr *old;             /* replaced ones, freed with the table */
  int n_old, cap_old;
  CUstream zero;                /* a private non-blocking stream that sets new ones up */
  volatile unsigned *fault;     /* the error page (host memory), or NULL */
  unsigned long long header[3]; /* every new workspace's header words 0-2 (the rest start at zero) */
};

ws_table *ws_table_new(void) { return calloc(1, sizeof(ws_table)); }

void ws_table_free(ws_table *t, const drv_table *d) {
  if (!t) return;
  if (d) {
    for (int i = 0; i < t->n; i++) d->cuMemFree(t->ws[i].ptr);
    for (int i = 0; i < t->n_old; i++) d->cuMemFree(t->old[i]);
    if (t->zero) d->cuStreamDestroy(t->zero);
    if (t->fault) d->cuMemFreeHost((void *)t->fault);
  }
  free(t->ws);
  free(t->old);
  free(t);
}

#define CU(call, what)                                                                    \
  do {                                                                                    \
    CUresult r_ = (call);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                             \
      drv_describe(d, r_, what, err, errlen);                                             \
      return WEFT_ERR_CUDA;                                                               \
    }                                                                                     \
  } while (0)

/* The error page and the header words, made once per table. */
static CUresult make_fault_page(ws_table *t, const drv_table *d, double timeout_ms) {
  void *page = NULL;
  CUresult r = d->cuMemHostAlloc(&page, 64, CU_MEMHOSTALLOC_DEVICEMAP);
  if (r != CUDA_SUCCESS) return r;
  memset(page, 0, 64);
  CUdeviceptr dev = 0;
  r = d->cuMemHostGetDevicePointer(&dev, page, 0);
  if (r != CUDA_SUCCESS) {
    d->cuMemFreeHost(page);
    return r;
  }
  t->fault = page;
  t->header[0] = (unsigned long long)dev;
  /* the waits' timeout: as for signals between ranks, $WEFT_SIGNAL_TIMEOUT_MS when set (0: the
   * kernel's own); and tests' fault injection, WEFT_FAULT=streamk_mute:CTA (that CTA never
   * raises its flag) */
  const char *f = getenv("WEFT_FAULT");
  t->header[1] = (unsigned long long)(timeout_ms * 1e6);
  int cta = -1;
  if (f && !strncmp(f, "streamk_mute:", 13) && sscanf(f + 13, "%d", &cta) == 1 && cta >= 0)
    t->header[2] = (unsigned long long)cta + 1;
  return CUDA_SUCCESS;
}

static weft_status get(ws_table *t, const drv_table *d, CUstream stream, size_t bytes, size_t flag_bytes,
                       CUdeviceptr *out, char *err, size_t errlen) {
  unsigned long long id = 0;
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture = 0;
  CU(d->cuStreamGetCaptureInfo(stream, &cs, &capture), "cuStreamGetCaptureInfo");
  /* (while capturing, the driver refuses cuStreamGetId; the handle cannot be reused within the
   * capture, and the capture's id keeps it apart from the stream's own workspace) */
  if (cs == CU_STREAM_CAPTURE_STATUS_ACTIVE) id = (unsigned long long)(uintptr_t)stream;
  else {
    capture = 0;
    CU(d->cuStreamGetId(stream, &id), "cuStreamGetId");
  }
  int i = 0;
  while (i < t->n && !(t->ws[i].stream == id && t->ws[i].capture == capture)) i++;
  if (i < t->n && t->ws[i].bytes >= bytes && t->ws[i].zeroed >= flag_bytes) { *out = t->ws[i].ptr; return WEFT_OK; }
  double timeout_ms = 0;
  if (!t->fault && util_signal_timeout_ms(&timeout_ms, err, errlen)) return WEFT_ERR_INVALID;
  if (i == t->n && t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 4;
    ws_entry *w = realloc(t->ws, sizeof *w * (size_t)cap);
    if (!w) { util_set_err(err, errlen, "out of memory for a stream's workspace entry"); return WEFT_ERR_NOMEM; }
    t->ws = w;
    t->cap = cap;
  }
  if (i < t->n && t->n_old == t->cap_old) {
    int cap = t->cap_old ? 2 * t->cap_old : 4;
    CUdeviceptr *o = realloc(t->old, sizeof *o * (size_t)cap);
    if (!o) { util_set_err(err, errlen, "out of memory for a stream's workspace entry"); return WEFT_ERR_NOMEM; }
    t->old = o;
    t->cap_old = cap;
  }
  size_t want = (bytes + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);   /* whole MiB: fewer regrowths */
  if (i < t->n && want < 2 * t->ws[i].bytes) want = 2 * t->ws[i].bytes;
  CUdeviceptr p = 0;
  CUresult r = t->zero ? CUDA_SUCCESS : d->cuStreamCreate(&t->zero, CU_STREAM_NON_BLOCKING);
  if (r == CUDA_SUCCESS && !t->fault) r = make_fault_page(t, d, timeout_ms);
  if (r == CUDA_SUCCESS) r = d->cuMemAlloc(&p, want);
  if (r == CUDA_SUCCESS) r = d->cuMemsetD8Async(p, 0, flag_bytes, t->zero);
  if (r == CUDA_SUCCESS) r = d->cuMemcpyHtoDAsync(p, t->header, sizeof t->header, t->zero);
  if (r == CUDA_SUCCESS) r = d->cuStreamSynchronize(t->zero);
  if (r != CUDA_SUCCESS) {
    if (p) d->cuMemFree(p);
    char why[512];
    drv_describe(d, r, "allocating a stream's workspace", why, sizeof why);
    util_set_err(err, errlen, "%s (%zu bytes)", why, want);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERR_NOMEM : WEFT_ERR_CUDA;
  }
  if (i < t->n) t->old[t->n_old++] = t->ws[i].ptr;
  else t->n++;
  t->ws[i] = (ws_entry){.stream = id, .capture = capture, .ptr = p, .bytes = want, .zeroed = flag_bytes};
  *out = p;
  return WEFT_OK;
}

weft_status ws_table_get(ws_table *t, const drv_table *d, CUstream stream, size_t bytes, size_t flag_bytes,
                         CUdeviceptr *out, char *err, size_t errlen) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU(d->cuThreadExchangeStreamCaptureMode(&mode), "cuThreadExchangeStreamCaptureMode");
  weft_status st = get(t, d, stream, bytes, flag_bytes, out, err, errlen);
  d->cuThreadExchangeStreamCaptureMode(&mode);
  return st;
}

int ws_table_fault(const ws_table *t, char *err, size_t errlen) {
  if (!t->fault || !t->fault[0]) return 0;
  util_set_err(err, errlen,
               "a stream-K GEMM launched from this context stopped the GPU: its block %u waited %g s for block %u's "
               "partial sum of tile (row block %u, column block %u) and trapped (the wait's timeout: "
               "$WEFT_SIGNAL_TIMEOUT_MS, else 60 s). Other kernels holding nearly every SM that long, a debugger, "
               "WEFT_FAULT=streamk_mute, or a bug in weft (please report it). The CUDA context is unusable: restart "
               "the process", t->fault[1], t->header[1] ? t->header[1] / 1e9 : 60.0, t->fault[2], t->fault[3],
               t->fault[4]);
  return 1;
}
