/* runners/rmsnorm.c: `weft run` for family rmsnorm.  Random x, w (and r), y (and the per-CTA
 * rstd) poisoned, one launch checked against the double reference of runtime/check/ref_rmsnorm:
 * y within one rounding of the output, h (written over r) to the bit, and with cta_rstd every
 * CTA of a row's cluster holding the same rstd bits.  Then CUDA-event timing beside a device copy
 * moving the same bytes (x, w, y, and r read + h written with the residual). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostref.h"
#include "measure.h"
#include "ref_rmsnorm.h"
#include "runner.h"

#define RMS_MAX_SETS 16
/* eps = "arg": large beside mean(x^2) (1/3 for uniform(-1, 1)), so a kernel that ignored it
 * would fail the check; with eps in the config the tests set one as large */
#define RMS_ARG_EPS 0.3125f

static const drv_table *D;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, -1, r, what); }


typedef struct rms_run {
  const run_opts *o;
  weft_kernel *k;
  const weft_manifest *m;
  hr_dtype dt;
  int residual, cta_rstd, cluster;
  float eps;
  int32_t rows, cols;
  size_t n, esz;
  CUdeviceptr x[RMS_MAX_SETS], y[RMS_MAX_SETS], r[RMS_MAX_SETS], w, rstd;
  void *args[RMS_MAX_SETS][10];
} rms_run;

static int rms_launch(void *ud, int set, CUstream stream, char *err, size_t errlen) {
  rms_run *r = ud;
  if (weft_launch(r->k, r->args[set], stream) == WEFT_OK) return 0;
  snprintf(err, errlen, "%s", weft_kernel_error(r->k));
  return -1;
}

/* every CTA of a row's cluster wrote the same rstd bits, and they match the reference */
static int check_cta_rstd(const rms_run *r, const float *got, const double *want, char *line, size_t len) {
  size_t differ = 0, unwritten = 0, bad = 0;
  double worst = 0;
  for (long row = 0; row < r->rows; row++) {
    const float *g = got + (size_t)row * (size_t)r->cluster;
    uint32_t b0;
    memcpy(&b0, g, 4);
    for (int c = 0; c < r->cluster; c++) {
      uint32_t b;
      memcpy(&b, &g[c], 4);
      if (b == 0xffffffffu) unwritten++;
      if (b != b0) differ++;
      double e = fabs((double)g[c] - want[row]) / want[row];
      if (!(e <= ref_rmsnorm_rtol(HR_F32))) bad++;
      if (e > worst) worst = e;
    }
  }
  int n = snprintf(line, len, "rstd of %d CTA(s) per row: %zu differ from their cluster's first CTA, %zu outside "
                   "rtol %.1e (max rel err %.3g), %zu unwritten", r->cluster, differ, bad, ref_rmsnorm_rtol(HR_F32),
                   worst, unwritten);
  if (n < 0 || (size_t)n >= len) snprintf(line, len, "rstd: %zu differ, %zu bad, %zu unwritten", differ, bad, unwritten);
  return differ || unwritten || bad;
}

/* h must equal the reference to the bit.  An element the kernel never wrote still holds r's
 * input, which differs from x + r wherever x is not below half an ulp of r. */
static size_t compare_h(const rms_run *r, const void *got, const void *want, size_t *first) {
  size_t bad = 0;
  for (size_t i = 0; i < r->n; i++)
    if (memcmp((const char *)got + i * r->esz, (const char *)want + i * r->esz, r->esz)) {
      if (!bad) *first = i;
      bad++;
    }
  return bad;
}

static int check(rms_run *r, const void *hx, const void *hr, const void *hw) {
  size_t bytes = r->n * r->esz;
  void *got = malloc(bytes), *goth = r->residual ? malloc(bytes) : NULL, *wanth = r->residual ? malloc(bytes) : NULL;
  double *want = malloc(r->n * sizeof *want), *rs = malloc((size_t)r->rows * sizeof *rs);
  float *gotr = r->cta_rstd ? malloc((size_t)r->rows * (size_t)r->cluster * 4) : NULL;
  int bad = -1;
  if (!got || !want || !rs || (r->residual && (!goth || !wanth)) || (r->cta_rstd && !gotr)) {
    fprintf(stderr, "weft run: out of host memory\n");
    goto out;
  }
  if (!cu_ok(D->cuMemcpyDtoH(got, r->y[0], bytes), "cuMemcpyDtoH")) goto out;
  if (r->residual && !cu_ok(D->cuMemcpyDtoH(goth, r->r[0], bytes), "cuMemcpyDtoH")) goto out;
  if (r->cta_rstd && !cu_ok(D->cuMemcpyDtoH(gotr, r->rstd, (size_t)r->rows * (size_t)r->cluster * 4), "cuMemcpyDtoH"))
    goto out;
  ref_rmsnorm(r->dt, hx, r->residual ? hr : NULL, hw, r->rows, r->cols, r->eps, wanth, want, rs);
  hr_report rep;
  double atol = ref_rmsnorm_atol(r->dt);
  bad = hr_compare(r->dt, got, want, r->n, &atol, 1, ref_rmsnorm_rtol(r->dt), &rep);
  char line[512], hline[256] = "", rline[512] = "";
  hr_report_format(&rep, line, sizeof line);
  if (r->residual) {
    size_t first = 0, nb = compare_h(r, goth, wanth, &first);
    int n = nb ? snprintf(hline, sizeof hline, "; h: %zu/%zu differ from x + r, first at [%zu]: got %.9g want %.9g", nb,
                          r->n, first, hr_load(r->dt, goth, first), hr_load(r->dt, wanth, first))
               : snprintf(hline, sizeof hline, "; h: all %zu bit-exact", r->n);
    if (n < 0 || (size_t)n >= sizeof hline) snprintf(hline, sizeof hline, "; h: %zu differ", nb);
    if (nb) bad = 1;
  }
  if (r->cta_rstd) {
    char t[400];
    if (check_cta_rstd(r, gotr, rs, t, sizeof t)) bad = 1;
    int n = snprintf(rline, sizeof rline, "; %s", t);
    if (n < 0 || (size_t)n >= sizeof rline) rline[0] = 0;
  }
  if (r->o->result) { r->o->result->checked = 1; r->o->result->passed = !bad; }
  if (!r->o->quiet || bad) printf("check: %s: %s (y: %s%s%s)\n", r->m->name, bad ? "FAIL" : "PASS", line, hline, rline);
out:
  free(got); free(goth); free(wanth); free(want); free(rs); free(gotr);
  return bad;
}

/* One shape: check it (do_check) and time it (do_time). */
static int run_shape(weft_kernel *k, const run_opts *o, const weft_shape *sh, int do_check, int do_time, void *ud) {
  (void)ud;
  const weft_manifest *m = weft_kernel_manifest(k);
  rms_run r = {.o = o, .k = k, .m = m};
  const char *res = weft_manifest_param(m, "residual"), *cr = weft_manifest_param(m, "cta_rstd");
  const char *ev = weft_manifest_param(m, "eps.value"), *cl = weft_manifest_param(m, "cluster");
  if (hr_dtype_parse(weft_manifest_param(m, "dtype"), &r.dt) || !res || !cr || !ev || !cl) {
    fprintf(stderr, "weft run: %s: the manifest lacks rmsnorm's params (dtype, residual, cta_rstd, eps, cluster)\n", m->name);
    return CLI_FAIL;
  }
  r.residual = !strcmp(res, "true");
  r.cta_rstd = !strcmp(cr, "true");
  r.cluster = atoi(cl);
  int eps_arg = !strcmp(ev, "arg");
  r.eps = eps_arg ? RMS_ARG_EPS : strtof(ev, NULL);
  r.rows = (int32_t)cli_size(m, sh, "rows");   /* within the kernel's limits: an int */
  r.cols = (int32_t)cli_size(m, sh, "cols");
  r.esz = hr_dtype_size(r.dt);
  r.n = (size_t)r.rows * (size_t)r.cols;
  size_t bytes = r.n * r.esz, wbytes = (size_t)r.cols * r.esz, rbytes = (size_t)r.rows * (size_t)r.cluster * 4;
  int nsets = do_time ? measure_rotation_sets(bytes * (r.residual ? 3 : 2)) : 1;
  if (nsets > RMS_MAX_SETS) nsets = RMS_MAX_SETS;
  void *hx = malloc(bytes), *hr = r.residual ? malloc(bytes) : NULL, *hw = malloc(wbytes);
  int rc = CLI_FAIL;
  CUdeviceptr csrc = 0, cdst = 0;
  if (!hx || !hw || (r.residual && !hr)) { fprintf(stderr, "weft run: out of host memory for %zu bytes\n", bytes); goto out; }
  hr_fill_uniform(r.dt, hx, r.n, o->seed, -1.0, 1.0);
  hr_fill_uniform(r.dt, hw, (size_t)r.cols, hr_mix64(o->seed ^ 0x77), -2.0, 2.0);
  if (r.residual) hr_fill_uniform(r.dt, hr, r.n, hr_mix64(o->seed ^ 0x72), -1.0, 1.0);
  if (!(r.w = cli_dev_alloc(D, wbytes)) || !cu_ok(D->cuMemcpyHtoD(r.w, hw, wbytes), "cuMemcpyHtoD")) goto out;
  if (r.cta_rstd && (!(r.rstd = cli_dev_alloc(D, rbytes)) || !cu_ok(D->cuMemsetD8(r.rstd, 0xff, rbytes), "cuMemsetD8")))
    goto out;
  for (int s = 0; s < nsets; s++) {
    if (!(r.x[s] = cli_dev_alloc(D, bytes)) || !(r.y[s] = cli_dev_alloc(D, bytes))) goto out;
    if (!cu_ok(D->cuMemcpyHtoD(r.x[s], hx, bytes), "cuMemcpyHtoD")) goto out;
    if (!cu_ok(D->cuMemsetD8(r.y[s], 0xff, bytes), "cuMemsetD8")) goto out;   /* poison */
    if (r.residual && (!(r.r[s] = cli_dev_alloc(D, bytes)) || !cu_ok(D->cuMemcpyHtoD(r.r[s], hr, bytes), "cuMemcpyHtoD")))
      goto out;
    const char *names[] = {"y", "x", "w", "r", "rstd", "eps", "rows", "cols"};
    void *vals[] = {&r.y[s], &r.x[s], &r.w, &r.r[s], &r.rstd, &r.eps, &r.rows, &r.cols};
    if (cli_bind_args(m, r.args[s], names, vals, 8)) goto out;
  }
  if (!o->quiet)
    printf("run: %s rows=%d cols=%d (%s%s, eps %g%s)\n", m->name, r.rows, r.cols, hr_dtype_name(r.dt),
           r.residual ? ", residual" : "", (double)r.eps, eps_arg ? " as an argument" : "");
  if (weft_launch(k, r.args[0], NULL)) { fprintf(stderr, "weft run: %s\n", weft_kernel_error(k)); goto out; }
  if (!cu_ok(D->cuCtxSynchronize(), "the kernel")) goto out;
  if (do_check && check(&r, hx, hr, hw)) goto out;
  if (do_time) {
    /* moved: x read, y written, w read once; with the residual r read and h written */
    double moved = (double)(bytes * (r.residual ? 4 : 2) + wbytes + (r.cta_rstd ? rbytes : 0));
    size_t copy_bytes = (size_t)(moved / 2);   /* a copy moves its bytes twice: read + write */
    if (!(csrc = cli_dev_alloc(D, copy_bytes)) || !(cdst = cli_dev_alloc(D, copy_bytes))) goto out;
    measure_copy cp = {.src = csrc, .dst = cdst, .bytes = copy_bytes, .d = D};
    /* as the row families: each launch alone, the median, rotating the input sets */
    measure_op ops[2] = {{rms_launch, &r, nsets, NULL}, {measure_copy_launch, &cp, 1, NULL}};
    measure_plan plan = {.iters = o->iters, .warmup = o->warmup, .each = 1, .rounds = 1};
    measure_result res[2];
    char err[512];
    if (measure_run(D, &plan, &ops[0], 1, &res[0], err, sizeof err) ||
        measure_run(D, &plan, &ops[1], 1, &res[1], err, sizeof err)) {
      fprintf(stderr, "weft run: %s: timing: %s\n", m->name, err);
      goto out;
    }
    double ms = res[0].ev_us / 1e3, cms = res[1].ev_us / 1e3;
    cli_report_bandwidth(o, m->name, ms, moved, cms, (double)copy_bytes);
  }
  rc = CLI_OK;
out:
  for (int s = 0; s < RMS_MAX_SETS; s++) {
    if (r.x[s]) D->cuMemFree(r.x[s]);
    if (r.y[s]) D->cuMemFree(r.y[s]);
    if (r.r[s]) D->cuMemFree(r.r[s]);
  }
  if (r.w) D->cuMemFree(r.w);
  if (r.rstd) D->cuMemFree(r.rstd);
  if (csrc) D->cuMemFree(csrc);
  if (cdst) D->cuMemFree(cdst);
  free(hx); free(hr); free(hw);
  return rc;
}
static int run_rmsnorm(weft_kernel *k, const run_opts *o) {
  if (!(D = drv_get(NULL, 0))) { fprintf(stderr, "weft run: no driver\n"); return CLI_NO_GPU; }
  return cli_each_shape(k, o, run_shape, NULL);
}
WEFT_RUNNER(rmsnorm, run_rmsnorm)
