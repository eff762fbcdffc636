/* nccl.c: NCCL opened at run time (nccl.h). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"
#include "nccl.h"

enum { NCCL_F16 = 6, NCCL_F32 = 7, NCCL_BF16 = 9 };                        /* ncclDataType_t */
enum { NCCL_WIN_COLL_SYMMETRIC = 0x01 };                                   /* winFlags */
enum { NCCL_SUM = 0, NCCL_PROD = 1, NCCL_MAX = 2, NCCL_MIN = 3 };          /* ncclRedOp_t */

const char *nccl_err(const nccl_lib *n, int st) {
  const char *s = n->error_string ? n->error_string(st) : NULL;
  return s ? s : "ncclResult";
}

int nccl_type(hr_dtype dt) { return dt == HR_BF16 ? NCCL_BF16 : dt == HR_F16 ? NCCL_F16 : NCCL_F32; }

int nccl_load(nccl_lib *n, char *why, size_t len) {
  memset(n, 0, sizeof *n);
  const char *lib = getenv("WEFT_NCCL_LIB");
  if (!lib || !*lib) lib = "libnccl.so.2";
  n->path = lib;
  if (!(n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
    snprintf(why, len, "cannot open %s (set WEFT_NCCL_LIB): %s", lib, dlerror());
    return NCCL_NO_LIB;
  }
  *(void **)&n->get_id = dlsym(n->lib, "ncclGetUniqueId");
  *(void **)&n->init_rank = dlsym(n->lib, "ncclCommInitRank");
  *(void **)&n->allgather = dlsym(n->lib, "ncclAllGather");
  *(void **)&n->allreduce = dlsym(n->lib, "ncclAllReduce");
  *(void **)&n->reduce_scatter = dlsym(n->lib, "ncclReduceScatter");
  *(void **)&n->destroy = dlsym(n->lib, "ncclCommDestroy");
  *(void **)&n->get_version = dlsym(n->lib, "ncclGetVersion");
  *(void **)&n->error_string = dlsym(n->lib, "ncclGetErrorString");
  *(void **)&n->mem_alloc = dlsym(n->lib, "ncclMemAlloc");
  *(void **)&n->mem_free = dlsym(n->lib, "ncclMemFree");
  *(void **)&n->window_register = dlsym(n->lib, "ncclCommWindowRegister");
  *(void **)&n->window_deregister = dlsym(n->lib, "ncclCommWindowDeregister");
  if (!n->get_id || !n->init_rank || !n->allgather || !n->allreduce || !n->reduce_scatter || !n->destroy ||
      !n->get_version) {
    snprintf(why, len, "%s lacks NCCL's symbols (ncclGetUniqueId, ncclCommInitRank, ncclAllGather, ncclAllReduce, "
             "ncclReduceScatter, ...)",
             lib);
    return NCCL_BAD_LIB;
  }
  n->get_version(&n->version);
  return NCCL_LOAD_OK;
}

int nccl_open(nccl_lib *n, MPI_Comm comm, const char *bus, char *why, size_t len) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  why[0] = 0;
  int ok = n->lib ? 1 : nccl_load(n, why, len) == NCCL_LOAD_OK;
  char mine[32] = "", *all = malloc((size_t)size * sizeof mine);
  snprintf(mine, sizeof mine, "%s", bus && *bus ? bus : "");
  if (!mine[0]) snprintf(mine, sizeof mine, "unknown-%d", rank);
  int have = all != NULL, every = have;
  MPI_Allreduce(&have, &every, 1, MPI_INT, MPI_LAND, comm);
  if (every) {
    MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, comm);
    for (int q = 0; q < size && ok; q++)
      if (q != rank && !strncmp(all + (size_t)q * sizeof mine, mine, sizeof mine)) {
        snprintf(why, len, "ranks %d and %d share the GPU %s, and NCCL takes one rank per GPU", q < rank ? q : rank,
                 q < rank ? rank : q, mine);
        ok = 0;
      }
  } else {
    snprintf(why, len, "out of host memory");
    ok = 0;
  }
  free(all);
  if (!measure_first_why(comm, ok, why, len)) return -1;
  nccl_id id;
  memset(&id, 0, sizeof id);
  int st = rank == 0 ? n->get_id(&id) : 0;
  MPI_Bcast(&st, 1, MPI_INT, 0, comm);
  if (st) { snprintf(why, len, "ncclGetUniqueId failed: %s (%d)", nccl_err(n, st), st); return -1; }
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm);
  st = n->init_rank(&n->comm, size, id, rank);
  if (st) {
    n->comm = NULL;
    snprintf(why, len, "ncclCommInitRank failed on rank %d: %s (%d)", rank, nccl_err(n, st), st);
  }
  if (!measure_first_why(comm, st == 0, why, len)) {
    if (n->comm) n->destroy(n->comm);
    n->comm = NULL;
    return -1;
  }
  return 0;
}

void nccl_close(nccl_lib *n) {
  if (n->comm) n->destroy(n->comm);
  n->comm = NULL;   /* the library stays mapped: NCCL's own exit handlers may still run */
}

int nccl_all_gather(nccl_lib *n, CUdeviceptr x, CUdeviceptr y, size_t count, hr_dtype dt, CUstream s, char *why,
                    size_t len) {
  int st = n->allgather((const void *)(uintptr_t)x, (void *)(uintptr_t)y, count, nccl_type(dt), n->comm, s);
  if (st) snprintf(why, len, "ncclAllGather failed: %s (%d)", nccl_err(n, st), st);
  return st ? -1 : 0;
}

int nccl_all_reduce_sum(nccl_lib *n, const void *x, void *y, size_t count, hr_dtype dt, CUstream s, char *why,
                        size_t len) {
  int st = n->allreduce(x, y, count, nccl_type(dt), NCCL_SUM, n->comm, s);
  if (st) snprintf(why, len, "ncclAllReduce failed: %s (%d)", nccl_err(n, st), st);
  return st ? -1 : 0;
}

int nccl_reduce_scatter(nccl_lib *n, CUdeviceptr x, CUdeviceptr y, size_t recvcount, hr_dtype dt, hr_op op, CUstream s,
                        char *why, size_t len) {
  int nop = op == HR_SUM ? NCCL_SUM : op == HR_PROD ? NCCL_PROD : op == HR_MAX ? NCCL_MAX : op == HR_MIN ? NCCL_MIN : -1;
  if (nop < 0) {
    snprintf(why, len, "ncclReduceScatter has no such operator");
    return -1;
  }
  int st = n->reduce_scatter((const void *)(uintptr_t)x, (void *)(uintptr_t)y, recvcount, nccl_type(dt), nop, n->comm, s);
  if (st) snprintf(why, len, "ncclReduceScatter failed: %s (%d)", nccl_err(n, st), st);
  return st ? -1 : 0;
}

int nccl_symmetric_alloc(nccl_lib *n, MPI_Comm comm, size_t bytes, nccl_sym *s, char *why, size_t len) {
  memset(s, 0, sizeof *s);
  why[0] = 0;
  int st = 0, ok = 1;
  if (!n->comm || bytes == 0) {   /* what can be checked before anything collective */
    snprintf(why, len, "nccl_symmetric_alloc: %s", !n->comm ? "no communicator (nccl_open first)" : "0 bytes");
    ok = 0;
  } else if (!n->mem_alloc || !n->mem_free || !n->window_register || !n->window_deregister) {
    snprintf(why, len, "%s (NCCL %d) lacks ncclMemAlloc, ncclMemFree, ncclCommWindowRegister or "
             "ncclCommWindowDeregister: symmetric windows need NCCL 2.27 or later", n->path, n->version);
    ok = 0;
  } else if ((st = n->mem_alloc(&s->ptr, bytes))) {
    s->ptr = NULL;
    snprintf(why, len, "ncclMemAlloc(%zu bytes) failed: %s (%d)", bytes, nccl_err(n, st), st);
    ok = 0;
  }
  if (!measure_first_why(comm, ok, why, len)) {
    if (s->ptr) n->mem_free(s->ptr);
    memset(s, 0, sizeof *s);
    return -1;
  }
  st = n->window_register(n->comm, s->ptr, bytes, &s->win, NCCL_WIN_COLL_SYMMETRIC);
  if (st) {
    s->win = NULL;
    snprintf(why, len, "ncclCommWindowRegister(%zu bytes, NCCL_WIN_COLL_SYMMETRIC) failed: %s (%d)", bytes,
             nccl_err(n, st), st);
  }
  if (!measure_first_why(comm, st == 0, why, len)) {
    /* left as it is: deregistering is collective too, and a rank without a window would not
     * join it; the caller stops */
    memset(s, 0, sizeof *s);
    return -1;
  }
  /* NCCL answers success without a window where it registers nothing (2.27: NCCL_LOCAL_REGISTER=0 or
   * cuMem off; 2.28: no symmetric support and no local registration): its symmetric kernels would
   * not run, and the rows would be plain ncclAllReduce under the name "symmetric" */
  if (!s->win)
    snprintf(why, len, "ncclCommWindowRegister(%zu bytes) returned no window (NCCL_LOCAL_REGISTER, NCCL_WIN_ENABLE "
             "or cuMem off?): NCCL's symmetric kernels would not run", bytes);
  if (!measure_first_why(comm, s->win != NULL, why, len)) {
    memset(s, 0, sizeof *s);   /* left registered, as above: deregistering is collective, the caller stops */
    return -1;
  }
  s->bytes = bytes;
  return 0;
}

void nccl_symmetric_free(nccl_lib *n, nccl_sym *s) {
  if (s->win) n->window_deregister(n->comm, s->win);
  if (s->ptr) n->mem_free(s->ptr);
  memset(s, 0, sizeof *s);
}
