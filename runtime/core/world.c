/* world.c: the ranks of an MPI communicator, the rendezvous that makes them agree before any
 * collective step, and the multicast guard.  (weft.h, "several ranks"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "weft.h"
#include "world.h"

#define DESC_MAX 256   /* a description is one line; longer ones are cut (and still compared whole) */

struct weft_world {
  MPI_Comm comm, node;
  int rank, size, local_rank, local_size;
  char err[8192];
};


weft_status weft_world_create(const void *mpi_comm, weft_world **out) {
  if (!out) return WEFT_ERR_INVALID;
  *out = NULL;
  int up = 0;
  MPI_Initialized(&up);
  if (!up) return WEFT_ERR_INVALID;   /* the caller initialises MPI */
  weft_world *w = calloc(1, sizeof *w);
  if (!w) return WEFT_ERR_NOMEM;
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

void weft_world_destroy(weft_world *w) {
  if (!w) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    MPI_Comm_free(&w->node);
    MPI_Comm_free(&w->comm);
  }
  free(w);
}

int weft_world_rank(const weft_world *w) { return w ? w->rank : -1; }
int weft_world_size(const weft_world *w) { return w ? w->size : 0; }
int weft_world_local_rank(const weft_world *w) { return w ? w->local_rank : -1; }
int weft_world_local_size(const weft_world *w) { return w ? w->local_size : 0; }
const char *weft_world_error(const weft_world *w) { return w ? w->err : "no world"; }

/* "ranks 0, 2" or "rank 1" */
static void rank_list(char *buf, size_t len, const int *ranks, int n) {
  size_t at = (size_t)snprintf(buf, len, "rank%s ", n == 1 ? "" : "s");
  for (int i = 0; i < n && at < len; i++) at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? ", " : "", ranks[i]);
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
  int have = all && texts && group, all_have = 0;
  MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, w->comm);
  if (!all_have) {
    free(all); free(texts); free(group);
    snprintf(w->err, sizeof w->err, "%s: %s out of memory for the rendezvous of %d ranks", what,
             have ? "another rank ran" : "this rank ran", w->size);
    return WEFT_ERR_NOMEM;
  }
  MPI_Allgather(mine, 32, MPI_BYTE, all, 32, MPI_BYTE, w->comm);
  int same = 1;
  for (int r = 1; r < w->size; r++) same &= memcmp(all, all + 32 * r, 32) == 0;
  /* 2: every rank took the same branch (they all saw the same digests); gather the texts */
  weft_status st = WEFT_OK;
  if (!same) {
    char line[DESC_MAX];
    snprintf(line, sizeof line, "%s", desc);
    MPI_Allgather(line, DESC_MAX, MPI_CHAR, texts, DESC_MAX, MPI_CHAR, w->comm);
    /* the same message on every rank: groups of ranks with equal digests, in rank order */
    size_t at = (size_t)snprintf(w->err, sizeof w->err, "%s: the %d ranks disagree, so none of them goes on: ",
                                 what, w->size);
    char *done = calloc((size_t)w->size, 1);
    int first_group = 1;
    for (int r = 0; r < w->size && done; r++) {
      if (done[r]) continue;
      int n = 0;
      for (int q = r; q < w->size; q++)
        if (!done[q] && !memcmp(all + 32 * r, all + 32 * q, 32)) { group[n++] = q; done[q] = 1; }
      char who[512];
      rank_list(who, sizeof who, group, n);
      if (at < sizeof w->err)
        at += (size_t)snprintf(w->err + at, sizeof w->err - at, "%s%s: %s", first_group ? "" : "; ", who,
                               texts + (size_t)r * DESC_MAX);
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
    {"NVSHMEM_DISABLE_NVLS", "1"}, {"WEFT_MULTICAST", "0"}};
  for (size_t i = 0; i < sizeof switches / sizeof *switches; i++) {
    const char *v = getenv(switches[i].var);
    if (v && !strcmp(v, switches[i].off)) {
      if (why) snprintf(why, len, "NVLink multicast is switched off here (%s=%s)", switches[i].var, v);
      return 0;
    }
  }
  if (!device_supports) {
    if (why) snprintf(why, len, "the device does not support multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0)");
    return 0;
  }
  if (why && len) why[0] = 0;
  return 1;
}

MPI_Comm world_comm(const weft_world *w) { return w->comm; }
MPI_Comm world_node(const weft_world *w) { return w->node; }

int world_first_failure(MPI_Comm c, int failed, char *msg, size_t len) {
  int me = 0, n = 0, first = 0;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  int mine = failed ? me : n;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c);
  if (first == n) return -1;
  MPI_Bcast(msg, (int)len, MPI_CHAR, first, c);
  return first;
}

int world_all_ok(const weft_world *w, int ok, const char *msg, char *out, size_t len) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", ok ? "" : msg ? msg : "failed");
  int first = world_first_failure(w->comm, !ok, buf, sizeof buf);
  if (first < 0) return 1;
  if (out && len) snprintf(out, len, "rank %d: %s", first, buf);
  return 0;
}
