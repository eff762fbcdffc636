/* fake_nccl.c: a stand-in libnccl for test_nccl_sym (no GPU, no NCCL here): the calls
 * runtime/measure/nccl.c opens, recording what it was asked.  Built twice: with the symmetric
 * calls (NCCL 2.27 and later) and without them (-DFAKE_NCCL_OLD).  FAKE_NCCL_FAIL_ALLOC=R makes
 * ncclMemAlloc fail on rank R (its OMPI_COMM_WORLD_RANK); FAKE_NCCL_FAIL_REGISTER=R the
 * registration.  fake_nccl_calls() says what was called, for the test to check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } id_t_;
static int registered, deregistered, allocs, frees, last_flags = -1;
static size_t last_bytes;

#ifndef FAKE_NCCL_OLD
static int my_rank(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  return r ? atoi(r) : 0;
}
static int fails(const char *var) {
  const char *v = getenv(var);
  return v && *v && atoi(v) == my_rank();
}
#endif

int ncclGetUniqueId(id_t_ *id) { memset(id, 7, sizeof *id); return 0; }
int ncclCommInitRank(void **comm, int n, id_t_ id, int rank) {
  (void)n; (void)id; (void)rank;
  *comm = (void *)(uintptr_t)0x1000;
  return 0;
}
int ncclAllGather(void) { return 0; }
int ncclAllReduce(void) { return 0; }
int ncclReduceScatter(void) { return 0; }
int ncclCommDestroy(void *c) { (void)c; return 0; }
int ncclGetVersion(int *v) { *v = 22809; return 0; }
const char *ncclGetErrorString(int st) { return st == 1 ? "unhandled cuda error (fake)" : "fake error"; }

#ifndef FAKE_NCCL_OLD
int ncclMemAlloc(void **p, size_t bytes) {
  if (fails("FAKE_NCCL_FAIL_ALLOC")) return 1;
  allocs++;
  *p = malloc(bytes ? bytes : 1);
  return *p ? 0 : 1;
}
int ncclMemFree(void *p) { frees++; free(p); return 0; }
int ncclCommWindowRegister(void *comm, void *buf, size_t bytes, void **win, int flags) {
  (void)comm;
  if (fails("FAKE_NCCL_FAIL_REGISTER")) return 5;
  registered++;
  last_flags = flags;
  last_bytes = bytes;
  *win = buf;
  return 0;
}
int ncclCommWindowDeregister(void *comm, void *win) { (void)comm; (void)win; deregistered++; return 0; }
#endif

/* allocs, frees, registrations, deregistrations, the last flags and bytes */
void fake_nccl_calls(int out[4], int *flags, size_t *bytes) {
  out[0] = allocs; out[1] = frees; out[2] = registered; out[3] = deregistered;
  *flags = last_flags;
  *bytes = last_bytes;
}
