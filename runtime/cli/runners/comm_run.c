/* runners/comm_run.c: what the communicator families' runners share (comm_run.h). */
#include "comm_run.h"

#include <stdio.h>
#include <stdlib.h>

#include "ref_allreduce.h"

int comm_run_comm(weft_kernel *k, weft_world *w, long long max_elems, int rank, weft_comm **c) {
  *c = NULL;
  if (!weft_comm_create(k, w, max_elems, c)) return 0;
  fprintf(stderr, "weft run: rank %d: %s\n", rank, weft_kernel_error(k));
  return -1;
}

int comm_run_open(weft_kernel *k, long long max_elems, int rank, weft_world **w, weft_comm **c) {
  *w = NULL;
  *c = NULL;
  if (weft_world_create(NULL, w)) {
    fprintf(stderr, "weft run: rank %d: cannot create the world\n", rank);
    return -1;
  }
  return comm_run_comm(k, *w, max_elems, rank, c);
}

void comm_run_close(weft_world *w, weft_comm *c) {
  weft_comm_destroy(c);
  weft_world_destroy(w);
}

void comm_run_sharing(const weft_manifest *m, weft_comm *c) {
  printf(" (%d per GPU; file descriptors by %s)%s", weft_symm_gpu_share(weft_comm_symm(c)),
         weft_symm_method(weft_comm_symm(c)),
         m->comm.multimem ? (weft_comm_multicast(c) ? ", multicast" : ", emulated multimem (unicast fan-out)") : "");
}

void comm_run_print(const weft_manifest *m, weft_comm *c, int size) {
  printf("run: %s on %d rank%s", m->name, size, size == 1 ? "" : "s");
  comm_run_sharing(m, c);
  printf("\n");
}

int comm_run_time(const drv_table *d, int rank, measure_op *ops, int n, int iters, measure_result *res) {
  measure_plan plan = {.iters = iters, .warmup = 3, .warm_once = 1, .settle = 1, .rounds = COMM_RUN_ROUNDS,
                       .ranks = measure_ranks_mpi()};
  char err[512];
  if (!measure_run(d, &plan, ops, n, res, err, sizeof err)) return 0;
  if (err[0]) fprintf(stderr, "weft run: rank %d: %s\n", rank, err);
  return -1;
}

int comm_run_iters(const run_opts *o, long long bytes) {
  return bytes <= (1 << 20) ? o->iters * 4 : bytes <= (32 << 20) ? o->iters : 10;
}

long long comm_run_max_first(const run_opts *o) {
  long long max_n = 1;
  for (int i = 0; i < (o->check ? o->n_check : 0); i++)
    if (o->check_shapes[i].v[0] > max_n) max_n = o->check_shapes[i].v[0];
  for (int i = 0; i < (o->timing ? o->n_time : 0); i++)
    if (o->time_shapes[i].v[0] > max_n) max_n = o->time_shapes[i].v[0];
  return max_n;
}

uint64_t comm_run_seed(unsigned long long seed, int rank, long long n) {
  return seed + 7919ull * (uint64_t)(rank + 1) + (uint64_t)n * 104729ull;
}

void comm_run_fill(hr_dtype dt, hr_op op, int custom, unsigned long long seed, int rank, long long n, void *h) {
  uint64_t s = comm_run_seed(seed, rank, n);
  if (op == HR_PROD && !custom) hr_fill_pow2_for_prod(dt, h, (size_t)n, (size_t)n, s);
  else hr_fill_uniform(dt, h, (size_t)n, s, -1.0, 1.0);
}

int comm_run_fold(void *kernel, const double *v, size_t n, double *out) {
  if (!weft_reference_fold(kernel, v, n, out)) return 0;
  fprintf(stderr, "weft run: %s\n", weft_kernel_error(kernel));
  return -1;
}

int comm_run_compare_fold(hr_dtype dt, hr_op op, int custom, const void *got, const double *want, const double *scale,
                          long long n, const char *name, const char *what, int rank) {
  double rtol = ref_allreduce_rtol(dt, op, custom);
  double *atol = malloc((size_t)n * sizeof *atol);
  if (!atol) {
    fprintf(stderr, "check: rank %d: %s n=%lld %s: out of host memory for the tolerances\n", rank, name, n, what);
    return -1;
  }
  for (long long i = 0; i < n; i++) atol[i] = ref_allreduce_atol(op, custom, scale[i]);
  hr_report rep;
  int bad = hr_compare(dt, got, want, (size_t)n, atol, (size_t)n, rtol, &rep);
  free(atol);
  if (bad) {
    char line[512];
    hr_report_format(&rep, line, sizeof line);
    fprintf(stderr, "check: rank %d: %s n=%lld %s: FAIL (%s)\n", rank, name, n, what, line);
  }
  return bad ? -1 : 0;
}

int comm_run_launch_yxn(const weft_manifest *m, weft_comm *c, CUdeviceptr y, CUdeviceptr x, long long n, int rank) {
  void *args[3];
  const char *names[3] = {"y", "x", "n"};
  void *vals[3] = {&y, &x, &n};
  if (m->n_args > 3 || cli_bind_args(m, args, names, vals, 3)) return -1;
  return cli_comm_launch(c, args, NULL, rank);
}
