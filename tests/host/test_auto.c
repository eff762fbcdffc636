/* test_auto.c: weft_auto_choose's C side (runtime/core/auto.c) with a device described by the
 * test (auto_choose_with_device), so the database steps run without a GPU: the exact row, the
 * nearest shape, a row of another driver, a shape too far, a garbage database file, a table for
 * another GPU; then compiling a choice and first-use tuning's store. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "tunedb.h"
#include "weft.h"

static const char *const CFG = "return { family = \"row_softmax\", dtype = \"f32\" }";
static const auto_device H200 = {1, "NVIDIA H200", 90, 132, 13000, "13.0", 0};   /* DRAM rate not given */

typedef struct fixture {
  char dir[1024], db[1200];
  weft_ctx *ctx;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || test_mkdtemp("auto", f->dir, sizeof f->dir)) { free(f); return -1; }
  snprintf(f->db, sizeof f->db, "%s/tune.db", f->dir);
  char cache[1200];
  snprintf(cache, sizeof cache, "%s/cache", f->dir);
  setenv("WEFT_CACHE_DIR", cache, 1);
  setenv("WEFT_AUTO_TABLE", "none", 1);
  if (weft_ctx_create(&f->ctx, NULL)) { free(f); return -1; }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  weft_ctx_destroy(f->ctx);
  test_rmtree(f->dir);
  free(f);
  unsetenv("WEFT_AUTO_TABLE");
  return 0;
}

/* a measured row: the config as sets over CFG */
static void put(const fixture *f, int driver, const char *shape, const char *config, double us) {
  tunedb *db;
  char err[1024];
  if (tunedb_open(&db, f->db, err, sizeof err)) fail_msg("%s", err);
  tune_key k = {"NVIDIA H200", 90, driver, "13.0", 1, "row_softmax", "f32", shape};
  tune_row r = {.config = (char *)config, .base = (char *)CFG, .kernel = "k", .time_us = us, .metric = NAN,
                .sweep = "test"};
  if (tunedb_put(db, &k, &r, 1, err, sizeof err)) fail_msg("%s", err);
  tunedb_close(db);
}

static weft_auto *choose(const fixture *f, const char *const *ov, int n_ov, const char *shape, const auto_device *dev) {
  weft_auto *a = NULL;
  weft_status st = auto_choose_with_device(f->ctx, "cfg.lua", CFG, ov, n_ov, shape, 1, 0, f->db, dev, &a);
  if (st) fail_msg("choose %s: %s: %s", shape, weft_status_name(st), weft_ctx_error(f->ctx));
  return a;
}

static void test_rule_without_anything(void **state) {
  fixture *f = *state;
  const char *ov[] = {"mode=stream"};
  auto_device none = {0, AUTO_DEFAULT_GPU, AUTO_DEFAULT_SM, AUTO_DEFAULT_SMS, 0, "13.0", AUTO_DEFAULT_MEM_GBS};
  put(f, 13000, "cols=8192 rows=1024", "cluster=1\nmax_cols=8192\nmode=onchip\nthreads=256", 10.0);
  weft_auto *a = choose(f, ov, 1, "1024x8192", &none);   /* no GPU: the database is not read */
  assert_string_equal(weft_auto_source(a), "rule");
  assert_non_null(strstr(weft_auto_detail(a), "no GPU given: the database is skipped"));
  assert_true(weft_auto_time_us(a) < 0);
  assert_int_equal(weft_auto_count(a), 1);
  assert_non_null(strstr(weft_auto_config(a, 0), "row_softmax"));
  assert_string_equal(auto_shape(a), "cols=8192 rows=1024");
  assert_string_equal(auto_family(a), "row_softmax");
  assert_string_equal(auto_dtype(a), "f32");
  weft_auto_free(a);
}

static void test_database_exact_and_nearest(void **state) {
  fixture *f = *state;
  put(f, 13000, "cols=8192 rows=1024", "cluster=1\nmax_cols=8192\nmode=onchip\nthreads=256", 10.0);
  put(f, 13000, "cols=8192 rows=1024", "cluster=2\nmax_cols=8192\nmode=onchip\nthreads=512", 12.0);   /* slower */
  weft_auto *a = choose(f, NULL, 0, "rows=1024 cols=8192", &H200);
  assert_string_equal(weft_auto_source(a), "database");
  assert_true(fabs(weft_auto_time_us(a) - 10.0) < 1e-9);
  assert_non_null(strstr(weft_auto_detail(a), f->db));
  assert_non_null(strstr(weft_auto_name(a, 0), "_c1_"));
  assert_non_null(strstr(weft_auto_name(a, 0), "_t256_"));
  weft_auto_free(a);
  a = choose(f, NULL, 0, "rows=1000 cols=8000", &H200);
  assert_string_equal(weft_auto_source(a), "database-nearest");
  assert_non_null(strstr(weft_auto_detail(a), "cols=8192 rows=1024"));
  weft_auto_free(a);
}

/* never across drivers for "database"; never from a shape more than a factor of 4 away */
static void test_database_other_driver_and_far(void **state) {
  fixture *f = *state;
  const char *ov[] = {"mode=stream"};
  put(f, 12000, "cols=8192 rows=1024", "cluster=1\nmax_cols=8192\nmode=onchip\nthreads=256", 10.0);
  weft_auto *a = choose(f, ov, 1, "rows=1024 cols=8192", &H200);
  assert_string_not_equal(weft_auto_source(a), "database");
  weft_auto_free(a);
  put(f, 13000, "cols=8192 rows=1024", "cluster=1\nmax_cols=8192\nmode=onchip\nthreads=256", 10.0);
  a = choose(f, ov, 1, "rows=1024 cols=65536", &H200);   /* 8x the columns */
  assert_string_equal(weft_auto_source(a), "rule");
  weft_auto_free(a);
  auto_device h100 = H200;
  h100.gpu = "NVIDIA H100";
  a = choose(f, ov, 1, "rows=1024 cols=8192", &h100);     /* another GPU's rows say nothing */
  assert_string_equal(weft_auto_source(a), "rule");
  weft_auto_free(a);
}

static void test_garbage_database(void **state) {
  fixture *f = *state;
  FILE *fp = fopen(f->db, "w");
  assert_non_null(fp);
  for (int i = 0; i < 200; i++) fputs("this is not an SQLite database\n", fp);
  fclose(fp);
  const char *ov[] = {"mode=stream"};
  weft_auto *a = choose(f, ov, 1, "rows=1024 cols=8192", &H200);
  assert_string_equal(weft_auto_source(a), "rule");
  assert_non_null(strstr(weft_auto_detail(a), "the tuning database is skipped: tune database "));
  assert_non_null(strstr(weft_auto_detail(a), f->db));
  weft_auto_free(a);
}

/* the shipped table is used only on its GPU */
static void test_table_other_gpu(void **state) {
  fixture *f = *state;
  unsetenv("WEFT_AUTO_TABLE");   /* the built-in one: it has 8192x32768 for f32 */
  weft_auto *a = choose(f, NULL, 0, "8192x32768", &H200);
  assert_string_equal(weft_auto_source(a), "table");
  assert_non_null(strstr(weft_auto_detail(a), "tune/h200.tsv (built in)"));
  weft_auto_free(a);
  auto_device h100 = H200;
  h100.gpu = "NVIDIA H100";
  const char *ov[] = {"mode=stream"};
  a = choose(f, ov, 1, "8192x32768", &h100);
  assert_string_not_equal(weft_auto_source(a), "table");
  assert_non_null(strstr(weft_auto_detail(a), "is for NVIDIA H200, not this NVIDIA H100"));
  weft_auto_free(a);
}

/* The device's DRAM rate reaches the GEMM rule: at 64 x 4096 x 4096 an H200 (the rate not given:
 * the rule's own) takes 64 x 64 split 2; an H100's 3.35 TB/s the unsplit 64 x 32, which ran
 * 1.11x faster there (bench/data/gemm_narrow_s36a.tsv). */
static void test_dram_rate(void **state) {
  fixture *f = *state;
  assert_int_equal(auto_mem_gbs(2619000, 5120), 3352);   /* an H100 SXM's HBM3 */
  assert_int_equal(auto_mem_gbs(3201000, 6144), 4917);
  assert_int_equal(auto_mem_gbs(0, 5120), 0);
  assert_int_equal(auto_mem_gbs(2619000, 0), 0);
  assert_int_equal(auto_mem_gbs(-1, 5120), 0);
  assert_int_equal(auto_mem_gbs(1000000000LL, 5120), 0);
  static const char *const GEMM = "return { family = \"gemm\", dtype = \"bf16\", b_layout = \"col\" }";
  auto_device h100 = H200;
  h100.gpu = "NVIDIA H100 80GB HBM3";
  h100.mem_gbs = 3352;
  const auto_device *devs[] = {&H200, &h100};
  const char *want[][2] = {{"_64x64x64_", "_sk2_"}, {"_64x32x64_", "_sk1_"}};
  for (int i = 0; i < 2; i++) {
    weft_auto *a = NULL;
    weft_status st = auto_choose_with_device(f->ctx, "gemm.lua", GEMM, NULL, 0, "64x4096x4096", 1, 0, f->db, devs[i], &a);
    if (st) fail_msg("choose: %s: %s", weft_status_name(st), weft_ctx_error(f->ctx));
    assert_string_equal(weft_auto_source(a), "rule");
    const char *name = weft_auto_name(a, 0);
    if (!strstr(name, want[i][0]) || !strstr(name, want[i][1]))
      fail_msg("%s: %s, not %s %s", devs[i]->gpu, name, want[i][0], want[i][1]);
    weft_auto_free(a);
  }
}

static void test_bad_input(void **state) {
  fixture *f = *state;
  weft_auto *a = NULL;
  assert_int_equal(auto_choose_with_device(f->ctx, "cfg.lua", CFG, NULL, 0, "8x8", 0, 0, NULL, &H200, &a), WEFT_ERR_INVALID);
  assert_int_equal(auto_choose_with_device(f->ctx, "cfg.lua", CFG, NULL, 0, "rows=0 cols=8", 1, 0, NULL, &H200, &a),
                   WEFT_ERR_CONFIG);
  assert_non_null(strstr(weft_ctx_error(f->ctx), "cfg.lua: shape: rows = 0: must be a whole number in 1.."));
  assert_null(a);
  assert_int_equal(weft_auto_choose(f->ctx, "/nonexistent/cfg.lua", NULL, 0, "8x8", 1, 0, NULL, &a), WEFT_ERR_IO);
  assert_int_equal(weft_auto_choose_string(f->ctx, "bad.lua", "return {", NULL, 0, "8x8", 1, 0, NULL, &a), WEFT_ERR_CONFIG);
  assert_non_null(strstr(weft_ctx_error(f->ctx), "bad.lua"));
  assert_null(weft_auto_config(NULL, 0));
  assert_int_equal(weft_auto_count(NULL), 0);
}

/* the choice compiles to the kernel it names; its store needs the GPU, and where there is one the
 * next choice for that shape comes from the database */
static void test_compile_and_record(void **state) {
  fixture *f = *state;
  put(f, 13000, "cols=8192 rows=1024", "cluster=1\nmax_cols=8192\nmode=onchip\nthreads=256", 10.0);
  weft_auto *a = choose(f, NULL, 0, "rows=1024 cols=8192", &H200);
  weft_kernel *k = NULL;
  weft_status st = weft_auto_compile(f->ctx, a, 0, &k);
  if (st) fail_msg("compile: %s", weft_ctx_error(f->ctx));
  assert_string_equal(weft_kernel_manifest(k)->name, weft_auto_name(a, 0));
  weft_kernel_destroy(k);
  assert_int_equal(weft_auto_compile(f->ctx, a, 1, &k), WEFT_ERR_INVALID);
  assert_int_equal(weft_auto_record(f->ctx, a, 0, -1.0, f->db), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(f->ctx), "weft_auto_record: time_us = -1: a positive number of microseconds"));
  assert_int_equal(weft_auto_record(f->ctx, a, 5, 1.0, f->db), WEFT_ERR_INVALID);
  assert_non_null(strstr(weft_ctx_error(f->ctx), "weft_auto_record: candidate 5: the choice has"));
  st = weft_auto_record(f->ctx, a, 0, 7.5, f->db);
  if (st == WEFT_OK) {
    weft_auto *b = NULL;
    assert_int_equal(weft_auto_choose_string(f->ctx, "cfg.lua", CFG, NULL, 0, "1024x8192", 1, 0, f->db, &b), WEFT_OK);
    assert_string_equal(weft_auto_source(b), "database");
    weft_auto_free(b);
  } else {
    assert_true(st == WEFT_ERR_NO_DRIVER || st == WEFT_ERR_NO_DEVICE);
  }
  weft_auto_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_rule_without_anything, setup, teardown),
    cmocka_unit_test_setup_teardown(test_database_exact_and_nearest, setup, teardown),
    cmocka_unit_test_setup_teardown(test_database_other_driver_and_far, setup, teardown),
    cmocka_unit_test_setup_teardown(test_garbage_database, setup, teardown),
    cmocka_unit_test_setup_teardown(test_table_other_gpu, setup, teardown),
    cmocka_unit_test_setup_teardown(test_dram_rate, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
    cmocka_unit_test_setup_teardown(test_compile_and_record, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
