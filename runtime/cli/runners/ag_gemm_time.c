/* runners/ag_gemm_time.c: the timing half of the ag_gemm runner (ag_gemm.h): per shape, rounds
 * that alternate weft, cuBLASLt on the whole gathered problem and, at P > 1, NCCL all-gather +
 * cuBLASLt (runtime/measure/'s policy: heat, events around back-to-back launches, the same
 * launches replayed as one CUDA graph, the slowest rank); then weft's C cross-checked with
 * cuBLAS's (runtime/check/ref_gemm.c), and one row of the results table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_gemm.h"
#include "measure.h"
#include "ranks.h"
#include "ref_gemm.h"

/* the policy's launch and finish: ag_launch_op and ag_finish print their own failures */
typedef struct ag_timed { agg *r; int op; } ag_timed;
static int timed_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  ag_timed *t = ud;
  err[0] = 0;
  return ag_launch_op(t->r, t->op);
}
static int timed_finish(void *ud, CUstream s, char *err, size_t len) {
  err[0] = 0;
  return ag_finish(((ag_timed *)ud)->r);
}

/* Three rounds of weft and its baselines in turn, the median of each: the clocks drift under
 * load for seconds, and alternating puts weft and its baselines under the same drift.  Each op
 * is heated ~250 ms first; a slow op (a scalar variant at 8192^3) lowers its iterations so one
 * loop stays near 2 s, and then gets one round and one graph replay. */
#define ROUNDS 3
#define HEAT_MS 250.0
#define LOOP_CAP_MS 2000.0
#define GRAPH_REPS 3

/* What one timed shape measured; -1: not measured. */
typedef struct row {
  double w_ev, w_gr, b_ev, b_gr, n_ev, n_gr;
  int iters;
  const char *xcheck;
} row;

static int cu_ok(agg *r, CUresult e, const char *what) { return cli_cu_ok(r->d, r->rank, e, what); }

static void fmt(char *buf, size_t len, double v, const char *f) {
  if (v < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, f, v);
}

void ag_print_header(const agg *r) {
  printf("time: %s (%s), %s, b_layout %s, %d rank%s; us per launch: CUDA events around back-to-back launches "
         "(ev) and one CUDA graph of them (gr), the slowest rank, each op heated ~250 ms first, the median of 3 rounds "
         "that alternate weft and its baselines; TF = 2*M*N*K / time per rank; vs_* = weft's "
         "TFLOP/s over the baseline's (>1: weft faster)\n",
         r->m->name, ag_kind_kernels(r->kind), hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->size, r->size == 1 ? "" : "s");
  printf("#ag_gemm %-17s %-4s %-3s %6s %6s %6s %2s %5s %10s %10s %8s %8s %10s %10s %8s %8s %8s %8s %10s %10s %8s %8s %6s\n",
         "variant", "type", "b", "M", "N", "K", "P", "iters", "weft_ev", "weft_gr", "TF_ev", "TF_gr", "cublas_ev",
         "cublas_gr", "cbTF_ev", "cbTF_gr", "vs_cb_ev", "vs_cb_gr", "nccl_ev", "nccl_gr", "vs_nc_ev", "vs_nc_gr", "xcheck");
}

static void print_row(const agg *r, const row *w) {
  double fl = 2.0 * (double)r->M * (double)r->N * (double)r->K;
  char c[16][24];
  double v[16] = {w->w_ev, w->w_gr, w->w_ev > 0 ? fl / w->w_ev * 1e-6 : -1, w->w_gr > 0 ? fl / w->w_gr * 1e-6 : -1,
                  w->b_ev, w->b_gr, w->b_ev > 0 ? fl / w->b_ev * 1e-6 : -1, w->b_gr > 0 ? fl / w->b_gr * 1e-6 : -1,
                  w->w_ev > 0 && w->b_ev > 0 ? w->b_ev / w->w_ev : -1, w->w_gr > 0 && w->b_gr > 0 ? w->b_gr / w->w_gr : -1,
                  w->n_ev, w->n_gr, w->w_ev > 0 && w->n_ev > 0 ? w->n_ev / w->w_ev : -1,
                  w->w_gr > 0 && w->n_gr > 0 ? w->n_gr / w->w_gr : -1};
  const char *f[14] = {"%.2f", "%.2f", "%.1f", "%.1f", "%.2f", "%.2f", "%.1f", "%.1f", "%.3f", "%.3f", "%.2f", "%.2f",
                       "%.3f", "%.3f"};
  for (int i = 0; i < 14; i++) fmt(c[i], sizeof c[i], v[i], f[i]);
  printf("ag_gemm  %-17s %-4s %-3s %6lld %6lld %6lld %2d %5d %10s %10s %8s %8s %10s %10s %8s %8s %8s %8s %10s %10s %8s %8s %6s\n",
         r->variant, hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->M, r->N, r->K, r->size, w->iters, c[0], c[1], c[2],
         c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], w->xcheck);
  fflush(stdout);
}

/* weft's C against cuBLAS's, every element (no reference GEMM on the host at 8192^3).  1 if
 * they agree. */
static int cross_check(agg *r, const void *cw, const void *cb, char *line, size_t len) {
  hr_report rep;
  int rc = ref_gemm_cross_check(r->dt, r->hA, r->hB, r->bcol, r->M, r->N, r->K, cw, cb, &rep);
  if (rc < 0) { snprintf(line, len, "out of host memory"); return 0; }
  hr_report_format_worst(&rep, line, len);
  return rc == 0;
}

int ag_time_shape(agg *r, long long M, long long N, long long K) {
  char name[160], line[512];
  row w = {-1, -1, -1, -1, -1, -1, r->o->iters, "-"};
  size_t c_bytes = (size_t)M * (size_t)N * r->es;
  void *cw = NULL, *cb = NULL;
  int ok = !ag_shape_begin(r, M, N, K, 1), pass = 1;
  ag_label(r, name, sizeof name);
  if (!ranks_all(ok)) { pass = 0; goto out; }
  {
    ag_timed ops[3] = {{r, OP_WEFT}, {r, OP_CUBLAS}, {r, OP_NCCL}};
    measure_op mo[3];
    measure_result res[3];
    int n = 0;
    for (int i = 0; i < 3; i++)
      if (i == OP_WEFT || (i == OP_CUBLAS && r->have_blt) || (i == OP_NCCL && r->have_nccl))
        mo[n++] = (measure_op){timed_launch, &ops[i], 1, timed_finish};
    measure_plan plan = {.iters = r->o->iters, .warmup = r->o->warmup, .settle = 1, .rounds = ROUNDS,
                         .heat_ms = HEAT_MS, .cap_ms = LOOP_CAP_MS, .graph_reps = GRAPH_REPS, .stream = r->s,
                         .ranks = measure_ranks_mpi()};
    char err[512];
    if (measure_run(r->d, &plan, mo, n, res, err, sizeof err)) {
      if (err[0]) fprintf(stderr, "weft run: rank %d: %s\n", r->rank, err);
      pass = 0;
      goto out;
    }
    w.iters = res[0].iters;
    w.w_ev = res[0].ev_us; w.w_gr = res[0].gr_us;
    n = 1;
    if (r->have_blt) { w.b_ev = res[n].ev_us; w.b_gr = res[n].gr_us; n++; }
    if (r->have_nccl) { w.n_ev = res[n].ev_us; w.n_gr = res[n].gr_us; }
  }
  if (r->have_blt) {   /* every launch above wrote the same C: compare the last ones */
    cw = malloc(c_bytes);
    cb = malloc(c_bytes);
    ok = cw && cb && cu_ok(r, r->d->cuMemcpyDtoH(cw, r->cmat, c_bytes), "cuMemcpyDtoH") &&
         cu_ok(r, r->d->cuMemcpyDtoH(cb, r->cb, c_bytes), "cuMemcpyDtoH");
    if (ok && !cross_check(r, cw, cb, line, sizeof line)) {
      fprintf(stderr, "check: rank %d: %s: weft and cuBLAS disagree (%s)\n", r->rank, name, line);
      ok = 0;
    } else if (ok && r->rank == 0 && !r->o->quiet) {
      printf("check: %s: weft agrees with cuBLAS (%s)\n", name, line);
      char algo[256];
      blt_describe(&r->L, &r->plan, algo, sizeof algo);
      if (algo[0]) printf("baseline: %s: cuBLASLt's algorithm (cublasLt.h's ids): %s\n", name, algo);
    }
    if (ok && r->have_nccl && cu_ok(r, r->d->cuMemcpyDtoH(cw, r->cn, c_bytes), "cuMemcpyDtoH") && memcmp(cw, cb, c_bytes))
      fprintf(stderr, "weft run: rank %d: %s: NCCL all-gather + cuBLAS gave other bits than cuBLAS on the whole A: "
              "its gather is suspect\n", r->rank, name);
    w.xcheck = ranks_all(ok) ? "ok" : "FAIL";
    if (!ok || strcmp(w.xcheck, "ok")) pass = 0;
  }
out:
  if (r->rank == 0) {
    print_row(r, &w);
    if (!pass) fprintf(stderr, "time: %s: FAILED (rank messages above)\n", name);
  }
  if (r->o->result && pass && w.w_ev > 0) {
    double fl = 2.0 * (double)M * (double)N * (double)K, t = w.w_gr > 0 ? w.w_gr : w.w_ev;
    double bt = w.w_gr > 0 ? w.b_gr : w.b_ev;
    r->o->result->timed = 1;
    r->o->result->us = t;
    r->o->result->metric = fl / t * 1e-6;
    r->o->result->baseline = bt > 0 ? bt / t : 0;
    snprintf(r->o->result->metric_name, sizeof r->o->result->metric_name, "TFLOP/s");
    snprintf(r->o->result->baseline_name, sizeof r->o->result->baseline_name, "cuBLAS");
  }
  free(cw); free(cb);
  ag_shape_free(r);
  return pass;
}

