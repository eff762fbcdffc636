/* par.c: the one parallel_for of runtime/check/ (check_internal.h).  A job uses this process's
 * share of the cores: under mpirun the ranks of a node split them, so eight ranks checking at
 * once do not each start a thread per core. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_internal.h"

#define HR_PAR_MIN_ELEMS ((size_t)1 << 20)

typedef struct {
  hr_range_fn fn;
  void *ctx;
  size_t begin, end;
  int tid;
} par_task;

static void *par_main(void *arg) {
  par_task *t = arg;
  t->fn(t->ctx, t->begin, t->end, t->tid);
  return NULL;
}
static int hr_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int local = ls && atoi(ls) > 0 ? atoi(ls) : 1;
  n = n > 0 ? n / local : 1;
  if (n < 1) n = 1;
  if (n > HR_MAX_THREADS) n = HR_MAX_THREADS;
  return (int)n;
}

int hr_parallel_for(size_t nitems, size_t elems, hr_range_fn fn, void *ctx) {
  int nt = elems >= HR_PAR_MIN_ELEMS ? hr_ncpu() : 1;
  if ((size_t)nt > nitems) nt = nitems ? (int)nitems : 1;
  if (nt <= 1) {
    fn(ctx, 0, nitems, 0);
    return 1;
  }
  par_task task[HR_MAX_THREADS];
  pthread_t th[HR_MAX_THREADS];
  int started[HR_MAX_THREADS];
  for (int t = 0; t < nt; t++) {
    task[t] = (par_task){fn, ctx, nitems * (size_t)t / (size_t)nt,
                         nitems * (size_t)(t + 1) / (size_t)nt, t};
    started[t] = t > 0 && pthread_create(&th[t], NULL, par_main, &task[t]) == 0;
  }
  for (int t = 0; t < nt; t++) /* range 0, and any range whose thread did not start */
    if (!started[t]) par_main(&task[t]);
  for (int t = 1; t < nt; t++)
    if (started[t]) pthread_join(th[t], NULL);
  return nt;
}

void *hr_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "hostref: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}
