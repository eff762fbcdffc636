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
#include "runner.h"



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

/* ---- entry points --------------------------------------------------------------------------- */

int run_kernel(weft_kernel *k, const run_opts *o) {
  if (o->result) memset(o->result, 0, sizeof *o->result);
  const char *fam = weft_kernel_manifest(k)->family;
  const runner *r = runner_find(fam);
  if (r) return r->run(k, o);
  char have[256];
  runner_list(have, sizeof have);
  fprintf(stderr, "weft run: family %s has no runner (runtime/cli/runners/; registered: %s)\n", fam, have);
  return CLI_FAIL;
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
