/* ranks.c: see ranks.h. */
#include "ranks.h"

#include <mpi.h>
#include <stdlib.h>

static int active, rank, size = 1;

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
  if (active) MPI_Finalize();
  active = 0;
}

int ranks_rank(void) { return rank; }
int ranks_size(void) { return size; }

double ranks_max(double v) {
  double r = v;
  if (active) MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return r;
}

int ranks_all(int flag) {
  int v = flag != 0, r = v;
  if (active) MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return r;
}

int ranks_any(int flag) {
  int v = flag != 0, r = v;
  if (active) MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  return r;
}

int ranks_bcast_int(int v) {
  if (active) MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v;
}

int ranks_same(unsigned long long v) {
  unsigned long long lo = v, hi = v;
  if (active) {
    MPI_Allreduce(&v, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  }
  return lo == hi;
}
