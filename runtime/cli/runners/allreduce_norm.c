/* runners/allreduce_norm.c: `weft run` for family allreduce_norm, on every rank of an MPI job (one
 * process is a world of one).
 *   check: for each shape (tokens x hidden, odd ones included), random x on every rank, the same r and w
 *          on all of them, y poisoned; against runtime/check/ref_allreduce_norm (h to the bit, y within
 *          one rounding); in place (y = x) to the same bits; 100 back-to-back launches (epochs and
 *          halves reused, r restored before each) to the same bits; with pdl, ten chained pairs; and
 *          every rank holding the same y and h (SHA-256 compared).  quant = "fp8_e4m3": y's codes and the
 *          scales against runtime/check/ref_fp8 (a correct rounding of the reference's y / scale); no in
 *          place (y is not x's type), and the pdl chain runs through r (the second launch's residual is
 *          the first's h).
 *   time:  the fused launch beside the unfused sequence it replaces (weft's allreduce, then weft's
 *          rmsnorm with the residual, the same layout), and each of those alone: CUDA events around
 *          back-to-back launches, the slowest rank, the median of 5 rounds. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_run.h"
#include "driver.h"
#include "hostref.h"
#include "ranks.h"
#include "ref_allreduce_norm.h"
#include "ref_fp8.h"
#include "runner.h"

/* eps = "arg": large beside mean(h^2), so a kernel that ignored it would fail (as rmsnorm's runner) */
#define ARN_ARG_EPS 0.3125f

static const drv_table *D;
static int RANK, SIZE;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, RANK, r, what); }

typedef struct arn_run {
  const run_opts *o;
  weft_kernel *k;
  weft_comm *c;
  const weft_manifest *m;
  hr_dtype dt;
  size_t es;
  int residual, pdl, fp8;
  float eps;
  int32_t rows, cols;
  size_t n;
  long long max_n;   /* the most rows * cols of any shape this run checks or times */
  CUdeviceptr x, y, z, r, r0, r2, w, sc, sc2;   /* sc, sc2: fp8's scales for y and z */
} arn_run;

/* y's bytes: the codes (fp8) or dtype's */
static size_t y_bytes(const arn_run *a) { return a->n * (a->fp8 ? 1 : a->es); }

static uint64_t data_seed(const arn_run *a, int rank) {
  return comm_run_seed(a->o->seed, rank, (long long)a->n) + (uint64_t)a->cols;
}
static void fill_rank(void *ud, int rank, size_t n, void *dst) {
  hr_fill_uniform(((arn_run *)ud)->dt, dst, n, data_seed(ud, rank), -1.0, 1.0);
}
/* the pdl chain's second launch reduces the y every rank holds */
typedef struct same_input { const void *y; size_t bytes; } same_input;
static void fill_same(void *ud, int rank, size_t n, void *dst) {
  (void)rank;
  (void)n;
  memcpy(dst, ((same_input *)ud)->y, ((same_input *)ud)->bytes);
}

static int launch(arn_run *a, CUdeviceptr y, CUdeviceptr x, CUdeviceptr r) {
  CUdeviceptr sc = y == a->z ? a->sc2 : a->sc;
  const char *names[] = {"y", "x", "w", "r", "eps", "rows", "cols", "scale"};
  void *vals[] = {&y, &x, &a->w, &r, &a->eps, &a->rows, &a->cols, &sc};
  void *args[16];
  if (a->m->n_args > 16 || cli_bind_args(a->m, args, names, vals, 8)) return -1;
  return cli_comm_launch(a->c, args, NULL, RANK);
}

/* wait for the device; a timed-out signal becomes this rank's error */
static int finish(weft_comm *c) { return cli_comm_finish(D, RANK, D->cuCtxSynchronize(), "the allreduce_norm kernel", c); }

static int restore_r(arn_run *a, CUdeviceptr r) {
  return a->residual ? !cu_ok(D->cuMemcpyDtoDAsync(r, a->r0, a->n * a->es, NULL), "cuMemcpyDtoDAsync") : 0;
}

/* y (device; fp8: its codes, then the rows' scales after them in got) */
static int fetch_y(const arn_run *a, CUdeviceptr y, void *got) {
  if (!cu_ok(D->cuMemcpyDtoH(got, y, y_bytes(a)), "cuMemcpyDtoH")) return -1;
  if (a->fp8 && !cu_ok(D->cuMemcpyDtoH((char *)got + y_bytes(a), y == a->z ? a->sc2 : a->sc, (size_t)a->rows * 4),
                       "cuMemcpyDtoH"))
    return -1;
  return 0;
}
/* what fetch_y fetches, in bytes */
static size_t got_bytes(const arn_run *a) { return y_bytes(a) + (a->fp8 ? (size_t)a->rows * 4 : 0); }

/* y (device) against the reference, and h (device, written over r) to the bit; one line on a failure */
static int compare(const arn_run *a, const char *what, CUdeviceptr y, CUdeviceptr r, const double *want,
                   const void *wanth, void *got, void *goth) {
  size_t bytes = a->n * a->es;
  if (fetch_y(a, y, got)) return -1;
  if (a->residual && !cu_ok(D->cuMemcpyDtoH(goth, r, bytes), "cuMemcpyDtoH")) return -1;
  hr_report rep;
  char line[512];
  int bad;
  if (a->fp8) {
    float *sc = malloc((size_t)a->rows * sizeof *sc);
    if (!sc) { fprintf(stderr, "weft run: rank %d: out of host memory\n", RANK); return -1; }
    memcpy(sc, (const char *)got + y_bytes(a), (size_t)a->rows * sizeof *sc);   /* after the codes: unaligned */
    bad = ref_fp8_check(want, a->rows, a->cols, got, sc, line, sizeof line) != 0;
    free(sc);
  } else {
    double atol = ref_rmsnorm_atol(a->dt);
    bad = hr_compare(a->dt, got, want, a->n, &atol, 1, ref_rmsnorm_rtol(a->dt), &rep);
    if (bad) hr_report_format(&rep, line, sizeof line);
  }
  size_t hbad = 0, first = 0;
  for (size_t i = 0; a->residual && i < a->n; i++)
    if (memcmp((const char *)goth + i * a->es, (const char *)wanth + i * a->es, a->es)) {
      if (!hbad) first = i;
      hbad++;
    }
  if (bad || hbad) {
    if (!bad) snprintf(line, sizeof line, "%s", a->fp8 ? "codes and scales pass" : "passes");
    fprintf(stderr, "check: rank %d: %s rows=%d cols=%d %s: FAIL (y: %s; h: %zu of %zu differ from the reference%s",
            RANK, a->m->name, a->rows, a->cols, what, line, hbad, a->n, hbad ? ", first at " : ")\n");
    if (hbad)
      fprintf(stderr, "[%zu]: got %.9g want %.9g)\n", first, hr_load(a->dt, goth, first), hr_load(a->dt, wanth, first));
  }
  return bad || hbad ? -1 : 0;
}

/* pdl: z = f(y) launched right behind y = f(x), y and z poisoned before each pair; a launch that read
 * its input before its griddepcontrol.wait would reduce the first's unfinished y.  fp8 (y is codes,
 * not an input): z = f(x) with the first's h as its residual, r poisoned-free but rewritten by the
 * first, so a launch that read r early would add the old residual. */
static int check_chain(arn_run *a, const void *hr0, const void *hw) {
  size_t bytes = a->n * a->es;
  void *hy = malloc(bytes), *s = malloc(bytes), *h = malloc(bytes), *got = malloc(got_bytes(a) > bytes ? got_bytes(a) : bytes);
  void *goth = malloc(bytes);
  double *want = malloc(a->n * sizeof *want);
  int ok = hy && s && h && got && goth && want;
  if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the pdl chain\n", RANK);
  for (int pair = 0; pair < 10 && ok; pair++) {
    ok = cu_ok(D->cuMemsetD8(a->y, 0xff, y_bytes(a)), "cuMemsetD8") &&
         cu_ok(D->cuMemsetD8(a->z, 0xff, y_bytes(a)), "cuMemsetD8") && !restore_r(a, a->r) && !restore_r(a, a->r2);
    if (ok && a->fp8)
      ok = !launch(a, a->y, a->x, a->r) && !launch(a, a->z, a->x, a->r) && !finish(a->c);
    else if (ok)
      ok = !launch(a, a->y, a->x, a->r) && !launch(a, a->z, a->y, a->r2) && !finish(a->c) &&
           cu_ok(D->cuMemcpyDtoH(hy, a->y, bytes), "cuMemcpyDtoH");
    if (!ok) break;
    if (a->fp8) {   /* the second's residual: the first's h (without a residual the two are independent) */
      ok = !ref_allreduce_norm(a->dt, SIZE, a->rows, a->cols, fill_rank, a, a->residual ? hr0 : NULL, hw, a->eps, s,
                               a->residual ? h : NULL, want) &&
           (!a->residual || !ref_allreduce_norm(a->dt, SIZE, a->rows, a->cols, fill_rank, a, h, hw, a->eps, s, hy, want)) &&
           !compare(a, "pdl chain (the second's residual the first's h)", a->z, a->r, want, hy, got, goth);
      continue;
    }
    same_input si = {hy, bytes};
    ok = !ref_allreduce_norm(a->dt, SIZE, a->rows, a->cols, fill_same, &si, a->residual ? hr0 : NULL, hw, a->eps, s,
                             a->residual ? h : NULL, want) &&
         !compare(a, "pdl chain (z = f(y) right behind y = f(x))", a->z, a->r2, want, h, got, goth);
  }
  free(hy); free(s); free(h); free(got); free(goth); free(want);
  return ok;
}

/* One shape.  Each step ends with every rank's verdict, so a rank that fails never leaves the others
 * waiting for its signals in the next launch. */
static int check_shape(arn_run *a) {
  size_t bytes = a->n * a->es, wbytes = (size_t)a->cols * a->es;
  void *hx = malloc(bytes), *hr0 = malloc(bytes), *hw = malloc(wbytes), *s = malloc(bytes), *wanth = malloc(bytes);
  size_t gbytes = got_bytes(a);   /* y as fetch_y has it */
  void *got = malloc(gbytes > bytes ? gbytes : bytes), *goth = malloc(bytes), *first = malloc(gbytes), *firsth = malloc(bytes);
  double *want = malloc(a->n * sizeof *want);
  int ok = hx && hr0 && hw && s && wanth && got && goth && first && firsth && want;
  char who[256];
  if (ok) {
    fill_rank(a, RANK, a->n, hx);
    hr_fill_uniform(a->dt, hr0, a->n, hr_mix64(a->o->seed ^ 0x72 ^ a->n), -1.0, 1.0);   /* the same on every rank */
    hr_fill_uniform(a->dt, hw, (size_t)a->cols, hr_mix64(a->o->seed ^ 0x77), -2.0, 2.0);
    ok = !ref_allreduce_norm(a->dt, SIZE, a->rows, a->cols, fill_rank, a, a->residual ? hr0 : NULL, hw, a->eps, s,
                             a->residual ? wanth : NULL, want) &&
         cu_ok(D->cuMemcpyHtoD(a->x, hx, bytes), "cuMemcpyHtoD") && cu_ok(D->cuMemcpyHtoD(a->r0, hr0, bytes), "cuMemcpyHtoD") &&
         cu_ok(D->cuMemcpyHtoD(a->w, hw, wbytes), "cuMemcpyHtoD") && cu_ok(D->cuMemsetD8(a->y, 0xff, y_bytes(a)), "cuMemsetD8") &&
         (!a->fp8 || cu_ok(D->cuMemsetD8(a->sc, 0xff, (size_t)a->rows * 4), "cuMemsetD8")) && !restore_r(a, a->r);
    if (!ok) fprintf(stderr, "weft run: rank %d: cannot set up rows=%d cols=%d\n", RANK, a->rows, a->cols);
  }
  if (!ranks_all(ok)) goto out;
  ok = !launch(a, a->y, a->x, a->r) && !finish(a->c) && !compare(a, "out of place", a->y, a->r, want, wanth, first, firsth);
  if (!ranks_all(ok)) goto out;
  /* in place: z holds x, then z = f(z) (not with fp8: y is another type than x) */
  if (!a->fp8) {
    ok = cu_ok(D->cuMemcpyHtoD(a->z, hx, bytes), "cuMemcpyHtoD") && !restore_r(a, a->r) && !launch(a, a->z, a->z, a->r) &&
         !finish(a->c) && !compare(a, "in place (y = x)", a->z, a->r, want, wanth, got, goth);
    if (ok && (memcmp(first, got, bytes) || (a->residual && memcmp(firsth, goth, bytes)))) {
      fprintf(stderr, "check: rank %d: rows=%d cols=%d: in place and out of place differ in bits\n", RANK, a->rows, a->cols);
      ok = 0;
    }
    if (!ranks_all(ok)) goto out;
  }
  /* back to back: the epochs advance and the halves alternate; the bits must not move */
  ok = cu_ok(D->cuMemsetD8(a->y, 0xff, y_bytes(a)), "cuMemsetD8") &&
       (!a->fp8 || cu_ok(D->cuMemsetD8(a->sc, 0xff, (size_t)a->rows * 4), "cuMemsetD8"));
  for (int i = 0; i < 100 && ok; i++) ok = !restore_r(a, a->r) && !launch(a, a->y, a->x, a->r);
  ok = ok && !finish(a->c) && !fetch_y(a, a->y, got) &&
       (!a->residual || cu_ok(D->cuMemcpyDtoH(goth, a->r, bytes), "cuMemcpyDtoH"));
  if (ok && (memcmp(first, got, gbytes) || (a->residual && memcmp(firsth, goth, bytes)))) {
    fprintf(stderr, "check: rank %d: rows=%d cols=%d: 100 back-to-back launches changed the result\n", RANK, a->rows, a->cols);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (a->pdl) {
    ok = check_chain(a, hr0, hw);
    if (!ranks_all(ok)) goto out;
  }
  /* bit-identity across ranks: y and h */
  if (!ranks_same_bytes(first, gbytes, who, sizeof who) || (a->residual && !ranks_same_bytes(firsth, bytes, who, sizeof who))) {
    if (RANK == 0) fprintf(stderr, "check: rows=%d cols=%d: ranks %s hold different bits from rank 0\n", a->rows, a->cols, who);
    ok = 0;
  }
out:
  free(hx); free(hr0); free(hw); free(s); free(wanth); free(got); free(goth); free(first); free(firsth); free(want);
  return ok;
}

/* ---- timing: the fused kernel beside the unfused sequence ------------------------------------- */

/* The unfused pieces, compiled from configs built from this kernel's params (not user text: the
 * manifest's own values, each checked against its allowed set by the generator that made it). */
typedef struct unfused {
  weft_kernel *ar, *rms;
  weft_comm *arc;
  void *rms_args[10];
  int32_t n32;
  long long n;
} unfused;

static int param_copy(const weft_manifest *m, const char *key, char *out, size_t len) {
  const char *v = weft_manifest_param(m, key);
  int n = v ? snprintf(out, len, "%s", v) : -1;
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int unfused_open(arn_run *a, weft_world *w, unfused *u) {
  const weft_manifest *m = a->m;
  char dt[16], algo[16], th[16], rpc[16], cl[16], mb[16], ex[16], eps[64], mc[32], np[16], text[1024];
  if (param_copy(m, "dtype", dt, sizeof dt) || param_copy(m, "algo", algo, sizeof algo) ||
      param_copy(m, "threads", th, sizeof th) || param_copy(m, "rows_per_cta", rpc, sizeof rpc) ||
      param_copy(m, "cluster", cl, sizeof cl) || param_copy(m, "min_blocks", mb, sizeof mb) ||
      param_copy(m, "exchange", ex, sizeof ex) || param_copy(m, "eps.value", eps, sizeof eps) ||
      param_copy(m, "max_cols", mc, sizeof mc) || param_copy(m, "nonportable", np, sizeof np)) {
    fprintf(stderr, "weft run: %s: the manifest lacks allreduce_norm's params\n", m->name);
    return -1;
  }
  /* one_shot_ll's allreduce stops at 2M elements (gen/families/allreduce.lua LL_MAX): one_shot beyond */
  if (!strcmp(algo, "one_shot_ll") && a->max_n > (1 << 21)) snprintf(algo, sizeof algo, "one_shot");
  int n = snprintf(text, sizeof text, "return { family = \"allreduce\", dtype = \"%s\", algo = \"%s\", threads = 512 }",
                   dt, algo);
  if (n < 0 || (size_t)n >= sizeof text || weft_compile_string(a->o->ctx, "unfused allreduce", text, NULL, 0, &u->ar)) {
    fprintf(stderr, "weft run: rank %d: the unfused allreduce: %s\n", RANK, weft_ctx_error(a->o->ctx));
    return -1;
  }
  int eps_arg = !strcmp(eps, "arg");
  n = snprintf(text, sizeof text,
               "return { family = \"rmsnorm\", dtype = \"%s\", residual = %s, eps = %s, max_cols = %s, cluster = %s, "
               "nonportable = %s, threads = %s, rows_per_cta = %s, min_blocks = %s, exchange = \"%s\" }",
               dt, a->residual ? "true" : "false", eps_arg ? "\"arg\"" : eps, mc, cl, np, th, rpc, mb, ex);
  if (n < 0 || (size_t)n >= sizeof text || weft_compile_string(a->o->ctx, "unfused rmsnorm", text, NULL, 0, &u->rms)) {
    fprintf(stderr, "weft run: rank %d: the unfused rmsnorm: %s\n", RANK, weft_ctx_error(a->o->ctx));
    return -1;
  }
  return comm_run_comm(u->ar, w, a->max_n, RANK, &u->arc);
}

typedef struct arn_timed { arn_run *a; unfused *u; int which; } arn_timed;
enum { T_FUSED, T_UNFUSED, T_ALLREDUCE, T_RMSNORM, T_N };

static int ar_only(arn_timed *t) {
  return comm_run_launch_yxn(weft_kernel_manifest(t->u->ar), t->u->arc, t->a->z, t->a->x, t->u->n, RANK);
}
static int rms_only(arn_timed *t) {
  if (weft_launch(t->u->rms, t->u->rms_args, NULL) == WEFT_OK) return 0;
  fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_kernel_error(t->u->rms));
  return -1;
}

static int arn_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  (void)set;
  (void)s;
  (void)len;
  arn_timed *t = ud;
  err[0] = 0;   /* the launches say why on stderr themselves */
  switch (t->which) {
  case T_FUSED: return launch(t->a, t->a->y, t->a->x, t->a->r);
  case T_UNFUSED: return ar_only(t) || rms_only(t) ? -1 : 0;
  case T_ALLREDUCE: return ar_only(t);
  default: return rms_only(t);
  }
}
static int arn_finish(void *ud, CUstream s, char *err, size_t len) {
  (void)s;
  (void)len;
  arn_timed *t = ud;
  err[0] = 0;
  return finish(t->a->c) || finish(t->u->arc) ? -1 : 0;
}

static int time_shape(arn_run *a, unfused *u) {
  const weft_manifest *rm = weft_kernel_manifest(u->rms);
  const char *names[] = {"y", "x", "w", "r", "eps", "rows", "cols"};
  void *vals[] = {&a->y, &a->z, &a->w, &a->r2, &a->eps, &a->rows, &a->cols};
  u->n = (long long)a->n;
  if (cli_bind_args(rm, u->rms_args, names, vals, 7)) return -1;
  arn_timed t[T_N];
  measure_op ops[T_N];
  for (int i = 0; i < T_N; i++) {
    t[i] = (arn_timed){a, u, i};
    ops[i] = (measure_op){arn_launch, &t[i], 1, arn_finish};
  }
  measure_result res[T_N];
  if (comm_run_time(D, RANK, ops, T_N, a->n * a->es <= (1u << 20) ? a->o->iters * 4 : a->o->iters, res)) return -1;
  double f = res[T_FUSED].ev_us, un = res[T_UNFUSED].ev_us;
  if (RANK == 0)
    printf("%8d %7d %12zu %10.2f %12.2f %10.2f %10.2f %9.3f %11.2f\n", a->rows, a->cols, a->n * a->es, f, un,
           res[T_ALLREDUCE].ev_us, res[T_RMSNORM].ev_us, f / un, f - res[T_RMSNORM].ev_us);
  fflush(stdout);
  if (a->o->result) { a->o->result->timed = 1; a->o->result->us = f; a->o->result->metric = f; }
  return 0;
}

static int alloc_all(arn_run *a, size_t bytes, size_t wbytes, size_t max_rows) {
  CUdeviceptr *bufs[] = {&a->x, &a->y, &a->z, &a->r, &a->r0, &a->r2};
  for (int i = 0; i < 6; i++)
    if (!cu_ok(D->cuMemAlloc(bufs[i], bytes), "cuMemAlloc")) return 0;
  if (a->fp8 && (!cu_ok(D->cuMemAlloc(&a->sc, max_rows * 4), "cuMemAlloc") ||
                 !cu_ok(D->cuMemAlloc(&a->sc2, max_rows * 4), "cuMemAlloc")))
    return 0;
  return cu_ok(D->cuMemAlloc(&a->w, wbytes), "cuMemAlloc");
}

static int run_allreduce_norm(weft_kernel *k, const run_opts *o) {
  ranks_ensure();   /* MPI stays up until exit: `weft tune` runs many kernels in one process */
  MPI_Comm_rank(MPI_COMM_WORLD, &RANK);
  MPI_Comm_size(MPI_COMM_WORLD, &SIZE);
  D = drv_get(NULL, 0);
  arn_run a = {.o = o, .k = k, .m = weft_kernel_manifest(k)};
  const char *res = weft_manifest_param(a.m, "residual"), *ev = weft_manifest_param(a.m, "eps.value");
  const char *pdl = weft_manifest_param(a.m, "pdl"), *quant = weft_manifest_param(a.m, "quant");
  if (hr_dtype_parse(weft_manifest_param(a.m, "dtype"), &a.dt) || !res || !ev || !pdl || !quant) {
    fprintf(stderr, "weft run: %s: the manifest lacks allreduce_norm's params (dtype, residual, eps, pdl, quant)\n",
            a.m->name);
    return CLI_FAIL;
  }
  a.fp8 = !strcmp(quant, "fp8_e4m3");
  a.es = hr_dtype_size(a.dt);
  a.residual = !strcmp(res, "true");
  a.pdl = !strcmp(pdl, "true");
  a.eps = !strcmp(ev, "arg") ? ARN_ARG_EPS : strtof(ev, NULL);
  int rc = CLI_FAIL;
  weft_world *w = NULL;
  unfused u = {0};
  long long max_n = 1, max_cols = 1, max_rows = 1;
  for (int pass = 0; pass < 2; pass++) {
    int cnt = pass ? (o->timing ? o->n_time : 0) : (o->check ? o->n_check : 0);
    const weft_shape *sh = pass ? o->time_shapes : o->check_shapes;
    for (int i = 0; i < cnt; i++) {
      long long rows = cli_size(a.m, &sh[i], "rows"), cols = cli_size(a.m, &sh[i], "cols");
      if (rows * cols > max_n) max_n = rows * cols;
      if (cols > max_cols) max_cols = cols;
      if (rows > max_rows) max_rows = rows;
    }
  }
  a.max_n = max_n;
  if (comm_run_open(k, max_n, RANK, &w, &a.c)) goto out;
  if (!ranks_all(alloc_all(&a, (size_t)max_n * a.es, (size_t)max_cols * a.es, (size_t)max_rows))) goto out;
  if (RANK == 0) comm_run_print(a.m, a.c, SIZE);
  if (o->check && o->n_check) {
    for (int i = 0; i < o->n_check; i++) {
      a.rows = (int32_t)cli_size(a.m, &o->check_shapes[i], "rows");
      a.cols = (int32_t)cli_size(a.m, &o->check_shapes[i], "cols");
      a.n = (size_t)a.rows * (size_t)a.cols;
      if (!ranks_all(check_shape(&a))) {
        if (RANK == 0) printf("check: %s: FAIL at rows=%d cols=%d (rank messages above)\n", a.m->name, a.rows, a.cols);
        goto out;
      }
    }
    if (RANK == 0)
      printf("check: %s: PASS (%d shape%s; %s, h to the bit; %s, 100 back-to-back launches, %sbit-identical on all "
             "%d ranks)\n", a.m->name, o->n_check, o->n_check == 1 ? "" : "s",
             a.fp8 ? "y's E4M3 codes and scales as ref_fp8 rounds" : "y within one rounding",
             a.fp8 ? "out of place" : "out of place and in place", a.pdl ? "10 chained pdl pairs, " : "", SIZE);
    if (o->result) { o->result->checked = 1; o->result->passed = 1; }
  }
  if (o->timing && o->n_time) {
    if (!ranks_all(!unfused_open(&a, w, &u))) goto out;
    if (RANK == 0)
      printf("time: %s, %d ranks; CUDA events around back-to-back launches, the slowest rank, median of %d rounds; "
             "unfused = weft allreduce then weft rmsnorm (same layout)\n"
             "%8s %7s %12s %10s %12s %10s %10s %9s %11s\n", a.m->name, SIZE, COMM_RUN_ROUNDS, "tokens", "hidden", "bytes",
             "fused_us", "unfused_us", "ar_us", "rms_us", "fused/un", "fused-rms");
    for (int i = 0; i < o->n_time; i++) {
      a.rows = (int32_t)cli_size(a.m, &o->time_shapes[i], "rows");
      a.cols = (int32_t)cli_size(a.m, &o->time_shapes[i], "cols");
      a.n = (size_t)a.rows * (size_t)a.cols;
      if (!ranks_all(!restore_r(&a, a.r) && !restore_r(&a, a.r2) && cu_ok(D->cuCtxSynchronize(), "sync"))) goto out;
      if (time_shape(&a, &u)) goto out;
    }
  }
  rc = CLI_OK;
out:
  {
    CUdeviceptr bufs[] = {a.x, a.y, a.z, a.r, a.r0, a.r2, a.w, a.sc, a.sc2};
    for (int i = 0; i < 9; i++)
      if (bufs[i]) D->cuMemFree(bufs[i]);
  }
  if (u.arc) weft_comm_destroy(u.arc);
  if (u.ar) weft_kernel_destroy(u.ar);
  if (u.rms) weft_kernel_destroy(u.rms);
  comm_run_close(w, a.c);
  return ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
}

WEFT_RUNNER(allreduce_norm, run_allreduce_norm)
