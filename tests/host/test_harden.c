/* test_harden.c: what a user or another user can plant in the cache folder and the temporary
 * folder (issue 16, items 4 and 11): FIFOs, sparse giants, a held lock, a foreign or open
 * failed-source folder with links in it; and the message cut at a line (item 9); util_path_dir.
 *
 * Every test gets a fresh folder under $WEFT_TEST_TMP and removes it afterwards. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "hash.h"
#include "jit.h"

#define SUB "v1-test-sm_90a"

typedef struct fixture { char dir[1024]; cache *c; char sub[1200]; } fixture;

static const char *const env_names[] = {"WEFT_CACHE_LOCK_SECONDS", "TMPDIR", "WEFT_NO_COMPILE"};
static test_env env = {env_names, sizeof env_names / sizeof env_names[0], {0}};

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  char err[512];
  if (!f || test_mkdtemp("harden", f->dir, sizeof f->dir) != 0) { free(f); return -1; }
  unsetenv("WEFT_NO_COMPILE");
  if (cache_open(&f->c, f->dir, SUB, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return -1; }
  snprintf(f->sub, sizeof f->sub, "%s/%s", f->dir, SUB);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  test_env_restore(&env);
  cache_close(f->c);
  int rc = test_rmtree(f->dir);
  free(f);
  return rc;
}

static int builds;
static int build_small(void *ud, cache_entry *e, char *err, size_t errlen) {
  (void)ud, (void)err, (void)errlen;
  builds++;
  memset(e, 0, sizeof *e);
  e->ptx = strdup("// ptx\n");
  e->ptx_size = 8;
  e->log = strdup("");
  e->log_size = 1;
  e->cubin = malloc(4); /* a cubin is an ELF image: the cache checks its magic */
  if (e->cubin) memcpy(e->cubin, "\x7f" "ELF", 4);
  e->cubin_size = 4;
  return e->ptx && e->log && e->cubin ? 0 : -1;
}

static void key_of(const char *seed, unsigned char key[32], char hex[65]) {
  hash_sha256(seed, strlen(seed), key);
  hash_hex(key, hex);
}

/* A FIFO where an entry belongs used to block the open forever: now it is corrupt, rebuilt. */
static void test_fifo_entry_rebuilt(void **state) {
  fixture *f = *state;
  unsigned char key[32];
  char hex[65], path[1400], err[1024] = "";
  key_of("fifo", key, hex);
  snprintf(path, sizeof path, "%s/%s.bin", f->sub, hex);
  assert_int_equal(mkfifo(path, 0600), 0);
  cache_entry e;
  cache_result r;
  builds = 0;
  assert_int_equal(cache_get(f->c, key, "fifo", build_small, NULL, &e, &r, err, sizeof err), 0);
  assert_int_equal(r, CACHE_REBUILT);
  assert_int_equal(builds, 1);
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  cache_entry_free(&e);
}

/* A 40 GiB sparse file used to be read into memory ("out of memory"): now it is rebuilt. */
static void test_sparse_giant_rebuilt(void **state) {
  fixture *f = *state;
  unsigned char key[32];
  char hex[65], path[1400], err[1024] = "";
  key_of("giant", key, hex);
  snprintf(path, sizeof path, "%s/%s.bin", f->sub, hex);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  unsigned char hdr[96] = "WEFTKC01";
  memcpy(hdr + 8, key, 32);
  unsigned long long ptx = 40ULL << 30;   /* sizes that add up to the file: only its size is wrong */
  for (int i = 0; i < 8; i++) hdr[40 + i] = (unsigned char)(ptx >> (8 * i));
  assert_int_equal(write(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
  assert_int_equal(ftruncate(fd, (off_t)(96 + ptx)), 0);
  close(fd);
  cache_entry e;
  cache_result r;
  assert_int_equal(cache_get(f->c, key, "giant", build_small, NULL, &e, &r, err, sizeof err), 0);
  assert_int_equal(r, CACHE_REBUILT);
  cache_entry_free(&e);
}

/* Another process holds the builder's lock: a bounded wait, then an error naming the lock and
 * the variable that sets the bound. */
static void test_held_lock_gives_up(void **state) {
  fixture *f = *state;
  unsigned char key[32];
  char hex[65], path[1400], err[1024] = "";
  key_of("held", key, hex);
  snprintf(path, sizeof path, "%s/%s.lock", f->sub, hex);
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  assert_true(fd >= 0);
  assert_int_equal(flock(fd, LOCK_EX), 0);   /* another open file: flock conflicts within a process too */
  setenv("WEFT_CACHE_LOCK_SECONDS", "2", 1);
  cache_entry e;
  cache_result r;
  double t0 = util_now_ms();
  builds = 0;
  assert_int_equal(cache_get(f->c, key, "held", build_small, NULL, &e, &r, err, sizeof err), -1);
  double ms = util_now_ms() - t0;
  assert_true(ms >= 1900 && ms < 10000);
  assert_int_equal(builds, 0);
  assert_non_null(strstr(err, "gave up after 2 s waiting for the cache lock on"));
  assert_non_null(strstr(err, hex));
  assert_non_null(strstr(err, "WEFT_CACHE_LOCK_SECONDS"));
  setenv("WEFT_CACHE_LOCK_SECONDS", "soon", 1);
  assert_int_equal(cache_get(f->c, key, "held", build_small, NULL, &e, &r, err, sizeof err), CACHE_FAIL_ENV);
  assert_non_null(strstr(err, "WEFT_CACHE_LOCK_SECONDS = \"soon\": must be a whole number of seconds"));
  /* a control byte in the value is quoted as '?': the message stays one line */
  setenv("WEFT_CACHE_LOCK_SECONDS", "5\n\x1b[2J", 1);
  assert_int_equal(cache_get(f->c, key, "held", build_small, NULL, &e, &r, err, sizeof err), CACHE_FAIL_ENV);
  assert_non_null(strstr(err, "WEFT_CACHE_LOCK_SECONDS = \"5??[2J\": must be a whole number of seconds"));
  assert_null(strchr(err, '\n'));
  close(fd);
  unsetenv("WEFT_CACHE_LOCK_SECONDS");
  assert_int_equal(cache_get(f->c, key, "held", build_small, NULL, &e, &r, err, sizeof err), 0);
  cache_entry_free(&e);
}

/* A FIFO as the lock file: refused with a message, not waited on. */
static void test_fifo_lock_refused(void **state) {
  fixture *f = *state;
  unsigned char key[32];
  char hex[65], path[1400], err[1024] = "";
  key_of("fifolock", key, hex);
  snprintf(path, sizeof path, "%s/%s.lock", f->sub, hex);
  assert_int_equal(mkfifo(path, 0600), 0);
  cache_entry e;
  cache_result r;
  assert_int_equal(cache_get(f->c, key, "fifolock", build_small, NULL, &e, &r, err, sizeof err), -1);
  assert_non_null(strstr(err, "is not a regular file: remove it"));
}

/* $TMPDIR/weft-failed-<uid> made by someone else (here: open to all), with a link planted
 * where the source goes: the link's target is untouched, and the source lands in a private
 * folder of ours. */
static void test_failed_source_private(void **state) {
  fixture *f = *state;
  char planted[1400], victim[1400], link[1500], saved[4400];
  setenv("TMPDIR", f->dir, 1);
  snprintf(planted, sizeof planted, "%s/weft-failed-%ld", f->dir, (long)geteuid());
  assert_int_equal(mkdir(planted, 0777), 0);
  assert_int_equal(chmod(planted, 0777), 0);
  snprintf(victim, sizeof victim, "%s/victim", f->dir);
  FILE *v = fopen(victim, "w");
  assert_non_null(v);
  fputs("precious\n", v);
  fclose(v);
  snprintf(link, sizeof link, "%s/weft_k.cu", planted);
  assert_int_equal(symlink(victim, link), 0);
  jit_save_failed("weft_k", "__global__ void k() {}\n", saved, sizeof saved);
  assert_true(saved[0] != 0);
  /* not in the open folder: in a fresh weft-failed-<uid>-XXXXXX */
  assert_true(strncmp(saved, planted, strlen(planted)) == 0 && saved[strlen(planted)] == '-');
  struct stat st;
  char *dir = strdup(saved);
  *strrchr(dir, '/') = 0;
  assert_int_equal(lstat(dir, &st), 0);
  assert_true(S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0);
  free(dir);
  char buf[64] = "";
  v = fopen(victim, "r");
  assert_non_null(fgets(buf, sizeof buf, v));
  fclose(v);
  assert_string_equal(buf, "precious\n");

  /* our own private folder with a planted link: the link is replaced, not followed */
  assert_int_equal(chmod(planted, 0700), 0);
  jit_save_failed("weft_k", "__global__ void k2() {}\n", saved, sizeof saved);
  assert_true(strncmp(saved, planted, strlen(planted)) == 0 && saved[strlen(planted)] == '/');
  assert_int_equal(lstat(saved, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  v = fopen(victim, "r");
  assert_non_null(fgets(buf, sizeof buf, v));
  fclose(v);
  assert_string_equal(buf, "precious\n");
  /* a name that would leave the folder is not written at all */
  jit_save_failed("../escape", "x", saved, sizeof saved);
  assert_string_equal(saved, "");
}

/* A message too long for its buffer is cut at a line end, with a note of what was left out. */
static void test_message_cut_at_line(void **state) {
  (void)state;
  char text[6000], err[1024];
  size_t n = 0;
  for (int i = 0; n + 40 < sizeof text; i++) n += (size_t)snprintf(text + n, sizeof text - n, "cfg.lua: field%d = 1: bad\n", i);
  util_set_msg(err, sizeof err, "", text);
  char *note = strstr(err, "\n(... ");
  assert_non_null(note);
  assert_non_null(strstr(note, "more lines: the message is longer than the 1024 bytes weft keeps)"));
  assert_true(note[-1] == 'd');   /* the last kept line is whole: "... bad" */
  util_set_msg(err, sizeof err, "p: ", "short");
  assert_string_equal(err, "p: short");
}

/* util_escape: what could drive a terminal is written as text (C0 and DEL, and C1 as UTF-8's
 * \xc2\x80-\x9f, also when a stream's pieces split it), everything else as it is (UTF-8 text,
 * newline and tab with lines); and util_printable cuts after a whole escape, with "...". */
static void test_escape(void **state) {
  (void)state;
  char out[256];
  const char *in = "a\033[2J\tb\nc\x7f \xc2\x9b" "2J caf\xc3\xa9 \xc2\xb0 \xe2\x80\x94";
  util_escape(out, sizeof out, in, strlen(in), 1, NULL, NULL);
  assert_string_equal(out, "a\\x1b[2J\tb\nc\\x7f \\xc2\\x9b2J caf\xc3\xa9 \xc2\xb0 \xe2\x80\x94");
  util_escape(out, sizeof out, "t\tn\n", 4, 0, NULL, NULL);
  assert_string_equal(out, "t\\x09n\\x0a");
  util_escape(out, sizeof out, "end\xc2", 4, 1, NULL, NULL);   /* a lone \xc2 at a string's end */
  assert_string_equal(out, "end\\xc2");
  /* a stream: \xc2 ends one piece, \x9b starts the next; then \xc2 before a plain byte */
  int held = 0;
  size_t used = 0, at = util_escape(out, sizeof out, "x\xc2", 2, 1, &held, &used);
  assert_int_equal(held, 1);
  assert_int_equal(used, 2);
  at += util_escape(out + at, sizeof out - at, "\x9b", 1, 1, &held, &used);
  at += util_escape(out + at, sizeof out - at, "\xc2", 1, 1, &held, &used);
  at += util_escape(out + at, sizeof out - at, "\xb0.", 2, 1, &held, &used);
  assert_int_equal(held, 0);
  assert_string_equal(out, "x\\xc2\\x9b\xc2\xb0.");
  /* a stream whose dst fills right after a \xc2: the \xc2 is held and counted consumed, never
   * written twice (a review: it was both) */
  char four[4];
  held = 0;
  at = util_escape(four, sizeof four, "a\xc2\033", 3, 1, &held, &used);
  assert_int_equal(held, 1);
  assert_int_equal(used, 2);
  assert_string_equal(four, "a");
  at = util_escape(out, sizeof out, "\033", 1, 1, &held, &used);
  assert_int_equal(held, 0);
  assert_string_equal(out, "\xc2\\x1b");
  /* bounded: stops before an escape that does not fit, and says how much it did */
  char small[6];
  at = util_escape(small, sizeof small, "ab\033cd", 5, 1, NULL, &used);
  assert_int_equal(at, 2);
  assert_int_equal(used, 2);
  assert_string_equal(small, "ab");
  char shown[12];
  assert_string_equal(util_printable("abcd\033efghij", shown, sizeof shown), "abcd\\x1b...");
  assert_string_equal(util_printable("abcde\033fghij", shown, sizeof shown), "abcde...");   /* (not "abcde\\x...") */
  assert_string_equal(util_printable("ab\001", shown, sizeof shown), "ab\\x01");
  assert_string_equal(util_printable("abcdefghijk", shown, sizeof shown), "abcdefghijk");   /* (fits: no "...") */
}

/* $WEFT_SIGNAL_TIMEOUT_MS as the communicators and stream-K's workspace both read it: a
 * positive number of milliseconds up to a day, 0 (their defaults) when unset or empty; anything
 * else refused with a message naming the variable and its value. */
static void test_signal_timeout_env(void **state) {
  (void)state;
  const char *good[][2] = {{"250", "250"}, {"0.5", "0.5"}, {"86400000", "86400000"}, {"", "0"}};
  const char *bad[] = {"0", "-3", "soon", "250ms", " ", " 250", "nan", "inf", "1e300", "86400001", "0x10", "0X1p3"};
  char err[512];
  double ms;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    setenv("WEFT_SIGNAL_TIMEOUT_MS", good[i][0], 1);
    assert_int_equal(util_signal_timeout_ms(&ms, err, sizeof err), 0);
    assert_true(ms == atof(good[i][1]));
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("WEFT_SIGNAL_TIMEOUT_MS", bad[i], 1);
    err[0] = 0;
    assert_int_equal(util_signal_timeout_ms(&ms, err, sizeof err), -1);
    assert_non_null(strstr(err, "WEFT_SIGNAL_TIMEOUT_MS = \""));
    assert_non_null(strstr(err, bad[i]));
    assert_non_null(strstr(err, "milliseconds above 0"));
  }
  unsetenv("WEFT_SIGNAL_TIMEOUT_MS");
  assert_int_equal(util_signal_timeout_ms(&ms, err, sizeof err), 0);
  assert_true(ms == 0);
}

/* util_env_long, which every whole-number variable goes through: the default when unset or
 * empty, the value in range, and a message with the name, the value (cut at 80 bytes), the
 * range and the default for anything else */
static void test_env_long(void **state) {
  (void)state;
  char err[512];
  long v;
  unsetenv("WEFT_TEST_N");
  assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, err, sizeof err), 0);
  assert_int_equal(v, 4);
  setenv("WEFT_TEST_N", "", 1);
  assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, err, sizeof err), 0);
  assert_int_equal(v, 4);
  setenv("WEFT_TEST_N", "10", 1);
  assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, err, sizeof err), 0);
  assert_int_equal(v, 10);
  const char *bad[] = {"0", "11", "-1", "3x", "0x3", " 3", "3 ", "1.5", "+ 3", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("WEFT_TEST_N", bad[i], 1);
    assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, err, sizeof err), -1);
    char want[256];
    snprintf(want, sizeof want, "WEFT_TEST_N = \"%s\": must be a whole number of things in 1..10 (a test; unset: 4)",
             bad[i]);
    assert_string_equal(err, want);
    assert_int_equal(v, 4);
  }
  /* no unit, and a default outside the range: neither named */
  setenv("WEFT_TEST_N", "x", 1);
  assert_int_equal(util_env_long("WEFT_TEST_N", 0, 7, -1, NULL, "which one", &v, err, sizeof err), -1);
  assert_string_equal(err, "WEFT_TEST_N = \"x\": must be a whole number in 0..7 (which one)");
  /* a long value is cut, and says so */
  char longv[200];
  memset(longv, '7', sizeof longv - 1);
  longv[sizeof longv - 1] = 0;
  setenv("WEFT_TEST_N", longv, 1);
  assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, err, sizeof err), -1);
  assert_non_null(strstr(err, "777...\": must be"));
  assert_true(strlen(err) < 200);
  /* no message wanted */
  assert_int_equal(util_env_long("WEFT_TEST_N", 1, 10, 4, "things", "a test", &v, NULL, 0), -1);
  unsetenv("WEFT_TEST_N");
}

/* util_buf_append: any length in one call (csv_field's config column, which printf's %.*s, an
 * int, once took in 64 KB pieces), NULs kept, mixed with util_buf_printf, always NUL-terminated */
static void test_buf_append(void **state) {
  (void)state;
  util_buf b = {0};
  assert_int_equal(util_buf_append(&b, "", 0), 0);
  assert_non_null(b.p);
  assert_string_equal(b.p, "");
  size_t big = 300000;
  char *s = malloc(big);
  assert_non_null(s);
  for (size_t i = 0; i < big; i++) s[i] = (char)('a' + i % 26);
  assert_int_equal(util_buf_printf(&b, "<%d>", 7), 0);
  assert_int_equal(util_buf_append(&b, s, big), 0);
  assert_int_equal(util_buf_append(&b, "x\0y", 3), 0);
  assert_int_equal(util_buf_printf(&b, "%s", "!"), 0);
  assert_int_equal(b.len, 3 + big + 3 + 1);
  assert_memory_equal(b.p, "<7>", 3);
  assert_memory_equal(b.p + 3, s, big);
  assert_memory_equal(b.p + 3 + big, "x\0y!", 5);
  assert_int_equal(b.p[b.len], 0);
  assert_false(b.oom);
  free(s);
  util_buf_free(&b);
}

/* util_env_bool, which every on/off variable goes through (WEFT_NO_COMPILE, WEFT_AUTOTUNE,
 * WEFT_LOG_LAUNCH): the spellings each way, and a message for anything else ("false" once
 * counted as on) */
static void test_env_bool(void **state) {
  (void)state;
  char err[512];
  int on = 7;
  unsetenv("WEFT_TEST_B");
  assert_int_equal(util_env_bool("WEFT_TEST_B", "a test", &on, err, sizeof err), 0);
  assert_int_equal(on, 0);
  const char *yes[] = {"1", "true", "yes", "on", "TRUE", "Yes", "ON"}, *no[] = {"", "0", "false", "no", "off", "False", "NO"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    setenv("WEFT_TEST_B", yes[i], 1);
    assert_int_equal(util_env_bool("WEFT_TEST_B", "a test", &on, err, sizeof err), 0);
    assert_int_equal(on, 1);
  }
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    setenv("WEFT_TEST_B", no[i], 1);
    assert_int_equal(util_env_bool("WEFT_TEST_B", "a test", &on, err, sizeof err), 0);
    assert_int_equal(on, 0);
  }
  const char *bad[] = {"ture", "2", " 1", "on ", "-1", "enabled"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("WEFT_TEST_B", bad[i], 1);
    on = 7;
    assert_int_equal(util_env_bool("WEFT_TEST_B", "a test", &on, err, sizeof err), -1);
    assert_int_equal(on, 0);
    char want[256];
    snprintf(want, sizeof want, "WEFT_TEST_B = \"%s\": must be 1, true, yes or on (a test), or 0, false, no, off or "
             "unset", bad[i]);
    assert_string_equal(err, want);
  }
  unsetenv("WEFT_TEST_B");
}

/* util_path_dir, the folder that holds a path (the tune database's, tune --export's): "." and "/"
 * at the ends, the text before the last slash otherwise (a trailing slash is not taken off) */
static void test_path_dir(void **state) {
  (void)state;
  const char *cases[][2] = {{"tune.db", "."}, {"/tune.db", "/"}, {"a/b.db", "a"}, {"/x/y/z.db", "/x/y"},
                            {"./t.db", "."}, {"a//b", "a/"}, {"//b", "/"}, {"a/b/", "a/b"}, {"/", "/"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *d = util_path_dir(cases[i][0]);
    assert_non_null(d);
    assert_string_equal(d, cases[i][1]);
    free(d);
  }
}

int main(void) {
  test_env_save(&env);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fifo_entry_rebuilt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sparse_giant_rebuilt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_held_lock_gives_up, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fifo_lock_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_source_private, setup, teardown),
      cmocka_unit_test_setup_teardown(test_message_cut_at_line, setup, teardown),
      cmocka_unit_test(test_escape),
      cmocka_unit_test(test_signal_timeout_env),
      cmocka_unit_test(test_env_long),
      cmocka_unit_test(test_env_bool),
      cmocka_unit_test(test_path_dir),
      cmocka_unit_test(test_buf_append),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
