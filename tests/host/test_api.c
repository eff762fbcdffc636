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

static void test_nvrtc_error_points_at_template(void **state) {
  (void)state;
  weft_ctx *ctx;
  assert_int_equal(weft_ctx_create(&ctx, NULL), WEFT_OK);
  weft_kernel *k = NULL;
  const char *bad = "return { family = 'row_reduce', op = { combine = 'a +* b', identity = '0.0f' } }";
  assert_int_equal(weft_compile_string(ctx, "bad_op.lua", bad, NULL, 0, &k), WEFT_ERR_COMPILE);
  assert_null(k);
  const char *e = weft_ctx_error(ctx);
  assert_non_null(strstr(e, "NVRTC could not compile"));
  assert_non_null(strstr(e, "templates/row_reduce.cu("));   /* #line maps the error into the template */
  assert_non_null(strstr(e, "saved at"));
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

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_generate),
    cmocka_unit_test(test_config_error),
    cmocka_unit_test(test_compile_and_cache),
    cmocka_unit_test(test_nvrtc_error_points_at_template),
    cmocka_unit_test(test_launch_without_driver),
    cmocka_unit_test(test_reference_fold),
    cmocka_unit_test(test_comm_kernel_needs_a_comm),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
