/* nccl_bench.c: ncclAllReduce timed exactly as `weft run` times weft's allreduce: 3 warm-ups,
 * then ROUNDS rounds of a barrier and CUDA events around back-to-back launches (out of place),
 * the slowest rank counting in each round, and the median round reported.
 * NCCL is opened at run time (WEFT_NCCL_LIB, else libnccl.so.2): it is the library that ships
 * with torch on the GPU machines, and weft does not link it.  One rank per GPU:
 *   mpirun -np 2 build/nccl_bench [f32|f16|bf16] [iters]
 * The prototypes below are NCCL's documented C ABI (nccl.h), declared here because no NCCL
 * headers are installed where weft is built. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } nccl_id;
typedef void *nccl_comm;
typedef int (*get_id_fn)(nccl_id *);
typedef int (*init_rank_fn)(nccl_comm *, int, nccl_id, int);
typedef int (*allreduce_fn)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
typedef int (*destroy_fn)(nccl_comm);
typedef int (*version_fn)(int *);
enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_BF16 = 9, NCCL_SUM = 0 };

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 1); } \
  } while (0)

#define ROUNDS 5
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *dt = argc > 1 ? argv[1] : "f32";
  int iters = argc > 2 ? atoi(argv[2]) : 20;
  int type = !strcmp(dt, "bf16") ? NCCL_BF16 : !strcmp(dt, "f16") ? NCCL_F16 : NCCL_F32;
  size_t es = type == NCCL_F32 ? 4 : 2;
  const char *lib = getenv("WEFT_NCCL_LIB") ? getenv("WEFT_NCCL_LIB") : "libnccl.so.2";
  void *h = dlopen(lib, RTLD_NOW);
  if (!h) { fprintf(stderr, "nccl_bench: cannot open %s: %s\n", lib, dlerror()); MPI_Abort(MPI_COMM_WORLD, 77); }
  get_id_fn get_id = (get_id_fn)dlsym(h, "ncclGetUniqueId");
  init_rank_fn init_rank = (init_rank_fn)dlsym(h, "ncclCommInitRank");
  allreduce_fn allreduce = (allreduce_fn)dlsym(h, "ncclAllReduce");
  destroy_fn destroy = (destroy_fn)dlsym(h, "ncclCommDestroy");
  version_fn version = (version_fn)dlsym(h, "ncclGetVersion");
  if (!get_id || !init_rank || !allreduce || !destroy || !version) { fprintf(stderr, "nccl_bench: symbols missing\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  CK(cudaSetDevice((lr ? atoi(lr) : rank) % ndev));
  nccl_id id;
  if (rank == 0 && get_id(&id)) { fprintf(stderr, "ncclGetUniqueId failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nccl_comm comm;
  if (init_rank(&comm, size, id, rank)) { fprintf(stderr, "ncclCommInitRank failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  size_t max = (size_t)256 << 20;
  void *x, *y;
  CK(cudaMalloc(&x, max));
  CK(cudaMalloc(&y, max));
  CK(cudaMemset(x, 0x3c, max));   /* 1.0-ish in every format; NCCL's speed does not depend on values */
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  int v = 0;
  version(&v);
  if (rank == 0)
    printf("time: ncclAllReduce %s sum, %d ranks, NCCL %d; CUDA events around back-to-back launches, the slowest rank, "
           "median of %d rounds\n"
           "%12s %12s %10s %11s %11s\n", dt, size, v, ROUNDS, "bytes", "elements", "time_us", "algbw_GB/s", "busbw_GB/s");
  for (long long bytes = 8; bytes <= (256ll << 20); bytes = bytes < (128ll << 20) ? bytes * 4 : bytes * 2) {
    size_t n = (size_t)bytes / es;
    if (!n) continue;
    int it = bytes <= (1 << 20) ? iters * 4 : bytes <= (32 << 20) ? iters : 10;
    for (int i = 0; i < 3; i++) allreduce(x, y, n, type, NCCL_SUM, comm, s);
    CK(cudaStreamSynchronize(s));
    double round_us[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      CK(cudaEventRecord(a, s));
      for (int i = 0; i < it; i++)
        if (allreduce(x, y, n, type, NCCL_SUM, comm, s)) { fprintf(stderr, "ncclAllReduce failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
      CK(cudaEventRecord(b, s));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      double us = ms * 1e3 / it;
      MPI_Allreduce(&us, &round_us[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(round_us, ROUNDS, sizeof *round_us, cmp_double);
    double worst = round_us[ROUNDS / 2];
    double alg = (double)bytes / (worst * 1e3), bus = alg * (size > 1 ? 2.0 * (size - 1) / size : 1.0);
    if (rank == 0) printf("%12lld %12zu %10.2f %11.2f %11.2f\n", bytes, n, worst, alg, bus);
    fflush(stdout);
  }
  destroy(comm);
  MPI_Finalize();
  return 0;
}
