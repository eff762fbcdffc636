/* test_nccl_sym.c: NCCL's symmetric windows as nccl_bench's symmetric baseline takes them
 * (runtime/measure/nccl.c: nccl_symmetric_alloc), on a stand-in library (fake_nccl.c) under
 * mpirun with 2 and 3 ranks: the buffer registered with NCCL_WIN_COLL_SYMMETRIC and freed in
 * order; a library without the calls (NCCL before 2.27) named on every rank; one rank's failed
 * allocation or registration reaching every rank as that rank's message, and no rank entering
 * the registration (NCCL's collective) after another's allocation failed.  No GPU needed.
 *   mpirun -np 2 test_nccl_sym NEW_LIB OLD_LIB */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"
#include "nccl.h"

static void calls(nccl_lib *n, int out[4], int *flags, size_t *bytes) {
  void (*f)(int *, int *, size_t *);
  *(void **)&f = dlsym(n->lib, "fake_nccl_calls");
  if (f) f(out, flags, bytes);
  else memset(out, 0xff, 4 * sizeof *out);
}

static int open_lib(nccl_lib *n, const char *path) {
  char why[512], bus[32];
  setenv("WEFT_NCCL_LIB", path, 1);
  snprintf(bus, sizeof bus, "fake-%d", rank_);
  int st = nccl_open(n, MPI_COMM_WORLD, bus, why, sizeof why);
  CHECK(st == 0, "nccl_open(%s): %s", path, why);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  if (argc != 3) {
    fprintf(stderr, "usage: test_nccl_sym NEW_LIB OLD_LIB\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char why[512];
  int c[4], flags;
  size_t bytes;

  /* 1: the library has the calls: allocated, registered as symmetric, freed in order */
  nccl_lib n = {0};
  if (!open_lib(&n, argv[1])) {
    nccl_sym s;
    CHECK(nccl_symmetric_alloc(&n, MPI_COMM_WORLD, 1 << 20, &s, why, sizeof why) == 0, "alloc: %s", why);
    calls(&n, c, &flags, &bytes);
    CHECK(c[0] == 1 && c[2] == 1 && flags == 0x01 && bytes == 1u << 20,
          "one allocation and one symmetric registration of 1 MiB: %d %d flags %d bytes %zu", c[0], c[2], flags, bytes);
    CHECK(s.ptr && s.win && s.bytes == 1u << 20, "the window");
    nccl_symmetric_free(&n, &s);
    calls(&n, c, &flags, &bytes);
    CHECK(c[1] == 1 && c[3] == 1 && !s.ptr && !s.win, "deregistered and freed: %d %d", c[3], c[1]);

    /* 2: rank 1 cannot allocate: every rank fails with rank 1's message, and none registers */
    setenv("FAKE_NCCL_FAIL_ALLOC", "1", 1);
    why[0] = 0;
    CHECK(nccl_symmetric_alloc(&n, MPI_COMM_WORLD, 4096, &s, why, sizeof why) == -1, "a failed allocation fails");
    CHECK(strstr(why, "ncclMemAlloc(4096 bytes) failed: unhandled cuda error (fake) (1)") != NULL, "why: %s", why);
    CHECK(same_everywhere(why), "the same message on every rank: %s", why);
    calls(&n, c, &flags, &bytes);
    CHECK(c[2] == 1, "no registration after a failed allocation: %d", c[2]);
    CHECK(c[0] == c[1] && c[0] == (rank_ == 1 ? 1 : 2), "the other ranks' allocations freed: %d allocated, %d freed",
          c[0], c[1]);
    CHECK(!s.ptr && !s.win, "nothing handed back");
    unsetenv("FAKE_NCCL_FAIL_ALLOC");

    /* 3: rank 0's registration fails: every rank says so */
    setenv("FAKE_NCCL_FAIL_REGISTER", "0", 1);
    why[0] = 0;
    CHECK(nccl_symmetric_alloc(&n, MPI_COMM_WORLD, 4096, &s, why, sizeof why) == -1, "a failed registration fails");
    CHECK(strstr(why, "ncclCommWindowRegister(4096 bytes, NCCL_WIN_COLL_SYMMETRIC) failed: fake error (5)") != NULL,
          "why: %s", why);
    CHECK(same_everywhere(why), "the same message on every rank: %s", why);
    unsetenv("FAKE_NCCL_FAIL_REGISTER");
    nccl_close(&n);
  }

  /* 4: a library before the symmetric calls: named, on every rank, before anything collective */
  nccl_lib o = {0};
  if (!open_lib(&o, argv[2])) {
    nccl_sym s;
    why[0] = 0;
    CHECK(nccl_symmetric_alloc(&o, MPI_COMM_WORLD, 4096, &s, why, sizeof why) == -1, "an old library fails");
    CHECK(strstr(why, "(NCCL 22809) lacks ncclMemAlloc, ncclMemFree, ncclCommWindowRegister or "
                      "ncclCommWindowDeregister: symmetric windows need NCCL 2.27 or later") != NULL, "why: %s", why);
    CHECK(same_everywhere(why), "the same message on every rank");
    nccl_close(&o);
  }

  int bad = failed, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) printf("test_nccl_sym: %d checks on rank 0, %d failed over the ranks\n", passed + failed, any);
  MPI_Finalize();
  return any ? 1 : 0;
}
