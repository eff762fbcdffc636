/* cmd_run.c: `weft run`: JIT a config, run it on random data with poisoned outputs, check it
 * against a CPU reference in double precision, then time it against a device-to-device copy
 * measured in the same process.  Exit: 0 checked and correct, 1 wrong (or failed), 2 usage or
 * config error, 77 no GPU/driver here (ctest's SKIP code). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>

#include "cli.h"
#include "driver.h"
#include "ranks.h"
#include "auto.h"
#include "runner.h"
#include "util.h"



void cmd_run_help(void) {
  printf("usage: weft run CONFIG.lua [--set key=value ...] [--<size> N ...] [--shape AxB.. ...]\n"
         "                [--time-shape AxB.. ...] [--shapes-only] [--iters N] [--seed S] [--no-check]\n"
         "                [--no-time] [--tuned [--db PATH]] [--auto [--db PATH]]\n\n"
         "Sizes are the family's (its run spec, gen/families/<family>.lua): --rows R --cols C (row_reduce,\n"
         "row_softmax, rmsnorm, allreduce_norm), --clusters N (cluster_reduce), --n N or --elems N (allreduce,\n"
         "per rank; reduce_scatter and all_gather, the chunk), --m M --n N --k K (gemm, ag_gemm; gemm_rs and\n"
         "gemm_ar with --k the per-rank shard).  Size flags give the one shape to check and time (sizes not\n"
         "given keep the family's default); --shape / --time-shape give a shape as its sizes in order joined by\n"
         "x (4096x4096x4096) and add it to the family's lists of shapes to check / to time (--shapes-only: only\n"
         "those given, so it needs at least one).\n"
         "--tuned runs the best config `weft tune` stored for this GPU, the number of ranks, the config's\n"
         "family and dtype, and this shape (the size flags, or one --time-shape); without one it says so\n"
         "and runs CONFIG.lua as given.\n"
         "--auto chooses, per shape, the fields CONFIG.lua leaves out or sets to \"auto\" (weft suggest prints\n"
         "the choice and where it came from), then checks and times each shape with its own kernel; with\n"
         "WEFT_AUTOTUNE=1 a shape the database does not know first has its candidates checked and timed, within\n"
         "WEFT_AUTOTUNE_BUDGET_MS (default 2000), and the fastest stored in the database.  A config that does\n"
         "not generate as given (examples/auto/row_softmax.lua: max_cols comes from the shape) has no shapes of\n"
         "its own: give them.\n"
         "--db PATH: the tuning database --tuned and --auto read (default $WEFT_TUNE_DB, else\n"
         "$XDG_CACHE_HOME/weft/tune.db or ~/.cache/weft/tune.db); refused without one of them.\n"
         "Compiles the kernel (cached), fills its inputs with random data (--seed S) and its outputs with a\n"
         "NaN poison, launches it, and checks every output against a CPU reference in double precision\n"
         "(cluster_reduce also checks that every CTA of a cluster got the same bits).  Then it times the\n"
         "kernel with CUDA events over --iters launches (default 50), after warm-ups: row_reduce, row_softmax\n"
         "and rmsnorm each launch alone, the median, rotating input buffers when they fit in L2, beside a\n"
         "device-to-device copy of the same bytes (GB/s and the ratio to the copy); cluster_reduce the mean\n"
         "of back-to-back launches, per combine; gemm as ag_gemm below at one rank, beside cuBLASLt.\n"
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
  cli_err("weft run: family %s has no runner (runtime/cli/runners/; registered: %s)\n", fam, have);
  return CLI_FAIL;
}

/* --iters N, --seed S: a positive integer that fits (at most max) */
/* What the command line said about shapes, resolved once the kernel's run spec is known. */
#define CLI_MAX_SIZE_FLAGS 8
typedef struct shape_args {
  const char *flag[CLI_MAX_SIZE_FLAGS], *value[CLI_MAX_SIZE_FLAGS];   /* --rows 37: "rows", "37" */
  int n_flags;
  const char *check[CLI_MAX_SHAPES], *time[CLI_MAX_SHAPES];           /* --shape / --time-shape */
  int n_check, n_time;
} shape_args;

/* --auto: the kernel is chosen per shape, and the choice's limits are checked by weft_auto_choose
 * (the config as given may not fit the shape: max_cols is one of the fields it chooses). */
static int sizes_unchecked;

/* A size's value: a positive integer within the kernel's limits (the library's one check). */
static int size_value(const weft_manifest *m, const char *what, const char *text, int j, long long *out) {
  long long v = 0;
  char why[512];
  if (util_parse_whole(text, &v) || v <= 0) {   /* (digits only, as every number flag: not " 5", "+5") */
    char shown[160];
    cli_err("weft run: %s: %s = %s: must be a positive integer\n", what, m->run.sizes[j],
            util_printable(text, shown, sizeof shown));
    return -1;
  }
  if (!sizes_unchecked && weft_manifest_check_size(m, m->run.sizes[j], v, why, sizeof why)) {
    cli_err("weft run: %s: %s\n", what, why);
    return -1;
  }
  *out = v;
  return 0;
}

static void sizes_list(const weft_run_spec *rs, char *buf, size_t len, const char *sep, const char *pre) {
  size_t at = 0;
  buf[0] = 0;
  for (int j = 0; j < rs->n_sizes && at < len; j++) {
    int w = snprintf(buf + at, len - at, "%s%s%s", j ? sep : "", pre, rs->sizes[j]);
    if (w < 0 || (size_t)w >= len - at) { buf[at] = 0; return; }
    at += (size_t)w;
  }
}

/* "AxBxC": one value per size of the family, in its order (also X or *). */
static int shape_value(const weft_manifest *m, const char *flag, const char *text, weft_shape *out) {
  const weft_run_spec *rs = &m->run;
  char what[256], names[128], shown[224];
  snprintf(what, sizeof what, "%s %s", flag, util_printable(text, shown, sizeof shown));
  sizes_list(rs, names, sizeof names, "x", "");
  const char *at = text;
  for (int j = 0; j < rs->n_sizes; j++) {
    char part[32];
    size_t n = strcspn(at, "xX*");
    if (n == 0 || n >= sizeof part || (j < rs->n_sizes - 1 ? at[n] == 0 : at[n] != 0)) {
      cli_err("weft run: %s: expected %s (%d positive integer%s joined by x) for family %s\n", what, names,
              rs->n_sizes, rs->n_sizes == 1 ? "" : "s", m->family);
      return -1;
    }
    memcpy(part, at, n);
    part[n] = 0;
    if (size_value(m, what, part, j, &out->v[j])) return -1;
    at += n + (at[n] != 0);
  }
  return 0;
}

/* The shapes to check and to time (run_opts), from the family's run spec and the command line:
 * size flags (--rows R --cols C) give the one shape to check and time, sizes not given taking
 * the family's default; --shape / --time-shape add to the family's lists (--shapes-only: replace
 * them).  0, or -1 with a message naming the flag, the value and what is allowed. */
static int resolve_shapes(const weft_manifest *m, const shape_args *sa, run_opts *o) {
  const weft_run_spec *rs = &m->run;
  char names[160];
  sizes_list(rs, names, sizeof names, ", ", "--");
  if (rs->n_sizes == 0 && (sa->n_flags || sa->n_check || sa->n_time)) {
    cli_err("weft run: family %s declares no sizes (its run spec): drop the size and shape flags\n", m->family);
    return -1;
  }
  o->n_check = o->n_time = 0;
  if (sa->n_flags) {
    weft_shape sh = rs->n_time ? rs->time[0] : rs->n_check ? rs->check[0] : (weft_shape){{0}};
    int given[WEFT_MAX_SIZES] = {0};
    for (int f = 0; f < sa->n_flags; f++) {
      int j = weft_run_size_index(rs, sa->flag[f]);
      if (j < 0) {
        cli_err("weft run: unknown option '--%s': family %s takes the sizes %s (weft help run)\n", sa->flag[f],
                m->family, names);
        return -1;
      }
      char what[64];
      snprintf(what, sizeof what, "--%s", sa->flag[f]);
      if (size_value(m, what, sa->value[f], j, &sh.v[j])) return -1;
      given[j] = 1;
    }
    for (int j = 0; j < rs->n_sizes; j++)
      if (!given[j] && sh.v[j] <= 0) {
        cli_err("weft run: family %s needs --%s too (sizes: %s)\n", m->family, rs->sizes[j], names);
        return -1;
      }
    o->check_shapes[o->n_check++] = sh;
    o->time_shapes[o->n_time++] = sh;
    o->shapes_only = 1;
  } else if (!o->shapes_only) {
    for (int i = 0; i < rs->n_check && o->n_check < CLI_MAX_SHAPES; i++) o->check_shapes[o->n_check++] = rs->check[i];
    for (int i = 0; i < rs->n_time && o->n_time < CLI_MAX_SHAPES; i++) o->time_shapes[o->n_time++] = rs->time[i];
  }
  for (int i = 0; i < sa->n_check; i++) {
    if (o->n_check == CLI_MAX_SHAPES) { cli_err("weft run: at most %d shapes to check\n", CLI_MAX_SHAPES); return -1; }
    if (shape_value(m, "--shape", sa->check[i], &o->check_shapes[o->n_check++])) return -1;
  }
  for (int i = 0; i < sa->n_time; i++) {
    if (o->n_time == CLI_MAX_SHAPES) { cli_err("weft run: at most %d shapes to time\n", CLI_MAX_SHAPES); return -1; }
    if (shape_value(m, "--time-shape", sa->time[i], &o->time_shapes[o->n_time++])) return -1;
  }
  return 0;
}

/* The tuning database names a shape as weft tune's sweep does: "name=value" by size name. */
/* (sorted by size name, as sweep.lua's sorted_keys sorts them before joining "name=value") */
static const weft_run_spec *sort_spec;
static int by_size_name(const void *a, const void *b) {
  return strcmp(sort_spec->sizes[*(const int *)a], sort_spec->sizes[*(const int *)b]);
}
int cli_shape_key(const weft_run_spec *rs, const weft_shape *sh, char *buf, size_t len) {
  int order[WEFT_MAX_SIZES];
  for (int j = 0; j < rs->n_sizes; j++) order[j] = j;
  sort_spec = rs;
  qsort(order, (size_t)rs->n_sizes, sizeof *order, by_size_name);
  size_t at = 0;
  for (int j = 0; j < rs->n_sizes; j++) {
    int w = snprintf(buf + at, len - at, "%s%s=%lld", j ? " " : "", rs->sizes[order[j]], sh->v[order[j]]);
    if (w < 0 || (size_t)w >= len - at) return -1;
    at += (size_t)w;
  }
  return 0;
}

static int is_size_flag(const char *a) {
  if (a[0] != '-' || a[1] != '-' || !a[2]) return 0;
  for (const char *c = a + 2; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || *c == '_' || (*c >= '0' && *c <= '9'))) return 0;
  return 1;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {.iters = 50, .warmup = 3, .seed = 12345, .check = 1, .timing = 1};
  shape_args sa = {.n_flags = 0};
  int tuned = 0, auto_mode = 0, rc = CLI_USAGE;
  weft_manifest stub = {0};   /* --auto with fields set to "auto": the run spec's sizes only */
  char stub_family[64], stub_sizes[WEFT_MAX_SIZES][64];
  const char *db_path = NULL;
  weft_ctx *ctx = NULL;
  weft_kernel *k = NULL;
  weft_manifest *base = NULL;
  weft_status st = WEFT_OK;
  /* Under mpirun every rank must reach the run together, or stop together: a rank that fails
   * before it (a flag, a file, a config, a compile) tells the others, instead of leaving them
   * waiting in the runner's first collective. */
  if (ranks_world_size() > 1) ranks_ensure();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long long v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { cmd_run_help(); rc = CLI_OK; goto out; }
    if (!strcmp(a, "--iters")) { if (cli_flag_whole(argc, argv, &i, "weft run", 1, 1000000, NULL, &v)) goto agree; o.iters = (int)v; continue; }
    if (!strcmp(a, "--seed")) { if (cli_flag_whole(argc, argv, &i, "weft run", 1, LLONG_MAX, NULL, &v)) goto agree; o.seed = (uint64_t)v; continue; }
    if (!strcmp(a, "--no-check")) { o.check = 0; continue; }
    if (!strcmp(a, "--no-time")) { o.timing = 0; continue; }
    if (!strcmp(a, "--tuned")) { tuned = 1; continue; }
    if (!strcmp(a, "--auto")) { auto_mode = 1; continue; }
    if (!strcmp(a, "--shape") || !strcmp(a, "--time-shape")) {
      int t = !strcmp(a, "--time-shape");
      if ((t ? sa.n_time : sa.n_check) == CLI_MAX_SHAPES) { cli_err("weft run: at most %d %s\n", CLI_MAX_SHAPES, a); goto agree; }
      const char *v = cli_flag_value(argc, argv, &i, "weft run", "a shape, e.g. 4096x4096x4096");
      if (!v) goto agree;
      if (t) sa.time[sa.n_time++] = v;
      else sa.check[sa.n_check++] = v;
      continue;
    }
    if (!strcmp(a, "--shapes-only")) { o.shapes_only = 1; continue; }
    if (!strcmp(a, "--db")) {
      if (!(db_path = cli_flag_value(argc, argv, &i, "weft run", "a path"))) goto agree;
      continue;
    }
    int r = cli_common_arg(&o.c, argc, argv, &i, "weft run");
    if (r < 0) goto agree;
    if (r == 0 && is_size_flag(a) && i + 1 >= argc) { cli_err("weft run: %s needs a number\n", a); goto agree; }
    if (r == 0 && is_size_flag(a)) {   /* a size of the family (--rows 37): checked once compiled */
      if (sa.n_flags == CLI_MAX_SIZE_FLAGS) { cli_err("weft run: at most %d size flags\n", CLI_MAX_SIZE_FLAGS); goto agree; }
      sa.flag[sa.n_flags] = a + 2;
      sa.value[sa.n_flags++] = argv[++i];
      continue;
    }
    if (r == 0) { cli_err("weft run: unknown option '%s' (weft help run)\n", a); goto agree; }
  }
  if (!o.c.config) { cli_err("weft run: needs CONFIG.lua (weft help run)\n"); goto agree; }
  if (o.c.out_dir) {   /* (the option every command shares; run writes nothing, so it would go unheeded) */
    cli_err("weft run: -o %s: run writes no files (weft build CONFIG -o DIR writes the kernel's)\n", o.c.out_dir);
    goto agree;
  }
  if (!o.check && !o.timing) {   /* (both off: every shape dropped, and exit 0 having run nothing) */
    cli_err("weft run: --no-check and --no-time: nothing would run (weft build CONFIG -o DIR compiles without "
            "running)\n");
    goto agree;
  }
  if (db_path && !tuned && !auto_mode) {   /* (only those two read the tuning database: it would go unheeded) */
    cli_err("weft run: --db %s: only --tuned and --auto read the tuning database; without them weft run uses CONFIG "
            "as given\n", db_path);
    goto agree;
  }
  if (o.shapes_only && !sa.n_flags && !sa.n_check && !sa.n_time) {   /* (nothing would be checked or timed: exit 0) */
    cli_err("weft run: --shapes-only: give the shapes to run (--shape or --time-shape, or the size flags): it drops "
            "the family's own, so without them nothing is checked or timed\n");
    goto agree;
  }
  if (cli_device_env_check("weft run")) goto agree;
  weft_ctx_options copts = {.device = cli_device()};
  if (weft_ctx_create(&ctx, &copts)) { cli_err("weft run: cannot create a context\n"); rc = CLI_FAIL; goto agree; }
  if (auto_mode && tuned) { cli_err("weft run: --auto and --tuned: give one (--auto looks in the database first)\n"); goto agree; }
  double budget_ms;
  int autotune = 0;
  if (auto_mode && (cli_autotune_flag(&autotune) || (autotune && cli_autotune_budget(&budget_ms)))) goto agree;
  sizes_unchecked = auto_mode;
  /* the config as given, generated (not compiled) first: its run spec says what the flags mean */
  st = weft_generate_file(ctx, o.c.config, o.c.sets, o.c.n_sets, &base);
  char gen_err[400] = "";
  if (st && auto_mode && st == WEFT_ERR_CONFIG) {
    /* fields set to "auto" make the config ungenerated as given: the family's size names are
     * enough to read the shapes, which must then be given */
    int w = snprintf(gen_err, sizeof gen_err, "%s", weft_ctx_error(ctx));
    if (w < 0) gen_err[0] = 0;
    else if ((size_t)w >= sizeof gen_err) memcpy(gen_err + sizeof gen_err - 4, "...", 4);   /* cut: say so */
    int ns = 0;
    st = auto_prepare(ctx, o.c.config, o.c.sets, o.c.n_sets, stub_family, sizeof stub_family, stub_sizes,
                      WEFT_MAX_SIZES, &ns);
    stub.family = stub_family;
    stub.run.n_sizes = ns;
    for (int j = 0; j < ns; j++) { stub.run.sizes[j] = stub_sizes[j]; stub.run.aliases[j] = ""; }
  }
  if (st) { cli_err("weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto agree; }
  if (resolve_shapes(base ? base : &stub, &sa, &o)) goto agree;
  if (!base && !sa.n_flags && !sa.n_check && !sa.n_time) {
    /* (the stub has no shapes of its own: without these, nothing would run, and exit 0) */
    char names[160], xs[128];
    sizes_list(&stub.run, names, sizeof names, " N ", "--");
    sizes_list(&stub.run, xs, sizeof xs, "x", "");
    cli_err("weft run: --auto: give the shapes (%s N, or --shape %s): %s does not generate as given, so family %s "
            "has no shapes of its own to run (%s)\n", names, xs, o.c.config, stub.family, gen_err);
    goto agree;
  }
  if (auto_mode) {
    st = weft_ctx_cuda(ctx, &(void *){NULL});
    if (st) { cli_err("weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto agree; }
    o.ctx = ctx;
    rc = CLI_OK;
    goto agree;
  }
  if (tuned) {
    if (sa.n_flags && sa.n_time) {
      cli_err("weft run: --tuned takes one shape: the size flags or one --time-shape, not both\n");
      goto agree;
    }
    if (!sa.n_flags && sa.n_time != 1) {
      char names[160], xs[128];
      sizes_list(&base->run, names, sizeof names, " N ", "--");
      sizes_list(&base->run, xs, sizeof xs, "x", "");
      cli_err("weft run: --tuned needs the shape of family %s: %s N, or one --time-shape %s\n", base->family,
              names, xs);
      goto agree;
    }
    char shape[512];
    if (cli_shape_key(&base->run, &o.time_shapes[o.n_time - 1], shape, sizeof shape)) {
      cli_err("weft run: --tuned: the shape's name is too long\n");
      goto agree;
    }
    int found = 0;
    st = weft_compile_tuned(ctx, o.c.config, o.c.sets, o.c.n_sets, shape, ranks_world_size(), db_path, &k, &found);
    if (!st) printf("tuned: %s\n", weft_ctx_error(ctx));   /* which config, and from where */
    else if (st == WEFT_ERR_NO_DRIVER || st == WEFT_ERR_NO_DEVICE) {   /* (the key names the GPU) */
      cli_err("weft run: --tuned looks up this GPU's results: %s\n", weft_ctx_error(ctx));
      rc = cli_status_exit(st);
      goto agree;
    }
  } else {
    st = weft_compile_manifest(ctx, base, &k);
    base = NULL;   /* the kernel owns it now */
  }
  if (st) { cli_err("weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto agree; }
  printf("compile: %s in %.1f ms (%s)\n", weft_kernel_manifest(k)->name, weft_kernel_compile_ms(k),
         weft_kernel_cache_hit(k) ? "cache hit" : "NVRTC");
  void *cuctx;
  st = weft_ctx_cuda(ctx, &cuctx);
  if (st) { cli_err("weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto agree; }
  o.ctx = ctx;
  rc = CLI_OK;
agree:
  if ((rc = ranks_agree(rc, cli_last_error(), "run")) == CLI_OK && auto_mode)
    rc = cli_run_auto(ctx, &o, base ? &base->run : &stub.run, db_path);
  else if (rc == CLI_OK && k) {
    rc = run_kernel(k, &o);
    if (rc != CLI_OK && weft_ctx_check(ctx)) cli_err("weft run: %s\n", weft_ctx_error(ctx));   /* a wait that trapped */
  }
out:
  weft_manifest_free(base);
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
  return rc;
}
