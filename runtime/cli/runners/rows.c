/* runners/rows.c: `weft run` for row_reduce and row_softmax: random rows, poisoned outputs, the
 * double-precision reference of runtime/check/, then CUDA-event timing beside a device copy of
 * the input (runtime/measure/). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostref.h"
#include "measure.h"
#include "runner.h"

static const drv_table *D;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, -1, r, what); }


typedef struct rows_run {
  const run_opts *o;
  weft_kernel *k;
  const weft_manifest *m;
  int softmax;
  hr_dtype dt;
  int32_t rows, cols;
  CUdeviceptr x[16], y[16];
  void *args[16][8];
} rows_run;

static int rows_launch(void *ud, int set, CUstream stream, char *err, size_t errlen) {
  rows_run *r = ud;
  if (weft_launch(r->k, r->args[set], stream) == WEFT_OK) return 0;
  snprintf(err, errlen, "%s", weft_kernel_error(r->k));
  return -1;
}

/* Reference rows for a custom operator, folded by its Lua ref function. */
static int custom_reference(weft_kernel *k, hr_dtype dt, const void *hx, long rows, long cols, double *want) {
  double *row = malloc((size_t)cols * sizeof *row);
  if (!row) return -1;
  for (long i = 0; i < rows; i++) {
    for (long j = 0; j < cols; j++) row[j] = hr_load(dt, hx, (size_t)(i * cols + j));
    if (weft_reference_fold(k, row, (size_t)cols, &want[i])) { free(row); return -1; }
  }
  free(row);
  return 0;
}

static int check_rows(weft_kernel *k, rows_run *r, const void *hx, const char *op_name) {
  size_t n = (size_t)r->rows * (size_t)r->cols;
  size_t out_n = r->softmax ? n : (size_t)r->rows;
  hr_dtype out_dt = r->softmax ? r->dt : HR_F32;
  size_t out_bytes = out_n * hr_dtype_size(out_dt);
  void *got = malloc(out_bytes);
  double *want = malloc(out_n * sizeof(double));
  double *atol = NULL;
  int bad = -1;
  if (!got || !want) { fprintf(stderr, "weft run: out of host memory\n"); goto out; }
  if (!cu_ok(D->cuMemcpyDtoH(got, r->y[0], out_bytes), "cuMemcpyDtoH")) goto out;
  hr_report rep;
  if (r->softmax) {
    hr_row_softmax_ref(r->dt, hx, r->rows, r->cols, want);
    double a = hr_softmax_atol(r->dt);
    bad = hr_compare(out_dt, got, want, out_n, &a, 1, hr_softmax_rtol(r->dt), &rep);
  } else {
    hr_op op = HR_SUM;
    int custom = hr_op_parse(op_name, &op) != 0;
    if (custom) {
      if (custom_reference(k, r->dt, hx, r->rows, r->cols, want)) {
        fprintf(stderr, "weft run: %s\n", weft_kernel_error(k));
        goto out;
      }
    } else {
      hr_row_reduce_ref(r->dt, op, hx, r->rows, r->cols, want);
    }
    atol = calloc((size_t)r->rows, sizeof *atol);
    /* sum: f32 rounding grows with the magnitudes added, far below one element of the row,
     * so a missed or repeated element fails; max, min: exact; prod: the data makes it exact */
    if (op == HR_SUM || custom) {   /* a custom op may add: allow sum's rounding */
      hr_row_abs_sum(r->dt, hx, r->rows, r->cols, atol);
      for (long i = 0; i < r->rows; i++) atol[i] = ldexp(atol[i], -22) + 1e-30;
    }
    bad = hr_compare(out_dt, got, want, out_n, atol, (size_t)r->rows, 0.0, &rep);
  }
  char line[512];
  hr_report_format(&rep, line, sizeof line);
  if (r->o->result) { r->o->result->checked = 1; r->o->result->passed = !bad; }
  if (!r->o->quiet || bad) printf("check: %s: %s (%s)\n", r->m->name, bad ? "FAIL" : "PASS", line);
out:
  free(got); free(want); free(atol);
  return bad;
}

/* One shape: check it (do_check) and time it (do_time). */
static int run_rows(weft_kernel *k, const run_opts *o, int softmax, const weft_shape *sh, int do_check, int do_time) {
  const weft_manifest *m = weft_kernel_manifest(k);
  rows_run r = {.o = o, .k = k, .m = m, .softmax = softmax};
  if (hr_dtype_parse(weft_manifest_param(m, "dtype"), &r.dt)) { fprintf(stderr, "weft run: bad dtype\n"); return CLI_FAIL; }
  const char *op = softmax ? "softmax" : weft_manifest_param(m, "op");
  int custom = op && !strcmp(op, "custom");
  r.rows = (int32_t)cli_size(m, sh, "rows");   /* within the kernel's limits: an int */
  r.cols = (int32_t)cli_size(m, sh, "cols");
  size_t n = (size_t)r.rows * (size_t)r.cols, in_bytes = n * hr_dtype_size(r.dt);
  size_t out_bytes = softmax ? in_bytes : (size_t)r.rows * 4;
  int nsets = do_time ? measure_rotation_sets(in_bytes + out_bytes) : 1;
  void *hx = malloc(in_bytes);
  int rc = CLI_FAIL;
  if (!hx) { fprintf(stderr, "weft run: out of host memory for %zu bytes\n", in_bytes); return CLI_FAIL; }
  if (op && !strcmp(op, "prod")) hr_fill_pow2_for_prod(r.dt, hx, n, (size_t)r.cols, o->seed);
  else hr_fill_uniform(r.dt, hx, n, o->seed, softmax ? -8.0 : -1.0, softmax ? 8.0 : 1.0);
  for (int s = 0; s < nsets; s++) {
    if (!(r.x[s] = cli_dev_alloc(D, in_bytes)) || !(r.y[s] = cli_dev_alloc(D, out_bytes))) goto out;
    if (!cu_ok(D->cuMemcpyHtoD(r.x[s], hx, in_bytes), "cuMemcpyHtoD")) goto out;
    if (!cu_ok(D->cuMemsetD8(r.y[s], 0xff, out_bytes), "cuMemsetD8")) goto out;   /* poison */
    const char *names[] = {"x", softmax ? "y" : "out", "rows", "cols"};
    void *vals[] = {&r.x[s], &r.y[s], &r.rows, &r.cols};
    if (cli_bind_args(m, r.args[s], names, vals, 4)) goto out;
  }
  if (!o->quiet) printf("run: %s rows=%d cols=%d (%s)\n", m->name, r.rows, r.cols, hr_dtype_name(r.dt));
  if (weft_launch(k, r.args[0], NULL)) { fprintf(stderr, "weft run: %s\n", weft_kernel_error(k)); goto out; }
  if (!cu_ok(D->cuCtxSynchronize(), "the kernel")) goto out;
  if (do_check) {
    if (custom && !weft_manifest_param(m, "op.ref")) {
      if (!o->quiet) printf("check: %s: NOT CHECKED (custom op without ref: give op.ref = function(a, b) ... end to check it)\n", m->name);
    } else if (check_rows(k, &r, hx, op)) goto out;
  }
  if (do_time) {
    measure_copy cp = {.src = r.x[0], .dst = softmax ? r.y[0] : r.x[nsets > 1 ? 1 : 0], .bytes = in_bytes, .d = D};
    CUdeviceptr scratch = 0;
    if (!softmax && nsets == 1) { if (!(scratch = cli_dev_alloc(D, in_bytes))) goto out; cp.dst = scratch; }
    measure_op ops[2] = {{rows_launch, &r, nsets, NULL}, {measure_copy_launch, &cp, 1, NULL}};
    /* each launch alone, the median; the kernel, then the copy (one round each) */
    measure_plan plan = {.iters = o->iters, .warmup = o->warmup, .each = 1, .rounds = 1};
    measure_result res[2];
    char err[512];
    int bad = measure_run(D, &plan, &ops[0], 1, &res[0], err, sizeof err) ||
              measure_run(D, &plan, &ops[1], 1, &res[1], err, sizeof err);
    double ms = res[0].ev_us * 1e-3, cms = res[1].ev_us * 1e-3;
    if (scratch) D->cuMemFree(scratch);
    if (bad) { fprintf(stderr, "weft run: %s: timing: %s\n", m->name, err); goto out; }
    cli_report_bandwidth(o, m->name, ms, (double)(in_bytes + out_bytes), cms, (double)in_bytes);
  }
  rc = CLI_OK;
out:
  for (int s = 0; s < 16; s++) { if (r.x[s]) D->cuMemFree(r.x[s]); if (r.y[s]) D->cuMemFree(r.y[s]); }
  free(hx);
  return rc;
}

static int rows_shape(weft_kernel *k, const run_opts *o, const weft_shape *sh, int do_check, int do_time, void *ud) {
  return run_rows(k, o, ud != NULL, sh, do_check, do_time);
}
static int run_row_reduce(weft_kernel *k, const run_opts *o) {
  if (!(D = drv_get(NULL, 0))) { fprintf(stderr, "weft run: no driver\n"); return CLI_NO_GPU; }
  return cli_each_shape(k, o, rows_shape, NULL);
}
static int run_row_softmax(weft_kernel *k, const run_opts *o) {
  static int softmax = 1;
  if (!(D = drv_get(NULL, 0))) { fprintf(stderr, "weft run: no driver\n"); return CLI_NO_GPU; }
  return cli_each_shape(k, o, rows_shape, &softmax);
}
WEFT_RUNNER(row_reduce, run_row_reduce)
WEFT_RUNNER(row_softmax, run_row_softmax)
