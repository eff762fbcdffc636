/* nccl.h: NCCL, opened at run time (WEFT_NCCL_LIB, else libnccl.so.2: the library that ships
 * with torch on the GPU machines; weft does not link it).  The baseline of ag_gemm (all-gather +
 * cuBLASLt), of the allreduce (bench/nccl_bench.c), and of reduce_scatter and all_gather.  The prototypes are NCCL's documented C
 * ABI (nccl.h), declared in nccl.c because no NCCL headers are installed where weft is built. */
#ifndef WEFT_MEASURE_NCCL_H
#define WEFT_MEASURE_NCCL_H
#include <mpi.h>
#include <stddef.h>

#include "driver.h"
#include "hostref.h"

typedef struct nccl_id { char internal[128]; } nccl_id;   /* ncclUniqueId */

typedef struct nccl_lib {
  void *lib, *comm;
  const char *path;
  int version;
  int (*get_id)(nccl_id *);
  int (*init_rank)(void **, int, nccl_id, int);
  int (*allgather)(const void *, void *, size_t, int, void *, CUstream);
  int (*allreduce)(const void *, void *, size_t, int, int, void *, CUstream);
  int (*reduce_scatter)(const void *, void *, size_t, int, int, void *, CUstream);
  int (*destroy)(void *);
  int (*get_version)(int *);
  const char *(*error_string)(int);   /* optional */
  /* optional, NCCL 2.27 and later: buffers NCCL's symmetric kernels run on (nccl_symmetric_alloc) */
  int (*mem_alloc)(void **, size_t);
  int (*mem_free)(void *);
  int (*window_register)(void *, void *, size_t, void **, int);
  int (*window_deregister)(void *, void *);
} nccl_lib;

/* A buffer of NCCL's symmetric memory: ncclMemAlloc'd and registered on the communicator as a
 * window with NCCL_WIN_COLL_SYMMETRIC, so that collectives on it take NCCL's symmetric kernels. */
typedef struct nccl_sym { void *ptr, *win; size_t bytes; } nccl_sym;

enum { NCCL_LOAD_OK = 0, NCCL_NO_LIB = -1, NCCL_BAD_LIB = -2 };

/* This process only: dlopen and the symbols.  NCCL_LOAD_OK, NCCL_NO_LIB (cannot open it) or
 * NCCL_BAD_LIB (it lacks a symbol), with why. */
int nccl_load(nccl_lib *n, char *why, size_t len);
/* Collective over comm: loads NCCL where nccl_load was not called, checks that no two ranks
 * share a GPU (bus: this rank's PCI bus id; NCCL takes one rank per GPU and would fail or hang),
 * then ncclCommInitRank.  0 on every rank, or -1 on every rank with the lowest failing rank's
 * why. */
int nccl_open(nccl_lib *n, MPI_Comm comm, const char *bus, char *why, size_t len);
void nccl_close(nccl_lib *n);
const char *nccl_err(const nccl_lib *n, int st);
int nccl_type(hr_dtype dt);   /* ncclDataType_t of dt */
/* Out of place on stream s; 0, or -1 and why. */
int nccl_all_gather(nccl_lib *n, CUdeviceptr x, CUdeviceptr y, size_t count, hr_dtype dt, CUstream s, char *why,
                    size_t len);
/* reduce-scatter: y (recvcount) = op over ranks of x[rank*recvcount ..]; op one of sum, prod, max,
 * min (NCCL has no custom operator: -1 and why) */
int nccl_reduce_scatter(nccl_lib *n, CUdeviceptr x, CUdeviceptr y, size_t recvcount, hr_dtype dt, hr_op op, CUstream s,
                        char *why, size_t len);
/* Collective over comm, the communicator's ranks (each calls it with the same bytes): 0 on every
 * rank, or -1 on every rank with the lowest failing rank's why (the library lacks the calls: NCCL
 * before 2.27; or one failed).  The ranks agree after the allocation, before the registration,
 * which is NCCL's collective: no rank enters it while another has already failed.  A failure
 * inside NCCL's registration itself is NCCL's to report on every rank; one it reports on some
 * ranks only would leave the others in the registration (NCCL's watchdog, or the caller's
 * timeout, ends that).  Free with nccl_symmetric_free, also collectively. */
int nccl_symmetric_alloc(nccl_lib *n, MPI_Comm comm, size_t bytes, nccl_sym *s, char *why, size_t len);
void nccl_symmetric_free(nccl_lib *n, nccl_sym *s);
int nccl_all_reduce_sum(nccl_lib *n, const void *x, void *y, size_t count, hr_dtype dt, CUstream s, char *why,
                        size_t len);

#endif
