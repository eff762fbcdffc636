/* world.c: the ranks of a world (an MPI communicator, or the caller's rank numbers and all-gather
 * callback), the collectives every other file uses (world.h), the rendezvous that makes the
 * ranks agree before any collective step, and the multicast guard.  (weft.h, "several ranks"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "weft.h"
#include "util.h"
#include "world.h"

#define DESC_MAX 256   /* a description is one line; longer ones are cut (and still compared whole) */
#define CHUNK 256      /* a callback world gathers at most this many bytes per rank per call */
#define MAX_RANKS (1 << 20)

struct weft_world {
  int mpi;   /* 1: comm/node are MPI communicators; 0: the caller's callback */
  MPI_Comm comm, node;
  weft_allgather_fn gather;
  void *user;
  int rank, size, local_rank, local_size, node_first;
  /* a callback failed somewhere: every later operation still calls it (so every rank calls it
   * the same number of times), and fails */
  int broken, pending;
  char *scratch;   /* size * CHUNK bytes, allocated up front so that no gather can fail to allocate */
  int *status;     /* size ints, likewise */
  char xerr[512];  /* why the last callback operation failed: the same text on every rank */
  char err[8192];
};

weft_status weft_world_create(const void *mpi_comm, weft_world **out) {
  if (!out) return WEFT_ERR_INVALID;
  *out = NULL;
#ifdef WEFT_NO_MPI
  (void)mpi_comm;
  return WEFT_ERR_INVALID;   /* weft.h: built without MPI, weft_world_create_with is the bootstrap */
#endif
  int up = 0;
  MPI_Initialized(&up);
  if (!up) return WEFT_ERR_INVALID;   /* the caller initialises MPI */
  weft_world *w = calloc(1, sizeof *w);
  if (!w) return WEFT_ERR_NOMEM;
  w->mpi = 1;
  MPI_Comm base = mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD;
  if (MPI_Comm_dup(base, &w->comm) != MPI_SUCCESS) { free(w); return WEFT_ERR_INTERNAL; }
  MPI_Comm_rank(w->comm, &w->rank);
  MPI_Comm_size(w->comm, &w->size);
  /* the ranks that share this node (and so, can share GPU memory through POSIX fds) */
  if (MPI_Comm_split_type(w->comm, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &w->node) != MPI_SUCCESS) {
    MPI_Comm_free(&w->comm);
    free(w);
    return WEFT_ERR_INTERNAL;
  }
  MPI_Comm_rank(w->node, &w->local_rank);
  MPI_Comm_size(w->node, &w->local_size);
  *out = w;
  return WEFT_OK;
}

/* ---- the collectives of a callback world ------------------------------------------------ */
/* Every operation is ceil(bytes / CHUNK) data calls and one status call, on every rank and every
 * path, so the ranks' call counts never drift apart.  The status call tells every rank whether
 * any rank's callback failed; then the operation fails on every rank with the same message. */
typedef void (*visit_fn)(int rank, size_t off, const char *data, size_t len, void *ctx);

/* The result call.  Only one rank's call fails at a time is assumed (two failures on two ranks
 * at once cannot be told apart from any number of further calls): when this rank's data calls
 * worked but its result call failed, the others saw its 0 and go on, so this rank goes on too
 * (its data is good) and reports the failure in the next operation's result call. */
static int cb_status(weft_world *w, int code) {
  int was = w->broken;
  memset(w->status, 0, (size_t)w->size * sizeof *w->status);
  int rc = w->gather(&code, w->status, sizeof code, w->user);
  if (was) return -1;   /* xerr still names the first failure */
  if (rc && !code) {
    w->pending = rc;
    return 0;
  }
  if (rc) {
    w->broken = code;
    snprintf(w->xerr, sizeof w->xerr, "the allgather callback returned %d on rank %d", code, w->rank);
    return -1;
  }
  for (int r = 0; r < w->size; r++)
    if (w->status[r]) {
      w->broken = w->status[r];
      snprintf(w->xerr, sizeof w->xerr, "the allgather callback returned %d on rank %d", w->status[r], r);
      return -1;
    }
  return 0;
}

/* what this rank reports in its next result call: an old failure, or none */
static int prior(const weft_world *w) { return w->broken ? w->broken : w->pending; }

static int cb_gather(weft_world *w, const void *send, size_t bytes, visit_fn visit, void *ctx) {
  int code = prior(w);
  for (size_t off = 0; off < bytes; off += CHUNK) {
    size_t len = bytes - off < CHUNK ? bytes - off : CHUNK;
    memset(w->scratch, 0, (size_t)w->size * len);
    int rc = w->gather((const char *)send + off, w->scratch, len, w->user);
    if (rc && !code) code = rc;
    for (int r = 0; r < w->size && !code; r++) visit(r, off, w->scratch + (size_t)r * len, len, ctx);
  }
  return cb_status(w, code);
}

struct gather_ctx { int first, n; char *recv; size_t bytes; };
static void visit_copy(int r, size_t off, const char *data, size_t len, void *ctx) {
  struct gather_ctx *g = ctx;
  if (r >= g->first && r < g->first + g->n) memcpy(g->recv + (size_t)(r - g->first) * g->bytes + off, data, len);
}

struct reduce_ctx { int first, n, op, is_signed; unsigned long long v; int set; };
static void visit_reduce(int r, size_t off, const char *data, size_t len, void *ctx) {
  struct reduce_ctx *c = ctx;
  if (r < c->first || r >= c->first + c->n) return;
  unsigned long long x;
  memcpy(&x, data, sizeof x);
  int less = c->is_signed ? (long long)x < (long long)c->v : x < c->v;
  int more = c->is_signed ? (long long)x > (long long)c->v : x > c->v;
  if (!c->set || (c->op == WORLD_MIN ? less : more)) c->v = x;
  c->set = 1;
}

int world_scope_rank(const weft_world *w, world_scope s) { return s == WORLD_NODE ? w->local_rank : w->rank; }
int world_scope_size(const weft_world *w, world_scope s) { return s == WORLD_NODE ? w->local_size : w->size; }
static int scope_first(const weft_world *w, world_scope s) { return s == WORLD_NODE ? w->node_first : 0; }
static MPI_Comm scope_comm(const weft_world *w, world_scope s) { return s == WORLD_NODE ? w->node : w->comm; }
const char *world_transport_error(const weft_world *w) { return w->xerr; }
int world_failed(const weft_world *w) { return w->broken != 0; }

int world_allgather(weft_world *w, world_scope s, const void *send, void *recv, size_t bytes) {
  if (w->mpi) {
    MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, scope_comm(w, s));
    return 0;
  }
  struct gather_ctx g = {scope_first(w, s), world_scope_size(w, s), recv, bytes};
  return cb_gather(w, send, bytes, visit_copy, &g);
}

static int reduce(weft_world *w, world_scope s, void *v, world_op op, int is_signed) {
  if (w->mpi) {
    MPI_Allreduce(MPI_IN_PLACE, v, 1, is_signed ? MPI_LONG_LONG : MPI_UNSIGNED_LONG_LONG,
                  op == WORLD_MIN ? MPI_MIN : MPI_MAX, scope_comm(w, s));
    return 0;
  }
  struct reduce_ctx c = {scope_first(w, s), world_scope_size(w, s), op, is_signed, 0, 0};
  if (cb_gather(w, v, sizeof(unsigned long long), visit_reduce, &c)) return -1;
  memcpy(v, &c.v, sizeof c.v);
  return 0;
}
int world_reduce_i64(weft_world *w, world_scope s, long long *v, world_op op) { return reduce(w, s, v, op, 1); }
int world_reduce_u64(weft_world *w, world_scope s, unsigned long long *v, world_op op) {
  return reduce(w, s, v, op, 0);
}

int world_bcast(weft_world *w, world_scope s, void *buf, size_t bytes, int root) {
  if (w->mpi) {
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, scope_comm(w, s));
    return 0;
  }
  /* everyone gathers everyone's buffer and keeps the root's (root's own copy is the same bytes) */
  struct gather_ctx g = {scope_first(w, s) + root, 1, buf, bytes};
  return cb_gather(w, buf, bytes, visit_copy, &g);
}

int world_barrier(weft_world *w) {
  if (w->mpi) {
    MPI_Barrier(w->comm);
    return 0;
  }
  return cb_status(w, prior(w));
}

/* ---- a callback world -------------------------------------------------------------------- */
struct boot_rec { int rank, size, local_rank, local_size; };

/* The same verdict on every rank: every rank checks the same table in the same order. */
static int check_table(const struct boot_rec *t, int size, char *err, size_t len) {
  /* sizes first, against place 0's: a rank that passed another size still sees the others' */
  for (int i = 1; i < size; i++)
    if (t[i].size != t[0].size)
      return snprintf(err, len, "the rank in place %d of the gather (rank=%d) passed size=%d, and the one in place 0 "
                      "size=%d: every rank must pass the same size", i, t[i].rank, t[i].size, t[0].size), -1;
  for (int i = 0; i < size; i++) {
    const struct boot_rec *b = &t[i];
    if (b->rank != i)
      return snprintf(err, len, "the rank in place %d of the gather passed rank=%d: the callback must put rank r's "
                      "bytes at recv + r * bytes, and each rank must pass its own number in [0, %d)",
                      i, b->rank, size), -1;
    if (b->local_size < 1 || b->local_size > size)
      return snprintf(err, len, "rank %d passed local_size=%d: allowed 1 to size=%d", i, b->local_size, size), -1;
    if (b->local_rank < 0 || b->local_rank >= b->local_size)
      return snprintf(err, len, "rank %d passed local_rank=%d with local_size=%d: allowed 0 to local_size - 1", i,
                      b->local_rank, b->local_size), -1;
  }
  /* then the nodes, once every value is in range */
  for (int i = 0; i < size; i++) {
    const struct boot_rec *b = &t[i];
    int first = i - b->local_rank;
    if (first + b->local_size > size)
      return snprintf(err, len, "rank %d passed local_rank=%d and local_size=%d: its node would hold ranks %d to %d, "
                      "past the last rank %d", i, b->local_rank, b->local_size, first, first + b->local_size - 1,
                      size - 1), -1;
    for (int j = first; j < first + b->local_size; j++)
      if (t[j].rank - t[j].local_rank != first || t[j].local_size != b->local_size)
        return snprintf(err, len, "rank %d (local_rank=%d, local_size=%d) and rank %d (local_rank=%d, "
                        "local_size=%d) disagree about their node: a node's ranks must be consecutive, with "
                        "local_rank = rank - the node's first rank and one local_size", i, b->local_rank,
                        b->local_size, j, t[j].local_rank, t[j].local_size), -1;
  }
  return 0;
}

static void set_err(char *err, size_t len, const char *msg) {
  if (err && len && snprintf(err, len, "weft_world_create_with: %s", msg) < 0) err[0] = 0;
}

weft_status weft_world_create_with(const weft_world_bootstrap *b, weft_world **out, char *err, size_t errlen) {
  char msg[1024] = "";
  if (err && errlen) err[0] = 0;
  if (out) *out = NULL;
  /* a rank that cannot call the callback with a buffer of the right size cannot take part */
  if (!out || !b || !b->allgather) {
    set_err(err, errlen, !out ? "out is NULL" : !b ? "the bootstrap is NULL" : "allgather is NULL");
    return WEFT_ERR_INVALID;
  }
  if (b->size < 1 || b->size > MAX_RANKS) {
    snprintf(msg, sizeof msg, "size=%d: allowed 1 to %d", b->size, MAX_RANKS);
    set_err(err, errlen, msg);
    return WEFT_ERR_INVALID;
  }
  weft_world *w = calloc(1, sizeof *w);
  struct boot_rec *t = calloc((size_t)b->size, sizeof *t);
  if (w) w->scratch = malloc((size_t)b->size * CHUNK);
  if (w) w->status = malloc((size_t)b->size * sizeof *w->status);
  if (!w || !t || !w->scratch || !w->status) {
    if (w) { free(w->scratch); free(w->status); }
    free(w);
    free(t);
    set_err(err, errlen, "out of memory before the first gather (this rank did not call allgather)");
    return WEFT_ERR_NOMEM;
  }
  w->gather = b->allgather;
  w->user = b->user;
  w->rank = b->rank;
  w->size = b->size;
  w->local_rank = b->local_rank;
  w->local_size = b->local_size;
  w->node_first = b->rank - b->local_rank;
  struct boot_rec mine = {b->rank, b->size, b->local_rank, b->local_size};
  struct gather_ctx g = {0, w->size, (char *)t, sizeof mine};
  weft_status st = WEFT_OK;
  if (cb_gather(w, &mine, sizeof mine, visit_copy, &g)) {
    snprintf(msg, sizeof msg, "%s", w->xerr);
    st = WEFT_ERR_IO;
  } else if (check_table(t, w->size, msg, sizeof msg)) st = WEFT_ERR_INVALID;
  free(t);
  if (st) {
    set_err(err, errlen, msg);
    weft_world_destroy(w);
    return st;
  }
  *out = w;
  return WEFT_OK;
}

void weft_world_destroy(weft_world *w) {
  if (!w) return;
  int fin = 0;
  if (w->mpi) MPI_Finalized(&fin);
  if (w->mpi && !fin) {
    MPI_Comm_free(&w->node);
    MPI_Comm_free(&w->comm);
  }
  free(w->scratch);
  free(w->status);
  free(w);
}

int weft_world_rank(const weft_world *w) { return w ? w->rank : -1; }
int weft_world_size(const weft_world *w) { return w ? w->size : 0; }
int weft_world_local_rank(const weft_world *w) { return w ? w->local_rank : -1; }
int weft_world_local_size(const weft_world *w) { return w ? w->local_size : 0; }
const char *weft_world_error(const weft_world *w) { return w ? w->err : "no world"; }

/* "ranks 0, 2" or "rank 1" */
static void rank_list(char *buf, size_t len, const int *ranks, int n) {
  int k = snprintf(buf, len, "rank%s ", n == 1 ? "" : "s");
  size_t at = k < 0 ? len : (size_t)k;
  for (int i = 0; i < n && at < len; i++) {
    k = snprintf(buf + at, len - at, "%s%d", i ? ", " : "", ranks[i]);
    at = k < 0 ? len : at + (size_t)k;
  }
}

static weft_status transport_failed(weft_world *w, const char *what) {
  snprintf(w->err, sizeof w->err, "%s: %s", what, w->xerr);
  return WEFT_ERR_IO;
}

weft_status weft_world_agree(weft_world *w, const char *what, const char *desc) {
  if (!w || !what || !desc) return WEFT_ERR_INVALID;
  /* 1: everyone's digest of the whole description */
  unsigned char mine[32];
  hash_sha256(desc, strlen(desc), mine);
  unsigned char *all = malloc((size_t)w->size * 32);
  char *texts = malloc((size_t)w->size * DESC_MAX);
  int *group = malloc((size_t)w->size * sizeof *group);
  /* every rank learns whether every rank has its buffers, so none waits alone in the gather */
  int have = all && texts && group;
  long long all_have = have;
  if (world_reduce_i64(w, WORLD_ALL, &all_have, WORLD_MIN)) {
    free(all); free(texts); free(group);
    return transport_failed(w, what);
  }
  if (!all_have) {
    free(all); free(texts); free(group);
    snprintf(w->err, sizeof w->err, "%s: %s out of memory for the rendezvous of %d ranks", what,
             have ? "another rank ran" : "this rank ran", w->size);
    return WEFT_ERR_NOMEM;
  }
  weft_status st = WEFT_OK;
  if (world_allgather(w, WORLD_ALL, mine, all, 32)) st = transport_failed(w, what);
  int same = 1;
  for (int r = 1; r < w->size && !st; r++) same &= memcmp(all, all + 32 * r, 32) == 0;
  /* 2: every rank took the same branch (they all saw the same digests); gather the texts */
  if (!st && !same) {
    char line[DESC_MAX];
    snprintf(line, sizeof line, "%s", desc);
    if (world_allgather(w, WORLD_ALL, line, texts, DESC_MAX)) st = transport_failed(w, what);
  }
  if (!st && !same) {
    /* the same message on every rank: groups of ranks with equal digests, in rank order */
    int k = snprintf(w->err, sizeof w->err, "%s: the %d ranks disagree, so none of them goes on: ", what, w->size);
    size_t at = k < 0 ? sizeof w->err : (size_t)k;
    char *done = calloc((size_t)w->size, 1);
    int first_group = 1;
    for (int r = 0; r < w->size && done; r++) {
      if (done[r]) continue;
      int n = 0;
      for (int q = r; q < w->size; q++)
        if (!done[q] && !memcmp(all + 32 * r, all + 32 * q, 32)) { group[n++] = q; done[q] = 1; }
      char who[512];
      rank_list(who, sizeof who, group, n);
      if (at < sizeof w->err) {
        k = snprintf(w->err + at, sizeof w->err - at, "%s%s: %s", first_group ? "" : "; ", who,
                     texts + (size_t)r * DESC_MAX);
        at = k < 0 ? sizeof w->err : at + (size_t)k;
      }
      first_group = 0;
    }
    free(done);
    st = WEFT_ERR_MISMATCH;
  }
  free(all);
  free(texts);
  free(group);
  return st;
}

int weft_multicast_allowed(int device_supports, char *why, size_t len) {
  static const struct { const char *var, *off; } switches[] = {
    {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
    {"NVSHMEM_DISABLE_NVLS", "1"}};   /* (WEFT_MULTICAST, weft's own, below: every off spelling) */
  for (size_t i = 0; i < sizeof switches / sizeof *switches; i++) {
    const char *v = getenv(switches[i].var);
    if (v && !strcmp(v, switches[i].off)) {
      if (why) snprintf(why, len, "NVLink multicast is switched off here (%s=%s)", switches[i].var, v);
      return 0;
    }
  }
  /* weft's own switch takes every off spelling (WEFT_MULTICAST=off, false, no); a value it cannot
   * read also keeps multicast off, saying so: a typo never turns it on */
  int on = 1;
  const char *wv = getenv("WEFT_MULTICAST");
  if (wv && *wv && util_env_bool("WEFT_MULTICAST", "allow NVLink multicast", &on, NULL, 0)) {
    if (why) snprintf(why, len, "WEFT_MULTICAST = \"%.40s\" is neither on nor off (1, true, yes, on or 0, false, no, "
                      "off): multicast stays off", wv);
    return 0;
  }
  if (wv && *wv && !on) {
    if (why) snprintf(why, len, "NVLink multicast is switched off here (WEFT_MULTICAST=%.40s)", wv);
    return 0;
  }
  if (!device_supports) {
    if (why) snprintf(why, len, "the device does not support multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0)");
    return 0;
  }
  if (why && len) why[0] = 0;
  return 1;
}

int world_first_failure(weft_world *w, world_scope s, int failed, char *msg, size_t len) {
  int me = world_scope_rank(w, s), n = world_scope_size(w, s);
  long long first = failed ? me : n;
  if (world_reduce_i64(w, s, &first, WORLD_MIN)) {
    snprintf(msg, len, "%s", w->xerr);
    return -2;
  }
  if (first == n) return -1;
  if (world_bcast(w, s, msg, len, (int)first)) {
    snprintf(msg, len, "%s", w->xerr);
    return -2;
  }
  return (int)first;
}

int world_all_ok(weft_world *w, int ok, const char *msg, char *out, size_t len) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", ok ? "" : msg ? msg : "failed");
  int first = world_first_failure(w, WORLD_ALL, !ok, buf, sizeof buf);
  if (first == -1) return 1;
  if (out && len) {
    if (first == -2) snprintf(out, len, "%s", buf);
    else snprintf(out, len, "rank %d: %s", first, buf);
  }
  return 0;
}
