/* runners/cluster_reduce.c: `weft run` for cluster_reduce, seed 000's primitive on its own: every
 * CTA of a cluster must get the same bits, and the value the double-precision fold gives
 * (runtime/check/ref_cluster.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostref.h"
#include "ref_cluster.h"
#include "measure.h"
#include "runner.h"

static const drv_table *D;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, -1, r, what); }


typedef struct cr_launch { weft_kernel *k; void **args; } cr_launch;
static int cr_launch_one(void *ud, int set, CUstream stream, char *err, size_t errlen) {
  cr_launch *c = ud;
  (void)set;
  if (weft_launch(c->k, c->args, stream) == WEFT_OK) return 0;
  snprintf(err, errlen, "%s", weft_kernel_error(c->k));
  return -1;
}

/* op.ref, the custom operator's Lua reference */
static int fold_ref(void *ud, const double *v, size_t n, double *out) { return weft_reference_fold(ud, v, n, out); }

static int cluster_shape(weft_kernel *k, const run_opts *o, const weft_shape *sh, int do_check, int do_time,
                         void *ud) {
  const weft_manifest *m = weft_kernel_manifest(k);
  int C = atoi(weft_manifest_param(m, "cluster")), T = atoi(weft_manifest_param(m, "threads"));
  int W = atoi(weft_manifest_param(m, "width")), I = atoi(weft_manifest_param(m, "iters"));
  const char *opn = weft_manifest_param(m, "op");
  int32_t clusters = (int32_t)cli_size(m, sh, "clusters");   /* within the kernel's limits */
  size_t nin = (size_t)clusters * C * I * T * W, nout = (size_t)clusters * C * I * W;
  float *hx = malloc(nin * 4), *got = malloc(nout * 4);
  CUdeviceptr dx = 0, dy = 0;
  int rc = CLI_FAIL;
  hr_op op = HR_SUM;
  int custom = hr_op_parse(opn, &op) != 0;
  int have_ref = custom && weft_manifest_param(m, "op.ref") != NULL;
  if (!hx || !got) goto out;
  if (!custom && op == HR_PROD) hr_fill_pow2_for_prod(HR_F32, hx, nin, (size_t)T * W, o->seed);
  else hr_fill_uniform(HR_F32, hx, nin, o->seed, -1.0, 1.0);
  if (!(dx = cli_dev_alloc(D, nin * 4)) || !(dy = cli_dev_alloc(D, nout * 4))) goto out;
  if (!cu_ok(D->cuMemcpyHtoD(dx, hx, nin * 4), "cuMemcpyHtoD") || !cu_ok(D->cuMemsetD8(dy, 0xff, nout * 4), "cuMemsetD8")) goto out;
  void *args[4];
  const char *names[] = {"in", "out", "clusters"};
  void *vals[] = {&dx, &dy, &clusters};
  if (cli_bind_args(m, args, names, vals, 3)) goto out;
  if (!o->quiet) printf("run: %s clusters=%d\n", m->name, clusters);
  if (weft_launch(k, args, NULL)) { fprintf(stderr, "weft run: %s\n", weft_kernel_error(k)); goto out; }
  if (!cu_ok(D->cuCtxSynchronize(), "the kernel")) goto out;
  if (!cu_ok(D->cuMemcpyDtoH(got, dy, nout * 4), "cuMemcpyDtoH")) goto out;
  if (do_check) {
    ref_cluster_shape sh = {clusters, C, T, W, I};
    ref_cluster_report rep;
    int rc_check = ref_cluster_check(&sh, hx, got, op, !custom || have_ref, have_ref ? fold_ref : NULL, k, &rep);
    if (rc_check < 0) {
      fprintf(stderr, "weft run: %s\n", have_ref ? weft_kernel_error(k) : "out of host memory for the reference");
      goto out;
    }
    int fail = rc_check != 0;
    if (o->result) { o->result->checked = !custom || have_ref; o->result->passed = !fail; }
    if (!o->quiet || fail) printf("check: %s: %s (%zu values differ between CTAs of a cluster, %zu outside tolerance%s, %zu unwritten; "
           "max abs err %.3g)\n", m->name, fail ? "FAIL" : "PASS", rep.differ, rep.values.bad,
           custom && !have_ref ? " (custom op without ref: values NOT CHECKED, bit-identity checked)" : "", rep.unwritten,
           rep.values.max_abs_err);
    if (fail) goto out;
  }
  if (do_time) {
    /* the primitive is latency-bound: report time per combine over back-to-back launches */
    cr_launch cl = {k, args};
    measure_op op = {cr_launch_one, &cl, 1, NULL};
    measure_plan plan = {.iters = o->iters, .warmup = o->warmup, .rounds = 1};   /* the mean of back-to-back launches */
    measure_result res;
    char err[512];
    double ms = 0;
    if (!measure_run(D, &plan, &op, 1, &res, err, sizeof err)) ms = res.ev_us * 1e-3;
    else {
      fprintf(stderr, "weft run: timing failed: %s\n", err);
      goto out;
    }
    if (o->result) {
      o->result->timed = 1;
      o->result->us = ms * 1e3;
      o->result->metric = ms * 1e3 / I;
      o->result->baseline = 0;
      snprintf(o->result->metric_name, sizeof o->result->metric_name, "us/combine");
      o->result->baseline_name[0] = 0;
    }
    if (!o->quiet) printf("time: %s: %.2f us per launch (mean of %d back-to-back), %.3f us per combine\n", m->name,
           ms * 1e3, o->iters, ms * 1e3 / I);
  }
  rc = CLI_OK;
out:
  if (dx) D->cuMemFree(dx);
  if (dy) D->cuMemFree(dy);
  free(hx); free(got);
  return rc;
}

static int run_cluster_reduce(weft_kernel *k, const run_opts *o) {
  if (!(D = drv_get(NULL, 0))) { fprintf(stderr, "weft run: no driver\n"); return CLI_NO_GPU; }
  return cli_each_shape(k, o, cluster_shape, NULL);
}
WEFT_RUNNER(cluster_reduce, run_cluster_reduce)
