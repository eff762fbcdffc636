/* measure.c: the timing policy (measure.h).  Every step that can fail on one rank ends with
 * every rank's verdict, so a failing rank never leaves the others waiting in a barrier or in a
 * collective kernel. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "measure.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double measure_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int measure_rotation_sets(size_t bytes_per_set) {
  const size_t l2x3 = (size_t)192 << 20;
  if (bytes_per_set >= l2x3) return 1;
  size_t n = (l2x3 + bytes_per_set - 1) / (bytes_per_set ? bytes_per_set : 1);
  return n > 16 ? 16 : (int)n;
}

/* ---- ranks ---------------------------------------------------------------------------------- */

static int mpi_on(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  if (init) MPI_Finalized(&fin);
  return init && !fin;
}
static double mpi_max(void *ud, double v) {
  double r = v;
  if (mpi_on()) MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return r;
}
static int mpi_all(void *ud, int ok) {
  int v = ok != 0, r = v;
  if (mpi_on()) MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return r;
}
static void mpi_barrier(void *ud) {
  if (mpi_on()) MPI_Barrier(MPI_COMM_WORLD);
}
int measure_first_why(MPI_Comm comm, int ok, char *why, size_t len) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int mine = ok ? size : rank, first = mine;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return 1;
  MPI_Bcast(why, (int)len, MPI_CHAR, first, comm);
  why[len - 1] = 0;
  return 0;
}

const measure_ranks *measure_ranks_mpi(void) {
  static const measure_ranks r = {NULL, mpi_max, mpi_all, mpi_barrier};
  return &r;
}

/* ---- one op ----------------------------------------------------------------------------------- */

typedef struct mctx {
  const drv_table *d;
  const measure_plan *p;
  CUevent a, b;
  char *err;
  size_t errlen;
} mctx;

static double r_max(const mctx *c, double v) { return c->p->ranks ? c->p->ranks->max(c->p->ranks->ud, v) : v; }
static int r_all(const mctx *c, int ok) { return c->p->ranks ? c->p->ranks->all(c->p->ranks->ud, ok) : ok; }
static void r_barrier(const mctx *c) { if (c->p->ranks) c->p->ranks->barrier(c->p->ranks->ud); }

static int cu(mctx *c, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 1;
  drv_describe(c->d, r, what, c->err, c->errlen);
  return 0;
}
static int launch(mctx *c, const measure_op *op, int i) {
  return !op->launch(op->ud, i % op->nsets, c->p->stream, c->err, c->errlen);
}
static int launches(mctx *c, const measure_op *op, int n) {
  for (int i = 0; i < n; i++)
    if (!launch(c, op, i)) return 0;
  return 1;
}
static int finish(mctx *c, const measure_op *op) {
  if (op->finish) return !op->finish(op->ud, c->p->stream, c->err, c->errlen);
  return cu(c, c->d->cuStreamSynchronize(c->p->stream), "the timed launches");
}
/* events a and b around n launches, waited for; *ms between them */
static int bracket(mctx *c, const measure_op *op, int n, float *ms) {
  return cu(c, c->d->cuEventRecord(c->a, c->p->stream), "cuEventRecord") && launches(c, op, n) &&
         cu(c, c->d->cuEventRecord(c->b, c->p->stream), "cuEventRecord") && finish(c, op) &&
         cu(c, c->d->cuEventElapsedTime(ms, c->a, c->b), "cuEventElapsedTime");
}

/* Each launch between its own two events (the warm-ups too, untimed); *us = the median. */
static int time_each(mctx *c, const measure_op *op, int warm, int iters, double *us) {
  int warmup = warm ? c->p->warmup : 0, ok = 1;
  double *v = calloc((size_t)(iters > 0 ? iters : 1), sizeof *v);
  if (!v) { snprintf(c->err, c->errlen, "out of host memory for %d timings", iters); ok = 0; }
  for (int i = -warmup; i < iters && ok; i++) {
    float ms = 0;
    ok = cu(c, c->d->cuEventRecord(c->a, c->p->stream), "cuEventRecord") && launch(c, op, i + warmup) &&
         cu(c, c->d->cuEventRecord(c->b, c->p->stream), "cuEventRecord") && finish(c, op) &&
         cu(c, c->d->cuEventElapsedTime(&ms, c->a, c->b), "cuEventElapsedTime");
    if (ok && i >= 0) v[i] = ms * 1e3;
  }
  if (ok) *us = measure_median(v, iters);
  free(v);
  if (!r_all(c, ok)) return 0;
  *us = r_max(c, *us);
  return 1;
}

/* Warm-up (timed when the plan heats or caps), heat, then a barrier and events around *iters
 * back-to-back launches; *us per launch, the slowest rank. */
static int time_events(mctx *c, const measure_op *op, int warm, int *iters, double *us) {
  const measure_plan *p = c->p;
  if (p->each) return time_each(c, op, warm, *iters, us);
  int ok = 1;
  double one = 0;   /* ms per launch, from the warm-up */
  if (warm && (p->heat_ms > 0 || p->cap_ms > 0)) {
    float ms = 0;
    ok = bracket(c, op, p->warmup, &ms);
    if (!r_all(c, ok)) return 0;
    one = r_max(c, p->warmup > 0 ? ms / p->warmup : 0);
  } else if (warm && p->warmup > 0) {
    ok = launches(c, op, p->warmup) && (!p->settle || finish(c, op));
    if (!r_all(c, ok)) return 0;
  }
  if (one > 0 && p->cap_ms > 0 && one * *iters > p->cap_ms) *iters = one > p->cap_ms / 3 ? 3 : (int)(p->cap_ms / one);
  if (one > 0 && p->heat_ms > 0) {
    int heat = (int)(p->heat_ms / one);
    if (heat > 20000) heat = 20000;
    ok = launches(c, op, heat) && finish(c, op);
    if (!r_all(c, ok)) return 0;
  }
  r_barrier(c);
  float ms = 0;
  ok = bracket(c, op, *iters, &ms);
  if (!r_all(c, ok)) return 0;
  *us = r_max(c, ms * 1e3 / *iters);
  return 1;
}

/* The same iters launches captured once into a CUDA graph; a warm replay, then the median of
 * reps timed replays (each after a barrier), the slowest rank. */
static int time_graph(mctx *c, const measure_op *op, int iters, double *us) {
  const drv_table *d = c->d;
  const measure_plan *p = c->p;
  CUgraph g = NULL;
  CUgraphExec ge = NULL;
  const int reps = iters < p->iters ? 1 : p->graph_reps;   /* a slow op: one replay, no warm one */
  double *t = calloc((size_t)reps, sizeof *t);
  int ok = t != NULL, done = 0;
  if (!ok) snprintf(c->err, c->errlen, "out of host memory");
  /* relaxed: a first launch may still load a module, which global mode forbids while capturing */
  ok = ok && cu(c, d->cuStreamBeginCapture(p->stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  if (ok) {
    ok = launches(c, op, iters);
    CUresult e = d->cuStreamEndCapture(p->stream, &g);   /* always end a capture that began */
    ok = ok && cu(c, e, "cuStreamEndCapture");
  }
  ok = ok && cu(c, d->cuGraphInstantiateWithFlags(&ge, g, 0), "cuGraphInstantiate");
  if (iters >= p->iters) ok = ok && cu(c, d->cuGraphLaunch(ge, p->stream), "cuGraphLaunch") && finish(c, op);
  if (!r_all(c, ok)) goto out;
  for (int rep = 0; rep < reps; rep++) {
    r_barrier(c);
    float ms = 0;
    ok = cu(c, d->cuEventRecord(c->a, p->stream), "cuEventRecord") && cu(c, d->cuGraphLaunch(ge, p->stream), "cuGraphLaunch") &&
         cu(c, d->cuEventRecord(c->b, p->stream), "cuEventRecord") && finish(c, op) &&
         cu(c, d->cuEventElapsedTime(&ms, c->a, c->b), "cuEventElapsedTime");
    if (!r_all(c, ok)) goto out;
    t[rep] = ms * 1e3 / iters;
  }
  *us = r_max(c, measure_median(t, reps));
  done = 1;
out:
  if (ge) d->cuGraphExecDestroy(ge);
  if (g) d->cuGraphDestroy(g);
  free(t);
  return done;
}

/* ---- the rounds -------------------------------------------------------------------------------- */

int measure_run(const drv_table *d, const measure_plan *p, const measure_op *ops, int nops, measure_result *res,
                char *err, size_t errlen) {
  mctx c = {d, p, NULL, NULL, err, errlen};
  int rounds = p->rounds > 0 ? p->rounds : 1, ran = 0, rc = -1;
  double *ev = calloc((size_t)(nops * rounds), sizeof *ev), *gr = calloc((size_t)(nops * rounds), sizeof *gr);
  err[0] = 0;
  int ok = ev && gr;
  if (!ok) snprintf(err, errlen, "out of host memory");
  ok = ok && cu(&c, d->cuEventCreate(&c.a, 0), "cuEventCreate") && cu(&c, d->cuEventCreate(&c.b, 0), "cuEventCreate");
  if (!r_all(&c, ok)) goto out;
  /* Rounds of every op in turn, the median of each: the clocks drift under load for seconds, and
   * alternating puts an op and its baselines under the same drift. */
  for (int rd = 0; rd < rounds; rd++) {
    int last = 0;
    for (int o = 0; o < nops; o++) {
      int it = p->iters, warm = !p->warm_once || rd == 0;
      if (!time_events(&c, &ops[o], warm, &it, &ev[o * rounds + rd])) goto out;
      if (o == 0 && it < p->iters) last = 1;   /* a slow op (seconds per loop): this round is its last */
      res[o].iters = it;
      if (p->graph_reps > 0 && !time_graph(&c, &ops[o], it, &gr[o * rounds + rd])) goto out;
    }
    ran = rd + 1;
    if (last) break;
  }
  for (int o = 0; o < nops; o++) {
    res[o].ev_us = measure_median(&ev[o * rounds], ran);
    res[o].gr_us = p->graph_reps > 0 ? measure_median(&gr[o * rounds], ran) : -1;
  }
  rc = 0;
out:
  if (c.a) d->cuEventDestroy(c.a);
  if (c.b) d->cuEventDestroy(c.b);
  free(ev); free(gr);
  return rc;
}

int measure_copy_launch(void *ud, int set, CUstream stream, char *err, size_t errlen) {
  const measure_copy *c = ud;
  (void)set;
  CUresult r = c->d->cuMemcpyDtoDAsync(c->dst, c->src, c->bytes, stream);
  if (r == CUDA_SUCCESS) return 0;
  drv_describe(c->d, r, "cuMemcpyDtoDAsync", err, errlen);
  return -1;
}
