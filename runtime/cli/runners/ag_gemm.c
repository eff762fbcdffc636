/* runners/ag_gemm.c: `weft run` for the ag_gemm family, on every rank of an MPI job (one process
 * is a world of one).  C[M,N] = A[M,K].B (f16/bf16, f32 accumulation); b_layout "row" stores B
 * as K x N, "col" as N x K (a linear layer's weight).  A is row-sharded: rank r owns rows
 * r*M/P .. (r+1)*M/P-1 and every rank computes the whole C.
 *   check: per shape, random data that every rank can regenerate for every rank (no
 *          communication for the reference), C poisoned, a double reference (every element, or
 *          sampled rows of big problems), then 20 back-to-back launches must reproduce the
 *          bits, and every rank must hold the same bits (SHA-256 compared); cuBLASLt is checked
 *          against the same reference, so its timings are of a right answer.
 *   time:  per shape, CUDA events around back-to-back launches and the same launches replayed
 *          as one CUDA graph (the slowest rank counts), beside cuBLASLt on the whole gathered
 *          problem and, at P > 1, NCCL all-gather + cuBLASLt; weft's C is cross-checked with
 *          cuBLAS's.
 * The reference and the checks are runtime/check/ref_gemm.c; the timing policy, cuBLASLt and
 * NCCL are runtime/measure/.  This file binds, fills, launches and checks; ag_gemm_time.c times
 * and prints the table (ag_gemm.h: what the two share). */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_gemm.h"
#include "comm_run.h"
#include "measure.h"
#include "ref_gemm.h"
#include "driver.h"
#include "hostref.h"
#include "internal.h"
#include "ranks.h"

static const drv_table *D;
static int RANK, SIZE;

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, RANK, r, what); }

/* ---- the run --------------------------------------------------------------------------------- */

const char *ag_kind_kernels(int kind) {
  return kind == V_GEMM ? "a plain GEMM" : kind == V_TWO ? "gather kernel + GEMM kernel" : "one kernel";
}

static int bind(const weft_manifest *m, bound *b, const named *v, int nv) {
  if (m->n_args > MAX_ARGS) { fprintf(stderr, "weft run: %s: %d arguments, at most %d\n", m->name, m->n_args, MAX_ARGS); return -1; }
  for (int i = 0; i < m->n_args; i++) {
    const weft_arg *a = &m->args[i];
    const named *x = NULL;
    for (int j = 0; j < nv && !x; j++)
      if (!strcmp(v[j].name, a->name)) x = &v[j];
    if (!x) {
      fprintf(stderr, "weft run: %s: kernel argument '%s' is not one ag_gemm gives (", m->name, a->name);
      for (int j = 0; j < nv; j++) fprintf(stderr, "%s%s", j ? ", " : "", v[j].name);
      fprintf(stderr, ")\n");
      return -1;
    }
    if (!strcmp(a->type, "ptr") && x->ptr) b->val[i].p = x->p;
    else if (!strcmp(a->type, "i64") && !x->ptr) b->val[i].l = x->v;
    else if (!strcmp(a->type, "i32") && !x->ptr && x->v <= INT32_MAX) b->val[i].i = (int32_t)x->v;
    else {
      fprintf(stderr, "weft run: %s: argument '%s' is %s, which does not fit %s\n", m->name, a->name, a->type,
              x->ptr ? "a device pointer" : "this size");
      return -1;
    }
    b->slot[i] = &b->val[i];
  }
  return 0;
}

/* 1 if every size argument is within the kernel's limits; else why not (the library's one test,
 * weft_manifest_check_size, and its words) */
static int within_limits(const weft_manifest *m, const named *v, int nv, char *why, size_t len) {
  for (int j = 0; j < nv; j++)
    if (!v[j].ptr && weft_manifest_check_size(m, v[j].name, v[j].v, why, len)) return 0;
  return 1;
}

/* the arguments of the shape in hand; 1 if the kernels take this shape (else why not) */
static int bind_shape(agg *r, int do_bind, char *why, size_t len) {
  named gemm[] = {{"c", 1, r->cmat, 0}, {"a", 1, r->kind == V_TWO ? r->ag : r->afull, 0}, {"b", 1, r->b, 0},
                  {"m", 0, 0, r->M}, {"n", 0, 0, r->N}, {"k", 0, 0, r->K}};
  named comm[] = {{"c", 1, r->cmat, 0}, {"a", 1, r->a, 0}, {"b", 1, r->b, 0},
                  {"m", 0, 0, r->M}, {"n", 0, 0, r->N}, {"k", 0, 0, r->K}};
  named gather[] = {{"ag", 1, r->ag, 0}, {"a", 1, r->a, 0}, {"m", 0, 0, r->M}, {"k", 0, 0, r->K}};
  switch (r->kind) {
  case V_GEMM:
    if (!within_limits(r->m, gemm, 6, why, len)) return 0;
    return !do_bind || !bind(r->m, &r->gemm_args, gemm, 6) ? 1 : -1;
  case V_COMM:
    if (!within_limits(r->m, comm, 6, why, len)) return 0;
    return !do_bind || !bind(r->m, &r->main_args, comm, 6) ? 1 : -1;
  default:
    if (!within_limits(r->m, gather, 4, why, len) || !within_limits(weft_kernel_manifest(r->k2), gemm, 6, why, len)) return 0;
    return !do_bind || (!bind(r->m, &r->main_args, gather, 4) && !bind(weft_kernel_manifest(r->k2), &r->gemm_args, gemm, 6))
               ? 1 : -1;
  }
}

/* Every shape is fresh data: seeds from the run's seed, the shape, and the shard's rank. */
static uint64_t data_seed(const agg *r, int what) {   /* what: shard rank 0..P-1, or -1 for B */
  uint64_t s = hr_mix64(r->o->seed ^ hr_mix64((uint64_t)r->M * 1000003ull + (uint64_t)r->N * 10007ull + (uint64_t)r->K));
  return hr_mix64(s + (uint64_t)(what + 2));
}

static void fill_host(agg *r) {
  size_t shard = (size_t)r->Ms * (size_t)r->K;
  for (int p = 0; p < r->shards; p++)
    hr_fill_uniform(r->dt, (char *)r->hA + (size_t)p * shard * r->es, shard, data_seed(r, p), -1.0, 1.0);
  hr_fill_uniform(r->dt, r->hB, (size_t)r->K * (size_t)r->N, data_seed(r, -1), -1.0, 1.0);
}

static int dev_alloc(CUdeviceptr *p, size_t bytes) {
  return cu_ok(D->cuMemAlloc(p, bytes ? bytes : 16), "cuMemAlloc") ? 0 : -1;
}

void ag_shape_free(agg *r) {
  CUdeviceptr *ps[] = {&r->a, &r->afull, &r->b, &r->cmat, &r->ag, &r->cb, &r->agn, &r->cn};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    if (*ps[i]) D->cuMemFree(*ps[i]);
    *ps[i] = 0;
  }
  free(r->hA); free(r->hB);
  r->hA = r->hB = NULL;
  if (r->plan.ready) blt_plan_free(&r->L, &r->plan);
}

int ag_shape_begin(agg *r, long long M, long long N, long long K, int timing) {
  r->M = M; r->N = N; r->K = K;
  r->shards = M % SIZE == 0 ? SIZE : 1;
  r->Ms = M / r->shards;
  size_t es = r->es, a_bytes = (size_t)M * (size_t)K * es, b_bytes = (size_t)K * (size_t)N * es;
  size_t c_bytes = (size_t)M * (size_t)N * es, shard_bytes = (size_t)r->Ms * (size_t)K * es;
  if (!(r->hA = malloc(a_bytes)) || !(r->hB = malloc(b_bytes))) {
    fprintf(stderr, "weft run: rank %d: out of host memory for %lldx%lldx%lld\n", RANK, M, N, K);
    return -1;
  }
  fill_host(r);
  if (dev_alloc(&r->afull, a_bytes) || dev_alloc(&r->b, b_bytes) || dev_alloc(&r->cmat, c_bytes)) return -1;
  if (r->kind != V_GEMM && dev_alloc(&r->a, shard_bytes)) return -1;
  if (r->kind == V_TWO && dev_alloc(&r->ag, a_bytes)) return -1;
  if (r->have_blt && dev_alloc(&r->cb, c_bytes)) return -1;
  if (timing && r->have_nccl && (dev_alloc(&r->agn, a_bytes) || dev_alloc(&r->cn, c_bytes))) return -1;
  if (!cu_ok(D->cuMemcpyHtoD(r->afull, r->hA, a_bytes), "cuMemcpyHtoD") ||
      !cu_ok(D->cuMemcpyHtoD(r->b, r->hB, b_bytes), "cuMemcpyHtoD"))
    return -1;
  if (r->a && !cu_ok(D->cuMemcpyHtoD(r->a, (char *)r->hA + (size_t)RANK * shard_bytes, shard_bytes), "cuMemcpyHtoD"))
    return -1;
  /* the copies ran on the legacy stream; the launches go to r->s, which does not wait for it */
  if (!cu_ok(D->cuCtxSynchronize(), "uploading the inputs")) return -1;
  char why[256];
  if (bind_shape(r, 1, why, sizeof why) != 1) return -1;
  if (r->have_blt && blt_plan_make(&r->L, &r->plan, r->dt, r->bcol, M, N, K, why, sizeof why)) {
    fprintf(stderr, "weft run: rank %d: cuBLAS baseline: %s\n", RANK, why);
    return -1;
  }
  return 0;
}

/* ---- launching ------------------------------------------------------------------------------- */

/* A GEMM kernel (no communicator) with these arguments on the run's stream; 0 on success. */
static int launch_gemm(agg *r, weft_kernel *k, bound *args) {
  if (weft_launch(k, args->slot, r->s)) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, weft_kernel_error(k));
    return -1;
  }
  return 0;
}

static int launch_weft(agg *r) {
  if (r->kind == V_GEMM) return launch_gemm(r, r->k, &r->gemm_args);
  if (cli_comm_launch(r->comm, r->main_args.slot, r->s, RANK)) return -1;
  return r->kind == V_TWO ? launch_gemm(r, r->k2, &r->gemm_args) : 0;
}

int ag_launch_op(agg *r, int op) {
  char why[256];
  int bad = 0;
  switch (op) {
  case OP_WEFT: return launch_weft(r);
  case OP_CUBLAS: bad = blt_run(&r->L, &r->plan, r->cb, r->afull, r->b, r->s, why, sizeof why); break;
  default:
    bad = nccl_all_gather(&r->nc, r->a, r->agn, (size_t)r->Ms * (size_t)r->K, r->dt, r->s, why, sizeof why) ||
          blt_run(&r->L, &r->plan, r->cn, r->agn, r->b, r->s, why, sizeof why);
  }
  if (bad) fprintf(stderr, "weft run: rank %d: %s\n", RANK, why);
  return bad ? -1 : 0;
}

/* wait for the stream; a timed-out signal becomes this rank's error */
int ag_finish(agg *r) { return cli_comm_finish(D, RANK, D->cuStreamSynchronize(r->s), "the kernels", r->comm); }

/* ---- checking -------------------------------------------------------------------------------- */

const char *ag_label(const agg *r, char *buf, size_t len) {
  snprintf(buf, len, "%s %s b=%s %lldx%lldx%lld P=%d", r->variant, hr_dtype_name(r->dt), r->bcol ? "col" : "row", r->M,
           r->N, r->K, SIZE);
  return buf;
}

/* PDL (family gemm, pdl = true): the second of two launches reads what the first wrote.  Y =
 * X B2, where X = A B is the first launch's C (poisoned before each pair) and B2 is random N x N:
 * a launch that touched A before its griddepcontrol.wait would read the first's unfinished
 * output.  x_host: X as the checked launches left it (bit-identical every time).  0 on failure. */
static int check_pdl_chain(agg *r, const void *x_host) {
  char name[160], line[512], why[256];
  long long M = r->M, N = r->N;
  size_t x_bytes = (size_t)M * (size_t)N * r->es, b2_bytes = (size_t)N * (size_t)N * r->es;
  ag_label(r, name, sizeof name);
  agg q = *r;   /* the second launch's problem: M x N x N, A = X, B = B2 */
  q.K = N; q.shards = 1; q.Ms = M; q.hA = (void *)x_host;
  named second[] = {{"c", 1, 0, 0}, {"a", 1, r->cmat, 0}, {"b", 1, 0, 0}, {"m", 0, 0, M}, {"n", 0, 0, N}, {"k", 0, 0, N}};
  if (!within_limits(r->m, second, 6, why, sizeof why)) {
    if (RANK == 0) printf("check: %s: pdl chain not run: its second launch (%lldx%lldx%lld) does not fit: %s\n", name, M, N, N, why);
    return 1;
  }
  CUdeviceptr y = 0, b2 = 0;
  long long nrows = 0, *rows = NULL;
  int all = 0, ok = 0;
  double *want = NULL, *scale = NULL;
  void *hb2 = malloc(b2_bytes), *y0 = malloc(x_bytes), *yi = malloc(x_bytes);
  bound args;
  if (hb2 && y0 && yi) {
    hr_fill_uniform(r->dt, hb2, (size_t)N * (size_t)N, data_seed(r, -3), -1.0, 1.0);
    q.hB = hb2;
    rows = ref_gemm_pick_rows(q.M, q.N, q.K, q.shards, q.Ms, data_seed(&q, -2), &nrows, &all);
  }
  want = rows ? malloc((size_t)nrows * (size_t)N * sizeof *want) : NULL;
  scale = rows ? malloc((size_t)nrows * (size_t)N * sizeof *scale) : NULL;
  if (!want || !scale || ref_gemm(q.dt, q.hA, q.hB, q.bcol, q.N, q.K, rows, nrows, want, scale)) {
    fprintf(stderr, "weft run: rank %d: out of host memory for the pdl chain's reference\n", RANK);
    goto out;
  }
  /* (a copy from pageable memory may return before its DMA lands, and r->s does not wait for the
   * legacy stream: without the synchronize, the first pair once read B2 as zeros -- a C2 of zeros,
   * finite and wrong, at 25 x 1000 x 1000) */
  if (dev_alloc(&y, x_bytes) || dev_alloc(&b2, b2_bytes) || !cu_ok(D->cuMemcpyHtoD(b2, hb2, b2_bytes), "cuMemcpyHtoD") ||
      !cu_ok(D->cuCtxSynchronize(), "uploading the pdl chain's B2"))
    goto out;
  second[0].p = y; second[2].p = b2;
  if (bind(r->m, &args, second, 6)) goto out;
  ok = 1;
  for (int it = 0; it < 10 && ok; it++) {
    ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, x_bytes, r->s), "cuMemsetD8Async") &&
         cu_ok(D->cuMemsetD8Async(y, 0xff, x_bytes, r->s), "cuMemsetD8Async") && !launch_weft(r) &&
         !launch_gemm(r, r->k, &args);
    ok = ok && !ag_finish(r) && cu_ok(D->cuMemcpyDtoH(it ? yi : y0, y, x_bytes), "cuMemcpyDtoH");
    if (!ok) break;
    if (!it) {
      hr_report v;
      if (ref_gemm_compare(q.dt, y0, q.N, rows, nrows, want, scale, &v)) {
        hr_report_format_worst(&v, line, sizeof line);
        /* C is poisoned (NaN) until the first launch stores it: a second launch that read it early
         * has NaNs in C2; finite wrong values point elsewhere */
        fprintf(stderr, "check: rank %d: %s: pdl chain FAIL: the second launch (C2 = C B2) %s (%s)\n", RANK, name,
                v.nans ? "has NaNs: it read the first's C before it was complete"
                : v.unwritten ? "left elements unwritten"
                              : "is wrong without a NaN in it, so not from reading the first's poisoned C",
                line);
        ok = 0;
      }
    } else if (memcmp(y0, yi, x_bytes)) {
      fprintf(stderr, "check: rank %d: %s: pdl chain FAIL: pair %d's C2 differs from the first pair's: the second "
                      "launch read the first's C before it was complete\n", RANK, name, it + 1);
      ok = 0;
    }
  }
  if (ok && RANK == 0 && !r->o->quiet)
    printf("check: %s: PASS (pdl chain: 10 pairs, the second launch reading the first's freshly poisoned C, "
           "%s against the reference)\n", name, all ? "every element" : "sampled rows");
out:
  if (y) D->cuMemFree(y);
  if (b2) D->cuMemFree(b2);
  free(hb2); free(y0); free(yi); free(rows); free(want); free(scale);
  return ok;
}

/* One shape: 0 if this rank saw it fail (the caller takes every rank's verdict).  Each step
 * ends with every rank's verdict, so a rank that fails never leaves the others waiting for its
 * signals in the next launch. */
static int check_shape(agg *r, long long M, long long N, long long K) {
  char name[160], line[512], who[256];
  size_t c_bytes = (size_t)M * (size_t)N * r->es;
  long long nrows = 0, *rows = NULL;
  int all_rows = 0, ok;
  double *want = NULL, *scale = NULL;
  void *first = NULL, *again = NULL;
  ok = !ag_shape_begin(r, M, N, K, 0);
  ag_label(r, name, sizeof name);
  if (ok) {
    rows = ref_gemm_pick_rows(M, N, K, r->shards, r->Ms, data_seed(r, -2), &nrows, &all_rows);
    want = rows ? malloc((size_t)nrows * (size_t)N * sizeof *want) : NULL;
    scale = rows ? malloc((size_t)nrows * (size_t)N * sizeof *scale) : NULL;
    first = malloc(c_bytes);
    again = malloc(c_bytes);
    ok = want && scale && first && again && !ref_gemm(r->dt, r->hA, r->hB, r->bcol, N, K, rows, nrows, want, scale);
    if (!ok) fprintf(stderr, "weft run: rank %d: out of host memory for the reference of %s\n", RANK, name);
  }
  if (!ranks_all(ok)) goto out;
  /* one launch into poisoned outputs */
  ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, c_bytes, r->s), "cuMemsetD8Async") &&
       (!r->ag || cu_ok(D->cuMemsetD8Async(r->ag, 0xff, (size_t)M * (size_t)K * r->es, r->s), "cuMemsetD8Async")) &&
       !launch_weft(r) && !ag_finish(r) && cu_ok(D->cuMemcpyDtoH(first, r->cmat, c_bytes), "cuMemcpyDtoH");
  if (ok) {
    hr_report v;
    if (ref_gemm_compare(r->dt, first, N, rows, nrows, want, scale, &v)) {
      hr_report_format_worst(&v, line, sizeof line);
      fprintf(stderr, "check: rank %d: %s: FAIL (%s)\n", RANK, name, line);
      ok = 0;
    } else if (RANK == 0 && !r->o->quiet) {
      hr_report_format_worst(&v, line, sizeof line);
      printf("check: %s: reference%s: %s\n", name, all_rows ? "" : " (sampled rows)", line);
    }
  }
  if (!ranks_all(ok)) goto out;
  /* back to back: epochs advance, buffers are reused; the bits must not move */
  ok = cu_ok(D->cuMemsetD8Async(r->cmat, 0xff, c_bytes, r->s), "cuMemsetD8Async");
  for (int i = 0; i < 20 && ok; i++) ok = !launch_weft(r);
  ok = ok && !ag_finish(r) && cu_ok(D->cuMemcpyDtoH(again, r->cmat, c_bytes), "cuMemcpyDtoH");
  if (ok && memcmp(first, again, c_bytes)) {
    size_t n = 0;
    for (size_t i = 0; i < c_bytes / r->es; i++) n += memcmp((char *)first + i * r->es, (char *)again + i * r->es, r->es) != 0;
    fprintf(stderr, "check: rank %d: %s: 20 back-to-back launches changed %zu elements of the result\n", RANK, name, n);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (!ranks_same_bytes(first, c_bytes, who, sizeof who)) {
    if (RANK == 0) fprintf(stderr, "check: %s: ranks %s hold different bits from rank 0\n", name, who);
    ok = 0;
  }
  if (!ranks_all(ok)) goto out;
  if (r->kind == V_GEMM && r->m->pdl) {
    ok = check_pdl_chain(r, first);
    if (!ranks_all(ok)) goto out;
  }
  /* the baseline must be right too, or its timings mean nothing */
  int blt_loose = 0;   /* ... but for cuBLASLt's own reduced-precision split-K, noted */
  if (r->have_blt) {
    ok = cu_ok(D->cuMemsetD8Async(r->cb, 0xff, c_bytes, r->s), "cuMemsetD8Async") && !ag_launch_op(r, OP_CUBLAS) &&
         !ag_finish(r) && cu_ok(D->cuMemcpyDtoH(again, r->cb, c_bytes), "cuMemcpyDtoH");
    if (ok) {
      hr_report v;
      if (ref_gemm_compare(r->dt, again, N, rows, nrows, want, scale, &v)) {
        char algo[200];
        hr_report_format_worst(&v, line, sizeof line);
        blt_describe(&r->L, &r->plan, algo, sizeof algo);
        const int split = blt_output_type_split(&r->L, &r->plan);
        hr_report loose;
        if (split && !v.nans && !v.unwritten && !ref_gemm_compare_split(r->dt, again, N, rows, nrows, want, scale, split, &loose)) {
          /* cuBLASLt's own choice (torch's default allows it too): its timing stands, as chosen */
          blt_loose = 1;
          if (RANK == 0 && !r->o->quiet)
            printf("check: %s: note: cuBLAS's result is outside the f32-sum tolerance (%s): its algorithm (%s) adds "
                   "split-K parts in %s\n", name, line, algo, hr_dtype_name(r->dt));
        } else {
          fprintf(stderr, "check: rank %d: %s: the cuBLAS baseline FAILS the reference (%s; its algorithm: %s): a bug "
                  "in this runner\n", RANK, name, line, algo);
          ok = 0;
        }
      }
    }
    if (!ranks_all(ok)) goto out;
    blt_loose = !ranks_all(!blt_loose);   /* any rank's note counts for the line below */
  }
  if (RANK == 0 && !r->o->quiet)
    printf("check: %s: PASS (%s, 20 back-to-back launches bit-identical, bit-identical on %d rank%s%s)\n", name,
           all_rows ? "every element" : "sampled rows", SIZE, SIZE == 1 ? "" : "s",
           !r->have_blt ? "" : blt_loose ? ", cuBLAS's bf16/f16 split-K sum outside it (noted above)"
                                         : ", cuBLAS within the same tolerance");
out:
  free(rows); free(want); free(scale); free(first); free(again);
  ag_shape_free(r);
  return ok;
}

/* ---- entry ----------------------------------------------------------------------------------- */

/* gather_then_gemm's GEMM: its config's second kernel, compiled with it (weft_kernel_part) */
static int second_kernel(agg *r, char *why, size_t len) {
  r->k2 = weft_kernel_part(r->k, 1);
  const weft_manifest *m2 = r->k2 ? weft_kernel_manifest(r->k2) : NULL;
  if (weft_kernel_count(r->k) != 2 || !m2 || weft_manifest_param(m2, "variant") || m2->comm.signals) {
    snprintf(why, len, "%s: gather_then_gemm compiles to a gather and a GEMM (family gemm, no comm), but its config "
             "gave %d kernel(s)%s%s", r->m->name, weft_kernel_count(r->k), m2 ? ", the second " : "", m2 ? m2->name : "");
    return -1;
  }
  if (RANK == 0)
    printf("compile: %s in %.1f ms (%s; gather_then_gemm's GEMM)\n", m2->name, weft_kernel_compile_ms(r->k2),
           weft_kernel_cache_hit(r->k2) ? "cache hit" : "NVRTC");
  return 0;
}

/* The communicator's buffer holds the gathered A (M*K); weft_comm_launch also holds every size
 * argument to max_elems, so N and K count too (K never passes M*K). */
static long long comm_elems(const cli_mnk *s) { return s->m * s->k > s->n ? s->m * s->k : s->n; }

/* plain: family gemm, this runner's GEMM at P = 1 with no comm (its manifest has no variant) */
static int run_gemms(weft_kernel *k, const run_opts *o, int plain) {
  /* a plain `weft run`: a world of one.  MPI stays up until the process exits: `weft tune`
   * runs many kernels in one process, and MPI cannot be initialised again once finalized. */
  ranks_ensure();
  MPI_Comm_rank(MPI_COMM_WORLD, &RANK);
  MPI_Comm_size(MPI_COMM_WORLD, &SIZE);
  int rc = CLI_FAIL, pass = 1;
  char why[512] = "";
  agg r = {.o = o, .k = k, .m = weft_kernel_manifest(k), .device = cli_device(), .rank = RANK, .size = SIZE};
  cli_mnk_lists sh;
  D = r.d = drv_get(why, sizeof why);
  if (!D) {
    fprintf(stderr, "weft run: %s\n", why);
    rc = CLI_NO_GPU;
    goto out;
  }
  r.variant = plain ? "gemm" : weft_manifest_param(r.m, "variant");
  const char *bl = weft_manifest_param(r.m, "b_layout");
  if (!r.variant || hr_dtype_parse(weft_manifest_param(r.m, "dtype"), &r.dt) || !bl ||
      (strcmp(bl, "row") && strcmp(bl, "col"))) {
    fprintf(stderr, "weft run: %s: the manifest lacks variant, dtype or b_layout (row|col)\n", r.m->name);
    goto out;
  }
  r.bcol = !strcmp(bl, "col");
  r.es = hr_dtype_size(r.dt);
  if (!strcmp(r.variant, "gemm")) r.kind = V_GEMM;
  else if (!strcmp(r.variant, "gather_then_gemm")) r.kind = V_TWO;
  else if (!strcmp(r.variant, "naive_remote") || !strcmp(r.variant, "threadload_gather") ||
           !strcmp(r.variant, "multimem_gather") || !strcmp(r.variant, "fused")) r.kind = V_COMM;
  else {
    fprintf(stderr, "weft run: %s: variant '%s': this runner knows gemm, naive_remote, threadload_gather, "
            "multimem_gather, gather_then_gemm, fused\n", r.m->name, r.variant);
    goto out;
  }
  /* the shapes: the family's and the user's (run_opts), and one that depends on the world size */
  cli_mnk_shapes(r.m, o, &(cli_mnk){1024ll * SIZE, 1536, 512}, &sh);   /* big enough to sample rows */
  const int n_checks = sh.n_check, n_times = sh.n_time;
  if (r.kind == V_TWO && !ranks_all(!second_kernel(&r, why, sizeof why))) {
    fprintf(stderr, "weft run: rank %d: %s\n", RANK, why[0] ? why : "another rank has no GEMM kernel");
    goto out;
  }
  if (r.kind != V_GEMM) {
    if (comm_run_open(k, cli_mnk_max_elems(&sh, comm_elems), RANK, &r.w, &r.comm)) goto out;
  }
  {
    int ok = cu_ok(D->cuStreamCreate(&r.s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
             cu_ok(D->cuEventCreate(&r.ev[0], 0), "cuEventCreate") && cu_ok(D->cuEventCreate(&r.ev[1], 0), "cuEventCreate");
    if (!ranks_all(ok)) goto out;
  }
  r.have_blt = ranks_first_why(!blt_open(&r.L, D, r.no_blt, sizeof r.no_blt), r.no_blt, (int)sizeof r.no_blt);
  if (!r.have_blt) blt_close(&r.L);
  /* the gemm variant has nothing to gather: cuBLAS alone is its baseline */
  if (SIZE > 1 && n_times > 0 && r.have_blt && r.kind != V_GEMM)
  {
    /* NCCL refuses two ranks on one GPU (ranks sharing it through MPS): nccl_open compares the
     * ranks' PCI bus ids before ncclCommInitRank, which would fail or hang */
    char bus[32] = "";
    CUdevice dev;
    if (D->cuDeviceGet(&dev, r.device) != CUDA_SUCCESS || D->cuDeviceGetPCIBusId(bus, sizeof bus, dev) != CUDA_SUCCESS)
      bus[0] = 0;
    r.have_nccl = !nccl_open(&r.nc, MPI_COMM_WORLD, bus, r.no_nccl, sizeof r.no_nccl);
  } else
    snprintf(r.no_nccl, sizeof r.no_nccl, "%s", !r.have_blt ? "no cuBLAS" : "nothing to gather");
  if (RANK == 0) {
    printf("run: %s: variant %s (%s), %s, b_layout %s, on %d rank%s", r.m->name, r.variant, ag_kind_kernels(r.kind),
           hr_dtype_name(r.dt), bl, SIZE, SIZE == 1 ? "" : "s");
    if (r.comm) comm_run_sharing(r.m, r.comm);
    printf("\n");
    long held = 0;   /* what the persistent grid is capped at: co-resident clusters (or CTAs) */
    const unsigned *cl = r.m->cluster;
    if (api_kernel_load(r.k, &held) == WEFT_OK)
      printf("launch: block %u, cluster %u, %u bytes of shared memory; the GPU holds %ld %s at once\n",
             r.m->block[0], cl[0] * cl[1] * cl[2], r.m->smem, held, cl[0] * cl[1] * cl[2] > 1 ? "clusters" : "CTAs");
    if (r.have_blt) printf("baseline: cuBLASLt %zu (%s)\n", r.L.version(), r.L.path);
    else printf("baseline: cuBLAS NOT run: %s\n", r.no_blt);
    if (SIZE > 1 && n_times > 0 && r.kind != V_GEMM) {
      if (r.have_nccl) printf("baseline: NCCL %d all-gather + cuBLASLt\n", r.nc.version);
      else printf("baseline: NCCL all-gather + cuBLAS NOT run: %s\n", r.no_nccl);
    }
    fflush(stdout);
  }
  for (int i = 0; i < n_checks; i++) {
    const cli_mnk *s = &sh.check[i];
    r.M = s->m; r.N = s->n; r.K = s->k;
    if (r.kind != V_GEMM && s->m % SIZE) {
      if (RANK == 0) printf("check: %s %lldx%lldx%lld: skipped: M is not a multiple of the %d ranks\n", r.variant, s->m, s->n, s->k, SIZE);
      continue;
    }
    if (!bind_shape(&r, 0, why, sizeof why)) {
      if (RANK == 0) printf("check: %s %lldx%lldx%lld: skipped: %s\n", r.variant, s->m, s->n, s->k, why);
      continue;
    }
    if (!ranks_all(check_shape(&r, s->m, s->n, s->k))) {   /* a rank's own verdict may be "pass" */
      if (RANK == 0) printf("check: %s: FAIL at %lldx%lldx%lld (rank messages above)\n", r.m->name, s->m, s->n, s->k);
      goto out;
    }
  }
  if (n_checks > 0 && o->result) { o->result->checked = 1; o->result->passed = 1; }
  if (n_times > 0 && RANK == 0) ag_print_header(&r);
  for (int i = 0; i < n_times; i++) {
    const cli_mnk *s = &sh.time[i];
    r.M = s->m; r.N = s->n; r.K = s->k;
    if ((r.kind != V_GEMM && s->m % SIZE) || !bind_shape(&r, 0, why, sizeof why)) {
      if (RANK == 0)
        printf("time: %s %lldx%lldx%lld: skipped: %s\n", r.variant, s->m, s->n, s->k,
               s->m % SIZE && r.kind != V_GEMM ? "M is not a multiple of the ranks" : why);
      continue;
    }
    if (!ranks_all(ag_time_shape(&r, s->m, s->n, s->k))) {
      pass = 0;
      /* a timed-out communicator (on any rank) refuses every launch */
      if (!ranks_all(!r.comm || !weft_comm_check(r.comm))) break;
    }
  }
  rc = pass ? CLI_OK : CLI_FAIL;
out:
  if (D) {
    nccl_close(&r.nc);
    if (r.have_blt) blt_close(&r.L);
    if (r.ev[0]) D->cuEventDestroy(r.ev[0]);
    if (r.ev[1]) D->cuEventDestroy(r.ev[1]);
    if (r.s) D->cuStreamDestroy(r.s);
  }
  comm_run_close(r.w, r.comm);
  if (rc != CLI_NO_GPU) rc = ranks_all(rc == CLI_OK) ? CLI_OK : CLI_FAIL;
  return rc;
}

static int run_ag_gemm(weft_kernel *k, const run_opts *o) { return run_gemms(k, o, 0); }
static int run_gemm(weft_kernel *k, const run_opts *o) { return run_gemms(k, o, 1); }
WEFT_RUNNER(ag_gemm, run_ag_gemm)
WEFT_RUNNER(gemm, run_gemm)   /* the plain GEMM: the same runner at P = 1, no comm */
