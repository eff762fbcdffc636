/* ranks.c: see ranks.h. */
#include "ranks.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "measure.h"

static int active, rank, size = 1;

/* MPI is up (and not yet finalized): by ranks_init, ranks_ensure, or the program itself */
static int on(void) {
  int init = 0, fin = 0;
  if (active) return 1;
  MPI_Initialized(&init);
  if (init) MPI_Finalized(&fin);
  return init && !fin;
}

/* Started by a launcher?  Open MPI, MPICH/Hydra and PMIx launchers set one of these. */
static int launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int ranks_init(int *argc, char ***argv) {
  if (!launched()) return 1;
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  active = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void ranks_finalize(void) {
  int fin = 0;
  if (active) MPI_Finalized(&fin);
  if (active && !fin) MPI_Finalize();
  active = 0;
}

/* Started here: finalized once, at exit, so that every later caller (weft tune runs many
 * kernels in one process) still finds MPI running -- it cannot be initialized twice. */
void ranks_ensure(void) {
  if (on()) return;
  if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return;
  active = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  atexit(ranks_finalize);
}

int ranks_rank(void) { return rank; }
int ranks_size(void) { return size; }

int ranks_world_size(void) {
  if (on()) return size;
  const char *env[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};   /* mpirun's, before MPI_Init */
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(env[i]);
    if (v && atoi(v) > 0) return atoi(v);
  }
  return 1;
}

double ranks_max(double v) {
  double r = v;
  if (on()) MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return r;
}

int ranks_all(int flag) {
  int v = flag != 0, r = v;
  if (on()) MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return r;
}

int ranks_any(int flag) {
  int v = flag != 0, r = v;
  if (on()) MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  return r;
}

int ranks_bcast_int(int v) {
  if (on()) MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v;
}

int ranks_same(unsigned long long v) {
  unsigned long long lo = v, hi = v;
  if (on()) {
    MPI_Allreduce(&v, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  }
  return lo == hi;
}

int ranks_same_bytes(const void *p, unsigned long bytes, char *who, unsigned long len) {
  int n = 1, me = 0;
  who[0] = 0;
  if (!on()) return 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  unsigned char d[32];
  hash_sha256(p, bytes, d);
  unsigned char *all = malloc((size_t)n * 32);
  if (!ranks_all(all != NULL)) { free(all); return 0; }
  MPI_Allgather(d, 32, MPI_BYTE, all, 32, MPI_BYTE, MPI_COMM_WORLD);
  int same = 1;
  size_t at = 0;
  for (int q = 1; q < n; q++)
    if (memcmp(all, all + 32 * q, 32)) {
      same = 0;
      if (at < len) at += (size_t)snprintf(who + at, len - at, "%s%d", at ? ", " : "", q);
    }
  free(all);
  return same;
}

int ranks_first_why(int ok, char *why, int len) {
  if (!on()) return ok;
  return measure_first_why(MPI_COMM_WORLD, ok, why, (size_t)len);
}

int ranks_agree(int rc, const char *why, const char *cmd) {
  if (!on()) return rc;
  char buf[2048];
  snprintf(buf, sizeof buf, "rank %d: %s", rank, why && *why ? why : "failed (see its messages)");
  int ok = rc == 0;
  if (ranks_first_why(ok, buf, (int)sizeof buf)) return 0;
  /* the first failing rank's exit code, on every rank */
  int mine = ok ? 1 << 30 : rank * 256 + rc, first = mine;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (ok) fprintf(stderr, "weft %s: rank %d: stopped, because %s\n", cmd, rank, buf);
  return first % 256;
}
