/* measure.h: how weft times a kernel, one policy for every tool (weft run, weft tune, bench/).
 * A timed op is a callback that enqueues one launch on a stream; measure_run brackets launches
 * with CUDA events (and, if asked, replays them as one CUDA graph) and reports medians, so one
 * hiccup cannot decide a ratio.  Each runner passes its own numbers (measure_plan), which are
 * the ones its results were always measured with:
 *   rows (bandwidth):      each launch alone, the median of iters, rotating input sets;
 *   cluster_reduce:        the mean over iters back-to-back launches (latency-bound);
 *   allreduce (P ranks):   3 warm-ups, then 5 rounds of a barrier + back-to-back launches, the
 *                          slowest rank per round, the median round;
 *   ag_gemm (P ranks):     3 rounds alternating weft and its baselines, each op heated ~250 ms
 *                          first, events and graph replay, the slowest rank, the median round.
 * The baselines opened at run time are cublaslt.h and nccl.h; the copy baseline is below. */
#ifndef WEFT_MEASURE_H
#define WEFT_MEASURE_H
#include <mpi.h>
#include <stddef.h>

#include "driver.h"

/* Enqueue one launch of the op on `stream`, using input set `set` (0 .. nsets-1).  0 on success;
 * else -1 with a message in err. */
typedef int (*measure_launch_fn)(void *ud, int set, CUstream stream, char *err, size_t errlen);
/* Wait for the op's launches on `stream` and say whether they went right (e.g. a communicator's
 * timed-out signal).  0, or -1 with a message in err. */
typedef int (*measure_finish_fn)(void *ud, CUstream stream, char *err, size_t errlen);

typedef struct measure_op {
  measure_launch_fn launch;
  void *ud;
  int nsets;                  /* input sets rotated through (measure_rotation_sets), >= 1 */
  measure_finish_fn finish;   /* NULL: cuStreamSynchronize */
} measure_op;

/* The ranks that time together: the slowest counts, and they start each timed loop together.
 * NULL: this process alone. */
typedef struct measure_ranks {
  void *ud;
  double (*max)(void *ud, double v);   /* the largest v over the ranks */
  int (*all)(void *ud, int ok);        /* 1 if ok on every rank */
  void (*barrier)(void *ud);
} measure_ranks;
/* MPI_COMM_WORLD while MPI runs (else this process alone). */
const measure_ranks *measure_ranks_mpi(void);
/* Collective over comm: 1 if ok on every rank; else 0, with the lowest failing rank's why (len
 * bytes) on every rank, so all of them report the same cause. */
int measure_first_why(MPI_Comm comm, int ok, char *why, size_t len);

typedef struct measure_plan {
  int iters;          /* launches per timed loop (and per graph) */
  int warmup;         /* untimed launches before an op's timed loop */
  int warm_once;      /* warm up in the first round only (else before every round) */
  int settle;         /* wait for the warm-up to finish before timing */
  int each;           /* time every launch alone between two events (warm-ups too), the median */
  int rounds;         /* rounds over the ops in turn, >= 1; the median round of each op */
  double heat_ms;     /* > 0: time the warm-up, then run the op back-to-back for about this long
                       * before timing (under load the clocks settle lower: measured in the first
                       * ~50 ms, a GEMM at 8192^3 ran 12-15 % faster than after) */
  double cap_ms;      /* > 0: lower an op's iters so one timed loop stays near this; when the first
                       * op's were lowered, its round is the last */
  int graph_reps;     /* > 0: also capture the timed launches as one CUDA graph and replay it: one
                       * warm replay and the median of graph_reps (one replay if iters were lowered) */
  CUstream stream;
  const measure_ranks *ranks;
} measure_plan;

typedef struct measure_result {
  double ev_us;   /* time per launch, events around the launches (each: the median launch) */
  double gr_us;   /* time per launch, graph replay; -1 without graph_reps */
  int iters;      /* the iterations used (lowered by cap_ms) */
} measure_result;

/* Times ops[0..nops) by the plan into res[0..nops).  0 on every rank; or -1 on every rank, with
 * a message in err on the ranks where something failed (empty elsewhere). */
int measure_run(const drv_table *d, const measure_plan *p, const measure_op *ops, int nops, measure_result *res,
                char *err, size_t errlen);

/* The median of n values (sorts them in place; the upper one of an even count). */
double measure_median(double *v, int n);

/* Input sets to rotate through so timing does not measure L2 (60 MB on H200): enough sets of
 * bytes_per_set to cover three times the L2, at most 16. */
int measure_rotation_sets(size_t bytes_per_set);

/* The copy baseline: a device-to-device copy of `bytes` from src to dst, as a timed op. */
typedef struct measure_copy {
  CUdeviceptr src, dst;
  size_t bytes;
  const drv_table *d;
} measure_copy;
int measure_copy_launch(void *ud, int set, CUstream stream, char *err, size_t errlen);

#endif
