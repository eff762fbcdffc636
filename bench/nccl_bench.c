/* nccl_bench.c: ncclAllReduce timed exactly as `weft run` times weft's allreduce, by the same
 * code (runtime/measure/: measure_run with the allreduce's plan: 3 warm-ups, then ROUNDS rounds
 * of a barrier and CUDA events around back-to-back launches, out of place, the slowest rank
 * counting in each round, and the median round reported).
 * NCCL is opened at run time by runtime/measure/nccl.c (WEFT_NCCL_LIB, else libnccl.so.2): it
 * is the library that ships with torch on the GPU machines, and weft does not link it.  One
 * rank per GPU:
 *   mpirun -np 2 build/nccl_bench [f32|f16|bf16] [iters] [symmetric] [bytes=B1,B2,...]
 * bytes=: those message sizes (each at most 256 MiB) instead of 8 B, 32 B, ... 256 MiB.
 * symmetric: x and y are NCCL's symmetric memory (ncclMemAlloc, registered with
 * ncclCommWindowRegister as NCCL_WIN_COLL_SYMMETRIC), so NCCL 2.27 and later run their symmetric
 * kernels; exit 77 where the library has no such calls. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "measure.h"
#include "nccl.h"

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 1); } \
  } while (0)

#define ROUNDS 5

typedef struct timed { nccl_lib *n; void *x, *y; size_t count; hr_dtype dt; } timed;
static int timed_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  timed *t = ud;
  return nccl_all_reduce_sum(t->n, t->x, t->y, t->count, t->dt, s, err, len);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *dt = argc > 1 ? argv[1] : "f32";
  int iters = argc > 2 ? atoi(argv[2]) : 20;
  int symmetric = 0, n_list = 0, bad = iters < 1 || iters > 100000;
  long long list[64];
  for (int a = 3; a < argc && !bad; a++) {
    if (!strcmp(argv[a], "symmetric")) { symmetric = 1; continue; }
    if (strncmp(argv[a], "bytes=", 6)) { bad = 1; break; }
    for (char *p = argv[a] + 6, *end; *p && !bad; p = *end == ',' ? end + 1 : end) {
      long long b = strtoll(p, &end, 10);
      if (end == p || (*end && *end != ',') || b < 1 || b > (256ll << 20) || n_list == 64) bad = 1;
      else list[n_list++] = b;
    }
    if (!n_list) bad = 1;
  }
  if (bad) {
    if (rank == 0)
      fprintf(stderr, "usage: nccl_bench [f32|f16|bf16] [iters 1..100000] [symmetric] [bytes=B1,B2,... (at most 64 "
                      "sizes, each 1..268435456)]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hr_dtype type = !strcmp(dt, "bf16") ? HR_BF16 : !strcmp(dt, "f16") ? HR_F16 : HR_F32;
  size_t es = hr_dtype_size(type);
  char why[512];
  nccl_lib nc;
  int ld = nccl_load(&nc, why, sizeof why);
  /* 77 means "this NCCL has no symmetric windows" to the scripts: a library not found is a failure */
  if (ld == NCCL_NO_LIB) { fprintf(stderr, "nccl_bench: %s\n", why); MPI_Abort(MPI_COMM_WORLD, symmetric ? 1 : 77); }
  if (ld != NCCL_LOAD_OK) { fprintf(stderr, "nccl_bench: %s\n", why); MPI_Abort(MPI_COMM_WORLD, 1); }
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int dev = (lr ? atoi(lr) : rank) % ndev;
  CK(cudaSetDevice(dev));
  CK(cudaFree(0));   /* the primary context, current for the driver calls of runtime/measure/ */
  const drv_table *d = drv_get(why, sizeof why);
  if (!d) { fprintf(stderr, "nccl_bench: %s\n", why); MPI_Abort(MPI_COMM_WORLD, 1); }
  char bus[32] = "";
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) bus[0] = 0;
  if (nccl_open(&nc, MPI_COMM_WORLD, bus, why, sizeof why)) {
    if (rank == 0) fprintf(stderr, "nccl_bench: %s\n", why);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t max = (size_t)256 << 20;
  void *x, *y;
  nccl_sym sx, sy;
  if (symmetric) {
    if (nccl_symmetric_alloc(&nc, MPI_COMM_WORLD, max, &sx, why, sizeof why) ||
        nccl_symmetric_alloc(&nc, MPI_COMM_WORLD, max, &sy, why, sizeof why)) {
      if (rank == 0) fprintf(stderr, "nccl_bench: %s\n", why);
      MPI_Abort(MPI_COMM_WORLD, nc.window_register ? 1 : 77);
    }
    x = sx.ptr;
    y = sy.ptr;
  } else {
    CK(cudaMalloc(&x, max));
    CK(cudaMalloc(&y, max));
  }
  CK(cudaMemset(x, 0x3c, max));   /* 1.0-ish in every format; NCCL's speed does not depend on values */
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (rank == 0)
    printf("time: ncclAllReduce %s sum, %d ranks, NCCL %d%s; CUDA events around back-to-back launches, the slowest "
           "rank, median of %d rounds\n"
           "%12s %12s %10s %11s %11s\n", dt, size, nc.version, symmetric ? ", symmetric windows" : "", ROUNDS, "bytes",
           "elements", "time_us", "algbw_GB/s", "busbw_GB/s");
  for (int i = 0; i < (n_list ? n_list : 1000); i++) {
    /* the list, or 8 B, 32 B, ... 128 MiB, 256 MiB */
    long long bytes = n_list ? list[i] : i <= 12 ? 8ll << (2 * i) : 256ll << 20;
    if (!n_list && i > 13) break;
    size_t n = (size_t)bytes / es;
    if (!n) continue;
    timed t = {&nc, x, y, n, type};
    measure_op op = {timed_launch, &t, 1, NULL};
    measure_plan plan = {.iters = bytes <= (1 << 20) ? iters * 4 : bytes <= (32 << 20) ? iters : 10, .warmup = 3,
                         .warm_once = 1, .settle = 1, .rounds = ROUNDS, .stream = (CUstream)s,
                         .ranks = measure_ranks_mpi()};
    measure_result res;
    if (measure_run(d, &plan, &op, 1, &res, why, sizeof why)) {
      fprintf(stderr, "nccl_bench: rank %d: %s\n", rank, why[0] ? why : "another rank failed");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double worst = res.ev_us;
    double alg = (double)bytes / (worst * 1e3), bus_bw = alg * (size > 1 ? 2.0 * (size - 1) / size : 1.0);
    if (rank == 0) printf("%12lld %12zu %10.2f %11.2f %11.2f\n", bytes, n, worst, alg, bus_bw);
    fflush(stdout);
  }
  if (symmetric) {
    CK(cudaStreamSynchronize(s));
    nccl_symmetric_free(&nc, &sy);
    nccl_symmetric_free(&nc, &sx);
  }
  nccl_close(&nc);
  MPI_Finalize();
  return 0;
}
