/* measure.h: how weft times a kernel, one policy for every tool (weft run, weft tune, bench/).
 * A timed op is a callback that enqueues one launch on a stream; the policy brackets launches
 * with CUDA events and reports medians, so one hiccup cannot decide a ratio. */
#ifndef WEFT_MEASURE_H
#define WEFT_MEASURE_H
#include <stddef.h>

#include "driver.h"

/* Enqueue one launch of the op on `stream`, using input set `set` (0 .. nsets-1).  0 on success;
 * else -1 with a message in err. */
typedef int (*measure_launch_fn)(void *ud, int set, CUstream stream, char *err, size_t errlen);

typedef struct measure_op {
  measure_launch_fn launch;
  void *ud;
  int nsets;   /* input sets rotated through (measure_rotation_sets), >= 1 */
} measure_op;

/* The median of n values (sorts them in place; the upper one of an even count). */
double measure_median(double *v, int n);

/* Input sets to rotate through so timing does not measure L2 (60 MB on H200): enough sets of
 * bytes_per_set to cover three times the L2, at most 16. */
int measure_rotation_sets(size_t bytes_per_set);

/* Each launch timed alone: warmup untimed launches, then iters launches each between two events
 * on the null stream; *ms = the median.  0, or -1 with a message in err. */
int measure_each_ms(const drv_table *d, const measure_op *op, int warmup, int iters, double *ms, char *err,
                    size_t errlen);

/* Launches back to back: warmup untimed, then iters launches between one pair of events;
 * *ms = the mean per launch (for latency-bound kernels, whose launch gap is part of the cost). */
int measure_back_to_back_ms(const drv_table *d, const measure_op *op, int warmup, int iters, double *ms,
                            char *err, size_t errlen);

/* The copy baseline: a device-to-device copy of `bytes` from src to dst, as a timed op. */
typedef struct measure_copy {
  CUdeviceptr src, dst;
  size_t bytes;
  const drv_table *d;
} measure_copy;
int measure_copy_launch(void *ud, int set, CUstream stream, char *err, size_t errlen);

#endif
