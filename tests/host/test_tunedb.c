/* test_tunedb.c: the tuning database (runtime/core/tunedb.c) against the behaviour in tunedb.h.
 *
 * Every test gets a fresh folder under $WEFT_TEST_TMP (mkdtemp) and removes it afterwards; the
 * environment variables tunedb reads are restored after each test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tunedb.h"

#define NWRITERS 4
#define ROWS_PER_WRITER 50

/* ---- fixture ------------------------------------------------------------------------------ */

typedef struct fixture {
  char dir[1024]; /* this test's own folder */
  char db[1200];  /* <dir>/tune.db, the database most tests use */
} fixture;

static const char *const env_names[] = {"WEFT_TUNE_DB", "XDG_CACHE_HOME", "HOME"};
static test_env env = {env_names, sizeof env_names / sizeof env_names[0], {0}};

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_mkdtemp("tunedb", f->dir, sizeof f->dir) != 0) {
    free(f);
    return -1;
  }
  snprintf(f->db, sizeof f->db, "%s/tune.db", f->dir);
  /* Nothing may fall back to the real home or cache of whoever runs the tests. */
  unsetenv("WEFT_TUNE_DB");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", f->dir, 1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  test_env_restore(&env);
  int rc = test_rmtree(f->dir);
  free(f);
  return rc;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static tune_key base_key(void) {
  tune_key k = {.gpu = "NVIDIA H200", .sm = 90, .driver = 13000, .nvrtc = "13.0", .ranks = 1,
                .family = "row_softmax", .dtype = "f32", .shape = "rows=8192 cols=32768"};
  return k;
}

static tune_row make_row(const char *config, double time_us) {
  tune_row r = {.config = (char *)config,
                .base = (char *)"return { family = \"row_softmax\", dtype = \"f32\" }",
                .kernel = (char *)"weft_row_softmax_f32",
                .time_us = time_us,
                .metric = 2.0e6 / time_us,
                .metric_name = (char *)"GB/s",
                .sweep = (char *)"sweeps/row_softmax.lua",
                .when = 1700000000};
  return r;
}

static tunedb *open_db(const char *path) {
  char err[1024] = "";
  tunedb *db = NULL;
  int rc = tunedb_open(&db, path, err, sizeof err);
  if (rc != 0) print_error("tunedb_open: %s\n", err);
  assert_int_equal(rc, 0);
  assert_non_null(db);
  return db;
}

static void put_ok(tunedb *db, const tune_key *k, const tune_row *rows, int n) {
  char err[1024] = "";
  int rc = tunedb_put(db, k, rows, n, err, sizeof err);
  if (rc != 0) print_error("tunedb_put: %s\n", err);
  assert_int_equal(rc, 0);
}

/* Lists key's rows; the caller frees them. */
static tune_row *list_ok(tunedb *db, const tune_key *k, int *n) {
  char err[1024] = "";
  tune_row *rows = (tune_row *)1;
  int rc = tunedb_list(db, k, &rows, n, err, sizeof err);
  if (rc != 0) print_error("tunedb_list: %s\n", err);
  assert_int_equal(rc, 0);
  return rows;
}

static int count_rows(tunedb *db, const tune_key *k) {
  int n = -1;
  tune_row *rows = list_ok(db, k, &n);
  tunedb_rows_free(rows, n);
  return n;
}

static void write_file(const char *path, const void *data, size_t size, off_t at, int trunc) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0), 0600);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, data, size, at), (ssize_t)size);
  assert_int_equal(close(fd), 0);
}

/* Runs SQL on a database directly, as another program (or another weft version) would. */
static void raw_sql(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK) print_error("sqlite3_exec: %s\n", msg ? msg : "?");
  sqlite3_free(msg);
  assert_int_equal(rc, SQLITE_OK);
  assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_round_trip(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  assert_string_equal(tunedb_path(db), f->db);
  tune_key k = base_key();
  tune_row rows[3] = {make_row("cluster=4 threads=512", 30.5), make_row("cluster=2 threads=256", 12.25),
                      make_row("cluster=8 threads=1024", 20.0)};
  rows[1].metric = NAN; /* no metric */
  rows[1].sweep = NULL; /* stored as "" */
  put_ok(db, &k, rows, 3);

  char err[1024] = "";
  tune_row best;
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_string_equal(best.config, "cluster=2 threads=256");
  assert_string_equal(best.base, rows[1].base);
  assert_string_equal(best.kernel, "weft_row_softmax_f32");
  assert_true(best.time_us == 12.25);
  assert_true(isnan(best.metric));
  assert_string_equal(best.metric_name, "GB/s");
  assert_string_equal(best.sweep, "");
  assert_true(best.when == 1700000000);
  tunedb_row_free(&best);

  int n = 0;
  tune_row *got = list_ok(db, &k, &n);
  assert_int_equal(n, 3);
  assert_string_equal(got[0].config, "cluster=2 threads=256");
  assert_string_equal(got[1].config, "cluster=8 threads=1024");
  assert_string_equal(got[2].config, "cluster=4 threads=512");
  assert_true(got[1].time_us == 20.0 && got[2].time_us == 30.5);
  assert_true(got[2].metric == 2.0e6 / 30.5);
  assert_string_equal(got[2].sweep, "sweeps/row_softmax.lua");
  tunedb_rows_free(got, n);
  tunedb_close(db);

  /* it is all still there after reopening */
  db = open_db(f->db);
  assert_int_equal(count_rows(db, &k), 3);
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_string_equal(best.config, "cluster=2 threads=256");
  tunedb_row_free(&best);
  tunedb_close(db);
}

static void test_empty(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  char err[1024] = "";
  tune_row best;
  memset(&best, 0x55, sizeof best);
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 1);
  assert_null(best.config);
  tunedb_row_free(&best); /* safe on a zeroed row */
  int n = -1;
  tune_row *rows = list_ok(db, &k, &n);
  assert_int_equal(n, 0);
  assert_null(rows);
  put_ok(db, &k, NULL, 0); /* nothing to store is no error */

  /* a key with a missing field is an error, not a crash */
  tune_key bad = base_key();
  bad.dtype = NULL;
  tune_row r = make_row("a=1", 1.0);
  assert_int_equal(tunedb_put(db, &bad, &r, 1, err, sizeof err), -1);
  assert_non_null(strstr(err, "dtype"));
  assert_int_equal(tunedb_best(db, &bad, &best, err, sizeof err), -1);
  assert_int_equal(tunedb_list(db, &bad, &rows, &n, err, sizeof err), -1);
  assert_int_equal(n, 0);

  /* when 0 means now */
  r.when = 0;
  long long before = (long long)time(NULL);
  put_ok(db, &k, &r, 1);
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_true(best.when >= before && best.when <= (long long)time(NULL));
  tunedb_row_free(&best);
  tunedb_close(db);
  tunedb_close(NULL);
}

static void test_replace(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row a = make_row("cluster=4", 10.0), b = make_row("cluster=8", 15.0);
  put_ok(db, &k, &a, 1);
  put_ok(db, &k, &b, 1);
  assert_int_equal(count_rows(db, &k), 2);

  /* the same config again, faster, from another sweep: replaces */
  tune_row a2 = make_row("cluster=4", 5.0);
  a2.kernel = (char *)"weft_row_softmax_f32_v2";
  a2.when = 1800000000;
  put_ok(db, &k, &a2, 1);
  int n = 0;
  tune_row *rows = list_ok(db, &k, &n);
  assert_int_equal(n, 2);
  assert_string_equal(rows[0].config, "cluster=4");
  assert_true(rows[0].time_us == 5.0);
  assert_string_equal(rows[0].kernel, "weft_row_softmax_f32_v2");
  assert_true(rows[0].when == 1800000000);
  tunedb_rows_free(rows, n);

  /* and again, slower: the newer measurement still replaces the older one */
  tune_row a3 = make_row("cluster=4", 20.0);
  put_ok(db, &k, &a3, 1);
  rows = list_ok(db, &k, &n);
  assert_int_equal(n, 2);
  assert_string_equal(rows[0].config, "cluster=8");
  assert_string_equal(rows[1].config, "cluster=4");
  assert_true(rows[1].time_us == 20.0);
  tunedb_rows_free(rows, n);

  /* the same config twice within one call: the later row wins */
  tune_row twice[2] = {make_row("cluster=2", 3.0), make_row("cluster=2", 4.0)};
  put_ok(db, &k, twice, 2);
  rows = list_ok(db, &k, &n);
  assert_int_equal(n, 3);
  assert_string_equal(rows[0].config, "cluster=2");
  assert_true(rows[0].time_us == 4.0);
  tunedb_rows_free(rows, n);
  tunedb_close(db);
}

static void test_keys_isolate(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row r = make_row("cluster=4", 10.0);
  put_ok(db, &k, &r, 1);

  tune_key others[8];
  for (int i = 0; i < 8; i++) others[i] = base_key();
  others[0].dtype = "bf16";
  others[1].shape = "rows=8192 cols=32769";
  others[2].ranks = 2;
  others[3].gpu = "NVIDIA H100 80GB HBM3";
  others[4].sm = 100;
  others[5].driver = 12080;
  others[6].nvrtc = "12.8";
  others[7].family = "row_reduce";
  char err[1024] = "";
  for (int i = 0; i < 8; i++) {
    tune_row best;
    assert_int_equal(tunedb_best(db, &others[i], &best, err, sizeof err), 1);
    assert_int_equal(count_rows(db, &others[i]), 0);
  }

  /* the same config under another key is another row; it does not replace ours */
  tune_row r2 = make_row("cluster=4", 1.0);
  put_ok(db, &others[0], &r2, 1);
  tune_row best;
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_true(best.time_us == 10.0);
  tunedb_row_free(&best);
  assert_int_equal(tunedb_best(db, &others[0], &best, err, sizeof err), 0);
  assert_true(best.time_us == 1.0);
  tunedb_row_free(&best);
  assert_int_equal(count_rows(db, &k), 1);
  tunedb_close(db);
}

static void test_default_path(void **state) {
  fixture *f = *state;
  char want[PATH_MAX], folder[PATH_MAX], xdg[1100]; /* f->dir is at most 1023 */
  struct stat st;

  /* $XDG_CACHE_HOME/weft/tune.db, the folders created, the last one 0700 */
  snprintf(xdg, sizeof xdg, "%s/xdg/cache", f->dir);
  setenv("XDG_CACHE_HOME", xdg, 1);
  snprintf(folder, sizeof folder, "%s/weft", xdg);
  snprintf(want, sizeof want, "%s/weft/tune.db", xdg);
  tunedb *db = open_db(NULL);
  assert_string_equal(tunedb_path(db), want);
  assert_int_equal(stat(folder, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(stat(want, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  tune_key k = base_key();
  tune_row r = make_row("cluster=4", 10.0);
  put_ok(db, &k, &r, 1);
  tunedb_close(db);

  /* a trailing slash is not doubled */
  snprintf(xdg, sizeof xdg, "%s/xdg/cache/", f->dir);
  setenv("XDG_CACHE_HOME", xdg, 1);
  db = open_db(NULL);
  assert_string_equal(tunedb_path(db), want);
  assert_int_equal(count_rows(db, &k), 1);
  tunedb_close(db);

  /* $WEFT_TUNE_DB wins over XDG_CACHE_HOME */
  snprintf(want, sizeof want, "%s/env/sub/mine.db", f->dir);
  setenv("WEFT_TUNE_DB", want, 1);
  db = open_db(NULL);
  assert_string_equal(tunedb_path(db), want);
  assert_int_equal(count_rows(db, &k), 0);
  tunedb_close(db);

  /* an explicit path wins over everything */
  db = open_db(f->db);
  assert_string_equal(tunedb_path(db), f->db);
  tunedb_close(db);

  /* a relative XDG_CACHE_HOME is ignored (XDG spec): $HOME/.cache/weft/tune.db */
  unsetenv("WEFT_TUNE_DB");
  setenv("XDG_CACHE_HOME", "relative/cache", 1);
  snprintf(want, sizeof want, "%s/.cache/weft/tune.db", f->dir);
  db = open_db(NULL);
  assert_string_equal(tunedb_path(db), want);
  tunedb_close(db);
  snprintf(folder, sizeof folder, "%s/.cache/weft", f->dir);
  assert_int_equal(stat(folder, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);

  /* nothing set: an error, not a guess */
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  char err[1024] = "";
  db = (tunedb *)1;
  assert_int_equal(tunedb_open(&db, NULL, err, sizeof err), -1);
  assert_null(db);
  assert_non_null(strstr(err, "WEFT_TUNE_DB"));
}

/* A failing row makes the whole call fail and store nothing, replacements included. */
static void test_all_or_nothing(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row first[3] = {make_row("cluster=2", 10.0), make_row("cluster=4", 11.0),
                       make_row("cluster=8", 12.0)};
  put_ok(db, &k, first, 3);

  char err[1024] = "";
  /* new rows and a replacement first, then a row without config */
  tune_row bad[4] = {make_row("cluster=16", 1.0), make_row("cluster=2", 0.5),
                     make_row("cluster=1", 2.0), make_row(NULL, 3.0)};
  assert_int_equal(tunedb_put(db, &k, bad, 4, err, sizeof err), -1);
  assert_non_null(strstr(err, f->db));
  assert_non_null(strstr(err, "row 3 has no config"));

  /* a time that is not a time */
  bad[3] = make_row("cluster=3", NAN);
  assert_int_equal(tunedb_put(db, &k, bad, 4, err, sizeof err), -1);
  assert_non_null(strstr(err, "row 3"));
  bad[3] = make_row("cluster=3", -1.0);
  assert_int_equal(tunedb_put(db, &k, bad, 4, err, sizeof err), -1);

  int n = 0;
  tune_row *rows = list_ok(db, &k, &n);
  assert_int_equal(n, 3);
  assert_string_equal(rows[0].config, "cluster=2");
  assert_true(rows[0].time_us == 10.0); /* the replacement was rolled back */
  assert_string_equal(rows[1].config, "cluster=4");
  assert_string_equal(rows[2].config, "cluster=8");
  tunedb_rows_free(rows, n);

  /* the handle still works after a failed call (no transaction left open) */
  put_ok(db, &k, bad, 3);
  assert_int_equal(count_rows(db, &k), 5);
  tunedb_close(db);
  /* and another process sees the same (nothing was left locked or pending) */
  db = open_db(f->db);
  assert_int_equal(count_rows(db, &k), 5);
  tunedb_close(db);
}

/* One writer process: waits for the start signal (EOF on fd), then opens and puts its rows one
 * call at a time.  No cmocka here: it runs in a forked child.  Returns the exit status. */
static int writer(const char *path, int id, int start_fd) {
  char c;
  while (read(start_fd, &c, 1) > 0) {}
  char err[1024] = "";
  tunedb *db = NULL;
  if (tunedb_open(&db, path, err, sizeof err) != 0) {
    fprintf(stderr, "writer %d: %s\n", id, err);
    return 1;
  }
  tune_key k = base_key();
  for (int i = 0; i < ROWS_PER_WRITER; i++) {
    char config[64];
    snprintf(config, sizeof config, "cluster=%d writer=%d", i, id);
    tune_row r = make_row(config, 1.0 + id * ROWS_PER_WRITER + i);
    if (tunedb_put(db, &k, &r, 1, err, sizeof err) != 0) {
      fprintf(stderr, "writer %d row %d: %s\n", id, i, err);
      tunedb_close(db);
      return 2;
    }
  }
  tunedb_close(db);
  return 0;
}

/* A reader beside the writers: the count it sees never goes down and never errs. */
static int reader(const char *path, int start_fd) {
  char c;
  while (read(start_fd, &c, 1) > 0) {}
  char err[1024] = "";
  tunedb *db = NULL;
  if (tunedb_open(&db, path, err, sizeof err) != 0) {
    fprintf(stderr, "reader: %s\n", err);
    return 1;
  }
  tune_key k = base_key();
  int last = 0;
  for (int i = 0; i < 300 && last < NWRITERS * ROWS_PER_WRITER; i++) {
    tune_row *rows = NULL;
    int n = 0;
    if (tunedb_list(db, &k, &rows, &n, err, sizeof err) != 0) {
      fprintf(stderr, "reader: %s\n", err);
      tunedb_close(db);
      return 2;
    }
    for (int j = 1; j < n; j++)
      if (rows[j].time_us < rows[j - 1].time_us) {
        fprintf(stderr, "reader: rows out of order\n");
        tunedb_rows_free(rows, n);
        tunedb_close(db);
        return 3;
      }
    tunedb_rows_free(rows, n);
    if (n < last) {
      fprintf(stderr, "reader: %d rows after %d\n", n, last);
      tunedb_close(db);
      return 4;
    }
    last = n;
  }
  tunedb_close(db);
  return 0;
}

static void test_concurrent_writers(void **state) {
  fixture *f = *state;
  /* the file does not exist yet: the children race to create it, too */
  int start[2];
  assert_int_equal(pipe(start), 0);
  pid_t pids[NWRITERS + 1];
  for (int i = 0; i <= NWRITERS; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      close(start[1]);
      _exit(i < NWRITERS ? writer(f->db, i, start[0]) : reader(f->db, start[0]));
    }
  }
  close(start[0]);
  close(start[1]); /* go: every child's read sees EOF at the same moment */
  for (int i = 0; i <= NWRITERS; i++) {
    int status = 0;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      print_error("child %d: status 0x%x\n", i, (unsigned)status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }

  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  int n = 0;
  tune_row *rows = list_ok(db, &k, &n);
  assert_int_equal(n, NWRITERS * ROWS_PER_WRITER);
  /* times are 1..200 and distinct, so fastest first means row i has time i + 1 */
  for (int i = 0; i < n; i++) {
    assert_true(rows[i].time_us == 1.0 + i);
    char want[64];
    snprintf(want, sizeof want, "cluster=%d writer=%d", i % ROWS_PER_WRITER, i / ROWS_PER_WRITER);
    assert_string_equal(rows[i].config, want);
  }
  tunedb_rows_free(rows, n);
  tunedb_close(db);
}

/* err came from a failed open or a failed call on a damaged file: it names the file. */
static void expect_failure_names_path(const char *path) {
  char err[1024] = "";
  tunedb *db = NULL;
  int rc = tunedb_open(&db, path, err, sizeof err);
  if (rc == 0) {
    assert_non_null(db);
    tune_key k = base_key();
    tune_row r = make_row("cluster=4", 10.0);
    rc = tunedb_put(db, &k, &r, 1, err, sizeof err);
    if (rc == 0) {
      tune_row *rows = NULL;
      int n = 0;
      rc = tunedb_list(db, &k, &rows, &n, err, sizeof err);
      tunedb_rows_free(rows, n);
    }
    tunedb_close(db);
  } else {
    assert_null(db);
  }
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err, path));
}

static void test_corrupt_file(void **state) {
  fixture *f = *state;
  /* garbage where the database should be */
  char garbage[8192];
  for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (char)("not a database\n"[i % 15]);
  write_file(f->db, garbage, sizeof garbage, 0, 1);
  expect_failure_names_path(f->db);
  char err[1024] = "";
  tunedb *db = NULL;
  assert_int_equal(tunedb_open(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, "not a database"));
  assert_non_null(strstr(err, "move it away"));

  /* a real database whose pages were overwritten after the 100-byte header */
  char other[PATH_MAX];
  snprintf(other, sizeof other, "%s/damaged.db", f->dir);
  db = open_db(other);
  tune_key k = base_key();
  tune_row r = make_row("cluster=4", 10.0);
  put_ok(db, &k, &r, 1);
  tunedb_close(db); /* checkpoints the WAL into the file */
  for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (char)(0xa5 ^ (i * 7));
  write_file(other, garbage, sizeof garbage - 100, 100, 0);
  expect_failure_names_path(other);

  /* the database path is a folder */
  snprintf(other, sizeof other, "%s/folder.db", f->dir);
  assert_int_equal(mkdir(other, 0700), 0);
  expect_failure_names_path(other);
}

static void test_newer_version(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tunedb_close(db);
  raw_sql(f->db, "UPDATE tunedb_schema SET version = 99");
  char err[1024] = "";
  db = (tunedb *)1;
  assert_int_equal(tunedb_open(&db, f->db, err, sizeof err), -1);
  assert_null(db);
  assert_non_null(strstr(err, f->db));
  assert_non_null(strstr(err, "schema version 99, newer than this weft understands"));
}

static void test_foreign_database(void **state) {
  fixture *f = *state;
  raw_sql(f->db, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me')");
  char err[1024] = "";
  tunedb *db = NULL;
  assert_int_equal(tunedb_open(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, f->db));
  assert_non_null(strstr(err, "not a weft tune database"));
  /* and it was left alone */
  sqlite3 *raw = NULL;
  assert_int_equal(sqlite3_open(f->db, &raw), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  /* its journal mode too: WAL persists in the file, and another program may not expect it */
  assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0), "delete");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

/* Values are bound, never pasted into SQL: quotes and SQL in them are just text. */
static void test_odd_text(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  k.shape = "rows=1'; DROP TABLE results; --";
  k.gpu = "GPU \"with\" quotes \xc3\xa9";
  tune_row r = make_row("op.combine=\"fmaxf(a, b)\" x='y'", 7.0);
  put_ok(db, &k, &r, 1);
  char err[1024] = "";
  tune_row best;
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_string_equal(best.config, r.config);
  tunedb_row_free(&best);
  assert_int_equal(count_rows(db, &k), 1);
  tunedb_close(db);
}

/* weft_auto_choose's "nearest" query: the fastest rows per (shape, driver, nvrtc) of one gpu, sm,
 * ranks, family and dtype, fastest first in each -- and nothing of another dtype, GPU or rank
 * count; and the export's fastest rows per (family, dtype, ranks, shape) of one driver and NVRTC;
 * at most TUNEDB_PER_GROUP of a group. */
static void test_nearest(void **state) {
  fixture *f = *state;
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row a[3] = {make_row("cluster=4", 30.0), make_row("cluster=2", 10.0), make_row("cluster=1", 10.0)};
  put_ok(db, &k, a, 3);                  /* tie at 10: the smaller config, "cluster=1" */
  tune_key k2 = k;
  k2.shape = "cols=4096 rows=1024";
  tune_row b = make_row("threads=256", 5.0);
  put_ok(db, &k2, &b, 1);
  tune_key k3 = k;
  k3.driver = 12000;
  tune_row c = make_row("cluster=8", 7.0);
  put_ok(db, &k3, &c, 1);
  tune_key other[3] = {k, k, k};
  other[0].dtype = "bf16";
  other[1].gpu = "NVIDIA H100";
  other[2].ranks = 8;
  tune_row d = make_row("cluster=16", 1.0);
  for (int i = 0; i < 3; i++) put_ok(db, &other[i], &d, 1);
  char err[1024] = "";
  tune_best *v = NULL;
  int n = -1;
  int rc = tunedb_nearest(db, "NVIDIA H200", 90, 1, "row_softmax", "f32", &v, &n, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(n, 5);
  /* sorted by shape, then driver, then time (ties to the smaller config) */
  assert_string_equal(v[0].shape, "cols=4096 rows=1024");
  assert_string_equal(v[0].row.config, "threads=256");
  assert_string_equal(v[1].shape, "rows=8192 cols=32768");
  assert_int_equal(v[1].driver, 12000);
  assert_string_equal(v[1].row.config, "cluster=8");
  assert_int_equal(v[2].driver, 13000);
  assert_string_equal(v[2].row.config, "cluster=1");
  assert_true(v[2].row.time_us == 10.0);
  assert_string_equal(v[2].nvrtc, "13.0");
  assert_string_equal(v[2].family, "row_softmax");
  assert_string_equal(v[2].row.sweep, "sweeps/row_softmax.lua");
  assert_string_equal(v[3].row.config, "cluster=2");
  assert_string_equal(v[4].row.config, "cluster=4");
  tunedb_best_free(v, n);
  /* a group keeps its fastest TUNEDB_PER_GROUP */
  tune_key k4 = k;
  k4.shape = "cols=7 rows=7";
  tune_row many[TUNEDB_PER_GROUP + 5];
  char names[TUNEDB_PER_GROUP + 5][32];
  for (int i = 0; i < TUNEDB_PER_GROUP + 5; i++) {
    snprintf(names[i], sizeof names[i], "threads=%d", 1000 + i);
    many[i] = make_row(names[i], 100.0 - i);
  }
  put_ok(db, &k4, many, TUNEDB_PER_GROUP + 5);
  assert_int_equal(tunedb_nearest(db, "NVIDIA H200", 90, 1, "row_softmax", "f32", &v, &n, err, sizeof err), 0);
  int in_group = 0;
  for (int i = 0; i < n; i++) in_group += !strcmp(v[i].shape, "cols=7 rows=7");
  assert_int_equal(in_group, TUNEDB_PER_GROUP);
  assert_string_equal(v[1].row.config, "threads=1036");   /* v[0] is cols=4096 rows=1024; then the fastest */
  tunedb_best_free(v, n);
  assert_int_equal(tunedb_nearest(db, "NVIDIA H200", 90, 1, "row_softmax", "f16", &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 0);
  assert_null(v);
  assert_int_equal(tunedb_nearest(db, NULL, 90, 1, "row_softmax", "f16", &v, &n, err, sizeof err), -1);
  /* export: driver 13000 only; every (family, dtype, ranks, shape) of this GPU once */
  assert_int_equal(tunedb_best_per_shape(db, "NVIDIA H200", 90, 13000, "13.0", &v, &n, err, sizeof err), 0);
  /* bf16; f32: 1 + 3 rows at two shapes, TUNEDB_PER_GROUP at the third; f32 at 8 ranks */
  assert_int_equal(n, 1 + 1 + 3 + TUNEDB_PER_GROUP + 1);
  assert_string_equal(v[0].dtype, "bf16");
  assert_string_equal(v[1].dtype, "f32");
  assert_int_equal(v[1].ranks, 1);
  assert_string_equal(v[1].shape, "cols=4096 rows=1024");
  assert_string_equal(v[2 + TUNEDB_PER_GROUP].row.config, "cluster=1");
  assert_int_equal(v[n - 1].ranks, 8);
  tunedb_best_free(v, n);
  tunedb_close(db);
}

/* Lookups open read-only: a missing or empty file is "no rows" (1) and is never created; a file
 * of rows opens (0) and can be read; a foreign file is refused (-1). */
static void test_open_readonly(void **state) {
  fixture *f = *state;
  char err[1024] = "";
  tunedb *ro = NULL;
  assert_int_equal(tunedb_open_readonly(&ro, f->db, err, sizeof err), 1);
  assert_null(ro);
  struct stat sb;
  assert_int_not_equal(stat(f->db, &sb), 0);   /* still not there */
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row r = make_row("cluster=2", 3.0);
  put_ok(db, &k, &r, 1);
  tunedb_close(db);
  assert_int_equal(tunedb_open_readonly(&ro, f->db, err, sizeof err), 0);
  tune_best *v = NULL;
  int n = 0;
  assert_int_equal(tunedb_nearest(ro, k.gpu, k.sm, k.ranks, k.family, k.dtype, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  tunedb_best_free(v, n);
  assert_int_equal(tunedb_put(ro, &k, &r, 1, err, sizeof err), -1);   /* read-only */
  tunedb_close(ro);
  FILE *g = fopen(f->db, "w");
  assert_non_null(g);
  fputs("not a database at all, but long enough to be read as a header by SQLite ......................", g);
  fclose(g);
  assert_int_equal(tunedb_open_readonly(&ro, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, f->db));
}

/* Hand-edited times (0, negative, -inf, text, NULL in a table without NOT NULL) never rank: best
 * and list read only the good rows, and a shape with more bad rows than TUNEDB_PER_GROUP still
 * answers its good one in nearest; the export's per-shape rows keep the bad ones after the good,
 * each with its time as stored and time_ok = 0. */
static void test_bad_times(void **state) {
  fixture *f = *state;
  char err[1024] = "";
  tunedb *db = open_db(f->db);
  tune_key k = base_key();
  tune_row good[2] = {make_row("cluster=1", 9.0), make_row("cluster=2", 5.0)};
  put_ok(db, &k, good, 2);
  tunedb_close(db);
  raw_sql(f->db, "INSERT INTO results SELECT gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config || 'b', base, "
                 "kernel, -5, metric, metric_name, sweep, recorded FROM results;"
                 "UPDATE results SET time_us = 0 WHERE config = 'cluster=1b';"
                 "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40) "
                 "INSERT INTO results SELECT gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config || 'x' || x, base, "
                 "kernel, CASE x % 3 WHEN 0 THEN 'abc' WHEN 1 THEN -9e999 ELSE -1 END, metric, metric_name, sweep, "
                 "recorded FROM results, i WHERE config = 'cluster=2'");
  db = open_db(f->db);
  tune_row best;
  assert_int_equal(tunedb_best(db, &k, &best, err, sizeof err), 0);
  assert_string_equal(best.config, "cluster=2");
  assert_true(best.time_us == 5.0);
  tunedb_row_free(&best);
  assert_int_equal(count_rows(db, &k), 2);
  tune_best *v = NULL;
  int n = 0;
  assert_int_equal(tunedb_nearest(db, k.gpu, k.sm, k.ranks, k.family, k.dtype, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(v[0].row.config, "cluster=2");
  assert_int_equal(v[0].time_ok, 1);
  tunedb_best_free(v, n);
  assert_int_equal(tunedb_best_per_shape(db, k.gpu, k.sm, k.driver, k.nvrtc, &v, &n, err, sizeof err), 0);
  assert_int_equal(n, TUNEDB_PER_GROUP);
  assert_string_equal(v[0].row.config, "cluster=2");
  assert_string_equal(v[1].row.config, "cluster=1");
  for (int i = 2; i < n; i++) assert_int_equal(v[i].time_ok, 0);
  int abc = 0;
  for (int i = 2; i < n; i++) abc += !strcmp(v[i].time_text, "'abc'");
  assert_true(abc > 0);
  tunedb_best_free(v, n);
  tunedb_close(db);
}

/* A results table whose columns have weft's names but not its types (time_us TEXT sorts "1006.3"
 * before "115.7") is refused by both openers, naming the column; one that lacks a column too is
 * refused for that. */
static void test_column_types(void **state) {
  fixture *f = *state;
  char err[1024] = "";
  raw_sql(f->db, "CREATE TABLE tunedb_schema (version INTEGER NOT NULL); INSERT INTO tunedb_schema VALUES (1);"
                 "CREATE TABLE results (gpu TEXT, sm INTEGER, driver INTEGER, nvrtc TEXT, ranks INTEGER, family TEXT,"
                 " dtype TEXT, shape TEXT, config TEXT, base TEXT, kernel TEXT, time_us TEXT, metric REAL,"
                 " metric_name TEXT, sweep TEXT, recorded INTEGER)");
  tunedb *db = NULL;
  assert_int_equal(tunedb_open(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, "column time_us is declared \"TEXT\", not REAL"));
  assert_int_equal(tunedb_open_readonly(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, "column time_us is declared \"TEXT\", not REAL"));
  raw_sql(f->db, "DROP TABLE results; CREATE TABLE results (gpu text, sm integer, driver integer, nvrtc text, ranks integer,"
                 " family text, dtype text, shape text, config text, base text, kernel text, time_us real, metric real,"
                 " metric_name text, sweep text, recorded integer)");   /* (the same types in lower case: taken) */
  db = open_db(f->db);
  tunedb_close(db);
  /* a column missing and another of the wrong type: the missing one is said (a store would fail) */
  raw_sql(f->db, "DROP TABLE results; CREATE TABLE results (gpu TEXT, sm INTEGER, driver INTEGER, nvrtc TEXT, ranks INTEGER,"
                 " family TEXT, dtype TEXT, shape TEXT, config TEXT, base TEXT, kernel TEXT, time_us TEXT, metric REAL,"
                 " metric_name TEXT, sweep TEXT)");
  assert_int_equal(tunedb_open(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, "its results table has 15 of weft's 16 columns (gpu, sm, driver,"));
  assert_int_equal(tunedb_open_readonly(&db, f->db, err, sizeof err), -1);
  assert_non_null(strstr(err, "its results table has 15 of weft's 16 columns (gpu, sm, driver,"));
}

/* A database shared read-only, its folder too (no -shm can be made beside a WAL file), is read
 * all the same (as immutable).  Needs a user the folder refuses: root is run as nobody in a child. */
static void test_readonly_folder(void **state) {
  fixture *f = *state;
  char err[1024] = "", dir[1300], path[1400];
  snprintf(dir, sizeof dir, "%s/shared", f->dir);
  snprintf(path, sizeof path, "%s/tune.db", dir);
  assert_int_equal(mkdir(dir, 0755), 0);
  tunedb *db = open_db(path);
  tune_key k = base_key();
  tune_row r = make_row("cluster=2", 3.0);
  put_ok(db, &k, &r, 1);
  tunedb_close(db);   /* (the last close checkpoints and removes -wal and -shm) */
  assert_int_equal(chmod(path, 0444), 0);
  assert_int_equal(chmod(dir, 0555), 0);
  assert_int_equal(chmod(f->dir, 0755), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
    if (access(path, R_OK) != 0) _exit(77);   /* (a parent folder the other user cannot pass) */
    if (access(dir, W_OK) == 0) _exit(78);
    tunedb *ro = NULL;
    tune_row best;
    if (tunedb_open_readonly(&ro, path, err, sizeof err) != 0) { fprintf(stderr, "open: %s\n", err); _exit(1); }
    int rc = tunedb_best(ro, &k, &best, err, sizeof err);
    if (rc != 0 || strcmp(best.config, "cluster=2")) { fprintf(stderr, "best %d: %s\n", rc, err); _exit(2); }
    tunedb_row_free(&best);
    tunedb_close(ro);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  chmod(dir, 0755);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    print_message("(test_readonly_folder: no other user can reach %s: not checked)\n", dir);
    return;
  }
  assert_int_equal(WEXITSTATUS(status), 0);
  /* ... but not with a -wal beside it (rows an immutable open would not see): the error stands */
  char wal[1500];
  snprintf(wal, sizeof wal, "%s-wal", path);
  write_file(wal, "not empty", 9, 0, 1);
  assert_int_equal(chmod(dir, 0555), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
    tunedb *ro = NULL;
    _exit(tunedb_open_readonly(&ro, path, err, sizeof err) == -1 ? 0 : 1);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  chmod(dir, 0755);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
  test_env_save(&env);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_readonly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keys_isolate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_default_path, setup, teardown),
      cmocka_unit_test_setup_teardown(test_all_or_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_newer_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_database, setup, teardown),
      cmocka_unit_test_setup_teardown(test_odd_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nearest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_times, setup, teardown),
      cmocka_unit_test_setup_teardown(test_column_types, setup, teardown),
      cmocka_unit_test_setup_teardown(test_readonly_folder, setup, teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  test_env_free(&env);
  return rc;
}
