/* runners/comm_run.h: what the runners of the communicator families share (allreduce.c,
 * collectives.c for reduce_scatter and all_gather, allreduce_norm.c; the world and communicator
 * also gemm_rs.c's and ag_gemm.c's): the world and communicator a kernel launches through, the
 * line that says how the ranks share their GPUs, the timing plan, and the inputs every rank
 * regenerates for every other (so a check needs no communication). */
#ifndef WEFT_COMM_RUN_H
#define WEFT_COMM_RUN_H
#include <stdint.h>

#include "cli.h"
#include "hostref.h"
#include "measure.h"

/* The world and k's communicator for launches of up to max_elems: 0; or -1 with "weft run: rank
 * R: why" on stderr, *w and *c left for comm_run_close (NULL where not made).  comm_run_comm: a
 * communicator of w alone (another kernel's, beside the first: the unfused baselines). */
int comm_run_open(weft_kernel *k, long long max_elems, int rank, weft_world **w, weft_comm **c);
int comm_run_comm(weft_kernel *k, weft_world *w, long long max_elems, int rank, weft_comm **c);
void comm_run_close(weft_world *w, weft_comm *c);   /* c, then w (either NULL) */

/* "run: NAME on P ranks" and comm_run_sharing's text (the caller prints it on rank 0 only);
 * comm_run_sharing: " (G per GPU; file descriptors by METHOD)[, multicast | emulated ...]" */
void comm_run_print(const weft_manifest *m, weft_comm *c, int size);
void comm_run_sharing(const weft_manifest *m, weft_comm *c);

/* The timing plan of every collective runner: CUDA events around `iters` back-to-back launches
 * after a barrier, the slowest rank's time per launch, 3 warm-ups and the median of
 * COMM_RUN_ROUNDS rounds (one round can catch a hiccup of the machine -- a single 8 B row was seen
 * at 3-4x its neighbours', on either side -- which would decide a ratio alone; bench/nccl_bench.c
 * times NCCL the same way).  0 with res[0..n) filled; or -1, measure_run's message on stderr. */
#define COMM_RUN_ROUNDS 5
int comm_run_time(const drv_table *d, int rank, measure_op *ops, int n, int iters, measure_result *res);
/* launches per timed loop for a collective moving `bytes` per launch: 4 x --iters up to 1 MB (the
 * launch latency's range), --iters up to 32 MB, 10 above (each launch long enough alone) */
int comm_run_iters(const run_opts *o, long long bytes);

/* The largest first size (v[0]) of the shapes o checks and times, at least 1: the kernel's n
 * (allreduce: elements per rank; reduce_scatter and all_gather: the chunk). */
long long comm_run_max_first(const run_opts *o);

/* rank's n-element input of a collective with operator op (custom: a user's operator): uniform
 * in [-1, 1], or for prod powers of two that keep the product in range; from its own seed, so
 * every rank can make every rank's input. */
void comm_run_fill(hr_dtype dt, hr_op op, int custom, unsigned long long seed, int rank, long long n, void *h);
/* the seed of rank's n-element input (from --seed): comm_run_fill's, and the base of allreduce_norm's */
uint64_t comm_run_seed(unsigned long long seed, int rank, long long n);

/* The user's operator's reference fold (weft_reference_fold) over v[0..n), `kernel` the
 * weft_kernel (the fold callback of runtime/check's references): 0, or -1 with the message. */
int comm_run_fold(void *kernel, const double *v, size_t n, double *out);

/* n values of a fold over the ranks (got, as dt) against the reference in double (want, and scale:
 * the sum of the folded values' magnitudes), within runtime/check/ref_allreduce.h's tolerance for
 * op: 0; or -1 with "check: rank R: NAME n=N WHAT: FAIL (the worst element)" on stderr (or "...:
 * out of host memory for the tolerances"). */
int comm_run_compare_fold(hr_dtype dt, hr_op op, int custom, const void *got, const double *want, const double *scale,
                          long long n, const char *name, const char *what, int rank);

/* launch a kernel whose arguments are y, x and n (allreduce, reduce_scatter, all_gather) */
int comm_run_launch_yxn(const weft_manifest *m, weft_comm *c, CUdeviceptr y, CUdeviceptr x, long long n, int rank);

#endif
