/* symm.c: symmetric memory -- one allocation per rank, every rank's mapped into every rank.
 *
 * Collective steps, each closed by world_all_ok so that a failure on one rank fails every
 * rank at the same step (never a peer left waiting in the next collective):
 *   1. rendezvous: all ranks asked for the same bytes and tag (weft_world_agree), before
 *      anything is allocated;
 *   2. cuMemCreate on this rank's device with a POSIX-fd handle, exported as an fd;
 *   3. the fds travel to every local rank (fdx.c: pidfd_getfd, or SCM_RIGHTS);
 *   4. one reservation of P x size; rank r's handle (imported from its fd) is mapped at
 *      offset r x size, and this device gets read/write access to all of it;
 *   5. this rank zeroes its own buffer and waits for it, then a barrier: no rank signals
 *      into a peer's buffer before the peer cleared it.
 * Teardown: synchronise, barrier (no peer still reads this memory), unmap, release every
 * handle, free the reservation.  Every fd is closed as soon as its handle is imported. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdx.h"
#include "internal.h"
#include "world.h"

struct weft_symm {
  weft_ctx *ctx;
  weft_world *w;   /* not const: a collective can mark the world failed */
  const drv_table *d;
  int rank, size, share;
  size_t bytes;                      /* per rank, rounded up to the granularity */
  CUdeviceptr base;                  /* reservation: size x bytes */
  CUmemGenericAllocationHandle *h;   /* per rank (own and imported); 0 = none */
  int *mapped;                       /* per rank: mapped at base + r * bytes */
  CUdeviceptr table;                 /* device array of size pointers */
  fdx_method method;
};

#define TRY(call, what)                                                                  \
  do {                                                                                   \
    CUresult r_ = (call);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                            \
      drv_describe(s->d, r_, what, msg, len);                                            \
      return -1;                                                                         \
    }                                                                                    \
  } while (0)

/* Unmap and release what this rank holds (no collective). */
static void symm_release(weft_symm *s) {
  if (!s) return;
  const drv_table *d = s->d;
  for (int r = 0; d && r < s->size; r++) {
    if (s->mapped && s->mapped[r]) d->cuMemUnmap(s->base + (CUdeviceptr)r * s->bytes, s->bytes);
    if (s->h && s->h[r]) d->cuMemRelease(s->h[r]);
  }
  if (d && s->base) d->cuMemAddressFree(s->base, (size_t)s->size * s->bytes);
  if (d && s->table) d->cuMemFree(s->table);
  free(s->h);
  free(s->mapped);
  free(s);
}

/* How many ranks of this node drive the same GPU as this one (the largest such group):
 * they share its SMs, so a grid that must be co-resident gets 1/share of them. */
static int gpus_shared(weft_symm *s, CUdevice dev) {
  char bus[64] = "";
  s->d->cuDeviceGetPCIBusId(bus, sizeof bus, dev);
  int n = world_scope_size(s->w, WORLD_NODE);   /* (the world's size: weft_symm_alloc checked it) */
  char all[WEFT_SYMM_MAX_RANKS][sizeof bus];    /* (no allocation that could fail on one rank only) */
  /* a failed gather counts every rank of the node as one GPU's: the safe side */
  int most = n > WEFT_SYMM_MAX_RANKS || world_allgather(s->w, WORLD_NODE, bus, all, sizeof bus) ? n : 1;
  for (int i = 0; i < n && most < n; i++) {
    int same = 0;
    for (int j = 0; j < n; j++) same += !strcmp(all[i], all[j]);
    if (same > most) most = same;
  }
  long long world_most = most;
  if (world_reduce_i64(s->w, WORLD_ALL, &world_most, WORLD_MAX)) return n;
  return (int)world_most;
}

/* step 2: this rank's allocation, exported as an fd */
static int step_create(weft_symm *s, size_t bytes, CUmemAllocationProp *prop, CUmemGenericAllocationHandle *mine,
                       int *fd, char *msg, size_t len) {
  size_t gran = 0;
  TRY(s->d->cuMemGetAllocationGranularity(&gran, prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  if (gran == 0 || bytes > SIZE_MAX - gran) {   /* (weft_symm_alloc caps bytes far below this) */
    snprintf(msg, len, "cuMemGetAllocationGranularity: a granularity of %zu bytes for %zu", gran, bytes);
    return -1;
  }
  s->bytes = (bytes + gran - 1) / gran * gran;
  TRY(s->d->cuMemCreate(mine, s->bytes, prop, 0), "cuMemCreate");
  TRY(s->d->cuMemExportToShareableHandle(fd, *mine, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      "cuMemExportToShareableHandle");
  return 0;
}

/* steps 4 and 5: import every peer's handle, map all, grant access, publish the table, clear
 * this rank's buffer.  fds[r] is closed (and set to -1) as soon as it is imported. */
static int step_map(weft_symm *s, int *fds, const CUmemAllocationProp *prop, char *msg, size_t len) {
  TRY(s->d->cuMemAddressReserve(&s->base, (size_t)s->size * s->bytes, 0, 0, 0), "cuMemAddressReserve");
  for (int r = 0; r < s->size; r++) {
    if (r != s->rank)
      TRY(s->d->cuMemImportFromShareableHandle(&s->h[r], (void *)(uintptr_t)fds[r],
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle");
    close(fds[r]);
    fds[r] = -1;
    TRY(s->d->cuMemMap(s->base + (CUdeviceptr)r * s->bytes, s->bytes, 0, s->h[r], 0), "cuMemMap");
    s->mapped[r] = 1;
  }
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof acc);
  acc.location = prop->location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  TRY(s->d->cuMemSetAccess(s->base, (size_t)s->size * s->bytes, &acc, 1), "cuMemSetAccess");
  CUdeviceptr ptrs[WEFT_SYMM_MAX_RANKS];
  for (int r = 0; r < s->size; r++) ptrs[r] = s->base + (CUdeviceptr)r * s->bytes;
  TRY(s->d->cuMemAlloc(&s->table, (size_t)s->size * sizeof(CUdeviceptr)), "cuMemAlloc");
  TRY(s->d->cuMemcpyHtoD(s->table, ptrs, (size_t)s->size * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
  TRY(s->d->cuMemsetD8(s->base + (CUdeviceptr)s->rank * s->bytes, 0, s->bytes), "cuMemsetD8");
  TRY(s->d->cuCtxSynchronize(), "cuCtxSynchronize");
  return 0;
}

weft_status weft_symm_alloc(weft_ctx *ctx, weft_world *w, size_t bytes, const char *tag, weft_symm **out) {
  if (!ctx) return WEFT_ERR_INVALID;
  char *err = api_ctx_err(ctx);
  if (!w || !out) return api_refuse(err, "weft_symm_alloc: %s is NULL", !w ? "the world" : "out");
  *out = NULL;
  int P = weft_world_size(w);
  /* the same verdict on every rank, so no collective is needed to fail here */
  if (weft_world_local_size(w) != P) {
    snprintf(err, API_ERRLEN, "weft_symm_alloc: symmetric memory spans the ranks of one node, but only %d of the %d "
             "ranks share this node (across nodes weft uses NCCL for the inter-node stage; see README)",
             weft_world_local_size(w), P);
    return WEFT_ERR_INVALID;
  }
  if (P > WEFT_SYMM_MAX_RANKS) {
    snprintf(err, API_ERRLEN, "weft_symm_alloc: %d ranks; weft maps at most %d (one NVLink node)", P, WEFT_SYMM_MAX_RANKS);
    return WEFT_ERR_INVALID;
  }
  /* 1: rendezvous */
  char desc[512];
  snprintf(desc, sizeof desc, "bytes=%zu%s%s", bytes, tag ? " " : "", tag ? tag : "");
  weft_status agreed = weft_world_agree(w, "weft_symm_alloc", desc);   /* (MISMATCH, or IO: the transport) */
  if (agreed != WEFT_OK) {
    snprintf(err, API_ERRLEN, "%s", weft_world_error(w));
    return agreed;
  }
  /* (after the rendezvous: every rank has these bytes, so every rank refuses them alike) */
  if (bytes == 0 || bytes > WEFT_SYMM_MAX_BYTES)
    return api_refuse(err, "weft_symm_alloc: bytes = %zu: 1 .. %llu per rank (%s)", bytes,
                      (unsigned long long)WEFT_SYMM_MAX_BYTES, bytes ? "1 TiB, more than any GPU holds" : "none to share");

  weft_symm *s = calloc(1, sizeof *s);
  if (!s) return WEFT_ERR_NOMEM;
  s->ctx = ctx;
  s->w = w;
  s->rank = weft_world_rank(w);
  s->size = P;
  s->h = calloc((size_t)P, sizeof *s->h);
  s->mapped = calloc((size_t)P, sizeof *s->mapped);
  int fds[WEFT_SYMM_MAX_RANKS], fd = -1;
  for (int r = 0; r < P; r++) fds[r] = -1;
  char msg[1024] = "";
  weft_status fail_st = WEFT_ERR_CUDA;
  CUmemGenericAllocationHandle mine = 0;
  CUdevice dev = 0;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);

  /* 2 */
  weft_status st = s->h && s->mapped ? api_device(ctx, &s->d, &dev) : WEFT_ERR_NOMEM;
  if (st) {
    fail_st = st;
    snprintf(msg, sizeof msg, "%s", st == WEFT_ERR_NOMEM ? "out of memory" : err);
  } else {
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    step_create(s, bytes, &prop, &mine, &fd, msg, sizeof msg);
  }
  if (!world_all_ok(w, msg[0] == 0, msg, err, API_ERRLEN)) goto fail;
  unsigned long long lo = s->bytes, hi = s->bytes;
  if (world_reduce_u64(w, WORLD_ALL, &lo, WORLD_MIN) || world_reduce_u64(w, WORLD_ALL, &hi, WORLD_MAX)) {
    snprintf(err, API_ERRLEN, "weft_symm_alloc: %s", world_transport_error(w));
    fail_st = WEFT_ERR_IO;
    goto fail;
  }
  if (lo != hi) {
    snprintf(err, API_ERRLEN, "weft_symm_alloc: the ranks' GPUs round %zu bytes differently (%llu to %llu): "
             "symmetric memory needs the same GPU model on every rank", bytes, lo, hi);
    fail_st = WEFT_ERR_MISMATCH;
    goto fail;
  }

  /* 3 */
  if (fdx_allgather(w, fd, fds, FDX_AUTO, &s->method, msg, sizeof msg) != 0 && !msg[0])
    snprintf(msg, sizeof msg, "exchanging file descriptors failed");
  close(fd);
  fd = -1;
  if (!world_all_ok(w, msg[0] == 0, msg, err, API_ERRLEN)) goto fail;

  /* 4, 5 */
  s->h[s->rank] = mine;
  mine = 0;
  step_map(s, fds, &prop, msg, sizeof msg);
  if (!world_all_ok(w, msg[0] == 0, msg, err, API_ERRLEN)) goto fail;
  s->share = gpus_shared(s, dev);
  if (world_failed(w)) goto fail;   /* (a failure this rank's last verdict call alone saw surfaces here) */
  *out = s;
  return WEFT_OK;

fail:
  if (world_failed(w)) {   /* the transport's failure, whatever else this rank saw */
    fail_st = WEFT_ERR_IO;
    snprintf(err, API_ERRLEN, "weft_symm_alloc: %s", world_transport_error(w));
  }
  if (fd >= 0) close(fd);
  for (int r = 0; r < P; r++)
    if (fds[r] >= 0) close(fds[r]);
  if (mine && s->d) s->d->cuMemRelease(mine);
  symm_release(s);
  return fail_st;
}

void weft_symm_free(weft_symm *s) {
  if (!s) return;
  /* no peer may still read this rank's memory: everyone's work is done, then unmap */
  if (s->d) s->d->cuCtxSynchronize();
  world_barrier(s->w);   /* a failed world fails at once on every rank: nothing waits on a peer */
  symm_release(s);
}

unsigned long long weft_symm_ptr(const weft_symm *s, int rank) {
  return s && rank >= 0 && rank < s->size ? (unsigned long long)(s->base + (CUdeviceptr)rank * s->bytes) : 0;
}
unsigned long long weft_symm_table(const weft_symm *s) { return s ? (unsigned long long)s->table : 0; }
size_t weft_symm_bytes(const weft_symm *s) { return s ? s->bytes : 0; }
int weft_symm_gpu_share(const weft_symm *s) { return s ? s->share : 0; }
const char *weft_symm_method(const weft_symm *s) { return s ? fdx_method_name(s->method) : ""; }
