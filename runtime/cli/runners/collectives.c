/* runners/collectives.c: `weft run` for the reduce_scatter and all_gather families, on every rank
 * of an MPI job (one process is a world of one).  n is a chunk: reduce_scatter's output (its
 * input is P*n), all_gather's input (its output is P*n).
 *   check: for a list of sizes (odd ones included), random data on every rank, poisoned outputs,
 *          out of place and in place (NCCL's convention: reduce_scatter's y = x + rank*n,
 *          all_gather's x = y + rank*n), against the reference (runtime/check/ref_collectives.h:
 *          reduce_scatter the rank-order fold in double of every rank's chunk, all_gather every
 *          rank's x to the bit; each rank regenerates all ranks' inputs from the seeds); then 100
 *          back-to-back launches must reproduce the first result to the bit; all_gather's result
 *          must be the same bits on every rank.  pdl: ten chained pairs whose second launch reads
 *          what the first wrote.
 *   time:  chunks of 8 B .. 32 MB; CUDA events around back-to-back launches, the slowest rank, the
 *          median of 5 rounds (comm_run_time's plan); beside it NCCL's collective where every rank
 *          has a GPU of its own (NCCL refuses ranks that share one, as under MPS), else every
 *          rank copying its input on its device (the floor where the ranks share its memory). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_run.h"
#include "driver.h"
#include "hostref.h"
#include "nccl.h"
#include "ranks.h"
#include "ref_collectives.h"
#include "runner.h"

static const drv_table *D;
static int RANK, SIZE;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, RANK, r, what); }

typedef struct co_run {
  const run_opts *o;
  weft_kernel *k;
  weft_comm *c;
  const weft_manifest *m;
  hr_dtype dt;
  hr_op op;
  int custom, rs;   /* rs: reduce_scatter (else all_gather) */
  size_t es;
  nccl_lib nc;
  int have_nccl;
  char no_nccl[256];
} co_run;

/* elements of a rank's input and output for chunk n */
static long long in_elems(const co_run *r, long long n) { return r->rs ? n * SIZE : n; }
static long long out_elems(const co_run *r, long long n) { return r->rs ? n : n * SIZE; }

/* rank's whole input (count elements) */
static void fill_input(const co_run *r, int rank, long long count, void *h) {
  comm_run_fill(r->dt, r->op, r->custom, r->o->seed, rank, count, h);
}
static void fill_rank(void *ud, int rank, size_t count, void *dst) { fill_input(ud, rank, (long long)count, dst); }

static int launch(co_run *r, CUdeviceptr y, CUdeviceptr x, long long n) { return comm_run_launch_yxn(r->m, r->c, y, x, n, RANK); }

static int finish(co_run *r) { return cli_comm_finish(D, RANK, D->cuCtxSynchronize(), r->m->family, r->c); }

/* The expected output of chunk size n: reduce_scatter want/scale (double), all_gather bits. */
typedef struct expect { double *want, *scale; void *bits; } expect;

static int expected(co_run *r, long long n, expect *e) {
  if (r->rs)
    return ref_reduce_scatter(r->dt, r->op, r->custom ? comm_run_fold : NULL, r->k, SIZE, RANK, (size_t)n, fill_rank, r,
                              e->want, e->scale);
  return ref_all_gather(r->dt, SIZE, (size_t)n, fill_rank, r, e->bits);
}

/* count = out_elems(n) elements at y against the expectation; one line on a failure */
static int compare(co_run *r, const char *what, long long n, CUdeviceptr y, const expect *e, void *got) {
  long long count = out_elems(r, n);
  if (!cu_ok(D->cuMemcpyDtoH(got, y, (size_t)count * r->es), "cuMemcpyDtoH")) return -1;
  if (!r->rs) {
    long long i = ref_first_diff(r->dt, got, e->bits, (size_t)count);
    if (i < 0) return 0;
    fprintf(stderr, "check: rank %d: %s n=%lld %s: FAIL (y[%lld] = %g, rank %lld's x[%lld] = %g: not the same bits)\n",
            RANK, r->m->name, n, what, i, hr_load(r->dt, got, (size_t)i), i / n, i % n, hr_load(r->dt, e->bits, (size_t)i));
    return -1;
  }
  return comm_run_compare_fold(r->dt, r->op, r->custom, got, e->want, e->scale, n, r->m->name, what, RANK);
}

/* pdl = true: ten chained pairs, the second launched right behind the first and reading what it
 * wrote; a launch that touched its input (or the epoch) before its griddepcontrol.wait would see
 * the poison or the old data.
 *   all_gather: y = AG(x), then z = AG(y's chunk of rank r + 1): z's chunk p must be the bits of
 *     rank p + 1's x.
 *   reduce_scatter: w = x, then w's chunk r = RS(w) in place, then z = RS(w): z[i] = the fold of
 *     rank p's x[r*n + i] for p != r and this rank's first result for p = r (sum, max, min). */
static int check_chain(co_run *r, long long n, CUdeviceptr x, CUdeviceptr y, CUdeviceptr z, const expect *e) {
  size_t cin = (size_t)in_elems(r, n), cout = (size_t)out_elems(r, n);
  size_t big = (size_t)n * SIZE * r->es;
  void *got = malloc(big), *first = malloc(big), *all = malloc(big);
  expect ez = {malloc(cout * sizeof(double)), malloc(cout * sizeof(double)), malloc(big)};
  int ok = got && first && all && ez.want && ez.scale && ez.bits;
  if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the pdl chain\n", RANK);
  for (int p = 0; ok && p < SIZE; p++) {
    /* all_gather: z's chunk p = rank p + 1's x; reduce_scatter: ez.bits holds rank p's chunk r */
    if (!r->rs) {
      memcpy((char *)ez.bits + (size_t)p * n * r->es, (char *)e->bits + (size_t)((p + 1) % SIZE) * n * r->es, n * r->es);
    } else {
      fill_input(r, p, (long long)cin, all);
      memcpy((char *)ez.bits + (size_t)p * n * r->es, (char *)all + (size_t)RANK * n * r->es, n * r->es);
    }
  }
  for (int pair = 0; pair < 10 && ok; pair++) {
    ok = cu_ok(D->cuMemsetD8(y, 0xff, big), "cuMemsetD8") && cu_ok(D->cuMemsetD8(z, 0xff, big), "cuMemsetD8");
    if (!ok) break;
    if (!r->rs) {
      CUdeviceptr src = y + (CUdeviceptr)((size_t)((RANK + 1) % SIZE) * n * r->es);
      ok = !launch(r, y, x, n) && !launch(r, z, src, n) && !finish(r) &&
           !compare(r, "pdl chain (z = all_gather(y's chunk) right behind y = all_gather(x))", n, z, &ez, got);
      continue;
    }
    /* y is w here: x's copy, its chunk r replaced in place by the first launch */
    CUdeviceptr mine = y + (CUdeviceptr)((size_t)RANK * n * r->es);
    ok = cu_ok(D->cuMemcpyDtoDAsync(y, x, cin * r->es, NULL), "cuMemcpyDtoDAsync") && !launch(r, mine, y, n) && !launch(r, z, y, n) &&
         !finish(r) && cu_ok(D->cuMemcpyDtoH(first, mine, cout * r->es), "cuMemcpyDtoH");
    if (!ok) break;
    for (long long i = 0; i < n; i++) {
      double w = 0, s = 0;
      for (int p = 0; p < SIZE; p++) {
        double v = p == RANK ? hr_load(r->dt, first, (size_t)i) : hr_load(r->dt, ez.bits, (size_t)p * n + (size_t)i);
        w = p == 0 ? v : hr_fold(r->op, w, v);
        s += fabs(v);
      }
      ez.want[i] = w;
      ez.scale[i] = s;
    }
    ok = !compare(r, "pdl chain (z = reduce_scatter(w) right behind w's chunk = reduce_scatter(w))", n, z, &ez, got);
  }
  free(got); free(first); free(all); free(ez.want); free(ez.scale); free(ez.bits);
  return ok;
}

/* Each step ends with every rank's verdict, so a rank that fails never leaves the others
 * waiting for its signals in the next launch.  x holds P*n elements, y and z too. */
static int check_size(co_run *r, long long n, CUdeviceptr x, CUdeviceptr y, CUdeviceptr z) {
  size_t cin = (size_t)in_elems(r, n), cout = (size_t)out_elems(r, n), big = (size_t)n * SIZE * r->es;
  size_t mine = (size_t)RANK * n * r->es;   /* this rank's chunk, in bytes */
  void *h = malloc(cin * r->es), *got = malloc(big), *first = malloc(big);
  expect e = {malloc(cout * sizeof(double)), malloc(cout * sizeof(double)), malloc(big)};
  int ok = h && got && first && e.want && e.scale && e.bits && !expected(r, n, &e);
  char who[256];
  if (ok) {
    fill_input(r, RANK, (long long)cin, h);
    /* in place: reduce_scatter z = x, its result in z's chunk r; all_gather x in z's chunk r */
    ok = cu_ok(D->cuMemcpyHtoD(x, h, cin * r->es), "cuMemcpyHtoD") && cu_ok(D->cuMemsetD8(y, 0xff, big), "cuMemsetD8") &&
         cu_ok(D->cuMemsetD8(z, 0xff, big), "cuMemsetD8") &&
         cu_ok(D->cuMemcpyHtoD(r->rs ? z : z + mine, h, cin * r->es), "cuMemcpyHtoD");
  }
  if (!ranks_all(ok)) goto out;
  ok = !launch(r, y, x, n) && (r->rs ? !launch(r, z + mine, z, n) : !launch(r, z, z + mine, n)) && !finish(r) &&
       !compare(r, "out of place", n, y, &e, first) && !compare(r, "in place", n, r->rs ? z + mine : z, &e, got);
  if (ok && memcmp(first, got, cout * r->es)) {
    fprintf(stderr, "check: rank %d: n=%lld: in place and out of place differ in bits\n", RANK, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  /* back to back: the epochs advance and the halves alternate; the bits must not move */
  ok = cu_ok(D->cuMemsetD8(y, 0xff, big), "cuMemsetD8");
  for (int i = 0; i < 100 && ok; i++) ok = !launch(r, y, x, n);
  ok = ok && !finish(r) && cu_ok(D->cuMemcpyDtoH(got, y, cout * r->es), "cuMemcpyDtoH");
  if (ok && memcmp(first, got, cout * r->es)) {
    fprintf(stderr, "check: rank %d: n=%lld: 100 back-to-back launches changed the result\n", RANK, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (r->m->pdl && (!r->rs || (!r->custom && (r->op == HR_SUM || r->op == HR_MAX || r->op == HR_MIN)))) {
    ok = check_chain(r, n, x, y, z, &e);
    if (!ranks_all(ok)) goto out;
  }
  /* all_gather: the same bits on every rank (reduce_scatter's chunks differ by design) */
  if (!r->rs && !ranks_same_bytes(first, cout * r->es, who, sizeof who)) {
    if (RANK == 0) fprintf(stderr, "check: n=%lld: ranks %s hold different bits from rank 0\n", n, who);
    ok = 0;
  }
out:
  free(h); free(got); free(first); free(e.want); free(e.scale); free(e.bits);
  return ok;
}

/* The op measure_run times: weft's collective, NCCL's, or every rank copying its input */
enum { T_WEFT, T_NCCL, T_COPY };
typedef struct co_timed { co_run *r; CUdeviceptr y, x; long long n; int what; } co_timed;

static int co_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  co_timed *t = ud;
  co_run *r = t->r;
  err[0] = 0;   /* launch() says why on stderr itself */
  if (t->what == T_WEFT) return launch(r, t->y, t->x, t->n);
  if (t->what == T_NCCL)
    return r->rs ? nccl_reduce_scatter(&r->nc, t->x, t->y, (size_t)t->n, r->dt, r->op, s, err, len)
                 : nccl_all_gather(&r->nc, t->x, t->y, (size_t)t->n, r->dt, s, err, len);
  CUresult e = D->cuMemcpyDtoDAsync(t->y, t->x, (size_t)in_elems(r, t->n) * r->es, s);
  if (e == CUDA_SUCCESS) return 0;
  drv_describe(D, e, "copy", err, len);
  return -1;
}

static int co_finish(void *ud, CUstream s, char *err, size_t len) {
  co_timed *t = ud;
  err[0] = 0;
  if (t->what == T_WEFT) return finish(t->r);
  return cu_ok(D->cuCtxSynchronize(), "the baseline") ? 0 : -1;
}

/* `iters` back-to-back launches of one op, timed by comm_run_time's plan: us per launch, or -1 */
static double time_launches(co_run *r, CUdeviceptr y, CUdeviceptr x, long long n, int iters, int what) {
  co_timed t = {r, y, x, n, what};
  measure_op op = {co_launch, &t, 1, co_finish};
  measure_result res;
  return comm_run_time(D, RANK, &op, 1, iters, &res) ? -1.0 : res.ev_us;
}

static int time_all(co_run *r, CUdeviceptr x, CUdeviceptr y) {
  const run_opts *o = r->o;
  if (RANK == 0) {
    if (r->have_nccl) printf("baseline: NCCL %d %s, in the same run\n", r->nc.version, r->rs ? "ncclReduceScatter" : "ncclAllGather");
    else printf("baseline: NCCL not run (%s); every rank copying its input instead\n", r->no_nccl);
    printf("time: %s, %d ranks; each row: CUDA events around back-to-back launches, the slowest rank, median of %d "
           "rounds; bytes = the P chunks (nccl-tests' size), busbw = algbw x (P-1)/P\n"
           "%12s %12s %10s %11s %11s %10s %9s\n", r->m->name, SIZE, COMM_RUN_ROUNDS, "bytes", "n", "time_us", "algbw_GB/s",
           "busbw_GB/s", r->have_nccl ? "nccl_us" : "copy_us", r->have_nccl ? "vs_nccl" : "vs_copy");
  }
  for (int i = 0; i < o->n_time; i++) {
    long long n = o->time_shapes[i].v[0], bytes = n * SIZE * (long long)r->es;
    int iters = comm_run_iters(o, bytes);
    double us = time_launches(r, y, x, n, iters, T_WEFT);
    double bus_us = time_launches(r, y, x, n, iters, r->have_nccl ? T_NCCL : T_COPY);
    if (us < 0 || bus_us < 0) return -1;
    double alg = (double)bytes / (us * 1e3), bus = alg * (SIZE > 1 ? (double)(SIZE - 1) / SIZE : 1.0);
    if (RANK == 0) printf("%12lld %12lld %10.2f %11.2f %11.2f %10.2f %9.2f\n", bytes, n, us, alg, bus, bus_us, us / bus_us);
    fflush(stdout);
    if (o->result) { o->result->timed = 1; o->result->us = us; o->result->metric = bus; }
  }
  return 0;
}

static int run_collective(weft_kernel *k, const run_opts *o) {
  ranks_ensure();   /* MPI stays up until the process exits (weft tune runs many kernels) */
  MPI_Comm_rank(MPI_COMM_WORLD, &RANK);
  MPI_Comm_size(MPI_COMM_WORLD, &SIZE);
  D = drv_get(NULL, 0);
  co_run r = {.o = o, .k = k, .m = weft_kernel_manifest(k)};
  r.rs = !strcmp(r.m->family, "reduce_scatter");
  const char *op = r.rs ? weft_manifest_param(r.m, "op") : "sum";
  hr_dtype_parse(weft_manifest_param(r.m, "dtype"), &r.dt);
  r.es = hr_dtype_size(r.dt);
  r.custom = hr_op_parse(op, &r.op) != 0;
  int have_ref = !r.custom || weft_manifest_param(r.m, "op.ref");
  int rc = CLI_FAIL;
  weft_world *w = NULL;
  CUdeviceptr x = 0, y = 0, z = 0;
  long long max_n = comm_run_max_first(o);
  if (!have_ref && o->check && RANK == 0)
    printf("check: %s: NOT CHECKED (custom op without ref: give op.ref = function(a, b) ... end)\n", r.m->name);
  if (comm_run_open(k, max_n, RANK, &w, &r.c)) goto out;
  {
    size_t bytes = (size_t)max_n * SIZE * r.es;   /* x, y and z each hold P chunks (in place, the chain) */
    int ok = cu_ok(D->cuMemAlloc(&x, bytes), "cuMemAlloc") && cu_ok(D->cuMemAlloc(&y, bytes), "cuMemAlloc") &&
             cu_ok(D->cuMemAlloc(&z, bytes), "cuMemAlloc");
    if (!ranks_all(ok)) goto out;
  }
  if (RANK == 0) comm_run_print(r.m, r.c, SIZE);
  if (o->check && o->n_check && have_ref) {
    long long largest = 0;
    for (int i = 0; i < o->n_check; i++) {
      long long n = o->check_shapes[i].v[0];
      if (n > largest) largest = n;
      if (!ranks_all(check_size(&r, n, x, y, z))) {
        if (RANK == 0) printf("check: %s: FAIL at n=%lld (rank messages above)\n", r.m->name, n);
        goto out;
      }
    }
    int chain = r.m->pdl && (!r.rs || (!r.custom && (r.op == HR_SUM || r.op == HR_MAX || r.op == HR_MIN)));
    if (RANK == 0)
      printf("check: %s: PASS (%d size%s up to n = %lld, out of place and in place, 100 back-to-back launches%s%s, "
             "%d rank%s)\n", r.m->name, o->n_check, o->n_check == 1 ? "" : "s", largest,
             chain ? ", 10 chained pdl pairs" : r.m->pdl ? ", pdl chain not run (sum, max, min only)" : "",
             r.rs ? ", the same bits on every run" : ", bit-identical on all ranks", SIZE, SIZE == 1 ? "" : "s");
    if (o->result) { o->result->checked = 1; o->result->passed = 1; }
  }
  if (o->timing && o->n_time) {
    /* NCCL takes one rank per GPU: nccl_open compares the ranks' PCI bus ids first (under MPS it
     * says why and the copy floor stands in) */
    if (SIZE > 1 && !r.custom) {
      char bus[32] = "";
      CUdevice dev;
      if (D->cuDeviceGet(&dev, cli_device()) != CUDA_SUCCESS || D->cuDeviceGetPCIBusId(bus, sizeof bus, dev) != CUDA_SUCCESS)
        bus[0] = 0;
      r.have_nccl = !nccl_open(&r.nc, MPI_COMM_WORLD, bus, r.no_nccl, sizeof r.no_nccl);
    } else {
      snprintf(r.no_nccl, sizeof r.no_nccl, "%s", SIZE == 1 ? "one rank" : "a custom operator");
    }
    if (time_all(&r, x, y)) goto out;
  }
  rc = CLI_OK;
out:
  if (r.have_nccl) nccl_close(&r.nc);
  if (x) D->cuMemFree(x);
  if (y) D->cuMemFree(y);
  if (z) D->cuMemFree(z);
  comm_run_close(w, r.c);
  rc = ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
  return rc;
}

WEFT_RUNNER(reduce_scatter, run_collective)
WEFT_RUNNER(all_gather, run_collective)
