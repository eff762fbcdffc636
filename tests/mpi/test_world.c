/* test_world.c: the world and its rendezvous under mpirun (2 and 3 ranks), and the multicast
 * guard.  Every rank checks; the ranks then agree on whether all passed.  No GPU needed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "mpitest.h"
#include "weft.h"


int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  weft_world *w;
  CHECK(weft_world_create(NULL, &w) == WEFT_OK, "world_create");
  CHECK(weft_world_rank(w) == rank_ && weft_world_size(w) == size, "rank %d size %d", weft_world_rank(w), weft_world_size(w));
  CHECK(weft_world_local_size(w) == size && weft_world_local_rank(w) == rank_, "one node: local %d of %d",
        weft_world_local_rank(w), weft_world_local_size(w));

  /* agreement */
  CHECK(weft_world_agree(w, "symmetric allocation", "bytes=4096 kernel=abc") == WEFT_OK, "same text agrees");

  /* rank 1 asks for another size: every rank fails, with the same message */
  char desc[64];
  snprintf(desc, sizeof desc, "bytes=%d", rank_ == 1 ? 8192 : 4096);
  weft_status st = weft_world_agree(w, "symmetric allocation", desc);
  const char *e = weft_world_error(w);
  CHECK(st == WEFT_ERR_MISMATCH, "disagreement detected (status %d)", st);
  CHECK(strstr(e, "symmetric allocation: the ") != NULL, "message names what: %s", e);
  CHECK(strstr(e, "rank 1: bytes=8192") != NULL, "message names rank 1: %s", e);
  if (size == 2) CHECK(strstr(e, "rank 0: bytes=4096") != NULL, "message names rank 0: %s", e);
  if (size == 3) CHECK(strstr(e, "ranks 0, 2: bytes=4096") != NULL, "message groups ranks 0, 2: %s", e);
  CHECK(same_everywhere(e), "every rank has the same message: %s", e);

  /* a difference past the printed part is still a difference */
  char longd[600];
  memset(longd, 'x', sizeof longd);
  longd[sizeof longd - 1] = 0;
  if (rank_ == size - 1) longd[sizeof longd - 2] = 'y';
  CHECK(weft_world_agree(w, "kernel", longd) == WEFT_ERR_MISMATCH, "difference beyond 256 characters");

  /* and agreement afterwards still works (no collective left half-done) */
  CHECK(weft_world_agree(w, "kernel", "hash=1234") == WEFT_OK, "agrees again");

  /* symmetric memory: sizes that disagree fail on every rank, the same way, before any CUDA
   * call (so this holds on a machine without a GPU too) */
  weft_ctx *ctx;
  CHECK(weft_ctx_create(&ctx, NULL) == WEFT_OK, "ctx");
  weft_symm *sm = NULL;
  st = weft_symm_alloc(ctx, w, rank_ == 1 ? 2u << 20 : 1u << 20, "kernel=abc", &sm);
  e = weft_ctx_error(ctx);
  CHECK(st == WEFT_ERR_MISMATCH && !sm, "symm sizes disagree: status %d", st);
  CHECK(strstr(e, "weft_symm_alloc: the ") && strstr(e, "rank 1: bytes=2097152 kernel=abc"), "names rank 1: %s", e);
  CHECK(same_everywhere(e), "same symm message everywhere: %s", e);
  st = weft_symm_alloc(ctx, w, 1u << 20, rank_ == 0 ? "kernel=abc" : "kernel=abd", &sm);
  CHECK(st == WEFT_ERR_MISMATCH && strstr(weft_ctx_error(ctx), "kernel=abd"), "kernel hashes disagree: %s", weft_ctx_error(ctx));
  /* sizes that agree: allocated with a GPU; without one every rank fails, with one message */
  st = weft_symm_alloc(ctx, w, 1u << 20, "kernel=abc", &sm);
  if (st == WEFT_OK) {
    CHECK(weft_symm_bytes(sm) >= (1u << 20) && weft_symm_ptr(sm, size - 1) != 0, "mapped");
    weft_symm_free(sm);
  } else {
    e = weft_ctx_error(ctx);
    CHECK(!sm && strstr(e, "rank 0: "), "the lowest failing rank's message: %s", e);
    CHECK(same_everywhere(e), "every rank fails with the same message: %s", e);
  }
  /* a kernel that does not talk to other ranks has no communicator (decided before any collective) */
  weft_kernel *rk;
  CHECK(weft_compile_string(ctx, "rr.lua", "return { family = 'row_reduce' }", NULL, 0, &rk) == WEFT_OK, "compile row_reduce");
  weft_comm *cm = NULL;
  CHECK(weft_comm_create(rk, w, 1000, &cm) == WEFT_ERR_INVALID && !cm, "comm for row_reduce refused");
  CHECK(strstr(weft_kernel_error(rk), "does not talk to other ranks: launch it with weft_launch") != NULL, "%s",
        weft_kernel_error(rk));
  weft_kernel_destroy(rk);
  weft_ctx_destroy(ctx);
  weft_world_destroy(w);

  /* the multicast guard */
  char why[256];
  const char *vars[] = {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "WEFT_MULTICAST"};
  for (int i = 0; i < 4; i++) unsetenv(vars[i]);
  CHECK(weft_multicast_allowed(1, why, sizeof why) == 1, "allowed with support and no switch");
  CHECK(weft_multicast_allowed(0, why, sizeof why) == 0 && strstr(why, "does not support"), "%s", why);
  const char *off[] = {"0", "1", "1", "0"};
  for (int i = 0; i < 4; i++) {
    setenv(vars[i], off[i], 1);
    CHECK(weft_multicast_allowed(1, why, sizeof why) == 0 && strstr(why, vars[i]), "%s off: %s", vars[i], why);
    unsetenv(vars[i]);
  }
  setenv("NCCL_NVLS_ENABLE", "1", 1);   /* on, not off */
  CHECK(weft_multicast_allowed(1, why, sizeof why) == 1, "NCCL_NVLS_ENABLE=1 does not switch it off");
  unsetenv("NCCL_NVLS_ENABLE");
  /* weft's own switch takes every off spelling; a value neither on nor off keeps it off, said */
  const char *w_off[] = {"off", "false", "no"};
  for (int i = 0; i < 3; i++) {
    setenv("WEFT_MULTICAST", w_off[i], 1);
    CHECK(weft_multicast_allowed(1, why, sizeof why) == 0 && strstr(why, "WEFT_MULTICAST"), "WEFT_MULTICAST=%s: %s",
          w_off[i], why);
  }
  setenv("WEFT_MULTICAST", "of", 1);
  CHECK(weft_multicast_allowed(1, why, sizeof why) == 0 && strstr(why, "\"of\" is neither on nor off"), "typo: %s", why);
  setenv("WEFT_MULTICAST", "1", 1);
  CHECK(weft_multicast_allowed(1, why, sizeof why) == 1, "WEFT_MULTICAST=1 leaves it allowed");
  unsetenv("WEFT_MULTICAST");

  int all_failed = 0;
  MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) printf("%d passed, %d failed\n", passed, all_failed);
  MPI_Finalize();
  return all_failed ? 1 : 0;
}
