/* runners/allreduce.c: `weft run` for the allreduce family, on every rank of an MPI job (one
 * process is a world of one).
 *   check: for a list of sizes (odd ones included), random data on every rank, poisoned y,
 *          out-of-place and in-place, against the rank-order fold in double of every rank's
 *          data (each rank regenerates all ranks' inputs from the seeds: no communication);
 *          then 100 back-to-back launches (epochs and data halves reused) must reproduce the
 *          first result to the bit; and every rank must hold the same bits (SHA-256 compared).
 *   time:  8 B .. 256 MB per rank: CUDA events around back-to-back launches, the slowest rank
 *          counts; beside it, every rank copying the same bytes on its device at the same time
 *          (the floor of an allreduce on one GPU, where the ranks share its memory). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_run.h"
#include "driver.h"
#include "hostref.h"
#include "ranks.h"
#include "ref_allreduce.h"
#include "runner.h"

static const drv_table *D;
static int RANK, SIZE;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, RANK, r, what); }

typedef struct ar_run {
  const run_opts *o;
  weft_kernel *k;
  weft_comm *c;
  const weft_manifest *m;
  hr_dtype dt;
  hr_op op;
  int custom;
  size_t es;
} ar_run;

static void fill_input(const ar_run *r, int rank, long long n, void *h) {
  comm_run_fill(r->dt, r->op, r->custom, r->o->seed, rank, n, h);
}

static int launch(ar_run *r, CUdeviceptr y, CUdeviceptr x, long long n) { return comm_run_launch_yxn(r->m, r->c, y, x, n, RANK); }

/* wait for the device; a timed-out signal becomes this rank's error */
static int finish(ar_run *r) { return cli_comm_finish(D, RANK, D->cuCtxSynchronize(), "the allreduce kernel", r->c); }

static void fill_rank(void *ud, int rank, size_t n, void *dst) { fill_input(ud, rank, (long long)n, dst); }

/* the reference for n elements: rank-order fold of every rank's input, in double */
static int reference(ar_run *r, long long n, double *want, double *scale) {
  return ref_allreduce(r->dt, r->op, r->custom ? comm_run_fold : NULL, r->k, SIZE, (size_t)n, fill_rank, r, want, scale);
}

/* y (n elements on the device) against the reference; prints one line on a failure */
static int compare(ar_run *r, const char *what, long long n, CUdeviceptr y, const double *want, const double *scale,
                   void *got) {
  if (!cu_ok(D->cuMemcpyDtoH(got, y, (size_t)n * r->es), "cuMemcpyDtoH")) return -1;
  return comm_run_compare_fold(r->dt, r->op, r->custom, got, want, scale, n, r->m->name, what, RANK);
}

/* pdl = true: ten chained pairs, z = allreduce(y) launched right behind y = allreduce(x), with y
 * and z poisoned before each pair.  A launch that read its input (or the epoch) before its
 * griddepcontrol.wait would fold the first's unfinished y.  z is checked against the fold, in
 * double, of P copies of the y every rank holds.  Operators whose P-fold of one value stays in
 * range only (sum, max, min); 0 on failure. */
static int check_chain(ar_run *r, long long n, CUdeviceptr x, CUdeviceptr y, CUdeviceptr z) {
  size_t bytes = (size_t)n * r->es;
  void *hy = malloc(bytes), *got = malloc(bytes);
  double *want = malloc((size_t)n * sizeof *want), *scale = malloc((size_t)n * sizeof *scale);
  int ok = hy && got && want && scale;
  if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the pdl chain\n", RANK);
  for (int pair = 0; pair < 10 && ok; pair++) {
    ok = cu_ok(D->cuMemsetD8(y, 0xff, bytes), "cuMemsetD8") && cu_ok(D->cuMemsetD8(z, 0xff, bytes), "cuMemsetD8") &&
         !launch(r, y, x, n) && !launch(r, z, y, n) && !finish(r) && cu_ok(D->cuMemcpyDtoH(hy, y, bytes), "cuMemcpyDtoH");
    if (!ok) break;
    for (long long i = 0; i < n; i++) {
      double v = hr_load(r->dt, hy, (size_t)i);
      want[i] = r->op == HR_SUM ? v * SIZE : v;   /* max, min: the value itself */
      scale[i] = fabs(v) * SIZE;
    }
    if (compare(r, "pdl chain (z = allreduce(y) right behind y = allreduce(x))", n, z, want, scale, got)) ok = 0;
  }
  free(hy); free(got); free(want); free(scale);
  return ok;
}

/* Each step ends with every rank's verdict, so a rank that fails never leaves the others
 * waiting for its signals in the next launch. */
static int check_size(ar_run *r, long long n, CUdeviceptr x, CUdeviceptr y, CUdeviceptr z) {
  size_t bytes = (size_t)n * r->es;
  void *h = malloc(bytes), *got = malloc(bytes), *first = malloc(bytes);
  double *want = malloc((size_t)n * sizeof *want), *scale = malloc((size_t)n * sizeof *scale);
  int ok = h && got && first && want && scale && !reference(r, n, want, scale);
  char who[256];
  if (ok) {
    fill_input(r, RANK, n, h);
    ok = cu_ok(D->cuMemcpyHtoD(x, h, bytes), "cuMemcpyHtoD") && cu_ok(D->cuMemcpyHtoD(z, h, bytes), "cuMemcpyHtoD") &&
         cu_ok(D->cuMemsetD8(y, 0xff, bytes), "cuMemsetD8");
  }
  if (!ranks_all(ok)) goto out;
  /* out of place: y = allreduce(x); in place: z holds x, then z = allreduce(z) */
  ok = !launch(r, y, x, n) && !launch(r, z, z, n) && !finish(r) &&
       !compare(r, "out of place", n, y, want, scale, first) && !compare(r, "in place", n, z, want, scale, got);
  if (ok && memcmp(first, got, bytes)) {
    fprintf(stderr, "check: rank %d: n=%lld: in place and out of place differ in bits\n", RANK, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  /* back to back: the epochs advance and the halves alternate; the bits must not move */
  ok = cu_ok(D->cuMemsetD8(y, 0xff, bytes), "cuMemsetD8");
  for (int i = 0; i < 100 && ok; i++) ok = !launch(r, y, x, n);
  ok = ok && !finish(r) && cu_ok(D->cuMemcpyDtoH(got, y, bytes), "cuMemcpyDtoH");
  if (ok && memcmp(first, got, bytes)) {
    fprintf(stderr, "check: rank %d: n=%lld: 100 back-to-back launches changed the result\n", RANK, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (r->m->pdl && !r->custom && (r->op == HR_SUM || r->op == HR_MAX || r->op == HR_MIN)) {
    ok = check_chain(r, n, x, y, z);
    if (!ranks_all(ok)) goto out;
  }
  /* bit-identity across ranks */
  if (!ranks_same_bytes(first, bytes, who, sizeof who)) {
    if (RANK == 0) fprintf(stderr, "check: n=%lld: ranks %s hold different bits from rank 0\n", n, who);
    ok = 0;
  }
out:
  free(h); free(got); free(first); free(want); free(scale);
  return ok;
}

/* The op measure_run times: weft's allreduce, or (copy) every rank copying the same bytes */
typedef struct ar_timed { ar_run *r; CUdeviceptr y, x; long long n; int copy; } ar_timed;

static int ar_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  ar_timed *t = ud;
  err[0] = 0;   /* launch() says why on stderr itself */
  if (!t->copy) return launch(t->r, t->y, t->x, t->n);
  CUresult e = D->cuMemcpyDtoDAsync(t->y, t->x, (size_t)t->n * t->r->es, s);
  if (e == CUDA_SUCCESS) return 0;
  drv_describe(D, e, "copy", err, len);
  return -1;
}

static int ar_finish(void *ud, CUstream s, char *err, size_t len) {
  err[0] = 0;
  return finish(((ar_timed *)ud)->r);
}

/* `iters` back-to-back launches (or copies), timed by comm_run_time's plan: us per launch, or -1 */
static double time_launches(ar_run *r, CUdeviceptr y, CUdeviceptr x, long long n, int iters, int copy) {
  ar_timed t = {r, y, x, n, copy};
  measure_op op = {ar_launch, &t, 1, ar_finish};
  measure_result res;
  return comm_run_time(D, RANK, &op, 1, iters, &res) ? -1.0 : res.ev_us;
}

static int run_allreduce(weft_kernel *k, const run_opts *o) {
  /* a plain `weft run`: a world of one.  MPI stays up until the process exits: `weft tune`
   * runs many kernels in one process, and MPI cannot be initialised again once finalized. */
  ranks_ensure();
  MPI_Comm_rank(MPI_COMM_WORLD, &RANK);
  MPI_Comm_size(MPI_COMM_WORLD, &SIZE);
  D = drv_get(NULL, 0);
  ar_run r = {.o = o, .k = k, .m = weft_kernel_manifest(k)};
  const char *op = weft_manifest_param(r.m, "op");
  hr_dtype_parse(weft_manifest_param(r.m, "dtype"), &r.dt);
  r.es = hr_dtype_size(r.dt);
  r.custom = hr_op_parse(op, &r.op) != 0;
  int rc = CLI_FAIL;
  weft_world *w = NULL;
  CUdeviceptr x = 0, y = 0, z = 0;
  /* the sizes to check and time (the family's run spec: odd sizes to check, 8 B .. 256 MB to
   * time, within the kernel's limits; --elems N or weft tune's shape: N only) */
  long long max_n = comm_run_max_first(o);
  if (r.custom && !weft_manifest_param(r.m, "op.ref") && o->check) {
    if (RANK == 0) printf("check: %s: NOT CHECKED (custom op without ref: give op.ref = function(a, b) ... end)\n", r.m->name);
  }
  if (comm_run_open(k, max_n, RANK, &w, &r.c)) goto out;
  {
    size_t bytes = (size_t)max_n * r.es;
    int ok = cu_ok(D->cuMemAlloc(&x, bytes), "cuMemAlloc") && cu_ok(D->cuMemAlloc(&y, bytes), "cuMemAlloc") &&
             cu_ok(D->cuMemAlloc(&z, bytes), "cuMemAlloc");
    if (!ranks_all(ok)) goto out;
  }
  if (RANK == 0) comm_run_print(r.m, r.c, SIZE);
  if (o->check && o->n_check && !(r.custom && !weft_manifest_param(r.m, "op.ref"))) {
    long long largest = 0;
    for (int i = 0; i < o->n_check; i++) {
      long long n = o->check_shapes[i].v[0];
      if (n > largest) largest = n;
      if (!ranks_all(check_size(&r, n, x, y, z))) {
        if (RANK == 0) printf("check: %s: FAIL at n=%lld (rank messages above)\n", r.m->name, n);
        goto out;
      }
    }
    if (RANK == 0)
      printf("check: %s: PASS (%d size%s up to %lld elements, out of place and in place, 100 back-to-back launches, "
             "%sbit-identical on all %d ranks)\n", r.m->name, o->n_check, o->n_check == 1 ? "" : "s", largest,
             !r.m->pdl ? "" : r.custom || !(r.op == HR_SUM || r.op == HR_MAX || r.op == HR_MIN)
                                  ? "pdl chain not run (sum, max, min only), " : "10 chained pdl pairs, ", SIZE);
    if (o->result) { o->result->checked = 1; o->result->passed = 1; }
  }
  if (o->timing && o->n_time) {
    if (RANK == 0)
      printf("time: %s, %d ranks; each row: CUDA events around back-to-back launches, the slowest rank, "
             "median of %d rounds\n"
             "%12s %12s %10s %11s %11s %10s %9s\n", r.m->name, SIZE, COMM_RUN_ROUNDS, "bytes", "elements", "time_us", "algbw_GB/s",
             "busbw_GB/s", "copy_us", "vs_copy");
    for (int i = 0; i < o->n_time; i++) {
      long long n = o->time_shapes[i].v[0], bytes = n * (long long)r.es;
      int iters = comm_run_iters(o, bytes);
      double us = time_launches(&r, y, x, n, iters, 0);
      double cus = time_launches(&r, y, x, n, iters, 1);
      if (us < 0 || cus < 0) goto out;
      double alg = (double)bytes / (us * 1e3), bus = alg * (SIZE > 1 ? 2.0 * (SIZE - 1) / SIZE : 1.0);
      if (RANK == 0) printf("%12lld %12lld %10.2f %11.2f %11.2f %10.2f %9.2f\n", bytes, n, us, alg, bus, cus, us / cus);
      fflush(stdout);
      if (o->result) { o->result->timed = 1; o->result->us = us; o->result->metric = bus; }
    }
  }
  rc = CLI_OK;
out:
  if (x) D->cuMemFree(x);
  if (y) D->cuMemFree(y);
  if (z) D->cuMemFree(z);
  comm_run_close(w, r.c);
  rc = ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
  return rc;
}

WEFT_RUNNER(allreduce, run_allreduce)
