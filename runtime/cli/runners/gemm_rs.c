/* runners/gemm_rs.c: `weft run` for the gemm_rs family (GEMM + reduce-scatter) and gemm_ar (GEMM +
 * allreduce), on every rank of an MPI job (one process is a world of one).  Rank r holds A_r
 * (M x k, its K shard; k = the size argument) and B_r (k x N, "row"; N x k, "col"); it ends with
 * rows r*M/P .. (r+1)*M/P - 1 of sum_p A_p . B_p (gemm_rs), or all of it (gemm_ar).
 *   check: per shape, every rank regenerates every rank's A_p and B_p from the seed (no
 *          communication for the reference), so the reference is one GEMM over the full K = P k
 *          (A = [A_0 .. A_P-1] side by side, B = the B_p stacked: runtime/check/ref_gemm.c in
 *          double, this rank's rows, every element or sampled rows); C poisoned; then 100
 *          back-to-back launches must reproduce the bits, and so must a second run of 100;
 *          gemm_ar: every rank must hold the same bytes.  gemm_rs's reduce = "atomic" (the
 *          manifest's params say which) is not bit-stable: the adds land in the order they arrive,
 *          so from P = 3 on the bits may move between runs and that check is skipped, saying so;
 *          at P <= 2 the order cannot matter (0 + x + y = 0 + y + x exactly), so it stays.  Either
 *          way each run's last result is held to the reference's tolerance too (a staging not
 *          zeroed between epochs would double the sum).
 *   time:  per shape, the fused kernel beside the unfused sequence (weft's gemm with the same
 *          schedule, then weft's reduce_scatter / allreduce), and each piece alone, in alternating
 *          rounds (runtime/measure/'s policy, the slowest rank).
 * The GEMM's tolerance holds: the partials are f32 and the sum is rounded once. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm_run.h"
#include "driver.h"
#include "hostref.h"
#include "internal.h"
#include "measure.h"
#include "ranks.h"
#include "ref_gemm.h"
#include "runner.h"

#define RS_LAUNCHES 100

typedef struct rs_run {
  const run_opts *o;
  weft_kernel *k;
  const weft_manifest *m;
  const drv_table *d;
  weft_world *w;
  weft_comm *comm;
  CUstream s;
  hr_dtype dt;
  size_t es;
  int bcol, rank, size;
  int gather;              /* gemm_ar: every rank gets all M rows */
  int atomic;              /* gemm_rs reduce = "atomic": the sum's order depends on timing */
  const char *fam;
  long long M, N, K, Ms;   /* K: the per-rank k; Ms = M / P */
  long long out_rows;      /* C's rows on this rank: Ms, or M (gather) */
  CUdeviceptr a, b, c;
  void *slot[6];
  union { CUdeviceptr p; long long l; } val[6];
} rs_run;

static int cu_ok(const rs_run *r, CUresult e, const char *what) { return cli_cu_ok(r->d, r->rank, e, what); }

static uint64_t data_seed(const rs_run *r, int what) {   /* what: 2p = A_p, 2p + 1 = B_p, -1: rows */
  uint64_t s = hr_mix64(r->o->seed ^ hr_mix64((uint64_t)r->M * 1000003ull + (uint64_t)r->N * 10007ull + (uint64_t)r->K));
  return hr_mix64(s + (uint64_t)(what + 2));
}

/* the arguments by name, in manifest order; -1 if the manifest names one this runner lacks */
static int bind(rs_run *r) {
  if (r->m->n_args != 6) { fprintf(stderr, "weft run: %s: %d arguments, expected c, a, b, m, n, k\n", r->m->name, r->m->n_args); return -1; }
  for (int i = 0; i < 6; i++) {
    const char *n = r->m->args[i].name;
    if (!strcmp(n, "c")) r->val[i].p = r->c;
    else if (!strcmp(n, "a")) r->val[i].p = r->a;
    else if (!strcmp(n, "b")) r->val[i].p = r->b;
    else if (!strcmp(n, "m")) r->val[i].l = r->M;
    else if (!strcmp(n, "n")) r->val[i].l = r->N;
    else if (!strcmp(n, "k")) r->val[i].l = r->K;
    else { fprintf(stderr, "weft run: %s: kernel argument '%s' is not one %s gives\n", r->m->name, n, r->fam); return -1; }
    if (strcmp(r->m->args[i].type, i < 3 ? "ptr" : "i64")) {
      fprintf(stderr, "weft run: %s: argument '%s' is %s\n", r->m->name, n, r->m->args[i].type);
      return -1;
    }
    r->slot[i] = &r->val[i];
  }
  return 0;
}

static int launch(rs_run *r) { return cli_comm_launch(r->comm, r->slot, r->s, r->rank); }
static int finish(rs_run *r) { return cli_comm_finish(r->d, r->rank, r->d->cuStreamSynchronize(r->s), "the kernels", r->comm); }

static void free_shape(rs_run *r) {
  CUdeviceptr *ps[] = {&r->a, &r->b, &r->c};
  for (int i = 0; i < 3; i++) {
    if (*ps[i]) r->d->cuMemFree(*ps[i]);
    *ps[i] = 0;
  }
}

/* device buffers for the shape; this rank's A_r and B_r uploaded from ha / hb (NULL: random,
 * for timing); 0 on success */
static int begin_shape(rs_run *r, const void *ha, const void *hb) {
  size_t ab = (size_t)r->M * (size_t)r->K * r->es, bb = (size_t)r->K * (size_t)r->N * r->es;
  size_t cb = (size_t)r->out_rows * (size_t)r->N * r->es;
  if (!cu_ok(r, r->d->cuMemAlloc(&r->a, ab), "cuMemAlloc") || !cu_ok(r, r->d->cuMemAlloc(&r->b, bb), "cuMemAlloc") ||
      !cu_ok(r, r->d->cuMemAlloc(&r->c, cb), "cuMemAlloc"))
    return -1;
  void *ta = NULL, *tb = NULL;
  if (!ha || !hb) {
    if (!(ta = malloc(ab)) || !(tb = malloc(bb))) { free(ta); free(tb); fprintf(stderr, "weft run: out of host memory\n"); return -1; }
    hr_fill_uniform(r->dt, ta, (size_t)r->M * (size_t)r->K, data_seed(r, 2 * r->rank), -1.0, 1.0);
    hr_fill_uniform(r->dt, tb, (size_t)r->K * (size_t)r->N, data_seed(r, 2 * r->rank + 1), -1.0, 1.0);
    ha = ta; hb = tb;
  }
  int ok = cu_ok(r, r->d->cuMemcpyHtoD(r->a, ha, ab), "cuMemcpyHtoD") && cu_ok(r, r->d->cuMemcpyHtoD(r->b, hb, bb), "cuMemcpyHtoD") &&
           cu_ok(r, r->d->cuCtxSynchronize(), "uploading the inputs");
  free(ta); free(tb);
  return ok && !bind(r) ? 0 : -1;
}

/* One shape: every rank's A_p, B_p, the full-K reference of this rank's rows, one launch into a
 * poisoned C, then twice 100 back-to-back launches into a poisoned C: the bits must not move. */
static int check_shape(rs_run *r) {
  int P = r->size, ok = 1, all = 0;
  long long M = r->M, N = r->N, k = r->K, KF = k * P, nrows = 0, *rows = NULL;
  size_t es = r->es, c_bytes = (size_t)r->out_rows * (size_t)N * es;
  char name[160], line[512], who[256];
  snprintf(name, sizeof name, "%s %s b=%s %lldx%lldx%lld (k per rank) P=%d", r->fam, hr_dtype_name(r->dt),
           r->bcol ? "col" : "row", M, N, k, P);
  void *af = malloc((size_t)M * (size_t)KF * es), *bf = malloc((size_t)KF * (size_t)N * es);
  void *ap = malloc((size_t)M * (size_t)k * es), *bp = malloc((size_t)k * (size_t)N * es);
  void *mine_a = malloc((size_t)M * (size_t)k * es), *mine_b = malloc((size_t)k * (size_t)N * es);
  void *first = malloc(c_bytes), *again = malloc(c_bytes);
  double *want = NULL, *scale = NULL;
  if (!af || !bf || !ap || !bp || !mine_a || !mine_b || !first || !again) { ok = 0; goto host; }
  for (int p = 0; p < P; p++) {   /* A_p's columns at p*k of A; B_p's rows at p*k of B (col: its columns) */
    hr_fill_uniform(r->dt, ap, (size_t)M * (size_t)k, data_seed(r, 2 * p), -1.0, 1.0);
    hr_fill_uniform(r->dt, bp, (size_t)k * (size_t)N, data_seed(r, 2 * p + 1), -1.0, 1.0);
    for (long long i = 0; i < M; i++)
      memcpy((char *)af + ((size_t)i * (size_t)KF + (size_t)p * (size_t)k) * es, (char *)ap + (size_t)i * (size_t)k * es, (size_t)k * es);
    if (!r->bcol) memcpy((char *)bf + (size_t)p * (size_t)k * (size_t)N * es, bp, (size_t)k * (size_t)N * es);
    else
      for (long long j = 0; j < N; j++)
        memcpy((char *)bf + ((size_t)j * (size_t)KF + (size_t)p * (size_t)k) * es, (char *)bp + (size_t)j * (size_t)k * es, (size_t)k * es);
    if (p == r->rank) { memcpy(mine_a, ap, (size_t)M * (size_t)k * es); memcpy(mine_b, bp, (size_t)k * (size_t)N * es); }
  }
  /* the reference's rows: this rank's output rows (gemm_ar: every shard's, so each owner's fold is covered) */
  rows = r->gather ? ref_gemm_pick_rows(M, N, KF, P, r->Ms, data_seed(r, -1), &nrows, &all)
                   : ref_gemm_pick_rows(r->Ms, N, KF, 1, r->Ms, data_seed(r, -1), &nrows, &all);
  want = rows ? malloc((size_t)nrows * (size_t)N * sizeof *want) : NULL;
  scale = rows ? malloc((size_t)nrows * (size_t)N * sizeof *scale) : NULL;
  ok = want && scale &&
       !ref_gemm(r->dt, (char *)af + (r->gather ? 0 : (size_t)r->rank * (size_t)r->Ms * (size_t)KF * es), bf, r->bcol, N, KF,
                 rows, nrows, want, scale);
host:
  if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the reference of %s\n", r->rank, name);
  if (!ranks_all(ok)) goto out;
  ok = !begin_shape(r, mine_a, mine_b);
  if (!ranks_all(ok)) goto out;
  ok = cu_ok(r, r->d->cuMemsetD8Async(r->c, 0xff, c_bytes, r->s), "cuMemsetD8Async") && !launch(r) && !finish(r) &&
       cu_ok(r, r->d->cuMemcpyDtoH(first, r->c, c_bytes), "cuMemcpyDtoH");
  if (ok) {
    hr_report v;
    if (ref_gemm_compare(r->dt, first, N, rows, nrows, want, scale, &v)) {
      hr_report_format_worst(&v, line, sizeof line);
      fprintf(stderr, "check: rank %d: %s: FAIL (%s)\n", r->rank, name, line);
      ok = 0;
    } else if (r->rank == 0 && !r->o->quiet) {
      hr_report_format_worst(&v, line, sizeof line);
      printf("check: %s: reference (rank 0's rows%s): %s\n", name, all ? "" : ", sampled", line);
    }
  }
  if (!ranks_all(ok)) goto out;
  if (r->gather && !ranks_same_bytes(first, c_bytes, who, sizeof who)) {
    if (r->rank == 0) fprintf(stderr, "check: %s: FAIL: rank%s %s hold other bits than rank 0's\n", name, strchr(who, ',') ? "s" : "", who);
    ok = 0;
    goto out;
  }
  int bits = !r->atomic || P <= 2;   /* atomic from P = 3: the order of the adds moves the bits */
  for (int run = 0; run < 2 && ok; run++) {   /* two runs of 100: run-to-run and launch-to-launch bit identity */
    ok = cu_ok(r, r->d->cuMemsetD8Async(r->c, 0xff, c_bytes, r->s), "cuMemsetD8Async");
    for (int i = 0; i < RS_LAUNCHES && ok; i++) ok = !launch(r);
    ok = ok && !finish(r) && cu_ok(r, r->d->cuMemcpyDtoH(again, r->c, c_bytes), "cuMemcpyDtoH");
    hr_report v;
    if (ok && r->atomic && ref_gemm_compare(r->dt, again, N, rows, nrows, want, scale, &v)) {
      hr_report_format_worst(&v, line, sizeof line);
      fprintf(stderr, "check: rank %d: %s: FAIL after run %d of %d back-to-back launches (%s)\n", r->rank, name, run + 1,
              RS_LAUNCHES, line);
      ok = 0;
    } else if (ok && bits && memcmp(first, again, c_bytes)) {
      size_t n = 0;
      for (size_t i = 0; i < c_bytes / es; i++) n += memcmp((char *)first + i * es, (char *)again + i * es, es) != 0;
      fprintf(stderr, "check: rank %d: %s: run %d of %d back-to-back launches changed %zu elements of the result\n",
              r->rank, name, run + 1, RS_LAUNCHES, n);
      ok = 0;
    }
  }
  if (ranks_all(ok) && r->rank == 0 && !r->o->quiet)
    printf("check: %s: PASS (%s, 2 x %d back-to-back launches %s%s)\n", name, all ? "every element" : "sampled rows",
           RS_LAUNCHES,
           !r->atomic ? "bit-identical to the first"
           : bits ? "within the tolerance and bit-identical to the first (reduce = atomic, P <= 2: the order of two adds "
                    "cannot move the bits)"
                  : "within the tolerance; bit identity not checked: reduce = atomic adds in arrival order, not bit-stable",
           r->gather ? ", the same bits on every rank" : "");
out:
  free(af); free(bf); free(ap); free(bp); free(mine_a); free(mine_b); free(first); free(again);
  free(rows); free(want); free(scale);
  free_shape(r);
  return ranks_all(ok);
}

/* ---- timing: the fused kernel beside its unfused pieces, in one run -------------------------
 * unfused = weft's gemm with the fused kernel's schedule (the same tile, stages, consumers, mma,
 * cluster, split_k and group; the direct epilogue), writing this rank's partial C_r (M x N, T)
 * into a scratch buffer, then weft's reduce_scatter of it (gemm_ar: allreduce) with the
 * collective's rule for that size.  The unfused sum rounds each partial to T before adding. */
typedef struct unfused {
  weft_kernel *gemm, *coll;
  weft_comm *cc;
  CUdeviceptr tmp;
  long long n;              /* the collective's size argument */
  void *gargs[6], *cargs[3];
} unfused;

static int param_is(const weft_manifest *m, const char *key, char *out, size_t len) {
  const char *v = weft_manifest_param(m, key);
  int n = v ? snprintf(out, len, "%s", v) : -1;
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* weft's gemm with the fused kernel's schedule; 0 on success */
static int unfused_gemm(rs_run *r, unfused *u) {
  static const char *keys[] = {"dtype", "b_layout", "tile.m", "tile.n", "tile.k", "stages", "consumers", "mma",
                               "cluster.m", "cluster.n", "split_k", "group"};
  char v[12][32], text[1024];
  for (int i = 0; i < 12; i++)
    if (param_is(r->m, keys[i], v[i], sizeof v[i])) {
      fprintf(stderr, "weft run: %s: the manifest lacks the GEMM param %s\n", r->m->name, keys[i]);
      return -1;
    }
  int n = snprintf(text, sizeof text,
                   "return { family = \"gemm\", dtype = \"%s\", b_layout = \"%s\", tile = { m = %s, n = %s, k = %s }, "
                   "stages = %s, consumers = %s, mma = \"%s\", cluster = { m = %s, n = %s }, split_k = %s, group = %s, "
                   "epilogue = \"direct\" }",
                   v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);
  if (n < 0 || (size_t)n >= sizeof text || weft_compile_string(r->o->ctx, "unfused gemm", text, NULL, 0, &u->gemm)) {
    fprintf(stderr, "weft run: rank %d: the unfused gemm: %s\n", r->rank, weft_ctx_error(r->o->ctx));
    return -1;
  }
  return 0;
}

/* the collective for this shape (its family's rule at this size and rank count), its
 * communicator and the scratch partial; 0 on success (collective: every rank calls it) */
static int unfused_coll(rs_run *r, unfused *u) {
  const char *fam = r->gather ? "allreduce" : "reduce_scatter";
  char text[256], shape[64];
  u->n = r->gather ? r->M * r->N : r->Ms * r->N;
  int n1 = snprintf(text, sizeof text, "return { family = \"%s\", dtype = \"%s\" }", fam, hr_dtype_name(r->dt));
  int n2 = snprintf(shape, sizeof shape, "n=%lld", u->n);
  weft_auto *a = NULL;
  int ok = n1 > 0 && (size_t)n1 < sizeof text && n2 > 0 && (size_t)n2 < sizeof shape &&
           !weft_auto_choose_string(r->o->ctx, fam, text, NULL, 0, shape, r->size, 0, NULL, &a) &&
           !weft_auto_compile(r->o->ctx, a, 0, &u->coll);
  if (!ok) fprintf(stderr, "weft run: rank %d: the unfused %s: %s\n", r->rank, fam, weft_ctx_error(r->o->ctx));
  weft_auto_free(a);
  if (!ranks_all(ok)) return -1;
  if (comm_run_comm(u->coll, r->w, u->n, r->rank, &u->cc)) return -1;
  u->tmp = cli_dev_alloc(r->d, (size_t)r->M * (size_t)r->N * r->es);
  if (!u->tmp) return -1;
  const char *gn[] = {"c", "a", "b", "m", "n", "k"}, *cn[] = {"y", "x", "n"};
  void *gv[] = {&u->tmp, &r->a, &r->b, &r->M, &r->N, &r->K}, *cv[] = {&r->c, &u->tmp, &u->n};
  return cli_bind_args(weft_kernel_manifest(u->gemm), u->gargs, gn, gv, 6) ||
         cli_bind_args(weft_kernel_manifest(u->coll), u->cargs, cn, cv, 3) ? -1 : 0;
}

static void unfused_coll_close(rs_run *r, unfused *u) {
  if (u->cc) weft_comm_destroy(u->cc);
  if (u->coll) weft_kernel_destroy(u->coll);
  if (u->tmp) r->d->cuMemFree(u->tmp);
  u->cc = NULL, u->coll = NULL, u->tmp = 0;
}

enum { T_FUSED, T_UNFUSED, T_GEMM, T_COLL, T_N };
typedef struct rs_timed { rs_run *r; unfused *u; int which; } rs_timed;

static int gemm_only(rs_timed *t) {
  if (weft_launch(t->u->gemm, t->u->gargs, (void *)t->r->s) == WEFT_OK) return 0;
  fprintf(stderr, "weft run: rank %d: %s\n", t->r->rank, weft_kernel_error(t->u->gemm));
  return -1;
}
static int coll_only(rs_timed *t) { return cli_comm_launch(t->u->cc, t->u->cargs, (void *)t->r->s, t->r->rank); }

static int timed_launch(void *ud, int set, CUstream s, char *err, size_t len) {
  (void)set, (void)s, (void)len;
  rs_timed *t = ud;
  err[0] = 0;   /* the launches say why on stderr themselves */
  switch (t->which) {
  case T_FUSED: return launch(t->r);
  case T_UNFUSED: return gemm_only(t) || coll_only(t) ? -1 : 0;
  case T_GEMM: return gemm_only(t);
  default: return coll_only(t);
  }
}
static int timed_finish(void *ud, CUstream s, char *err, size_t len) {
  (void)s, (void)len;
  rs_timed *t = ud;
  err[0] = 0;
  int bad = finish(t->r);
  if (!bad && t->u->cc && weft_comm_check(t->u->cc)) {
    fprintf(stderr, "weft run: rank %d: %s\n", t->r->rank, weft_comm_error(t->u->cc));
    bad = 1;
  }
  return bad ? -1 : 0;
}

static void fmt_us(char *buf, size_t len, double v) {
  if (v < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, "%.2f", v);
}

static int time_shape(rs_run *r, unfused *u) {
  int ok = !begin_shape(r, NULL, NULL);
  if (ranks_all(ok)) ok = !unfused_coll(r, u);
  if (!ranks_all(ok)) { unfused_coll_close(r, u); free_shape(r); return 0; }
  rs_timed t[T_N];
  measure_op ops[T_N];
  for (int i = 0; i < T_N; i++) {
    t[i] = (rs_timed){r, u, i};
    ops[i] = (measure_op){timed_launch, &t[i], 1, timed_finish};
  }
  measure_result res[T_N];
  measure_plan plan = {.iters = r->o->iters, .warmup = r->o->warmup, .settle = 1, .rounds = 3, .heat_ms = 250.0,
                       .cap_ms = 2000.0, .graph_reps = 3, .stream = r->s, .ranks = measure_ranks_mpi()};
  char err[512];
  ok = !measure_run(r->d, &plan, ops, T_N, res, err, sizeof err);
  if (!ok && err[0]) fprintf(stderr, "weft run: rank %d: %s\n", r->rank, err);
  double fl = 2.0 * (double)r->M * (double)r->N * (double)r->K;   /* per rank: its own M x N x k */
  const measure_result *f = &res[T_FUSED], *un = &res[T_UNFUSED];
  if (ok && r->rank == 0) {
    char c[6][24];
    fmt_us(c[0], sizeof c[0], f->gr_us);
    fmt_us(c[1], sizeof c[1], un->gr_us);
    fmt_us(c[2], sizeof c[2], res[T_GEMM].gr_us);
    fmt_us(c[3], sizeof c[3], res[T_COLL].gr_us);
    snprintf(c[4], sizeof c[4], "%.3f", un->ev_us / f->ev_us);
    if (f->gr_us > 0 && un->gr_us > 0) snprintf(c[5], sizeof c[5], "%.3f", un->gr_us / f->gr_us);
    else snprintf(c[5], sizeof c[5], "-");
    printf("%-8s %-4s %-3s %6lld %6lld %6lld %2d %5d %10.2f %10s %10.2f %10s %9.2f %9s %9.2f %9s %8.1f %8s %8s\n", r->fam,
           hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->M, r->N, r->K, r->size, f->iters, f->ev_us, c[0], un->ev_us,
           c[1], res[T_GEMM].ev_us, c[2], res[T_COLL].ev_us, c[3], fl / f->ev_us * 1e-6, c[4], c[5]);
  }
  if (ok && r->o->result) {
    double tf = f->gr_us > 0 ? f->gr_us : f->ev_us, tu = un->gr_us > 0 ? un->gr_us : un->ev_us;
    r->o->result->timed = 1;
    r->o->result->us = tf;
    r->o->result->metric = fl / tf * 1e-6;
    r->o->result->baseline = tu / tf;
    snprintf(r->o->result->metric_name, sizeof r->o->result->metric_name, "TFLOP/s");
    snprintf(r->o->result->baseline_name, sizeof r->o->result->baseline_name, "unfused");
  }
  unfused_coll_close(r, u);
  free_shape(r);
  return ok;
}

/* the staging half holds m x n f32 (every rank's partial of this rank's rows; gemm_rs atomic:
 * comm.c makes it m x n / P, their sum; gemm_ar: then the m x n rounded sum, which the
 * manifest's elem_bytes counts); every size argument is also held to max_elems */
static long long comm_elems(const cli_mnk *s) { return s->k > s->m * s->n ? s->k : s->m * s->n; }

static int run_gemm_comm(weft_kernel *k, const run_opts *o, int gather) {
  ranks_ensure();
  rs_run r = {.o = o, .k = k, .m = weft_kernel_manifest(k), .gather = gather, .fam = gather ? "gemm_ar" : "gemm_rs"};
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  char why[512] = "";
  int rc = CLI_FAIL, pass = 1;
  cli_mnk_lists sh;
  unfused un = {0};
  r.d = drv_get(why, sizeof why);
  if (!r.d) { fprintf(stderr, "weft run: %s\n", why); rc = CLI_NO_GPU; goto out; }
  const char *bl = weft_manifest_param(r.m, "b_layout");
  if (hr_dtype_parse(weft_manifest_param(r.m, "dtype"), &r.dt) || !bl || (strcmp(bl, "row") && strcmp(bl, "col"))) {
    fprintf(stderr, "weft run: %s: the manifest lacks dtype or b_layout (row|col)\n", r.m->name);
    goto out;
  }
  r.bcol = !strcmp(bl, "col");
  r.es = hr_dtype_size(r.dt);
  const char *red = weft_manifest_param(r.m, "reduce");
  if (!red || (strcmp(red, "ordered") && strcmp(red, "atomic"))) {
    fprintf(stderr, "weft run: %s: the manifest lacks reduce (ordered|atomic)\n", r.m->name);
    goto out;
  }
  r.atomic = !strcmp(red, "atomic");
  cli_mnk_shapes(r.m, o, &(cli_mnk){1024ll * r.size, 1536, 512}, &sh);   /* big enough to sample rows */
  const int n_checks = sh.n_check, n_times = sh.n_time;
  if (comm_run_open(k, cli_mnk_max_elems(&sh, comm_elems), r.rank, &r.w, &r.comm)) goto out;
  if (!ranks_all(cu_ok(&r, r.d->cuStreamCreate(&r.s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))) goto out;
  if (r.rank == 0) {
    printf("run: %s: %s, b_layout %s, reduce %s%s, on %d rank%s (%d per GPU)\n", r.m->name, hr_dtype_name(r.dt), bl, red,
           r.atomic ? " (not bit-stable)" : "", r.size, r.size == 1 ? "" : "s", weft_symm_gpu_share(weft_comm_symm(r.comm)));
    fflush(stdout);
  }
  /* A shape the ranks cannot split (M a multiple of P; N and k of 8) fails where the user asked for
   * it (--shapes-only), and is skipped, saying so, among the runner's own; a run that checked no
   * shape at all does not pass. */
  int checked = 0;
  for (int i = 0; i < n_checks; i++) {
    const cli_mnk *s = &sh.check[i];
    if (s->m % r.size || s->n % 8 || s->k % 8) {
      if (r.rank == 0) printf("check: %s %lldx%lldx%lld: %s: M must be a multiple of the %d ranks, N and k of 8\n",
                              r.fam, s->m, s->n, s->k, o->shapes_only ? "FAIL" : "skipped", r.size);
      if (o->shapes_only) goto out;
      continue;
    }
    checked++;
    r.M = s->m; r.N = s->n; r.K = s->k; r.Ms = s->m / r.size; r.out_rows = gather ? r.M : r.Ms;
    if (!check_shape(&r)) {
      if (r.rank == 0) printf("check: %s: FAIL at %lldx%lldx%lld (rank messages above)\n", r.m->name, s->m, s->n, s->k);
      goto out;
    }
  }
  if (n_checks > 0 && !checked) {
    if (r.rank == 0) printf("check: %s: FAIL: none of the %d shapes splits over %d ranks\n", r.m->name, n_checks, r.size);
    goto out;
  }
  if (n_checks > 0 && o->result) { o->result->checked = 1; o->result->passed = 1; }
  if (n_times > 0 && !ranks_all(!unfused_gemm(&r, &un))) goto out;
  if (n_times > 0 && r.rank == 0)
    printf("time: %s, %d rank%s; us per launch: CUDA events around back-to-back launches (ev) and one CUDA graph of "
           "them (gr), the slowest rank, the median of 3 rounds that alternate the ops. unfused = weft's gemm with this "
           "schedule (M x N x k per rank, C_r rounded to %s) + weft's %s (its rule's config), timed together and alone; "
           "TF = 2*M*N*k per rank / fused time; vs_unf = unfused / fused (>1: the fused kernel is faster)\n"
           "#%-7s type b   %6s %6s %6s %2s %5s %10s %10s %10s %10s %9s %9s %9s %9s %8s %8s %8s\n",
           r.m->name, r.size, r.size == 1 ? "" : "s", hr_dtype_name(r.dt), gather ? "allreduce" : "reduce_scatter", r.fam,
           "M", "N", "k", "P", "iters", "fused_ev", "fused_gr", "unfus_ev", "unfus_gr", "gemm_ev", "gemm_gr", "coll_ev",
           "coll_gr", "TF_ev", "vs_unf_ev", "vs_unf_gr");
  for (int i = 0; i < n_times; i++) {
    const cli_mnk *s = &sh.time[i];
    if (s->m % r.size || s->n % 8 || s->k % 8) {
      if (r.rank == 0) printf("time: %s %lldx%lldx%lld: %s: M must be a multiple of the %d ranks, N and k of 8\n", r.fam, s->m,
                              s->n, s->k, o->shapes_only ? "FAIL" : "skipped", r.size);
      if (o->shapes_only) { pass = 0; break; }
      continue;
    }
    r.M = s->m; r.N = s->n; r.K = s->k; r.Ms = s->m / r.size; r.out_rows = gather ? r.M : r.Ms;
    if (!ranks_all(time_shape(&r, &un))) {
      pass = 0;
      if (!ranks_all(!weft_comm_check(r.comm))) break;
    }
  }
  rc = pass ? CLI_OK : CLI_FAIL;
out:
  if (un.gemm) weft_kernel_destroy(un.gemm);
  if (r.d && r.s) r.d->cuStreamDestroy(r.s);
  comm_run_close(r.w, r.comm);
  if (rc != CLI_NO_GPU) rc = ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
  return rc;
}
static int run_gemm_rs(weft_kernel *k, const run_opts *o) { return run_gemm_comm(k, o, 0); }
static int run_gemm_ar(weft_kernel *k, const run_opts *o) { return run_gemm_comm(k, o, 1); }
WEFT_RUNNER(gemm_rs, run_gemm_rs)
WEFT_RUNNER(gemm_ar, run_gemm_ar)
