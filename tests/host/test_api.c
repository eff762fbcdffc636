/* test_api.c: the public C API without a GPU: generate, compile through the cache, errors
 * (config, NVRTC, WEFT_NO_COMPILE, argument limits), and launching on a machine without a
 * driver (simulated with WEFT_DRIVER_LIB, so the test means the same on a GPU machine). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "internal.h"
#include "weft.h"

static char cache_dir[512];

static const char *ROW_REDUCE =
    "return { family = 'row_reduce', dtype = 'bf16', op = 'max', cluster = 4, threads = 256 }";

static int setup(void **state) {
  const char *tmp = getenv("WEFT_TEST_TMP");
  char base[400];
  snprintf(base, sizeof base, "%s", tmp && *tmp ? tmp : "/tmp");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", base);
  if (system(cmd) != 0) return -1;
  snprintf(cache_dir, sizeof cache_dir, "%s/api-XXXXXX", base);
  if (!mkdtemp(cache_dir)) return -1;
  setenv("WEFT_CACHE_DIR", cache_dir, 1);
  unsetenv("WEFT_NO_COMPILE");
  setenv("WEFT_DRIVER_LIB", "/nonexistent/libcuda.so.1", 1);
  (void)state;
  return 0;
}

static void test_generate(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  const char *set[] = {"threads=512"};
  assert_int_equal(weft_generate_string(ctx, "inline.lua", ROW_REDUCE, set, 1, &m), WEFT_OK);
  assert_string_equal(m->family, "row_reduce");
  assert_string_equal(m->name, "weft_row_reduce_bf16_max_c4_np0_t512_mb1_p0_xpull_u4");
  assert_string_equal(m->entry, m->name);
  assert_int_equal(m->block[0], 512);
  assert_int_equal(m->cluster[0], 4);
  assert_int_equal(m->n_args, 4);
  assert_string_equal(m->args[1].name, "x");
  assert_string_equal(m->args[1].dtype, "bf16");
  assert_string_equal(m->grid[0].arg, "rows");
  assert_int_equal(m->grid[0].times, 4);
  assert_string_equal(weft_manifest_param(m, "op"), "max");
  assert_string_equal(weft_manifest_param(m, "threads"), "512");
  assert_null(weft_manifest_param(m, "nope"));
  assert_int_equal(strlen(m->hash), 64);
  assert_non_null(strstr(m->json, "\"name\": \"weft_row_reduce_bf16_max_c4_np0_t512_mb1_p0_xpull_u4\""));
  assert_non_null(strstr(m->source, "#line 1 \"templates/row_reduce.cu\""));
  /* same config, same bytes */
  weft_manifest *m2;
  assert_int_equal(weft_generate_string(ctx, "inline.lua", ROW_REDUCE, set, 1, &m2), WEFT_OK);
  assert_string_equal(m->source, m2->source);
  assert_string_equal(m->hash, m2->hash);
  weft_manifest_free(m);
  weft_manifest_free(m2);
  weft_ctx_destroy(ctx);
}

/* The GEMM's grid counts work units, row tiles x column tiles (a `by` factor), not M: M = 16 on
 * 64 x 128 tiles with N = 14336 is 112 units, and the items saturate instead of overflowing. */
static void test_gemm_grid_counts_units(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  const char *set[] = {"tile.m=64", "tile.n=128", "consumers=1", "split_k=4", "stages=6", "b_layout=col"};
  assert_int_equal(weft_generate_string(ctx, "gemm.lua", "return { family = \"gemm\", tile = { m = 128, n = 256, k = 64 } }", set, 6, &m), WEFT_OK);
  const weft_grid_dim *g = &m->grid[0];
  assert_string_equal(g->arg, "m");
  assert_int_equal(g->per, 64);
  assert_string_equal(g->by, "n");
  assert_int_equal(g->by_per, 128);
  assert_int_equal(g->times, 4);   /* the split-K cluster's CTAs */
  assert_string_equal(g->cap, "coresident");
  assert_int_equal(api_grid_items(g, 16, 14336, 1), 112);
  assert_int_equal(api_grid_items(g, 1, 4096, 1), 32);
  assert_int_equal(api_grid_items(g, 1000, 1000, 1), 16 * 8);
  assert_int_equal(api_grid_items(g, 1L << 40, 1L << 40, 1), 2147483647L);
  assert_null(m->grid[1].by);
  assert_null(g->shards);
  weft_manifest_free(m);
  /* the fused all-gather + GEMM tiles each rank's shard of M on its own: P = 8, M = 128 is 8
   * shards of 16 rows, one 64-row tile each (32 tiles of the whole M would be 2 x 32) */
  const char *ag[] = {"variant=fused", "tile.m=64", "tile.n=128", "consumers=1", "stages=6"};
  assert_int_equal(weft_generate_string(ctx, "ag.lua", "return { family = \"ag_gemm\", tile = { m = 128, n = 256, k = 64 } }",
                                        ag, 5, &m), WEFT_OK);
  g = &m->grid[0];
  assert_string_equal(g->shards, "ranks");
  assert_int_equal(api_grid_items(g, 128, 4096, 8), 8 * 32);
  assert_int_equal(api_grid_items(g, 128, 4096, 1), 2 * 32);
  assert_int_equal(api_grid_items(g, 1024, 4096, 4), 4 * 4 * 32);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

static void test_config_error(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m = NULL;
  const char *set[] = {"cluster=12"};
  assert_int_equal(weft_generate_string(ctx, "my.lua", ROW_REDUCE, set, 1, &m), WEFT_ERR_CONFIG);
  assert_null(m);
  assert_non_null(strstr(weft_ctx_error(ctx), "my.lua: cluster = 12: must be at most 8; up to 16 needs nonportable = true"));
  weft_kernel *k = NULL;
  assert_int_equal(weft_compile_file(ctx, "/nonexistent/config.lua", NULL, 0, &k), WEFT_ERR_IO);
  assert_non_null(strstr(weft_ctx_error(ctx), "/nonexistent/config.lua"));
  weft_ctx_destroy(ctx);
}

static void test_compile_and_cache(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k;
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_kernel_cache_hit(k), 0);
  size_t n;
  const char *ptx = weft_kernel_ptx(k, &n);
  assert_true(n > 1000);
  assert_non_null(strstr(ptx, weft_kernel_manifest(k)->entry));
  assert_non_null(strstr(ptx, "barrier.cluster.arrive.release"));
  assert_non_null(weft_kernel_cubin(k, &n));
  assert_true(n > 1000);
  assert_non_null(strstr(weft_kernel_log(k), "registers"));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
  /* a new context (a new process would be the same) hits the disk cache */
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_kernel_cache_hit(k), 1);
  assert_true(weft_kernel_compile_ms(k) < 100.0);
  weft_kernel_destroy(k);
  /* WEFT_NO_COMPILE: a miss is an error naming the kernel */
  setenv("WEFT_NO_COMPILE", "1", 1);
  const char *set[] = {"threads=1024"};
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, set, 1, &k), WEFT_ERR_CACHE);
  assert_non_null(strstr(weft_ctx_error(ctx), "WEFT_NO_COMPILE"));
  assert_non_null(strstr(weft_ctx_error(ctx), "weft_row_reduce_bf16_max_c4_np0_t1024_mb1_p0_xpull_u4"));
  /* ... and a hit is fine */
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, NULL, 0, &k), WEFT_OK);
  weft_kernel_destroy(k);
  unsetenv("WEFT_NO_COMPILE");
  weft_ctx_destroy(ctx);
}

/* The cache folder removed while a context uses it (rm -rf ~/.cache/weft beside a long-running
 * process): the next compile makes it again; every later compile failed, as a compile error.  A
 * lock file that is a folder is the cache's error, not NVRTC's. */
static void test_cache_folder_removed(void **state) {
  (void)state;
  char dir[600], cmd[1400];
  snprintf(dir, sizeof dir, "%s/gone-XXXXXX", cache_dir);
  assert_non_null(mkdtemp(dir));
  weft_ctx_options o = {.cache_dir = dir};
  weft_ctx *ctx;
  weft_kernel *k;
  assert_int_equal(weft_ctx_create(&ctx, &o), WEFT_OK);
  const char *t256[] = {"threads=256"}, *t128[] = {"threads=128"};
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, t256, 1, &k), WEFT_OK);
  weft_kernel_destroy(k);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, t128, 1, &k), WEFT_OK);
  assert_int_equal(weft_kernel_cache_hit(k), 0);
  weft_kernel_destroy(k);
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, t128, 1, &k), WEFT_OK);   /* stored */
  assert_int_equal(weft_kernel_cache_hit(k), 1);
  weft_kernel_destroy(k);
  /* every lock file of the folder a folder: the cache refuses it, as the cache (3), not NVRTC (2) */
  const char *t64[] = {"threads=64"};
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, t64, 1, &k), WEFT_OK);
  weft_kernel_destroy(k);
  snprintf(cmd, sizeof cmd, "cd '%s'/v1-* && for f in *.bin; do rm -f \"$f\" \"${f%%.bin}.lock\"; "
           "mkdir \"${f%%.bin}.lock\"; done", dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, t64, 1, &k), WEFT_ERR_CACHE);
  assert_non_null(strstr(weft_ctx_error(ctx), ".lock"));
  weft_ctx_destroy(ctx);
}

/* A custom operator that is not an expression is the config's error, found before NVRTC (it was
 * NVRTC's, as a log; cli.nvrtc_error checks that NVRTC's own errors still point into the template) */
static void test_bad_op_refused_before_nvrtc(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k = NULL;
  const char *bad = "return { family = 'row_reduce', op = { combine = 'a +* b', identity = '0.0f' } }";
  assert_int_equal(weft_compile_string(ctx, "bad_op.lua", bad, NULL, 0, &k), WEFT_ERR_CONFIG);
  assert_null(k);
  const char *e = weft_ctx_error(ctx);
  assert_non_null(strstr(e, "bad_op.lua"));
  assert_non_null(strstr(e, "custom op combine has \"*\" at character 4"));
  assert_null(strstr(e, "NVRTC"));
  weft_ctx_destroy(ctx);
}

static void test_launch_without_driver(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k;
  const char *set[] = {"mode=onchip", "max_cols=4096"};
  const char *sm = "return { family = 'row_softmax' }";
  assert_int_equal(weft_compile_string(ctx, "sm.lua", sm, set, 2, &k), WEFT_OK);
  uint64_t y = 0x10000, x = 0x20000;
  int32_t rows = 8, cols = 5000;
  void *args[] = {&y, &x, &rows, &cols};
  /* sizes are checked before anything touches the device */
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(weft_kernel_error(k), "cols = 5000: this kernel takes cols in 1..4096"));
  cols = 4096;
  uint64_t y_odd = 0x10008;
  void *args_odd[] = {&y_odd, &x, &rows, &cols};
  assert_int_equal(weft_launch(k, args_odd, NULL), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(weft_kernel_error(k), "same address modulo 16"));
  /* no driver: a plain answer, not a crash */
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_NO_DRIVER);
  assert_non_null(strstr(weft_kernel_error(k), "no NVIDIA driver"));
  void *cu;
  assert_int_equal(weft_ctx_cuda(ctx, &cu), WEFT_ERR_NO_DRIVER);
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
  assert_string_equal(weft_status_name(WEFT_ERR_NO_DRIVER), "no driver");
}

/* A kernel that talks to other ranks is launched through a communicator, never weft_launch. */
static void test_comm_kernel_needs_a_comm(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k;
  const char *ar = "return { family = 'allreduce', dtype = 'bf16', algo = 'two_shot' }";
  assert_int_equal(weft_compile_string(ctx, "ar.lua", ar, NULL, 0, &k), WEFT_OK);
  const weft_manifest *m = weft_kernel_manifest(k);
  assert_int_equal(m->comm.n_signals, 3);
  assert_string_equal(m->comm.signals[0], "ready");
  assert_int_equal(m->comm.halves, 2);
  assert_string_equal(m->grid[0].split, "ranks");
  uint64_t y = 0x10000, x = 0x20000;
  long long n = 1000;
  void *args[] = {&y, &x, &n};
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(k), "launch it with weft_comm_launch"));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
}

static void test_reference_fold(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  const char *with_ref =
      "return { family = 'row_reduce', op = { combine = 'fmaxf(fabsf(a), fabsf(b))', identity = '0.0f',"
      " ref = function(a, b) return math.max(math.abs(a), math.abs(b)) end } }";
  weft_kernel *k;
  assert_int_equal(weft_compile_string(ctx, "ref.lua", with_ref, NULL, 0, &k), WEFT_OK);
  assert_string_equal(weft_manifest_param(weft_kernel_manifest(k), "op.ref"), "lua");
  const double x[] = {0.5, -3.0, 2.0, -1.0};
  double r = 0;
  assert_int_equal(weft_reference_fold(k, x, 4, &r), WEFT_OK);
  assert_true(r == 3.0);
  weft_kernel_destroy(k);
  /* no ref: a plain refusal */
  assert_int_equal(weft_compile_string(ctx, "inline.lua", ROW_REDUCE, NULL, 0, &k), WEFT_OK);
  assert_null(weft_manifest_param(weft_kernel_manifest(k), "op.ref"));
  assert_int_equal(weft_reference_fold(k, x, 4, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(k), "no host reference"));
  weft_kernel_destroy(k);
  /* a ref that never returns is stopped, not waited on */
  const char *looping =
      "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
      " ref = function(a, b) while true do end end } }";
  assert_int_equal(weft_compile_string(ctx, "loop.lua", looping, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_reference_fold(k, x, 4, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(k), "ran too long"));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
}

/* ---- tensor maps and the manifest's launch rules, on hand-written manifests ---------------
 * A kernel c = f(a) over an m x k bf16 matrix a (k innermost), with `extra` fields spliced
 * into the manifest table: what a family's derive would add (tmaps, limits, comm). */
static weft_status fake_manifest(weft_ctx *ctx, const char *extra, weft_manifest **out) {
  char text[4096];
  snprintf(text, sizeof text,
           "return { family = 'test', name = 'weft_test_tmap', entry = 'weft_test_tmap', json = '{}',\n"
           "  source = 'extern \"C\" __global__ void weft_test_tmap(void *c, const void *a, long long m, long long k) {}',\n"
           "  options = { '--gpu-architecture=sm_90a', '--std=c++17' },\n"
           "  block = { 128, 1, 1 }, cluster = { 1, 1, 1 }, smem = 0, params = {},\n"
           "  args = { { name = 'c', type = 'ptr', dtype = 'bf16', role = 'out' },\n"
           "           { name = 'a', type = 'ptr', dtype = 'bf16', role = 'in' },\n"
           "           { name = 'm', type = 'i64', role = 'size' }, { name = 'k', type = 'i64', role = 'size' } },\n"
           "  grid = { { arg = 'm', per = 128, times = 1 }, { per = 1, times = 1 }, { per = 1, times = 1 } },\n"
           "  %s }", extra);
  return bridge_manifest_eval(api_bridge(ctx), "fake", text, out, api_ctx_err(ctx), API_ERRLEN);
}

#define TA "{ name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 }, swizzle = 128 }"
#define COMM "comm = { signals = { 'ready' }, halves = 2, elem_bytes = 2, elems = { 'm', 'k' }, divide = 'm' }"
#define SHARDS(src) "{ name = 'tsh', source = '" src "', dtype = 'bf16', dims = { 'k', 'm/ranks', 'ranks', 'halves' }," \
                    " box = { 64, 128, 1, 1 }, swizzle = 128 }"

static void test_tmap_manifest(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(fake_manifest(ctx, "tmaps = { " TA ", " SHARDS("comm.shards") " }, " COMM ", "
                   "limits = { { arg = 'k', min = 8, max = 1 << 31, multiple = 8 }, { arg = 'm', min = 1, max = 99 } }",
                   &m), WEFT_OK);
  assert_int_equal(m->n_tmaps, 2);
  const weft_tmap *t = &m->tmaps[0];
  assert_string_equal(t->name, "ta");
  assert_string_equal(t->source, "a");
  assert_string_equal(t->dtype, "bf16");
  assert_int_equal(t->n_dims, 2);
  assert_string_equal(t->dims[0], "k");
  assert_string_equal(t->dims[1], "m");
  assert_int_equal(t->box[0], 64);
  assert_int_equal(t->box[1], 128);
  assert_int_equal(t->swizzle, 128);
  assert_int_equal(t->l2_promotion, 256);   /* absent: the default */
  t = &m->tmaps[1];
  assert_string_equal(t->source, "comm.shards");
  assert_int_equal(t->n_dims, 4);
  assert_string_equal(t->dims[1], "m/ranks");
  assert_string_equal(t->dims[3], "halves");
  assert_int_equal(t->box[3], 1);
  assert_int_equal(m->limits[0].multiple, 8);
  assert_int_equal(m->limits[1].multiple, 0);
  assert_int_equal(m->comm.n_elems, 2);
  assert_string_equal(m->comm.elems[1], "k");
  assert_string_equal(m->comm.divide, "m");
  assert_int_equal(m->comm.scatter, 0);
  weft_manifest_free(m);
  /* scatter (gemm_rs atomic: a half holds max_elems / P) over a bounded product with a divided factor */
  assert_int_equal(fake_manifest(ctx, "comm = { signals = { 'ready' }, elems = { 'm', 'k' }, divide = 'm', scatter = true }",
                                 &m), WEFT_OK);
  assert_int_equal(m->comm.scatter, 1);
  assert_int_equal(m->comm.per_rank, 0);
  weft_manifest_free(m);
  /* a workspace (stream-K's): the runtime's header, flags for every block the capped grid may have */
  assert_int_equal(fake_manifest(ctx, "grid = { { arg = 'm', per = 1, times = 1, max = 4096 }, { per = 1, times = 1 }, "
                   "{ per = 1, times = 1 } }, workspace = { header = 256, flags = 4096, per_cta = 51200 }", &m), WEFT_OK);
  assert_int_equal(m->workspace_flags, 4096);
  assert_int_equal(m->workspace_per_cta, 51200);
  weft_manifest_free(m);
  /* without tmaps, elems or divide: none */
  assert_int_equal(fake_manifest(ctx, "", &m), WEFT_OK);
  assert_int_equal(m->workspace_flags, 0);
  assert_int_equal(m->workspace_per_cta, 0);
  assert_int_equal(m->n_tmaps, 0);
  assert_int_equal(m->comm.n_elems, 0);
  assert_null(m->comm.divide);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* What the runtime could not launch is refused when the manifest is built, naming the kernel. */
static void test_tmap_manifest_rejected(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  static const struct { const char *extra, *want; } bad[] = {
    {"tmaps = { " SHARDS("comm.shards") " }",
     "weft_test_tmap: tensor map tsh: source = \"comm.shards\" needs a comm section"},
    {"tmaps = { " SHARDS("comm.local") " }", "tensor map tsh: source = \"comm.local\" needs a comm section"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'halves' }, box = { 64, 1 } } }",
     "dims[2] = \"halves\": only the communicator's buffer"},
    {"tmaps = { { name = 'ta', source = 'x', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 } } }",
     "tensor map ta: source = \"x\": must be a pointer argument"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'f32', dims = { 'k', 'm' }, box = { 32, 128 } } }",
     "tensor map ta: dtype = f32, but its source a holds bf16"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'rows' }, box = { 64, 128 } } }",
     "tensor map ta: dims[2] = rows: must be a size argument"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm/2' }, box = { 64, 128 } } }",
     "dims[2] = m/2: must be a size argument"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 512 } } }",
     "box[2] = 512: TMA moves 1..256 elements per dim"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64 } } }",
     "tensor map ta: 2 dims but 1 box sizes"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 }, swizzle = 96 } }",
     "swizzle = 96: must be 0, 32, 64 or 128"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 }, l2_promotion = 32 } }",
     "tensor map ta: l2_promotion = 32: must be 0, 64, 128 or 256 (bytes; absent: 256)"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 }, l2_promotion = '128' } }",
     "tensor map ta: l2_promotion = a string: must be the integer 0, 64, 128 or 256"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 64, 128 }, l2_promotion = 1 << 40 } }",
     "tensor map ta: l2_promotion = 1099511627776: must be the integer 0, 64, 128 or 256"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 128, 128 }, swizzle = 128 } }",
     "box[1] = 128: its rows are 256 bytes, wider than the 128-byte swizzle"},
    {"tmaps = { { name = 'ta', source = 'a', dtype = 'bf16', dims = { 'k', 'm' }, box = { 4, 128 } } }",
     "box[1] = 4: its rows are 8 bytes; TMA moves multiples of 16 bytes"},
    {COMM ", tmaps = { { name = 'tsh', source = 'comm.shards', dtype = 'bf16', dims = { 'k', 'm', 'halves' },"
     " box = { 64, 128, 1 } } }", "takes dims { K, rows, \"ranks\", \"halves\" }"},
    {COMM ", tmaps = { { name = 'tsh', source = 'comm.local', dtype = 'bf16', dims = { 'k', 'ranks' },"
     " box = { 64, 8 } } }", "box[2] = 8: a \"ranks\" dim is walked one at a time (box 1)"},
    {"limits = { { arg = 'k', min = 1, max = 9, multiple = -8 } }", "limits[1]: multiple = -8"},
    {"limits = { { arg = 'kk', min = 1, max = 9 } }", "limits[1]: arg = kk: must name a size argument"},
    {"comm = { signals = { 'ready' }, elems = { 'm', 'n' } }", "comm.elems[2] = n: must name a size argument"},
    {"comm = { signals = { 'ready' }, divide = 'a' }", "comm.divide = a: must name a size argument"},
    {"comm = { signals = { 'ready' }, elems = { 'm', 'k' }, scatter = true }",
     "comm.scatter needs comm.elems and comm.divide, and not per_rank"},
    {"comm = { signals = { 'ready' }, divide = 'm', scatter = true }", "comm.scatter needs comm.elems and comm.divide"},
    {"comm = { signals = { 'ready' }, elems = { 'm', 'k' }, divide = 'm', per_rank = true, scatter = true }",
     "comm.scatter needs comm.elems and comm.divide, and not per_rank"},
    /* a workspace: a grid without a cap could outgrow its flags; the kernel reads them after the
     * runtime's header; zero counts or a table that is not one still give the kernel its parameter */
    {"workspace = { header = 256, flags = 4096, per_cta = 1024 }",
     "workspace = { flags = 4096 }: the grid must be capped (grid max) at that many blocks"},
    {"grid = { { arg = 'm', per = 1, times = 1, max = 8192 }, { per = 1, times = 1 }, { per = 1, times = 1 } }, "
     "workspace = { header = 256, flags = 4096, per_cta = 1024 }", "the grid must be capped (grid max) at that many"},
    {"grid = { { arg = 'm', per = 1, times = 1, max = 16 }, { per = 1, times = 1 }, { per = 1, times = 1 } }, "
     "workspace = { header = 128, flags = 16, per_cta = 1024 }", "needs header = 256, 1..65536 flags"},
    {"workspace = { header = 256, flags = 0, per_cta = 0 }", "workspace = { flags = -1, per_cta = -1 }: needs header"},
    {"workspace = 5", "workspace = { flags = -1, per_cta = -1 }: needs header = 256"},
    {"grid = { { arg = 'm', per = 1, times = 1, max = 16 }, { per = 1, times = 1 }, { per = 1, times = 1 } }, "
     "workspace = { header = 256, flags = 16, per_cta = 1 << 30 }", "and 1..4194304 bytes per block"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    weft_manifest *m = NULL;
    weft_status st = fake_manifest(ctx, bad[i].extra, &m);
    if (st != WEFT_ERR_INTERNAL || !strstr(weft_ctx_error(ctx), bad[i].want))
      fail_msg("case %zu: status %d, message:\n%s\nwanted: %s", i, st, weft_ctx_error(ctx), bad[i].want);
    assert_null(m);
    assert_non_null(strstr(weft_ctx_error(ctx), "weft_test_tmap"));
  }
  weft_ctx_destroy(ctx);
}

static int plan_of(const weft_manifest *m, int i, void **args, const api_tmap_env *env, api_tmap_plan *p, char *err) {
  return api_tmap_plan_make(m, i, args, env, p, err, 1024);
}

static void test_tmap_plan(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  char err[1024];
  api_tmap_plan p;
  uint64_t c = 0x100000, a = 0x200000;
  long long mm = 512, kk = 1024;
  void *args[] = {&c, &a, &mm, &kk};
  api_tmap_env one = {.ranks = 1, .rank = 0, .halves = 1};

  /* dense, from a pointer argument: row stride k x 2 bytes */
  weft_manifest *m;
  assert_int_equal(fake_manifest(ctx, "tmaps = { " TA ", { name = 'tr', source = 'a', dtype = 'bf16',"
                   " dims = { 'k', 'm/ranks', 'ranks' }, box = { 8, 16, 1 }, l2_promotion = 64 } }", &m), WEFT_OK);
  assert_int_equal(plan_of(m, 0, args, &one, &p, err), WEFT_OK);
  assert_int_equal(p.dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  assert_int_equal(p.n_dims, 2);
  assert_int_equal(p.base, a);
  assert_int_equal(p.dims[0], 1024);
  assert_int_equal(p.dims[1], 512);
  assert_int_equal(p.strides[0], 2048);
  assert_int_equal(p.box[0], 64);
  assert_int_equal(p.box[1], 128);
  assert_int_equal(p.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  assert_int_equal(p.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  /* m/ranks and ranks: dense over the ranks' row blocks */
  api_tmap_env eight = {.ranks = 8, .rank = 3, .halves = 2};
  assert_int_equal(plan_of(m, 1, args, &eight, &p, err), WEFT_OK);
  assert_int_equal(p.n_dims, 3);
  assert_int_equal(p.dims[1], 64);
  assert_int_equal(p.dims[2], 8);
  assert_int_equal(p.strides[0], 2048);
  assert_int_equal(p.strides[1], 64 * 2048);
  assert_int_equal(p.swizzle, CU_TENSOR_MAP_SWIZZLE_NONE);
  assert_int_equal(p.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_64B);
  mm = 1001;
  assert_int_equal(plan_of(m, 1, args, &eight, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "weft_test_tmap: tensor map tr: m = 1001 is not a multiple of the 8 ranks"));
  assert_int_equal(plan_of(m, 1, args, &one, &p, err), WEFT_OK);   /* one rank divides anything */
  /* a row length TMA cannot step: named with the size that makes it */
  mm = 512;
  kk = 1001;
  assert_int_equal(plan_of(m, 0, args, &one, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "weft_test_tmap: tensor map ta: k = 1001: the rows of a are 2002 bytes, TMA needs a "
                              "multiple of 16 bytes (k a multiple of 8)"));
  kk = 1024;
  uint64_t a_odd = 0x200008;
  void *args_odd[] = {&c, &a_odd, &mm, &kk};
  assert_int_equal(plan_of(m, 0, args_odd, &one, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "tensor map ta: a = 0x200008: TMA needs a 16-byte aligned address"));
  long long zero = 0;
  void *args_zero[] = {&c, &a, &zero, &kk};
  assert_int_equal(plan_of(m, 0, args_zero, &one, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "tensor map ta: m = 0: TMA takes 1..2^32 elements per dim"));
  weft_manifest_free(m);

  /* the communicator's buffer: 4 ranks, mapped 64 MiB apart */
  assert_int_equal(fake_manifest(ctx, "tmaps = { " SHARDS("comm.shards") ", " SHARDS("comm.local") " }, " COMM, &m),
                   WEFT_OK);
  const unsigned long long S = 64ull << 20;
  CUdeviceptr peers[4];
  for (int r = 0; r < 4; r++) peers[r] = 0x7f0000000000ull + r * S;
  api_tmap_env four = {.ranks = 4, .rank = 2, .halves = 2, .peers = peers, .symm_stride = S,
                       .data_offset = 4096, .half_bytes = 16 << 20};
  kk = 256;
  mm = 512;   /* 128 rows per rank, 64 KiB per shard */
  assert_int_equal(plan_of(m, 0, args, &four, &p, err), WEFT_OK);
  assert_int_equal(p.n_dims, 4);
  assert_int_equal(p.base, peers[0] + 4096);
  assert_int_equal(p.dims[0], 256);
  assert_int_equal(p.dims[1], 128);
  assert_int_equal(p.dims[2], 4);
  assert_int_equal(p.dims[3], 2);
  assert_int_equal(p.strides[0], 512);
  assert_int_equal(p.strides[1], S + 128 * 512);   /* next rank's buffer, one shard further in */
  assert_int_equal(p.strides[2], 16 << 20);
  for (int s = 0; s < 4; s++)   /* element (0, 0, s, 1): rank s's shard s, second half */
    assert_int_equal(p.base + s * p.strides[1] + p.strides[2], peers[s] + 4096 + (16 << 20) + s * 128 * 512);
  /* this rank's own area: dense over its regions, halves a half apart */
  assert_int_equal(plan_of(m, 1, args, &four, &p, err), WEFT_OK);
  assert_int_equal(p.base, peers[2] + 4096);
  assert_int_equal(p.strides[0], 512);
  assert_int_equal(p.strides[1], 128 * 512);
  assert_int_equal(p.strides[2], 16 << 20);
  /* one rank: the same formulas */
  api_tmap_env solo = four;
  solo.ranks = 1;
  solo.rank = 0;
  assert_int_equal(plan_of(m, 0, args, &solo, &p, err), WEFT_OK);
  assert_int_equal(p.strides[1], S + 512 * 512);
  /* more than a half holds */
  four.half_bytes = 128 << 10;
  assert_int_equal(plan_of(m, 0, args, &four, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "tensor map tsh: the ranks' shards spans 262144 bytes of a data half, but this "
                              "communicator's halves hold 131072 bytes"));
  four.half_bytes = 16 << 20;
  /* a stride that is not a multiple of 16 outside the rows */
  four.half_bytes = (16 << 20) + 8;
  assert_int_equal(plan_of(m, 0, args, &four, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "tensor map tsh: dim 4 (halves) of the ranks' shards steps 16777224 bytes; TMA needs a "
                              "multiple of 16 bytes"));
  four.half_bytes = 16 << 20;
  /* odd rows in the shards */
  kk = 100;
  assert_int_equal(plan_of(m, 0, args, &four, &p, err), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(err, "k = 100: the rows of the ranks' shards are 200 bytes, TMA needs a multiple of 16 bytes"));
  kk = 256;
  /* buffers not evenly spaced: the one-map layout does not hold */
  peers[3] += 1 << 21;
  assert_int_equal(plan_of(m, 0, args, &four, &p, err), WEFT_ERR_INTERNAL);
  assert_non_null(strstr(err, "rank 3's buffer is not"));
  /* no communicator */
  assert_int_equal(plan_of(m, 0, args, &one, &p, err), WEFT_ERR_INVALID);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* Sizes TMA cannot take fail at launch before the device is touched, like the other checks. */
static void test_tmap_launch_checks(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  weft_kernel *k;
  assert_int_equal(fake_manifest(ctx, "tmaps = { " TA " }, limits = { { arg = 'k', min = 8, max = 1 << 20, multiple = 8 } }",
                   &m), WEFT_OK);
  assert_int_equal(weft_compile_manifest(ctx, m, &k), WEFT_OK);
  uint64_t c = 0x100000, a = 0x200000;
  long long mm = 512, kk = 1001;
  void *args[] = {&c, &a, &mm, &kk};
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(weft_kernel_error(k), "weft_test_tmap: k = 1001: this kernel takes k a multiple of 8 (pad it to 1008)"));
  kk = 1024;
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_NO_DRIVER);   /* all checks pass: then the driver */
  weft_kernel_destroy(k);
  /* without the limit, the tensor map's own check says it */
  assert_int_equal(fake_manifest(ctx, "tmaps = { " TA " }", &m), WEFT_OK);
  assert_int_equal(weft_compile_manifest(ctx, m, &k), WEFT_OK);
  kk = 1001;
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_LAUNCH);
  assert_non_null(strstr(weft_kernel_error(k), "k = 1001: the rows of a are 2002 bytes, TMA needs a multiple of 16 bytes"));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
}

/* The ag_gemm and gemm families' manifests (read only: the families are others') are ones the runtime takes. */
static void test_ag_gemm_manifest(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  const char *fused = "return { family = 'ag_gemm', variant = 'fused', comm = 'tma' }";
  assert_int_equal(weft_generate_string(ctx, "ag.lua", fused, NULL, 0, &m), WEFT_OK);
  assert_true(m->n_tmaps >= 1);
  assert_string_equal(m->tmaps[m->n_tmaps - 1].source, "comm.shards");
  assert_non_null(m->comm.signals);
  assert_non_null(strstr(m->json, "\"tmaps\""));
  weft_manifest_free(m);
  const char *gemm = "return { family = 'gemm' }";
  assert_int_equal(weft_generate_string(ctx, "gemm.lua", gemm, NULL, 0, &m), WEFT_OK);
  assert_true(m->n_tmaps >= 1);
  assert_null(m->comm.signals);
  for (int i = 0; i < m->n_tmaps; i++) assert_true(strncmp(m->tmaps[i].source, "comm.", 5) != 0);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* The family's run spec reaches C: sizes in order, default shapes, metric, baseline, and the
 * one size check the library and the CLI share. */
static void test_run_spec(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  const char *sm = "return { family = 'row_softmax', max_cols = 4096 }";
  assert_int_equal(weft_generate_string(ctx, "sm.lua", sm, NULL, 0, &m), WEFT_OK);
  assert_int_equal(m->run.n_sizes, 2);
  assert_string_equal(m->run.sizes[0], "rows");
  assert_string_equal(m->run.sizes[1], "cols");
  assert_int_equal(m->run.n_time, 1);
  assert_true(m->run.time[0].v[0] == 1024 && m->run.time[0].v[1] == 4096);   /* the row it was built for */
  assert_true(m->run.check_cap[0] == 16 && m->run.check_cap[1] == 0);
  assert_string_equal(m->run.metric, "bytes");
  assert_string_equal(m->run.baseline, "copy");
  assert_int_equal(m->run.ranks, 0);
  assert_int_equal(m->run.n_key, 1);                  /* what a tuned config must share with the user's */
  assert_string_equal(m->run.key[0], "dtype");
  assert_int_equal(weft_run_size_index(&m->run, "cols"), 1);
  assert_int_equal(weft_run_size_index(&m->run, "n"), -1);
  char why[256];
  assert_int_equal(weft_manifest_check_size(m, "cols", 4096, why, sizeof why), 0);
  assert_int_equal(weft_manifest_check_size(m, "cols", 4097, why, sizeof why), -1);
  assert_non_null(strstr(why, "cols = 4097: this kernel takes cols in 1..4096"));
  weft_manifest_free(m);
  const char *ar = "return { family = 'allreduce', algo = 'one_shot_ll', dtype = 'bf16' }";
  assert_int_equal(weft_generate_string(ctx, "ar.lua", ar, NULL, 0, &m), WEFT_OK);
  assert_int_equal(weft_run_size_index(&m->run, "elems"), 0);   /* --elems is n's other name */
  assert_int_equal(m->run.ranks, 1);
  assert_true(m->run.n_time > 3 && m->run.time[0].v[0] == 4);   /* 8 bytes of bf16 */
  for (int i = 0; i < m->run.n_time; i++)                        /* as far as the kernel's limit goes */
    assert_int_equal(weft_manifest_check_size(m, "n", m->run.time[i].v[0], why, sizeof why), 0);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* A multi-launch variant: gather_then_gemm generates and compiles to its gather and its GEMM,
 * in launch order, the GEMM the one the same knobs give with variant = gemm (one cache entry). */
#define G2 "return { family = 'ag_gemm', variant = 'gather_then_gemm', comm = 'threadload', dtype = 'f16', " \
           "tile = { m = 128, n = 128, k = 64 }, stages = 3, b_layout = 'col' }"
#define GEMM "return { family = 'gemm', dtype = 'f16', tile = { m = 128, n = 128, k = 64 }, " \
             "stages = 3, b_layout = 'col' }"

static void test_multi_launch_manifest(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m, *g;
  assert_int_equal(weft_generate_string(ctx, "g2.lua", G2, NULL, 0, &m), WEFT_OK);
  assert_int_equal(weft_generate_string(ctx, "gemm.lua", GEMM, NULL, 0, &g), WEFT_OK);
  assert_int_equal(m->n_parts, 2);
  assert_int_equal(m->part, 0);
  assert_ptr_equal(weft_manifest_part(m, 0), m);
  const weft_manifest *p = weft_manifest_part(m, 1);
  assert_non_null(p);
  assert_null(weft_manifest_part(m, 2));
  assert_null(weft_manifest_part(m, -1));
  assert_null(weft_manifest_part(p, 0));   /* only the first hands out parts */
  assert_int_equal(p->part, 1);
  assert_int_equal(p->n_parts, 2);
  /* the gather: ag, a, m, k and a communicator */
  assert_non_null(strstr(m->name, "_gatherthengemm_threadload_"));
  assert_int_equal(m->n_args, 4);
  const char *gather_args[] = {"ag", "a", "m", "k"};
  for (int i = 0; i < 4; i++) assert_string_equal(m->args[i].name, gather_args[i]);
  assert_non_null(m->comm.signals);
  assert_int_equal(m->n_tmaps, 0);
  /* the GEMM: c, a, b, m, n, k, its tensor maps, no communicator; what family gemm gives */
  assert_string_equal(p->name, g->name);
  assert_string_equal(p->source, g->source);
  assert_string_equal(p->hash, g->hash);
  assert_string_equal(p->family, "gemm");
  assert_null(weft_manifest_param(p, "variant"));
  assert_string_equal(weft_manifest_param(p, "stages"), "3");
  assert_string_equal(weft_manifest_param(p, "b_layout"), "col");
  assert_int_equal(p->n_args, 6);
  const char *gemm_args[] = {"c", "a", "b", "m", "n", "k"};
  for (int i = 0; i < 6; i++) assert_string_equal(p->args[i].name, gemm_args[i]);
  assert_string_equal(p->args[1].dtype, m->args[0].dtype);   /* the gathered A is the GEMM's A */
  assert_null(p->comm.signals);
  assert_int_equal(p->n_tmaps, 2);
  assert_int_equal(m->block[0], 256);   /* the gather's threads; the GEMM's: a producer + 2 consumer warpgroups */
  assert_int_equal(p->block[0], 384);
  /* every .json names both kernels, in launch order */
  char list[1024];
  assert_true(snprintf(list, sizeof list, "\"kernels\": [\n    \"%s\",\n    \"%s\"\n  ]", m->name, p->name) < (int)sizeof list);
  assert_non_null(strstr(m->json, list));
  assert_non_null(strstr(p->json, list));
  /* a single-kernel config is one part */
  assert_int_equal(g->n_parts, 1);
  assert_null(weft_manifest_part(g, 1));
  weft_manifest_free(g);
  weft_manifest_free(m);   /* frees the GEMM's manifest too */
  weft_ctx_destroy(ctx);
}

static void test_multi_launch_compile(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k;
  assert_int_equal(weft_compile_string(ctx, "g2.lua", G2, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_kernel_count(k), 2);
  assert_ptr_equal(weft_kernel_part(k, 0), k);
  weft_kernel *k2 = weft_kernel_part(k, 1);
  assert_non_null(k2);
  assert_null(weft_kernel_part(k, 2));
  assert_null(weft_kernel_part(k2, 0));
  assert_ptr_equal(weft_kernel_manifest(k2), weft_manifest_part(weft_kernel_manifest(k), 1));
  const char *gather_ptx = weft_kernel_ptx(k, NULL), *gemm_ptx = weft_kernel_ptx(k2, NULL);
  assert_non_null(strstr(gather_ptx, weft_kernel_manifest(k)->entry));
  assert_null(strstr(gather_ptx, "wgmma.mma_async"));
  assert_non_null(strstr(gemm_ptx, weft_kernel_manifest(k2)->entry));
  assert_non_null(strstr(gemm_ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
  size_t n;
  assert_non_null(weft_kernel_cubin(k2, &n));
  assert_true(n > 1000);
  /* the GEMM launches like any kernel (all checks pass, then the driver: none here); the gather
   * needs its communicator */
  uint64_t c = 0x100000, a = 0x200000, b = 0x300000;
  long long mm = 256, nn = 256, kk = 256;
  void *gargs[] = {&c, &a, &b, &mm, &nn, &kk};
  assert_int_equal(weft_launch(k2, gargs, NULL), WEFT_ERR_NO_DRIVER);
  void *args[] = {&c, &a, &mm, &kk};
  assert_int_equal(weft_launch(k, args, NULL), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(k), "weft_comm_launch"));
  weft_kernel_destroy(k2);   /* a part: nothing happens; it goes with k */
  assert_non_null(weft_kernel_ptx(k2, NULL));
  weft_kernel_destroy(k);
  /* the GEMM is cached like any kernel: family gemm with the same knobs is a hit */
  assert_int_equal(weft_compile_string(ctx, "gemm.lua", GEMM, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_kernel_cache_hit(k), 1);
  assert_int_equal(weft_kernel_count(k), 1);
  assert_null(weft_kernel_part(k, 1));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
}

/* Hand-written manifests with parts convert like the generator's; a broken part is named. */
static void test_multi_launch_parts_checked(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m = NULL;
  const char *part =
      "{ family = 'test', name = 'weft_test_two', entry = 'weft_test_two', json = '{}', source = 'x',"
      "  options = {}, block = { 32, 1, 1 }, cluster = { 1, 1, 1 }, smem = 0, params = {},"
      "  args = { { name = 'n', type = 'i32', role = 'size' } },"
      "  grid = { { arg = 'n', per = 32, times = 1 }, { per = 1, times = 1 }, { per = 1, times = 1 } } }";
  char extra[1024];
  assert_true(snprintf(extra, sizeof extra, "parts = { %s }", part) < (int)sizeof extra);
  assert_int_equal(fake_manifest(ctx, extra, &m), WEFT_OK);
  assert_int_equal(m->n_parts, 2);
  assert_string_equal(weft_manifest_part(m, 1)->name, "weft_test_two");
  weft_manifest_free(m);
  /* a part whose grid names no argument */
  char bad[512];
  assert_true(snprintf(bad, sizeof bad, "%s", part) < (int)sizeof bad);
  char *g = strstr(bad, "arg = 'n', per = 32");
  memcpy(g, "arg = 'q'", 9);
  assert_true(snprintf(extra, sizeof extra, "parts = { %s }", bad) < (int)sizeof extra);
  m = NULL;
  assert_int_equal(fake_manifest(ctx, extra, &m), WEFT_ERR_INTERNAL);
  assert_null(m);
  assert_non_null(strstr(weft_ctx_error(ctx), "weft_test_tmap: parts[1] is an incomplete manifest"));
  weft_ctx_destroy(ctx);
}

/* ---- what a careless C caller can do (a fourth review: each case failed before its fix) ---- */

/* A part (kernel 1 and later of a config) is its first kernel's: freeing or compiling it alone
 * left the first with a freed part (a use-after-free when the first was freed). */
static void test_api_part_stays_with_its_first(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(weft_generate_string(ctx, "g2.lua", G2, NULL, 0, &m), WEFT_OK);
  weft_manifest *p = (weft_manifest *)weft_manifest_part(m, 1);
  assert_non_null(p);
  weft_manifest_free(p);   /* does nothing: m still holds it */
  weft_kernel *k = (weft_kernel *)1;
  assert_int_equal(weft_compile_manifest(ctx, p, &k), WEFT_ERR_INVALID);
  assert_null(k);
  assert_non_null(strstr(weft_ctx_error(ctx), "kernel 2 of 2 of its config: compile the first"));
  assert_string_equal(weft_manifest_part(m, 1)->name, p->name);   /* still there */
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* weft_compile_manifest takes m in every case: out NULL freed it too (it leaked before, while
 * a later failure freed it: a caller could not know which to do). */
static void test_api_compile_manifest_takes_m(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, NULL, 0, &m), WEFT_OK);
  assert_int_equal(weft_compile_manifest(ctx, m, NULL), WEFT_ERR_INVALID);   /* m freed (LSan: no leak) */
  assert_string_equal(weft_ctx_error(ctx), "weft_compile_manifest: out is NULL");
  weft_ctx_destroy(ctx);
}

/* Override lists: a NULL entry cut the list short silently, a NULL array crashed, a negative
 * count was taken as none, and INT_MAX aborted the process (a Lua panic). */
static void test_api_override_lists_checked(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m = (weft_manifest *)1;
  const char *hole[] = {"threads=512", NULL, "cluster=2"};
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, hole, 3, &m), WEFT_ERR_INVALID);
  assert_null(m);
  assert_non_null(strstr(weft_ctx_error(ctx), "overrides[1] is NULL"));
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, NULL, 3, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "overrides is NULL with n_overrides = 3"));
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, hole, -5, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "n_overrides = -5: 0..4096"));
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, hole, 2147483647, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "n_overrides = 2147483647: 0..4096"));
  weft_auto *a = NULL;
  assert_int_equal(weft_auto_choose_string(ctx, "r.lua", ROW_REDUCE, hole, 3, "rows=8 cols=64", 1, 0, NULL, &a),
                   WEFT_ERR_INVALID);
  assert_null(a);
  assert_non_null(strstr(weft_ctx_error(ctx), "overrides[1] is NULL"));
  weft_ctx_destroy(ctx);
}

/* A config that cannot be read is IO; a bad WEFT_CONFIG_MAX_MB or WEFT_CONFIG_SECONDS is the
 * caller's setting, INVALID, named (it was IO, as if the file were at fault). */
static void test_api_read_settings_are_invalid(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m = NULL;
  assert_int_equal(weft_generate_file(ctx, "/nonexistent/r.lua", NULL, 0, &m), WEFT_ERR_IO);
  assert_non_null(strstr(weft_ctx_error(ctx), "/nonexistent/r.lua: cannot open"));
  setenv("WEFT_CONFIG_MAX_MB", "lots", 1);
  assert_int_equal(weft_generate_file(ctx, "/nonexistent/r.lua", NULL, 0, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "WEFT_CONFIG_MAX_MB"));
  weft_auto *a = NULL;
  assert_int_equal(weft_auto_choose(ctx, "/nonexistent/r.lua", NULL, 0, "rows=8 cols=64", 1, 0, NULL, &a),
                   WEFT_ERR_INVALID);
  unsetenv("WEFT_CONFIG_MAX_MB");
  setenv("WEFT_CONFIG_SECONDS", "-1", 1);
  assert_int_equal(weft_generate_file(ctx, "/nonexistent/r.lua", NULL, 0, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "WEFT_CONFIG_SECONDS"));
  unsetenv("WEFT_CONFIG_SECONDS");
  assert_null(m);
  assert_null(a);
  weft_ctx_destroy(ctx);
  /* ... and with the generator read from a source tree: its own files are read so too (a bad
   * value was "module 'gen.core.weft' not found", INTERNAL, "a bug in weft") */
  setenv("WEFT_CONFIG_MAX_MB", "lots", 1);
  weft_ctx_options o = {.source_dir = WEFT_SOURCE_ROOT};
  assert_int_equal(weft_ctx_create(&ctx, &o), WEFT_OK);
  assert_int_equal(weft_generate_string(ctx, "r.lua", ROW_REDUCE, NULL, 0, &m), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "WEFT_CONFIG_MAX_MB"));
  assert_null(m);
  weft_ctx_destroy(ctx);
}

/* (the variables set above, unset whatever a failed assertion skipped) */
static int unset_read_settings(void **state) {
  (void)state;
  unsetenv("WEFT_CONFIG_MAX_MB");
  unsetenv("WEFT_CONFIG_SECONDS");
  return 0;
}

/* The refs the generator holds (gen/core/weft.lua's M.refs). */
static int refs_held(weft_ctx *ctx) {
  lua_State *L = bridge_lua(api_bridge(ctx));
  int top = lua_gettop(L), n = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "gen.core.weft") == LUA_TTABLE && lua_getfield(L, -1, "refs") == LUA_TTABLE)
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) n++;
  lua_settop(L, top);
  return n;
}

/* A ref is dropped with the manifest that held it (by kernel name they piled up: about 1 MB per
 * config generated, each closure holding its config's sandbox). */
static void test_api_refs_dropped_with_their_manifests(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  const char *cfg = "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
                    " ref = function(a, b) return a + b end } }";
  for (int i = 0; i < 50; i++) {   /* 50 kernels: each identity makes another name */
    char each[256];
    snprintf(each, sizeof each, "return { family = 'row_reduce', op = { combine = 'a + b', identity = '%d.0f',"
             " ref = function(a, b) return a + b end } }", i);
    weft_manifest *m;
    assert_int_equal(weft_generate_string(ctx, "c.lua", each, NULL, 0, &m), WEFT_OK);
    weft_manifest_free(m);
  }
  weft_manifest *m;
  assert_int_equal(weft_generate_string(ctx, "c.lua", cfg, NULL, 0, &m), WEFT_OK);
  assert_int_equal(refs_held(ctx), 1);   /* the last one's (the freed ones' dropped at this call) */
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);

  /* A generate that fails after its refs were given leaves none behind: a copy of the generator
   * whose generate raises once it has rendered (no config of the real one fails that late). */
  char dir[600], cmd[1400], path[700];
  snprintf(dir, sizeof dir, "%s/refs-XXXXXX", cache_dir);
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "cp -r '%s/gen' '%s/templates' '%s/'", WEFT_SOURCE_ROOT, WEFT_SOURCE_ROOT, dir);
  assert_int_equal(system(cmd), 0);
  char orig[700];
  snprintf(path, sizeof path, "%s/gen/core/weft.lua", dir);
  snprintf(orig, sizeof orig, "%s/gen/core/weft_real.lua", dir);
  assert_int_equal(rename(path, orig), 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("local M = require('gen.core.weft_real')\n"
        "local generate = M.generate\n"
        "M.generate = function(...)\n"
        "  local m = generate(...)\n"
        "  if m then error('fixture: the generator fails after rendering') end\n"
        "end\n"
        "return M\n", f);
  assert_int_equal(fclose(f), 0);
  weft_ctx_options o = {.source_dir = dir};
  assert_int_equal(weft_ctx_create(&ctx, &o), WEFT_OK);
  for (int i = 0; i < 3; i++) {
    /* (a failure of a source_dir's generator is that tree's: INVALID, the tree named) */
    assert_int_equal(weft_generate_string(ctx, "c.lua", cfg, NULL, 0, &m), WEFT_ERR_INVALID);
    assert_non_null(strstr(weft_ctx_error(ctx), "fixture: the generator fails after rendering"));
    assert_non_null(strstr(weft_ctx_error(ctx), dir));
  }
  assert_int_equal(refs_held(ctx), 0);
  weft_ctx_destroy(ctx);
}

/* Two configs that differ only in op.ref make one kernel name: each kernel folds with its own
 * ref (by name, the last config's answered for both, and for a later config with none). */
static void test_api_fold_ref_is_the_configs_own(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  const char *a_cfg = "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
                      " ref = function(a, b) return a + b end } }";
  const char *b_cfg = "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
                      " ref = function(a, b) return a - b end } }";
  weft_kernel *ka, *kb;
  assert_int_equal(weft_compile_string(ctx, "a.lua", a_cfg, NULL, 0, &ka), WEFT_OK);
  assert_int_equal(weft_compile_string(ctx, "b.lua", b_cfg, NULL, 0, &kb), WEFT_OK);
  assert_string_equal(weft_kernel_manifest(ka)->name, weft_kernel_manifest(kb)->name);
  const double x[] = {1.0, 2.0, 4.0};
  double r = 0;
  assert_int_equal(weft_reference_fold(ka, x, 3, &r), WEFT_OK);
  assert_true(r == 7.0);
  assert_int_equal(weft_reference_fold(kb, x, 3, &r), WEFT_OK);
  assert_true(r == -5.0);
  weft_kernel_destroy(kb);   /* its key is dropped; a's stays */
  assert_int_equal(weft_reference_fold(ka, x, 3, &r), WEFT_OK);
  assert_true(r == 7.0);
  /* an error that is not a message: said so (a NULL went to %s) */
  const char *raises = "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
                       " ref = function(a, b) error({}) end } }";
  weft_kernel *kr;
  assert_int_equal(weft_compile_string(ctx, "e.lua", raises, NULL, 0, &kr), WEFT_OK);
  assert_int_equal(weft_reference_fold(kr, x, 3, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(kr), "op.ref failed: it raised an error that is not a message"));
  weft_kernel_destroy(kr);
  /* a string that reads as a number is still no number (it was taken as 12) */
  const char *text = "return { family = 'row_reduce', op = { combine = 'a + b', identity = '0.0f',"
                     " ref = function(a, b) return '12' end } }";
  assert_int_equal(weft_compile_string(ctx, "s.lua", text, NULL, 0, &kr), WEFT_OK);
  assert_int_equal(weft_reference_fold(kr, x, 3, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(kr), "op.ref returned a string, not a number"));
  weft_kernel_destroy(kr);
  /* a manifest of this context compiled in another: its ref is this one's, folded only here
   * (the other context's Lua state may be in use on another thread) */
  weft_ctx *other;
  assert_int_equal(weft_ctx_create(&other, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(weft_generate_string(ctx, "a.lua", a_cfg, NULL, 0, &m), WEFT_OK);
  weft_kernel *kx;
  assert_int_equal(weft_compile_manifest(other, m, &kx), WEFT_OK);
  assert_int_equal(weft_reference_fold(kx, x, 3, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(kx), "its manifest was generated by another context"));
  weft_kernel_destroy(kx);
  weft_ctx_destroy(other);
  /* the kernel outlives its context; a fold and a launch say it is gone */
  weft_ctx_destroy(ctx);
  assert_int_equal(weft_reference_fold(ka, x, 3, &r), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(ka), "its context was destroyed"));
  void *args[4] = {0};
  assert_int_equal(weft_launch(ka, args, NULL), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(ka), "its context was destroyed"));
  weft_kernel_destroy(ka);
}

/* weft_manifest_check_size: NULLs crashed; the hint to pad past the limit named a size the
 * kernel refuses. */
static void test_api_check_size_edges(void **state) {
  (void)state;
  char why[512] = "";
  assert_int_equal(weft_manifest_check_size(NULL, "k", 1, why, sizeof why), -1);
  assert_string_equal(why, "weft_manifest_check_size: the manifest is NULL");
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(weft_generate_string(ctx, "gemm.lua", GEMM, NULL, 0, &m), WEFT_OK);
  assert_int_equal(weft_manifest_check_size(m, NULL, 1, why, sizeof why), -1);
  assert_int_equal(weft_manifest_check_size(m, "k", 7, NULL, 0), -1);   /* the verdict alone */
  assert_int_equal(weft_manifest_check_size(m, "k", 2147483646, why, sizeof why), -1);
  assert_non_null(strstr(why, "a multiple of 8 (cut it to 2147483640)"));
  assert_int_equal(weft_manifest_check_size(m, "k", 1001, why, sizeof why), -1);
  assert_non_null(strstr(why, "a multiple of 8 (pad it to 1008)"));
  /* a name the kernel does not take is refused (it was "allowed"), its sizes listed */
  assert_int_equal(weft_manifest_check_size(m, "rows", 5, why, sizeof why), -1);
  assert_non_null(strstr(why, ": 'rows' is no size of this kernel (its sizes: m, n, k)"));
  assert_int_equal(weft_manifest_check_size(m, "k\x1b[2J", 8, why, sizeof why), -1);
  assert_non_null(strstr(why, ": 'k\\x1b[2J' is no size of this kernel"));
  assert_int_equal(weft_manifest_check_size(m, "a", 5, why, sizeof why), -1);   /* a pointer is no size */
  weft_manifest_free(m);
  /* a run size's alias is checked as the size it names (allreduce's elems for n) */
  const char *ar = "return { family = 'allreduce', algo = 'one_shot_ll', dtype = 'bf16' }";
  assert_int_equal(weft_generate_string(ctx, "ar.lua", ar, NULL, 0, &m), WEFT_OK);
  assert_int_equal(weft_manifest_check_size(m, "elems", -5, why, sizeof why), -1);
  assert_int_equal(weft_manifest_check_size(m, "n", -5, why, sizeof why), -1);
  assert_int_equal(weft_manifest_check_size(m, "elems", 4096, why, sizeof why), 0);
  weft_manifest_free(m);
  weft_ctx_destroy(ctx);
}

/* An invalid argument says which (these returned WEFT_ERR_INVALID with the previous call's
 * message still in the context). */
static void test_api_invalid_says_which(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_manifest *m;
  assert_int_equal(weft_generate_file(ctx, "/nonexistent.lua", NULL, 0, &m), WEFT_ERR_IO);
  assert_int_equal(weft_generate_string(ctx, "x.lua", NULL, NULL, 0, &m), WEFT_ERR_INVALID);
  assert_string_equal(weft_ctx_error(ctx), "weft_generate_string: text is NULL");
  weft_auto *a;
  assert_int_equal(weft_auto_choose_string(ctx, "r.lua", ROW_REDUCE, NULL, 0, NULL, 1, 0, NULL, &a), WEFT_ERR_INVALID);
  assert_string_equal(weft_ctx_error(ctx), "weft_auto_choose: shape is NULL");
  assert_int_equal(weft_auto_choose_string(ctx, "r.lua", ROW_REDUCE, NULL, 0, "rows=8 cols=64", 0, 0, NULL, &a),
                   WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "ranks = 0"));
  weft_kernel *k;
  int tuned;
  assert_int_equal(weft_compile_tuned(ctx, "r.lua", NULL, 0, "rows=8", 0, NULL, &k, &tuned), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(ctx), "weft_compile_tuned: ranks = 0"));
  assert_int_equal(weft_compile_string(ctx, "r.lua", ROW_REDUCE, NULL, 0, &k), WEFT_OK);
  assert_int_equal(weft_launch(k, NULL, NULL), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_kernel_error(k), "args is NULL (it takes 4 arguments"));
  weft_kernel_destroy(k);
  weft_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_run_spec),
    cmocka_unit_test(test_generate),
    cmocka_unit_test(test_gemm_grid_counts_units),
    cmocka_unit_test(test_config_error),
    cmocka_unit_test(test_compile_and_cache),
    cmocka_unit_test(test_cache_folder_removed),
    cmocka_unit_test(test_bad_op_refused_before_nvrtc),
    cmocka_unit_test(test_launch_without_driver),
    cmocka_unit_test(test_reference_fold),
    cmocka_unit_test(test_comm_kernel_needs_a_comm),
    cmocka_unit_test(test_tmap_manifest),
    cmocka_unit_test(test_tmap_manifest_rejected),
    cmocka_unit_test(test_tmap_plan),
    cmocka_unit_test(test_tmap_launch_checks),
    cmocka_unit_test(test_ag_gemm_manifest),
    cmocka_unit_test(test_multi_launch_manifest),
    cmocka_unit_test(test_multi_launch_compile),
    cmocka_unit_test(test_multi_launch_parts_checked),
    cmocka_unit_test(test_api_part_stays_with_its_first),
    cmocka_unit_test(test_api_compile_manifest_takes_m),
    cmocka_unit_test(test_api_override_lists_checked),
    cmocka_unit_test(test_api_fold_ref_is_the_configs_own),
    cmocka_unit_test(test_api_refs_dropped_with_their_manifests),
    cmocka_unit_test(test_api_check_size_edges),
    cmocka_unit_test(test_api_invalid_says_which),
    cmocka_unit_test_teardown(test_api_read_settings_are_invalid, unset_read_settings),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
