/* comm.c: communicators -- a kernel that talks to other ranks, bound to a world.
 *
 * What the runtime owns for such a kernel (templates/weft/signal.cuh says how the device
 * uses it):
 *   - a symmetric buffer: the signal pads, pad[signal][sender][block] (u64 epochs), then the
 *     data area in `halves` halves that alternate by epoch;
 *   - CommState in device memory: this rank's epoch counter, monotonic for the life of the
 *     communicator (never reset between launches), the block arrival count, the abort flag;
 *   - an ErrorRecord in host-mapped memory, where a timed-out wait says who it waited for.
 * The grid is capped so that every block of every rank on a GPU is resident at once (blocks
 * wait for other ranks' blocks): the co-resident capacity, the lowest over the ranks, divided
 * by the ranks sharing a GPU (MPS). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "manifest.h"
#include "util.h"
#include "world.h"

#define MAX_RANKS WEFT_SYMM_MAX_RANKS   /* weft::MAX_RANKS in signal.cuh */

/* The kernel's last parameter: the same layout as weft::Comm (signal.cuh); the compile
 * matrix checks its size against the PTX parameter. */
typedef struct comm_param {
  CUdeviceptr peers[MAX_RANKS];
  CUdeviceptr mc;
  CUdeviceptr state;
  CUdeviceptr err;
  uint64_t timeout_ns;
  int64_t data_offset, half_bytes;
  int32_t rank, size, max_blocks, mute_rank, mute_signal;
} comm_param;

_Static_assert(sizeof(comm_param) == 136, "comm_param must match weft::Comm (templates/weft/signal.cuh)");

typedef struct comm_state { uint64_t epoch; uint32_t arrived, abort; } comm_state;   /* weft::CommState */
typedef struct err_record {                                                          /* weft::ErrorRecord */
  uint64_t expected, seen, waited_ns;
  int32_t rank, peer, block, signal;
  volatile uint32_t flag, pad_;
} err_record;

struct weft_comm {
  weft_kernel *k;
  weft_world *w;
  const drv_table *d;
  weft_symm *symm;
  CUdeviceptr state;
  err_record *rec;          /* host view of the record */
  comm_param p;
  long long max_elems;
  int share, multicast, dead;   /* share: the most processes on one GPU, over the ranks */
  long fit;                     /* the co-resident capacity (clusters), the lowest over the ranks */
  char err[API_ERRLEN];
};

static long long round_up(long long v, long long to) { return (v + to - 1) / to * to; }

/* WEFT_FAULT=mute:<rank>:<signal>: that rank never sends that signal (the timeout test). */
static void parse_fault(weft_comm *c) {
  c->p.mute_rank = c->p.mute_signal = -1;
  const char *f = getenv("WEFT_FAULT");
  if (!f || strncmp(f, "mute:", 5) != 0) return;
  int rank = -1;
  char sig[64] = "";
  if (sscanf(f + 5, "%d:%63s", &rank, sig) != 2) return;
  const weft_comm_spec *cs = &weft_kernel_manifest(c->k)->comm;
  for (int i = 0; i < cs->n_signals; i++)
    if (!strcmp(cs->signals[i], sig)) { c->p.mute_rank = rank; c->p.mute_signal = i; }
}

void weft_comm_set_timeout(weft_comm *c, double seconds) {
  // At most WEFT_SIGNAL_TIMEOUT_MS's day: the kernels multiply it by a wait's patience, and past
  // ~584 years converting the nanoseconds is undefined.  NaN and <= 0 fail the test: unchanged.
  if (c && seconds > 0) c->p.timeout_ns = (uint64_t)(fmin(seconds * 1e3, UTIL_SIGNAL_TIMEOUT_MAX_MS) * 1e6);
}

#define CU(call, what)                                                                 \
  do {                                                                                 \
    CUresult r_ = (call);                                                              \
    if (r_ != CUDA_SUCCESS) {                                                          \
      drv_describe(c->d, r_, what, msg, sizeof msg);                                   \
      goto local_done;                                                                 \
    }                                                                                  \
  } while (0)

weft_status weft_comm_create(weft_kernel *k, weft_world *w, long long max_elems, weft_comm **out) {
  if (!k || !w || !out) return WEFT_ERR_INVALID;
  *out = NULL;
  if (max_elems < 1) {
    snprintf(api_kernel_err(k), API_ERRLEN, "weft_comm_create: max_elems = %lld: must be at least 1 (the most "
             "elements a launch on this communicator moves)", max_elems);
    return WEFT_ERR_INVALID;
  }
  const weft_manifest *m = weft_kernel_manifest(k);
  char *kerr = api_kernel_err(k);
  if (!m->comm.signals) {
    snprintf(kerr, API_ERRLEN, "%s: a %s kernel does not talk to other ranks: launch it with weft_launch", m->name, m->family);
    return WEFT_ERR_INVALID;
  }
  int P = weft_world_size(w);
  if (P > MAX_RANKS) {
    snprintf(kerr, API_ERRLEN, "%s: %d ranks; its kernels fold at most %d (one NVLink node)", m->name, P, MAX_RANKS);
    return WEFT_ERR_INVALID;
  }
  weft_comm *c = calloc(1, sizeof *c);
  if (!c) return WEFT_ERR_NOMEM;
  c->k = k;
  c->w = w;
  c->max_elems = max_elems;
  weft_status st = WEFT_OK;
  char msg[1024] = "";

  /* the kernel is loaded everywhere, and how many of its blocks fit at once */
  long coresident = 0;
  CUdevice dev;
  double timeout_ms;
  if (util_signal_timeout_ms(&timeout_ms, msg, sizeof msg)) st = WEFT_ERR_INVALID;
  if (!st) st = api_kernel_load(k, &coresident);
  if (!st) st = api_device(api_kernel_ctx(k), &c->d, &dev);
  if (st && !msg[0]) snprintf(msg, sizeof msg, "%s", kerr);
  else if (!st && m->comm.ranks > 0 && m->comm.ranks != P) {   /* agreed below, so no rank waits for one that left */
    st = WEFT_ERR_MISMATCH;
    snprintf(msg, sizeof msg, "%s: generated for ranks = %d (its config's field `ranks`), but the world has %d rank%s: "
             "generate it with ranks = %d, or \"any\"", m->name, m->comm.ranks, P, P == 1 ? "" : "s", P);
  }
  if (!world_all_ok(w, !st, msg, kerr, API_ERRLEN)) {
    free(c);
    return world_failed(w) ? WEFT_ERR_IO : st ? st : WEFT_ERR_CUDA;
  }
  /* the capacity at one cluster (or block) per SM, for ranks sharing a GPU (below) */
  int sms = 0;
  if (c->d->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS || sms < 1)
    sms = 1;
  long long fit = coresident, per_sm = sms / ((long long)m->cluster[0] * m->cluster[1] * m->cluster[2]);
  if (per_sm < 1) per_sm = 1;
  if (world_reduce_i64(w, WORLD_ALL, &fit, WORLD_MIN) || world_reduce_i64(w, WORLD_ALL, &per_sm, WORLD_MIN)) {
    snprintf(kerr, API_ERRLEN, "weft_comm_create: %s", world_transport_error(w));
    free(c);
    return WEFT_ERR_IO;
  }
  coresident = (long)fit;
  /* with clusters the capacity is counted in clusters; the signal pads are per block */
  coresident *= (long)m->cluster[0] * m->cluster[1] * m->cluster[2];

  /* multicast: only where the device has it and nothing switched it off; the ranks agree */
  if (m->comm.multimem) {
    int supported = 0;
    c->d->cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
    char why[256];
    int allowed = weft_multicast_allowed(supported, why, sizeof why);
    if (allowed)   /* weft does not create multicast objects yet (no machine here may) */
      snprintf(why, sizeof why, "this build of weft does not create multicast objects yet");
    char desc[300];
    snprintf(desc, sizeof desc, "multicast: no (%s)", why);
    weft_status agreed = weft_world_agree(w, "weft_comm_create", desc);   /* (MISMATCH, or IO: the transport) */
    if (agreed != WEFT_OK) {
      snprintf(kerr, API_ERRLEN, "%s", weft_world_error(w));
      free(c);
      return agreed;
    }
    if (!m->comm.emulate) {
      snprintf(kerr, API_ERRLEN, "%s: comm = \"multimem\" needs an NVLink multicast object, but %s. "
               "Set fallback = \"emulate\" in the config to run its unicast twin, or use comm = \"threadload\"",
               m->name, why);
      free(c);
      return WEFT_ERR_MULTICAST;
    }
  }

  /* the symmetric buffer: pads for every (signal, sender, block), then the data halves */
  c->share = 1;
  /* + P: chunks round up; + 4: a family may cut a half into up to 4 regions, each starting on a vector.
   * per_rank (reduce_scatter, multimem all_gather): a chunk of max_elems per rank in each half;
   * scatter (gemm_rs atomic): this rank's share only, max_elems / P (rounded up) in each half. */
  long long per_elem = (long long)m->comm.elem_bytes * (m->comm.per_rank ? P : 1);
  long long half_elems = m->comm.scatter ? (max_elems + P - 1) / P : max_elems;
  if (per_elem > 0 && max_elems > (LLONG_MAX / 4) / per_elem) {
    snprintf(kerr, API_ERRLEN, "weft_comm_create: max_elems = %lld: %s needs %lld bytes per element per half, over "
             "the addressable size", max_elems, m->name, per_elem);
    free(c);
    return WEFT_ERR_INVALID;
  }
  long long vecs = (half_elems * per_elem + 15) / 16 + P + 4;
  c->p.max_blocks = (int)(coresident < 1 ? 1 : coresident);
  c->p.data_offset = round_up((long long)m->comm.n_signals * MAX_RANKS * c->p.max_blocks * 8, 256);
  /* flags of their own (their offset is the pads' end, which the kernel computes the same way):
   * slots that hold only epochs, so a later launch of another shape never reads data as a flag */
  if (m->comm.flag_div > 0) c->p.data_offset += round_up(max_elems / m->comm.flag_div + 4096, 256);
  c->p.half_bytes = round_up(vecs * 16, 256);
  size_t bytes = (size_t)(c->p.data_offset + (m->comm.halves > 0 ? m->comm.halves : 1) * c->p.half_bytes);
  /* the kernel's name says which config a rank compiled; the hash catches everything else */
  char tag[1024];
  snprintf(tag, sizeof tag, "kernel=%s hash=%.12s max_elems=%lld", m->name, m->hash, max_elems);
  st = weft_symm_alloc(api_kernel_ctx(k), w, bytes, tag, &c->symm);
  if (st) {
    snprintf(kerr, API_ERRLEN, "%s", weft_ctx_error(api_kernel_ctx(k)));
    free(c);
    return st;
  }
  /* Every rank caps its grid the same way (the waits pair blocks by index and count every block of
   * every rank): the lowest capacity, divided by the most processes sharing one GPU. */
  c->fit = coresident / ((long)m->cluster[0] * m->cluster[1] * m->cluster[2]);
  {
    long long most = weft_symm_gpu_share(c->symm);
    if (world_reduce_i64(w, WORLD_ALL, &most, WORLD_MAX)) {
      snprintf(msg, sizeof msg, "weft_comm_create: %s", world_transport_error(w));
      goto local_done;
    }
    c->share = (int)most;
  }
  /* Ranks sharing a GPU count SMs, not block slots: a block spinning on another rank holds its SM's
   * registers, and with blocks spread over every SM (4 ranks x 66 blocks of 512 threads, two per SM)
   * a rank's torch.matmul queued before its own collective found no SM to run on, so that collective
   * never started and the others timed out (H200, MPS, 4 ranks).  launch_grid then halves each
   * rank's part, so at least half the SMs hold no waiting block. */
  if (c->share > 1 && c->fit > per_sm) c->fit = (long)per_sm;
  for (int r = 0; r < P; r++) c->p.peers[r] = (CUdeviceptr)weft_symm_ptr(c->symm, r);
  c->p.rank = weft_world_rank(w);
  c->p.size = P;
  c->p.timeout_ns = (uint64_t)((timeout_ms > 0 ? timeout_ms : 5000.0) * 1e6);
  parse_fault(c);

  /* the epoch counter and the error record */
  {
    void *host = NULL;
    CU(c->d->cuMemAlloc(&c->state, sizeof(comm_state)), "cuMemAlloc");
    CU(c->d->cuMemsetD8(c->state, 0, sizeof(comm_state)), "cuMemsetD8");
    /* (the memset runs on the legacy stream, asynchronously to this thread, and a caller's
     * non-blocking stream -- torch's -- does not wait for that stream: the first launch could read
     * the epoch before it is zero) */
    CU(c->d->cuCtxSynchronize(), "zeroing the communicator's epoch counter");
    CU(c->d->cuMemHostAlloc(&host, sizeof(err_record), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
       "cuMemHostAlloc");
    c->rec = host;
    memset(host, 0, sizeof(err_record));
    CU(c->d->cuMemHostGetDevicePointer(&c->p.err, host, 0), "cuMemHostGetDevicePointer");
    c->p.state = c->state;
    c->p.mc = 0;
  }
local_done:
  if (!world_all_ok(w, msg[0] == 0, msg, kerr, API_ERRLEN)) {
    weft_status why = world_failed(w) ? WEFT_ERR_IO : WEFT_ERR_CUDA;
    weft_comm_destroy(c);
    return why;
  }
  *out = c;
  return WEFT_OK;
}

/* The record, turned into the error on this rank. */
static weft_status comm_failed(weft_comm *c) {
  if (c->dead) return WEFT_ERR_TIMEOUT;
  if (!c->rec || !c->rec->flag) return WEFT_OK;
  __sync_synchronize();
  const weft_manifest *m = weft_kernel_manifest(c->k);
  const err_record *r = c->rec;
  const char *sig = r->signal >= 0 && r->signal < m->comm.n_signals ? m->comm.signals[r->signal] : "?";
  snprintf(c->err, sizeof c->err,
           "%s: rank %d timed out after %.3f s waiting for signal \"%s\" from rank %d (block %d: expected epoch %llu, "
           "saw %llu). Rank %d never reached that step of this launch: it failed or stopped, it is stuck behind "
           "other work, or the ranks launched different sequences of collectives.%s This communicator is now "
           "unusable: destroy it.",
           m->name, r->rank, (double)r->waited_ns * 1e-9, sig, r->peer, r->block, (unsigned long long)r->expected,
           (unsigned long long)r->seen, r->peer,
           c->p.mute_rank >= 0 ? " (WEFT_FAULT is set: a rank was told to skip a signal.)" : "");
  c->dead = 1;
  return WEFT_ERR_TIMEOUT;
}

static long long size_arg(const weft_manifest *m, int i, void **args) {
  return !strcmp(m->args[i].type, "i64") ? *(long long *)args[i] : *(int *)args[i];
}

weft_status weft_comm_launch(weft_comm *c, void **args, void *stream) {
  if (!c || !args) return WEFT_ERR_INVALID;
  if (comm_failed(c)) return WEFT_ERR_TIMEOUT;
  const weft_manifest *m = weft_kernel_manifest(c->k);
  const weft_comm_spec *cs = &m->comm;
  for (int i = 0; i < m->n_args; i++) {
    if (!args[i]) {
      snprintf(c->err, sizeof c->err, "%s: argument %d (%s) is NULL", m->name, i, m->args[i].name);
      return WEFT_ERR_INVALID;
    }
    if (!cs->n_elems && !strcmp(m->args[i].role, "size")) {
      long long v = size_arg(m, i, args);
      if (v > c->max_elems && cs->per_rank) {
        snprintf(c->err, sizeof c->err, "%s: %s = %lld, but this communicator was created for at most %lld elements "
                 "(weft_comm_create's max_elems: a half of its buffer holds %d chunks of that many, one per rank); "
                 "create it with max_elems >= %lld", m->name, m->args[i].name, v, c->max_elems, c->p.size, v);
        return WEFT_ERR_LAUNCH;
      }
      if (v > c->max_elems) {
        snprintf(c->err, sizeof c->err, "%s: %s = %lld, but this communicator was created for at most %lld elements "
                 "(weft_comm_create's max_elems)", m->name, m->args[i].name, v, c->max_elems);
        return WEFT_ERR_LAUNCH;
      }
    }
  }
  if (cs->n_elems) {   /* the buffer holds a product of sizes (rows x cols), not each on its own */
    char expr[256] = "", vals[256] = "";
    long long prod = 1;
    int over = 0;
    for (int i = 0; i < cs->n_elems; i++) {
      int a = manifest_arg_index(m, cs->elems[i]);
      long long v = size_arg(m, a, args);
      if (v > 0 && prod > LLONG_MAX / v) over = 1;
      else prod *= v;
      size_t ne = strlen(expr), nv = strlen(vals);
      snprintf(expr + ne, sizeof expr - ne, "%s%s", i ? " * " : "", cs->elems[i]);
      snprintf(vals + nv, sizeof vals - nv, "%s%lld", i ? " * " : "", v);
    }
    if (over || prod > c->max_elems) {
      snprintf(c->err, sizeof c->err, "%s: %s = %s%s%lld elements, but this communicator was created for at most %lld "
               "(weft_comm_create's max_elems)", m->name, expr, vals, over ? ", over " : " = ", over ? LLONG_MAX : prod,
               c->max_elems);
      return WEFT_ERR_LAUNCH;
    }
  }
  if (cs->divide) {
    long long v = size_arg(m, manifest_arg_index(m, cs->divide), args);
    int P = c->p.size;
    if (v % P) {
      snprintf(c->err, sizeof c->err, "%s: %s = %lld is not a multiple of the %d ranks: rank r owns rows r*%s/%d .. "
               "(r+1)*%s/%d-1", m->name, cs->divide, v, P, cs->divide, P, cs->divide, P);
      return WEFT_ERR_LAUNCH;
    }
  }
  /* what the tensor maps see: the ranks' buffers, evenly spaced (symm.c maps rank r at base + r * bytes) */
  api_tmap_env env = {.ranks = c->p.size, .rank = c->p.rank, .halves = cs->halves > 0 ? cs->halves : 1,
                      .peers = c->p.peers, .symm_stride = weft_symm_bytes(c->symm),
                      .data_offset = c->p.data_offset, .half_bytes = c->p.half_bytes};
  weft_status st = api_launch(c->k, args, &env, &c->p, c->share, c->fit, stream);
  if (st) snprintf(c->err, sizeof c->err, "%s", api_kernel_err(c->k));
  return st;
}

weft_status weft_comm_check(weft_comm *c) { return c ? comm_failed(c) : WEFT_ERR_INVALID; }

long long weft_comm_epoch(weft_comm *c) {
  if (!c || !c->state) return -1;
  const drv_table *d;
  CUdevice dev;
  if (api_device(api_kernel_ctx(c->k), &d, &dev)) return -1;   /* makes weft's context current */
  comm_state st;
  if (c->d->cuMemcpyDtoH(&st, c->state, sizeof st) != CUDA_SUCCESS) return -1;
  return (long long)st.epoch;
}
const char *weft_comm_error(const weft_comm *c) { return c ? c->err : "no communicator"; }
int weft_comm_multicast(const weft_comm *c) { return c ? c->multicast : 0; }
const weft_symm *weft_comm_symm(const weft_comm *c) { return c ? c->symm : NULL; }

void weft_comm_destroy(weft_comm *c) {
  if (!c) return;
  weft_symm_free(c->symm);   /* collective: synchronises, then a barrier */
  if (c->d && c->state) c->d->cuMemFree(c->state);
  if (c->d && c->rec) c->d->cuMemFreeHost(c->rec);
  free(c);
}
