/* test_autotable.c: the shipped tuning table's parser (runtime/core/autotable.c, autotable.h):
 * a good table, every kind of bad line (skipped, with a warning naming the file, the line, the
 * column and what is allowed), bad headers (the table ignored), a missing file, a huge line, and
 * the shape parser weft_auto_choose uses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotable.h"
#include "util.h"

#define HEAD "# weft tuning table: test\n# gpu: NVIDIA H200\n# sm: 90\n# driver: 13000\n# nvrtc: 13.0\n" \
             "# date: 2026-12-01\n# command: by hand\nfamily\tdtype\tranks\tshape\ttime_us\tconfig\n"
#define GOOD "row_softmax\tbf16\t1\trows=4096 cols=50257\t123.4\tcluster=2;mode=onchip;max_cols=50688;threads=1024\n"

static autotable *parse(const char *text, util_buf *w, int *rc) {
  autotable *t = NULL;
  memset(w, 0, sizeof *w);
  *rc = autotable_parse("t.tsv", text, strlen(text), &t, w);
  return t;
}

static void has(const util_buf *w, const char *s) {
  if (!w->p || !strstr(w->p, s)) fail_msg("warnings lack \"%s\":\n%s", s, w->p ? w->p : "(none)");
}

static void test_good(void **state) {
  (void)state;
  util_buf w;
  int rc;
  autotable *t = parse(HEAD GOOD "row_reduce\tf32\t8\tcols=4096,rows=1\t2.5\t\n", &w, &rc);
  assert_int_equal(rc, 0);
  assert_null(w.p);
  assert_non_null(t);
  assert_string_equal(t->gpu, "NVIDIA H200");
  assert_int_equal(t->sm, 90);
  assert_string_equal(t->driver, "13000");
  assert_string_equal(t->command, "by hand");
  assert_int_equal(t->n_rows, 2);
  assert_string_equal(t->rows[0].family, "row_softmax");
  assert_string_equal(t->rows[0].dtype, "bf16");
  assert_string_equal(t->rows[0].shape, "cols=50257 rows=4096");   /* canonical: sorted */
  assert_true(t->rows[0].time_us > 123.39 && t->rows[0].time_us < 123.41);
  assert_int_equal(t->rows[0].n_sets, 4);
  assert_string_equal(t->rows[0].sets[0], "cluster=2");
  assert_string_equal(t->rows[0].sets[3], "threads=1024");
  assert_int_equal(t->rows[0].line, 9);
  assert_int_equal(t->rows[1].ranks, 8);
  assert_string_equal(t->rows[1].shape, "cols=4096 rows=1");
  assert_int_equal(t->rows[1].n_sets, 0);   /* empty: the family's defaults */
  autotable_free(t);
}

/* columns in another order are fine: the column line says which is which */
static void test_column_order(void **state) {
  (void)state;
  util_buf w;
  int rc;
  autotable *t = parse("# weft tuning table\n# gpu: G\n# sm: 90\nconfig\tshape\ttime_us\tranks\tdtype\tfamily\n"
                       "threads=256\trows=2 cols=3\t7\t1\tf16\trow_reduce\n", &w, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(t->n_rows, 1);
  assert_string_equal(t->rows[0].family, "row_reduce");
  assert_string_equal(t->rows[0].sets[0], "threads=256");
  assert_string_equal(t->rows[0].shape, "cols=3 rows=2");
  autotable_free(t);
}

static void test_bad_lines(void **state) {
  (void)state;
  util_buf w;
  int rc;
  autotable *t = parse(HEAD GOOD
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\n"                       /* 10: 5 fields */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\ta=1\textra\n"           /* 11: 7 fields */
                       "row_softmax\tbf16\tmany\trows=1 cols=2\t1.0\ta=1\n"               /* 12: ranks */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t-3\ta=1\n"                   /* 13: time */
                       "row_softmax\tbf16\t1\trows=1 cols=2\tnan\ta=1\n"                  /* 14: time */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\tcluster\n"              /* 15: pair */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\top.combine=a b\n"       /* 16: value */
                       "row_softmax\tbf16\t1\trows=0 cols=2\t1.0\ta=1\n"                  /* 17: shape */
                       "row_softmax\tbf16\t1\trows=x\t1.0\ta=1\n"                         /* 18: shape */
                       "Row Softmax\tbf16\t1\trows=1 cols=2\t1.0\ta=1\n"                  /* 19: family */
                       "row_softmax\t\t1\trows=1 cols=2\t1.0\ta=1\n"                      /* 20: dtype */
                       "row_softmax\tb\x01\"\t1\trows=1 cols=2\t1.0\ta=1\n"                /* 21: shown */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\tdtype=f16\n"              /* 22: a column */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\tthreads=1;family=rmsnorm\n" /* 23: a column */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\tthreads=512;threads=256\n" /* 24: twice */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t1.0\tthreads=512;threads2=256\n" /* (a longer key: fine) */
                       "row_softmax\tbf16\t1\trows=1 cols=2\t0x10\ta=1\n"                 /* 26: hex */
                       GOOD, &w, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(t->n_rows, 3);   /* the good ones only */
  has(&w, "t.tsv:10: 5 tab-separated fields; each row has 6 (family, dtype, ranks, shape, time_us, config); line skipped");
  has(&w, "t.tsv:11: more than 6 tab-separated fields");
  has(&w, "t.tsv:12: column 3 (ranks) = \"many\": a whole number of ranks in 1..65536; line skipped");
  has(&w, "t.tsv:13: column 5 (time_us) = \"-3\": a positive number of microseconds");
  has(&w, "t.tsv:14: column 5 (time_us) = \"nan\"");
  has(&w, "t.tsv:15: column 6 (config) = \"cluster\": pair \"cluster\" is not key=value (keys [A-Za-z0-9_.]+, values [A-Za-z0-9_.+-]+");
  has(&w, "t.tsv:16: column 6 (config) = \"op.combine=a b\"");
  has(&w, "t.tsv:17: column 4 (shape): shape: rows = 0: must be a whole number in 1..");
  has(&w, "t.tsv:18: column 4 (shape): shape: rows = x");
  has(&w, "t.tsv:19: column 1 (family) = \"Row Softmax\": a family name (lower case, digits, _)");
  has(&w, "t.tsv:20: column 2 (dtype) = \"\": a dtype name");
  has(&w, "t.tsv:21: column 2 (dtype) = \"b\\x01\\x22\": a dtype name");   /* (a control byte, a quote) */
  has(&w, "t.tsv:22: column 6 (config) = \"dtype=f16\": pair \"dtype=f16\": dtype is a column of the table's own, not a config key");
  has(&w, "t.tsv:23: column 6 (config) = \"threads=1;family=rmsnorm\": pair \"family=rmsnorm\": family is a column");
  has(&w, "t.tsv:24: column 6 (config) = \"threads=512;threads=256\": pair \"threads=256\": threads sets a key an earlier pair of the row set");
  has(&w, "t.tsv:26: column 5 (time_us) = \"0x10\": a positive number of microseconds");
  util_buf_free(&w);
  autotable_free(t);
}

static void test_huge_line(void **state) {
  (void)state;
  size_t n = AUTOTABLE_MAX_LINE + 100;
  char *big = malloc(strlen(HEAD) + n + strlen(GOOD) + 2);
  assert_non_null(big);
  strcpy(big, HEAD);
  size_t at = strlen(big);
  memset(big + at, 'a', n);
  big[at + n] = '\n';
  strcpy(big + at + n + 1, GOOD);
  util_buf w;
  int rc;
  autotable *t = parse(big, &w, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(t->n_rows, 1);
  assert_int_equal(t->rows[0].line, 10);
  has(&w, "t.tsv:9: the line is 4196 bytes long, at most 4096 are allowed; line skipped");
  util_buf_free(&w);
  autotable_free(t);
  free(big);
}

static void bad_header(const char *text, const char *why) {
  util_buf w;
  int rc;
  autotable *t = parse(text, &w, &rc);
  assert_int_equal(rc, -1);
  assert_null(t);
  has(&w, "t.tsv: the tuning table is ignored: ");
  has(&w, why);
  util_buf_free(&w);
}

static void test_bad_headers(void **state) {
  (void)state;
  bad_header("", "it is empty");
  bad_header("family\tdtype\tranks\tshape\ttime_us\tconfig\n" GOOD, "its first line is not \"# weft tuning table...\"");
  bad_header("# weft tuning table\n# sm: 90\nfamily\tdtype\tranks\tshape\ttime_us\tconfig\n" GOOD,
             "it has no \"# gpu:\" line before its columns");
  bad_header("# weft tuning table\n# gpu: G\nfamily\tdtype\tranks\tshape\ttime_us\tconfig\n" GOOD,
             "it has no \"# sm:\" line before its columns");
  bad_header("# weft tuning table\n# gpu: G\n# sm: ninety\n", "its \"# sm:\" is not a number such as 90");
  bad_header("# weft tuning table\n# gpu: G\n# sm: 90\n", "it has no column line");
  bad_header("# weft tuning table\n# gpu: G\n# sm: 90\nfamily\tdtype\tranks\tshape\tspeed\tconfig\n" GOOD,
             "its column line is bad");
}

/* the unknown column's own message names it and what is allowed */
static void test_unknown_column(void **state) {
  (void)state;
  util_buf w;
  int rc;
  autotable *t = parse("# weft tuning table\n# gpu: G\n# sm: 90\nfamily\tdtype\tranks\tshape\tspeed\tconfig\n" GOOD, &w, &rc);
  assert_int_equal(rc, -1);
  assert_null(t);
  has(&w, "t.tsv:4: column 5 = \"speed\": not a column of the table (the columns: family, dtype, ranks, shape, "
          "time_us, config, each once, tab-separated)");
  util_buf_free(&w);
  t = parse("# weft tuning table\n# gpu: G\n# sm: 90\nfamily\tdtype\tranks\tshape\tconfig\n" GOOD, &w, &rc);
  assert_int_equal(rc, -1);
  has(&w, "t.tsv:4: 5 columns; the table has 6");
  util_buf_free(&w);
}

static void test_missing_file(void **state) {
  (void)state;
  setenv("WEFT_AUTO_TABLE", "/nonexistent/dir/h200.tsv", 1);
  util_buf w = {0};
  autotable *t = NULL;
  assert_int_equal(autotable_load(NULL, &t, &w), -1);
  assert_null(t);
  has(&w, "WEFT_AUTO_TABLE = \"/nonexistent/dir/h200.tsv\": ");
  has(&w, "(a table file, or none for no table); the tuning table is ignored");
  util_buf_free(&w);
  setenv("WEFT_AUTO_TABLE", "none", 1);
  assert_int_equal(autotable_load(NULL, &t, &w), 1);
  assert_null(t);
  assert_null(w.p);
  unsetenv("WEFT_AUTO_TABLE");
}

/* the built-in table parses cleanly (a bad edit to tune/h200.tsv fails here, not on a user) */
static void test_built_in(void **state) {
  (void)state;
  unsetenv("WEFT_AUTO_TABLE");
  char err[512];
  bridge *b;
  assert_int_equal(bridge_open(&b, NULL, 0, err, sizeof err), 0);
  util_buf w = {0};
  autotable *t = NULL;
  assert_int_equal(autotable_load(b, &t, &w), 0);
  if (w.p) fail_msg("tune/h200.tsv warns:\n%s", w.p);
  assert_string_equal(t->gpu, "NVIDIA H200");
  assert_int_equal(t->sm, 90);
  assert_true(t->n_rows > 0);
  autotable_free(t);
  bridge_close(b);
}

static void shape_ok(const char *text, const char *want) {
  static const char *const sizes[] = {"rows", "cols"};
  char canon[128], why[256];
  if (autotable_shape(text, sizes, 2, canon, sizeof canon, why, sizeof why)) fail_msg("%s: %s", text, why);
  assert_string_equal(canon, want);
}

static void shape_bad(const char *text, const char *want) {
  static const char *const sizes[] = {"rows", "cols"};
  char canon[128], why[256];
  assert_int_equal(autotable_shape(text, sizes, 2, canon, sizeof canon, why, sizeof why), -1);
  if (!strstr(why, want)) fail_msg("%s: \"%s\" lacks \"%s\"", text, why, want);
}

static void test_shapes(void **state) {
  (void)state;
  shape_ok("4096x50257", "cols=50257 rows=4096");
  shape_ok("rows=4096 cols=50257", "cols=50257 rows=4096");
  shape_ok("cols=50257,rows=4096", "cols=50257 rows=4096");
  shape_ok(" rows=1 , cols=2 ", "cols=2 rows=1");
  shape_bad("rows=0 cols=5", "shape: rows = 0: must be a whole number in 1..4611686018427387904");
  shape_bad("rows=-1 cols=5", "shape: rows = -1: must be a whole number in 1..");
  shape_bad("4096x0", "shape: cols = 0");
  shape_bad("rows=4611686018427387905 cols=1", "rows = 4611686018427387905: must be a whole number in 1..");
  shape_bad("rowz=5 cols=5", "shape: rowz: not a size of this family (its sizes: rows, cols)");
  shape_bad("rows=5", "size cols is missing (the family's sizes: rows, cols)");
  shape_bad("rows=5 rows=6 cols=1", "size rows given twice");
  shape_bad("banana", "expected rowsxcols (2 whole numbers joined by x) or name=value pairs of the sizes rows, cols");
  shape_bad("4096x5x3", "expected rowsxcols (2 whole numbers");
  shape_bad("4096x5 junk", "text after the last size");
  shape_bad("4096", "expected rowsxcols");
  shape_bad("rows=5 cols=1.5", "cols = 1.5");
  shape_bad("", "expected rowsxcols");
}

/* a garbage file: the first AUTOTABLE_MAX_WARNED lines' warnings, then a count; bytes past ASCII
 * shown escaped, not raw */
static void test_many_bad_lines(void **state) {
  (void)state;
  util_buf w;
  int rc;
  util_buf text = {0};
  util_buf_printf(&text, "%s", HEAD GOOD);
  for (int i = 0; i < AUTOTABLE_MAX_WARNED + 10; i++) util_buf_printf(&text, "row_softmax\tb\xff\t1\trows=1 cols=2\t1.0\ta=1\n");
  autotable *t = parse(text.p, &w, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(t->n_rows, 1);
  has(&w, "t.tsv:10: column 2 (dtype) = \"b\\xff\": a dtype name");
  has(&w, "t.tsv:29: column 2 (dtype)");   /* (line 10 + 19: the twentieth) */
  assert_null(strstr(w.p, "t.tsv:30:"));
  has(&w, "t.tsv: 10 more lines skipped, as above (the first 20 are shown)");
  util_buf_free(&w);
  util_buf_free(&text);
  autotable_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_good),          cmocka_unit_test(test_column_order), cmocka_unit_test(test_bad_lines),
    cmocka_unit_test(test_huge_line),     cmocka_unit_test(test_bad_headers),  cmocka_unit_test(test_unknown_column),
    cmocka_unit_test(test_missing_file),  cmocka_unit_test(test_built_in),     cmocka_unit_test(test_shapes),
    cmocka_unit_test(test_many_bad_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
