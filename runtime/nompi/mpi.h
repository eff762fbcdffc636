/* nompi/mpi.h: a single-rank stand-in for <mpi.h>, on the include path ONLY when weft is built
 * with WEFT_WITH_MPI=OFF (CMakeLists.txt).  It lets world.c, the CLI, check/ and measure/ keep
 * one code path: a world of one process, rank 0, where a gather or an allreduce is a copy and a
 * broadcast or a barrier does nothing.  MPI_Init fails, so nothing mistakes it for a real MPI;
 * the callers that would start a multi-rank run (weft_world_create, the CLI under mpirun) check
 * WEFT_NO_MPI first and say "built without MPI".  Only the calls weft makes are here. */
#ifndef WEFT_NOMPI_MPI_H
#define WEFT_NOMPI_MPI_H

#include <stddef.h>
#include <string.h>

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Info;

#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 15
#define MPI_COMM_WORLD 0
#define MPI_INFO_NULL 0
#define MPI_COMM_TYPE_SHARED 1
#define MPI_THREAD_FUNNELED 1
#define MPI_IN_PLACE ((void *)1)
/* a datatype is its size in bytes: all the stand-in needs to copy */
#define MPI_BYTE 1
#define MPI_CHAR 1
#define MPI_INT ((int)sizeof(int))
#define MPI_DOUBLE ((int)sizeof(double))
#define MPI_LONG_LONG ((int)sizeof(long long))
#define MPI_UNSIGNED_LONG_LONG ((int)sizeof(unsigned long long))
#define MPI_MIN 1
#define MPI_MAX 2
#define MPI_LAND 3
#define MPI_LOR 4

static inline int MPI_Initialized(int *flag) { *flag = 0; return MPI_SUCCESS; }
static inline int MPI_Finalized(int *flag) { *flag = 0; return MPI_SUCCESS; }
static inline int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return MPI_ERR_OTHER; }
static inline int MPI_Init_thread(int *argc, char ***argv, int req, int *provided) {
  (void)argc; (void)argv; (void)req; *provided = 0; return MPI_ERR_OTHER;
}
static inline int MPI_Finalize(void) { return MPI_SUCCESS; }
static inline int MPI_Abort(MPI_Comm c, int code) { (void)c; (void)code; return MPI_SUCCESS; }
static inline int MPI_Comm_rank(MPI_Comm c, int *r) { (void)c; *r = 0; return MPI_SUCCESS; }
static inline int MPI_Comm_size(MPI_Comm c, int *n) { (void)c; *n = 1; return MPI_SUCCESS; }
static inline int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out) { *out = c; return MPI_SUCCESS; }
static inline int MPI_Comm_free(MPI_Comm *c) { (void)c; return MPI_SUCCESS; }
static inline int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
  (void)type; (void)key; (void)info; *out = c; return MPI_SUCCESS;
}
static inline int MPI_Barrier(MPI_Comm c) { (void)c; return MPI_SUCCESS; }
static inline int MPI_Bcast(void *buf, int n, MPI_Datatype t, int root, MPI_Comm c) {
  (void)buf; (void)n; (void)t; (void)root; (void)c; return MPI_SUCCESS;
}
/* one rank: the result of any reduction over the ranks is this rank's value */
static inline int MPI_Allreduce(const void *send, void *recv, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  (void)op; (void)c;
  if (send != MPI_IN_PLACE && send != recv) memcpy(recv, send, (size_t)n * (size_t)t);
  return MPI_SUCCESS;
}
static inline int MPI_Allgather(const void *send, int sn, MPI_Datatype st, void *recv, int rn, MPI_Datatype rt,
                                MPI_Comm c) {
  (void)rn; (void)rt; (void)c;
  if (send != MPI_IN_PLACE && send != recv) memcpy(recv, send, (size_t)sn * (size_t)st);
  return MPI_SUCCESS;
}

#endif
