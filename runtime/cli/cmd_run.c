/* cmd_run.c: `weft run`: JIT a config, run it on random data with poisoned outputs, check it
 * against a CPU reference in double precision, then time it against a device-to-device copy
 * measured in the same process.  Exit: 0 checked and correct, 1 wrong (or failed), 2 usage or
 * config error, 77 no GPU/driver here (ctest's SKIP code). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "hostref.h"



void cmd_run_help(void) {
  printf("usage: weft run CONFIG.lua [--set key=value ...] [--rows R] [--cols C] [--clusters N] [--elems N]\n"
         "                [--iters N] [--seed S] [--no-check] [--no-time] [--tuned [--db PATH]]\n"
         "                [--shape MxNxK ...] [--time-shape MxNxK ...] [--shapes-only]\n\n"
         "--tuned runs the best config `weft tune` stored for this GPU, the config's family and dtype,\n"
         "and this shape (GEMM shapes: one --time-shape MxNxK); without one it says so and runs\n"
         "CONFIG.lua as given.\n"
         "Compiles the kernel (cached), fills its inputs with random data and its outputs with a NaN\n"
         "poison, launches it, and checks every output against a CPU reference in double precision\n"
         "(row_reduce, row_softmax; cluster_reduce also checks that every CTA of a cluster got the same\n"
         "bits).  Then it times the kernel with CUDA events (3 warm-ups, median of --iters launches,\n"
         "rotating input buffers when they fit in L2) and a device-to-device copy of the same bytes,\n"
         "and prints GB/s and the ratio to the copy.\n"
         "allreduce runs on every rank of an MPI job (mpirun -np P weft run ...; each rank takes the GPU\n"
         "of its local rank): it checks sizes from 1 to 1048579 elements out of place and in place, 100\n"
         "back-to-back launches, and bit-identity across ranks, then prints latency and bandwidth from 8 B\n"
         "to 256 MB per rank beside a device copy of the same bytes (--elems N: checks and times N only).\n"
         "ag_gemm (C = A.B, A row-sharded over the ranks of an MPI job) checks 1000x1000x1000, 128x256x64,\n"
         "1000x1024x1000 and (1024*P)x1536x512 (--shape MxNxK adds one; --shapes-only keeps only those\n"
         "given) against a double reference (every element, or sampled rows of big problems), then 20\n"
         "back-to-back launches and bit-identity across ranks; then times 1024^3, 4096^3 and 8192^3\n"
         "(--time-shape MxNxK adds one) with events around --iters launches and as a CUDA graph, beside\n"
         "cuBLASLt (dlopen; WEFT_CUBLASLT_LIB) and, at P>1, NCCL all-gather + cuBLASLt (WEFT_NCCL_LIB).\n"
         "Its table rows start with \"ag_gemm \".\n"
         "Exit status: 0 correct, 1 wrong or failed, 2 bad usage or config, 77 no GPU here.\n");
}

/* ---- device helpers ---------------------------------------------------------------------- */

static const drv_table *D;

int cli_cu_ok(const drv_table *d, int rank, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 1;
  char buf[512];
  drv_describe(d, r, what, buf, sizeof buf);
  if (rank >= 0) fprintf(stderr, "weft run: rank %d: %s\n", rank, buf);
  else fprintf(stderr, "weft run: %s\n", buf);
  return 0;
}

static int cu_ok(CUresult r, const char *what) { return cli_cu_ok(D, -1, r, what); }

static CUdeviceptr dev_alloc(size_t bytes) {
  CUdeviceptr p = 0;
  if (!cu_ok(D->cuMemAlloc(&p, bytes ? bytes : 16), "cuMemAlloc")) return 0;
  return p;
}

/* One timed target: launch the kernel (args_for(i) gives buffer set i % nsets) or a copy. */
typedef struct timed {
  weft_kernel *k;
  void **(*args_for)(void *ud, int set);
  void *ud;
  int nsets;
  CUdeviceptr copy_src, copy_dst;
  size_t copy_bytes;
} timed;

static int time_median(const timed *t, int warmup, int iters, double *ms) {
  CUevent a, b;
  if (!cu_ok(D->cuEventCreate(&a, 0), "cuEventCreate") || !cu_ok(D->cuEventCreate(&b, 0), "cuEventCreate")) return -1;
  double *v = calloc((size_t)iters, sizeof *v);
  int rc = -1;
  for (int i = -warmup; i < iters; i++) {
    int set = (i + warmup) % t->nsets;
    if (!cu_ok(D->cuEventRecord(a, NULL), "cuEventRecord")) goto out;
    if (t->k) {
      if (weft_launch(t->k, t->args_for(t->ud, set), NULL)) {
        fprintf(stderr, "weft run: %s\n", weft_kernel_error(t->k));
        goto out;
      }
    } else if (!cu_ok(D->cuMemcpyDtoDAsync(t->copy_dst, t->copy_src, t->copy_bytes, NULL), "cuMemcpyDtoDAsync")) {
      goto out;
    }
    if (!cu_ok(D->cuEventRecord(b, NULL), "cuEventRecord") || !cu_ok(D->cuEventSynchronize(b), "kernel")) goto out;
    float f;
    if (!cu_ok(D->cuEventElapsedTime(&f, a, b), "cuEventElapsedTime")) goto out;
    if (i >= 0) v[i] = f;
  }
  *ms = cli_median(v, iters);
  rc = 0;
out:
  free(v);
  D->cuEventDestroy(a);
  D->cuEventDestroy(b);
  return rc;
}

/* Input sets to rotate through so timing does not measure L2 (60 MB on H200). */
static int rotation_sets(size_t bytes_per_set) {
  const size_t l2x3 = (size_t)192 << 20;
  if (bytes_per_set >= l2x3) return 1;
  long n = (long)((l2x3 + bytes_per_set - 1) / bytes_per_set);
  return n > 16 ? 16 : (int)n;
}

static void print_timing(const run_opts *o, const char *name, double ms, double bytes, double copy_ms,
                         double copy_bytes) {
  double gbs = bytes / (ms * 1e6), cgbs = 2.0 * copy_bytes / (copy_ms * 1e6);
  if (o->result) {
    o->result->timed = 1;
    o->result->us = ms * 1e3;
    o->result->metric = gbs;
    o->result->baseline = gbs / cgbs;
    snprintf(o->result->metric_name, sizeof o->result->metric_name, "GB/s");
    snprintf(o->result->baseline_name, sizeof o->result->baseline_name, "copy");
  }
  if (o->quiet) return;
  printf("time: %s: median %.2f us, %.1f GB/s; device copy of the input: %.2f us, %.1f GB/s (read+write); "
         "ratio to copy %.3f\n", name, ms * 1e3, gbs, copy_ms * 1e3, cgbs, gbs / cgbs);
}

/* ---- rows: row_reduce and row_softmax ---------------------------------------------------- */

typedef struct rows_run {
  const run_opts *o;
  const weft_manifest *m;
  int softmax;
  hr_dtype dt;
  int32_t rows, cols;
  CUdeviceptr x[16], y[16];
  void *args[16][8];
} rows_run;

static void **rows_args(void *ud, int set) { return ((rows_run *)ud)->args[set]; }

static int bind_args(const weft_manifest *m, void **slots, const char *const *names, void *const *vals, int n) {
  for (int i = 0; i < m->n_args; i++) {
    slots[i] = NULL;
    for (int j = 0; j < n; j++)
      if (!strcmp(m->args[i].name, names[j])) slots[i] = vals[j];
    if (!slots[i]) { fprintf(stderr, "weft run: no value for kernel argument %s\n", m->args[i].name); return -1; }
  }
  return 0;
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

static int run_rows(weft_kernel *k, const run_opts *o, int softmax) {
  const weft_manifest *m = weft_kernel_manifest(k);
  rows_run r = {.o = o, .m = m, .softmax = softmax};
  if (hr_dtype_parse(weft_manifest_param(m, "dtype"), &r.dt)) { fprintf(stderr, "weft run: bad dtype\n"); return CLI_FAIL; }
  const char *op = softmax ? "softmax" : weft_manifest_param(m, "op");
  int custom = op && !strcmp(op, "custom");
  long cols = o->cols;
  if (cols <= 0) {
    const char *mc = weft_manifest_param(m, "max_cols");
    cols = mc && atol(mc) > 0 ? atol(mc) : 65536;
  }
  r.rows = (int32_t)(o->rows > 0 ? o->rows : 1024);
  r.cols = (int32_t)cols;
  size_t n = (size_t)r.rows * (size_t)r.cols, in_bytes = n * hr_dtype_size(r.dt);
  size_t out_bytes = softmax ? in_bytes : (size_t)r.rows * 4;
  int nsets = o->timing ? rotation_sets(in_bytes + out_bytes) : 1;
  void *hx = malloc(in_bytes);
  int rc = CLI_FAIL;
  if (!hx) { fprintf(stderr, "weft run: out of host memory for %zu bytes\n", in_bytes); return CLI_FAIL; }
  if (op && !strcmp(op, "prod")) hr_fill_pow2_for_prod(r.dt, hx, n, (size_t)r.cols, o->seed);
  else hr_fill_uniform(r.dt, hx, n, o->seed, softmax ? -8.0 : -1.0, softmax ? 8.0 : 1.0);
  for (int s = 0; s < nsets; s++) {
    if (!(r.x[s] = dev_alloc(in_bytes)) || !(r.y[s] = dev_alloc(out_bytes))) goto out;
    if (!cu_ok(D->cuMemcpyHtoD(r.x[s], hx, in_bytes), "cuMemcpyHtoD")) goto out;
    if (!cu_ok(D->cuMemsetD8(r.y[s], 0xff, out_bytes), "cuMemsetD8")) goto out;   /* poison */
    const char *names[] = {"x", softmax ? "y" : "out", "rows", "cols"};
    void *vals[] = {&r.x[s], &r.y[s], &r.rows, &r.cols};
    if (bind_args(m, r.args[s], names, vals, 4)) goto out;
  }
  if (!o->quiet) printf("run: %s rows=%d cols=%d (%s)\n", m->name, r.rows, r.cols, hr_dtype_name(r.dt));
  if (weft_launch(k, r.args[0], NULL)) { fprintf(stderr, "weft run: %s\n", weft_kernel_error(k)); goto out; }
  if (!cu_ok(D->cuCtxSynchronize(), "the kernel")) goto out;
  if (o->check) {
    if (custom && !weft_manifest_param(m, "op.ref")) {
      if (!o->quiet) printf("check: %s: NOT CHECKED (custom op without ref: give op.ref = function(a, b) ... end to check it)\n", m->name);
    } else if (check_rows(k, &r, hx, op)) goto out;
  }
  if (o->timing) {
    timed tk = {.k = k, .args_for = rows_args, .ud = &r, .nsets = nsets};
    timed tc = {.nsets = 1, .copy_src = r.x[0], .copy_dst = softmax ? r.y[0] : r.x[nsets > 1 ? 1 : 0], .copy_bytes = in_bytes};
    CUdeviceptr scratch = 0;
    if (!softmax && nsets == 1) { if (!(scratch = dev_alloc(in_bytes))) goto out; tc.copy_dst = scratch; }
    double ms, cms;
    if (time_median(&tk, o->warmup, o->iters, &ms) || time_median(&tc, o->warmup, o->iters, &cms)) goto out;
    if (scratch) D->cuMemFree(scratch);
    print_timing(o, m->name, ms, (double)(in_bytes + out_bytes), cms, (double)in_bytes);
  }
  rc = CLI_OK;
out:
  for (int s = 0; s < 16; s++) { if (r.x[s]) D->cuMemFree(r.x[s]); if (r.y[s]) D->cuMemFree(r.y[s]); }
  free(hx);
  return rc;
}

/* ---- cluster_reduce ---------------------------------------------------------------------- */

static int run_cluster_reduce(weft_kernel *k, const run_opts *o) {
  const weft_manifest *m = weft_kernel_manifest(k);
  int C = atoi(weft_manifest_param(m, "cluster")), T = atoi(weft_manifest_param(m, "threads"));
  int W = atoi(weft_manifest_param(m, "width")), I = atoi(weft_manifest_param(m, "iters"));
  const char *opn = weft_manifest_param(m, "op");
  int32_t clusters = (int32_t)(o->clusters > 0 ? o->clusters : 264);
  size_t nin = (size_t)clusters * C * I * T * W, nout = (size_t)clusters * C * I * W;
  float *hx = malloc(nin * 4), *got = malloc(nout * 4);
  CUdeviceptr dx = 0, dy = 0;
  int rc = CLI_FAIL;
  hr_op op = HR_SUM;
  int custom = hr_op_parse(opn, &op) != 0;
  int have_ref = custom && weft_manifest_param(m, "op.ref") != NULL;
  double *ref_in = malloc((size_t)C * T * sizeof *ref_in);   /* one fold's inputs, for op.ref */
  if (!hx || !got || !ref_in) goto out;
  if (!custom && op == HR_PROD) hr_fill_pow2_for_prod(HR_F32, hx, nin, (size_t)T * W, o->seed);
  else hr_fill_uniform(HR_F32, hx, nin, o->seed, -1.0, 1.0);
  if (!(dx = dev_alloc(nin * 4)) || !(dy = dev_alloc(nout * 4))) goto out;
  if (!cu_ok(D->cuMemcpyHtoD(dx, hx, nin * 4), "cuMemcpyHtoD") || !cu_ok(D->cuMemsetD8(dy, 0xff, nout * 4), "cuMemsetD8")) goto out;
  void *args[4];
  const char *names[] = {"in", "out", "clusters"};
  void *vals[] = {&dx, &dy, &clusters};
  if (bind_args(m, args, names, vals, 3)) goto out;
  if (!o->quiet) printf("run: %s clusters=%d\n", m->name, clusters);
  if (weft_launch(k, args, NULL)) { fprintf(stderr, "weft run: %s\n", weft_kernel_error(k)); goto out; }
  if (!cu_ok(D->cuCtxSynchronize(), "the kernel")) goto out;
  if (!cu_ok(D->cuMemcpyDtoH(got, dy, nout * 4), "cuMemcpyDtoH")) goto out;
  if (o->check) {
    size_t differ = 0, bad = 0, unwritten = 0;
    double worst = 0;
    for (long cl = 0; cl < clusters; cl++)
      for (int it = 0; it < I; it++)
        for (int w = 0; w < W; w++) {
          uint32_t b0;
          memcpy(&b0, &got[((size_t)(cl * C) * I + it) * W + w], 4);
          double want = 0, scale = 0;
          int nv = 0;
          for (int c = 0; c < C; c++) {
            const float *g = &got[((size_t)(cl * C + c) * I + it) * W + w];
            uint32_t b;
            memcpy(&b, g, 4);
            if (b == 0xffffffffu) unwritten++;
            if (b != b0) differ++;
            for (int t = 0; t < T; t++) {
              double x = hx[(((size_t)(cl * C + c) * I + it) * T + t) * W + w];
              want = (c == 0 && t == 0) ? x : hr_fold(op, want, x);
              scale += fabs(x);
              ref_in[nv++] = x;
            }
          }
          if (custom && !have_ref) continue;
          if (have_ref && weft_reference_fold(k, ref_in, (size_t)nv, &want)) {
            fprintf(stderr, "weft run: %s\n", weft_kernel_error(k));
            goto out;
          }
          double tol = (op == HR_SUM || custom) ? ldexp(scale, -22) : 0;   /* prod, max, min: exact */
          double e = fabs((double)got[((size_t)(cl * C) * I + it) * W + w] - want);
          if (!(e <= tol)) bad++;
          if (e > worst) worst = e;
        }
    int fail = differ || bad || unwritten;
    if (o->result) { o->result->checked = !custom || have_ref; o->result->passed = !fail; }
    if (!o->quiet || fail) printf("check: %s: %s (%zu values differ between CTAs of a cluster, %zu outside tolerance%s, %zu unwritten; "
           "max abs err %.3g)\n", m->name, fail ? "FAIL" : "PASS", differ, bad,
           custom && !have_ref ? " (custom op without ref: values NOT CHECKED, bit-identity checked)" : "", unwritten, worst);
    if (fail) goto out;
  }
  if (o->timing) {
    /* the primitive is latency-bound: report time per combine over back-to-back launches */
    CUevent a, b;
    if (!cu_ok(D->cuEventCreate(&a, 0), "cuEventCreate")) goto out;
    if (!cu_ok(D->cuEventCreate(&b, 0), "cuEventCreate")) { D->cuEventDestroy(a); goto out; }
    int bad = 0;
    for (int i = 0; i < o->warmup && !bad; i++) bad = weft_launch(k, args, NULL) != WEFT_OK;
    bad = bad || !cu_ok(D->cuEventRecord(a, NULL), "cuEventRecord");
    for (int i = 0; i < o->iters && !bad; i++) bad = weft_launch(k, args, NULL) != WEFT_OK;
    bad = bad || !cu_ok(D->cuEventRecord(b, NULL), "cuEventRecord") || !cu_ok(D->cuEventSynchronize(b), "the kernel");
    float f = 0;
    bad = bad || !cu_ok(D->cuEventElapsedTime(&f, a, b), "cuEventElapsedTime");
    D->cuEventDestroy(a);
    D->cuEventDestroy(b);
    if (bad) { fprintf(stderr, "weft run: timing failed: %s\n", weft_kernel_error(k)); goto out; }
    double ms = f / o->iters;
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
  free(hx); free(got); free(ref_in);
  return rc;
}

/* ---- entry points --------------------------------------------------------------------------- */

int run_kernel(weft_kernel *k, const run_opts *o) {
  if (o->result) memset(o->result, 0, sizeof *o->result);
  D = drv_get(NULL, 0);
  if (!D) { fprintf(stderr, "weft run: no driver\n"); return CLI_NO_GPU; }
  const char *fam = weft_kernel_manifest(k)->family;
  if (!strcmp(fam, "row_reduce")) return run_rows(k, o, 0);
  if (!strcmp(fam, "row_softmax")) return run_rows(k, o, 1);
  if (!strcmp(fam, "cluster_reduce")) return run_cluster_reduce(k, o);
  if (!strcmp(fam, "allreduce")) return run_allreduce(k, o);
  if (!strcmp(fam, "ag_gemm")) return run_ag_gemm(k, o);
  fprintf(stderr, "weft run: no runner for family %s yet\n", fam);
  return CLI_FAIL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double cli_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

int cli_device(void) {
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK"), *dv = getenv("WEFT_DEVICE");
  if (dv) return atoi(dv);
  if (!lr) return 0;
  const drv_table *d = drv_get(NULL, 0);
  int n = 0;
  if (!d || d->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) return 0;
  return atoi(lr) % n;
}

static int num_arg(int argc, char **argv, int *i, long *out) {
  if (*i + 1 >= argc) { fprintf(stderr, "weft run: %s needs a number\n", argv[*i]); return -1; }
  char *end;
  long v = strtol(argv[*i + 1], &end, 0);
  if (*end || v <= 0) { fprintf(stderr, "weft run: %s %s: expected a positive integer\n", argv[*i], argv[*i + 1]); return -1; }
  *out = v;
  ++*i;
  return 0;
}

/* MxNxK (also with X or *): positive; N and K multiples of 8 (16-byte rows for TMA) */
static int shape_arg(int argc, char **argv, int *i, cli_shape *list, int *n) {
  if (*i + 1 >= argc) { fprintf(stderr, "weft run: %s needs MxNxK\n", argv[*i]); return -1; }
  const char *s = argv[*i + 1];
  long long v[3];
  char *end = (char *)s;
  for (int d = 0; d < 3; d++) {
    const char *at = end;
    v[d] = strtoll(at, &end, 10);
    if (end == at || v[d] <= 0 || (d < 2 && *end != 'x' && *end != 'X' && *end != '*')) goto bad;
    if (d < 2) end++;
  }
  if (*end) goto bad;
  if (v[1] % 8 || v[2] % 8) {
    fprintf(stderr, "weft run: %s %s: N = %lld and K = %lld must be multiples of 8 (rows of 16 bytes)\n", argv[*i], s,
            v[1], v[2]);
    return -1;
  }
  if (*n >= CLI_MAX_SHAPES) { fprintf(stderr, "weft run: at most %d shapes per %s\n", CLI_MAX_SHAPES, argv[*i]); return -1; }
  list[(*n)++] = (cli_shape){v[0], v[1], v[2]};
  ++*i;
  return 0;
bad:
  fprintf(stderr, "weft run: %s %s: expected MxNxK, three positive integers (e.g. 4096x4096x4096)\n", argv[*i], s);
  return -1;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {.iters = 50, .warmup = 3, .seed = 12345, .check = 1, .timing = 1};
  int tuned = 0;
  const char *db_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { cmd_run_help(); return CLI_OK; }
    if (!strcmp(a, "--rows")) { if (num_arg(argc, argv, &i, &o.rows)) return CLI_USAGE; continue; }
    if (!strcmp(a, "--cols")) { if (num_arg(argc, argv, &i, &o.cols)) return CLI_USAGE; continue; }
    if (!strcmp(a, "--elems")) { long e; if (num_arg(argc, argv, &i, &e)) return CLI_USAGE; o.elems = e; continue; }
    if (!strcmp(a, "--clusters")) { if (num_arg(argc, argv, &i, &o.clusters)) return CLI_USAGE; continue; }
    if (!strcmp(a, "--iters")) { if (num_arg(argc, argv, &i, &v)) return CLI_USAGE; o.iters = (int)v; continue; }
    if (!strcmp(a, "--seed")) { if (num_arg(argc, argv, &i, &v)) return CLI_USAGE; o.seed = (uint64_t)v; continue; }
    if (!strcmp(a, "--no-check")) { o.check = 0; continue; }
    if (!strcmp(a, "--no-time")) { o.timing = 0; continue; }
    if (!strcmp(a, "--tuned")) { tuned = 1; continue; }
    if (!strcmp(a, "--shape")) { if (shape_arg(argc, argv, &i, o.shapes, &o.n_shapes)) return CLI_USAGE; continue; }
    if (!strcmp(a, "--time-shape")) {
      if (shape_arg(argc, argv, &i, o.time_shapes, &o.n_time_shapes)) return CLI_USAGE;
      continue;
    }
    if (!strcmp(a, "--shapes-only")) { o.shapes_only = 1; continue; }
    if (!strcmp(a, "--db")) {
      if (i + 1 >= argc) { fprintf(stderr, "weft run: --db needs a path\n"); return CLI_USAGE; }
      db_path = argv[++i];
      continue;
    }
    int r = cli_common_arg(&o.c, argc, argv, &i);
    if (r < 0) return CLI_USAGE;
    if (r == 0) { fprintf(stderr, "weft run: unknown option '%s' (weft help run)\n", a); return CLI_USAGE; }
  }
  if (!o.c.config) { fprintf(stderr, "weft run: needs CONFIG.lua (weft help run)\n"); return CLI_USAGE; }
  weft_ctx *ctx;
  weft_ctx_options copts = {.device = cli_device()};
  if (weft_ctx_create(&ctx, &copts)) { fprintf(stderr, "weft: cannot create a context\n"); return CLI_FAIL; }
  weft_kernel *k = NULL;
  int rc;
  weft_status st = WEFT_OK;
  if (tuned) {
    if (o.rows <= 0 && o.cols <= 0 && o.clusters <= 0 && o.n_time_shapes != 1) {
      fprintf(stderr, "weft run: --tuned needs the shape (--rows R --cols C, --clusters N, or one --time-shape MxNxK)\n");
      weft_ctx_destroy(ctx);
      return CLI_USAGE;
    }
    char shape[128];   /* named as the sweep names it: the size names, sorted */
    if (o.n_time_shapes == 1)
      snprintf(shape, sizeof shape, "k=%lld m=%lld n=%lld", o.time_shapes[0].k, o.time_shapes[0].m, o.time_shapes[0].n);
    else if (o.clusters > 0) snprintf(shape, sizeof shape, "clusters=%ld", o.clusters);
    else snprintf(shape, sizeof shape, "cols=%ld rows=%ld", o.cols, o.rows);
    int found = 0;
    st = weft_compile_tuned(ctx, o.c.config, o.c.sets, o.c.n_sets, shape, db_path, &k, &found);
    if (!st) printf("tuned: %s\n", weft_ctx_error(ctx));   /* which config, and from where */
  } else {
    st = weft_compile_file(ctx, o.c.config, o.c.sets, o.c.n_sets, &k);
  }
  if (st) { fprintf(stderr, "%s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto out; }
  printf("compile: %s in %.1f ms (%s)\n", weft_kernel_manifest(k)->name, weft_kernel_compile_ms(k),
         weft_kernel_cache_hit(k) ? "cache hit" : "NVRTC");
  void *cuctx;
  st = weft_ctx_cuda(ctx, &cuctx);
  if (st) { fprintf(stderr, "weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto out; }
  o.ctx = ctx;
  rc = run_kernel(k, &o);
out:
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
  return rc;
}
