/* test_cache.c: the on-disk kernel cache (runtime/core/cache.c) against the behaviour in cache.h.
 *
 * Every test gets a fresh folder under $WEFT_TEST_TMP (mkdtemp) and removes it afterwards; the
 * environment variables the cache reads are restored after each test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "hash.h"

#define SUB "v1-test-sm_90a"
#define NCHILDREN 4

/* ---- fixture ------------------------------------------------------------------------------ */

typedef struct fixture {
  char dir[1024]; /* this test's own folder (short enough that paths built on it fit PATH_MAX) */
} fixture;

/* Variables the cache reads, saved at start-up and restored after every test. */
static const char *const env_names[] = {"WEFT_CACHE_DIR", "XDG_CACHE_HOME", "HOME",
                                        "WEFT_NO_COMPILE"};
static test_env env = {env_names, sizeof env_names / sizeof env_names[0], {0}};

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_mkdtemp("cache", f->dir, sizeof f->dir) != 0) {
    free(f);
    return -1;
  }
  /* Nothing may fall back to the real home or cache of whoever runs the tests. */
  unsetenv("WEFT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("WEFT_NO_COMPILE");
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

/* ---- entries and the build callback ------------------------------------------------------ */

/* Fills e with content that depends only on seed, so any two processes agree on it. */
static int make_entry(const char *seed, cache_entry *e) {
  unsigned char d[32];
  memset(e, 0, sizeof *e);
  hash_sha256(seed, strlen(seed), d);
  char ptx[256], log[128];
  snprintf(ptx, sizeof ptx, "// ptx for %s\n.version 8.7\n.target sm_90a\n", seed);
  snprintf(log, sizeof log, "log for %s", seed);
  e->ptx_size = strlen(ptx) + 1;
  e->log_size = strlen(log) + 1;
  e->cubin_size = 4096;
  e->ptx = malloc(e->ptx_size);
  e->log = malloc(e->log_size);
  e->cubin = malloc(e->cubin_size);
  if (!e->ptx || !e->log || !e->cubin) {
    cache_entry_free(e);
    return -1;
  }
  memcpy(e->ptx, ptx, e->ptx_size);
  memcpy(e->log, log, e->log_size);
  for (size_t i = 0; i < e->cubin_size; i++) ((unsigned char *)e->cubin)[i] = d[i % 32] ^ (i >> 5);
  memcpy(e->cubin, "\x7f" "ELF", 4); /* a cubin is an ELF image: the cache checks the magic */
  return 0;
}

/* SHA-256 over everything an entry holds, sizes included. */
static void entry_digest(const cache_entry *e, unsigned char out[32]) {
  hash_ctx *h = hash_begin();
  size_t sizes[3] = {e->ptx_size, e->cubin_size, e->log_size};
  hash_add(h, sizes, sizeof sizes);
  hash_add(h, e->ptx, e->ptx_size);
  hash_add(h, e->cubin, e->cubin_size);
  hash_add(h, e->log, e->log_size);
  hash_end(h, out);
}

static int entry_is(const cache_entry *e, const char *seed) {
  cache_entry want;
  unsigned char a[32], b[32];
  if (make_entry(seed, &want) != 0) return 0;
  entry_digest(e, a);
  entry_digest(&want, b);
  cache_entry_free(&want);
  return memcmp(a, b, 32) == 0;
}

typedef struct build_ud {
  const char *seed;    /* content to build */
  int calls;           /* builds in this process */
  const char *fail;    /* if set: fail with this message */
  const char *counter; /* if set: append one byte per build (counts across processes) */
  int sleep_ms;
} build_ud;

/* No cmocka asserts here: it also runs in forked children. */
static int build_cb(void *p, cache_entry *out, char *err, size_t errlen) {
  build_ud *ud = p;
  ud->calls++;
  if (ud->sleep_ms) {
    struct timespec ts = {ud->sleep_ms / 1000, (long)(ud->sleep_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
  }
  if (ud->counter) {
    int fd = open(ud->counter, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    int ok = fd >= 0 && write(fd, "x", 1) == 1;
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (!ok) {
      snprintf(err, errlen, "cannot append to %s", ud->counter);
      return 1;
    }
  }
  if (ud->fail) {
    snprintf(err, errlen, "%s", ud->fail);
    return 1;
  }
  if (make_entry(ud->seed, out) != 0) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static void key_of(const char *s, unsigned char key[32]) { hash_sha256(s, strlen(s), key); }

static void entry_path(const cache *c, const unsigned char key[32], char *out, size_t n) {
  char hex[65];
  hash_hex(key, hex);
  snprintf(out, n, "%s/%s.bin", cache_dir(c), hex);
}

static cache *open_cache(const fixture *f) {
  char root[PATH_MAX], err[512] = "";
  cache *c = NULL;
  snprintf(root, sizeof root, "%s/root", f->dir);
  int rc = cache_open(&c, root, SUB, err, sizeof err);
  if (rc != 0) print_error("cache_open: %s\n", err);
  assert_int_equal(rc, 0);
  assert_non_null(c);
  return c;
}

/* cache_get that must succeed; returns the result and checks the content against seed. */
static cache_result get_ok(cache *c, const unsigned char key[32], build_ud *ud) {
  cache_entry e = {0};
  cache_result r = (cache_result)-1;
  char err[512] = "";
  int rc = cache_get(c, key, "k", build_cb, ud, &e, &r, err, sizeof err);
  if (rc != 0) print_error("cache_get: %s\n", err);
  assert_int_equal(rc, 0);
  assert_true(entry_is(&e, ud->seed));
  assert_non_null(e.ptx);
  assert_int_equal(e.ptx[e.ptx_size - 1], '\0');
  assert_non_null(e.log);
  assert_int_equal(e.log[e.log_size - 1], '\0');
  cache_entry_free(&e);
  assert_null(e.ptx); /* cache_entry_free leaves the entry empty */
  return r;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* How many names in dir end with suffix / contain infix. */
static int count_names(const char *dir, const char *suffix, const char *infix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name), sl = suffix ? strlen(suffix) : 0;
    if (suffix && len >= sl && strcmp(de->d_name + len - sl, suffix) == 0) n++;
    else if (infix && strstr(de->d_name, infix)) n++;
  }
  closedir(d);
  return n;
}

static void copy_file(const char *from, const char *to) {
  static char buf[1 << 16];
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(in >= 0 && out >= 0);
  ssize_t n = read(in, buf, sizeof buf);
  assert_true(n > 0 && n < (ssize_t)sizeof buf);
  assert_int_equal(write(out, buf, (size_t)n), n);
  assert_int_equal(close(in), 0);
  assert_int_equal(close(out), 0);
}

/* ---- 1. miss, then hit -------------------------------------------------------------------- */

static void test_miss_then_hit(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char key[32];
  key_of("kernel-a", key);
  build_ud ud = {.seed = "a"};
  char path[PATH_MAX];
  entry_path(c, key, path, sizeof path);

  assert_int_equal(file_size(path), -1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT);
  assert_int_equal(ud.calls, 1);
  assert_true(file_size(path) > 4096);

  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  assert_int_equal(ud.calls, 1);

  /* The entry outlives the handle: a new one (as in a new process) hits too. */
  cache_close(c);
  c = open_cache(f);
  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  assert_int_equal(ud.calls, 1);

  /* Another key is another entry. */
  unsigned char key2[32];
  key_of("kernel-b", key2);
  build_ud ud2 = {.seed = "b"};
  assert_int_equal(get_ok(c, key2, &ud2), CACHE_BUILT);
  assert_int_equal(ud2.calls, 1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  cache_close(c);
}

/* ---- 2. folders are created 0700 ---------------------------------------------------------- */

static void check_mode(const char *path, unsigned mode) {
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, mode);
}

static void test_folder_modes(void **state) {
  fixture *f = *state;
  char root[PATH_MAX], want[PATH_MAX + 64], p[PATH_MAX + 64], err[512] = "";
  snprintf(root, sizeof root, "%s/a/b/root/", f->dir); /* missing levels, trailing slash */
  cache *c = NULL;
  assert_int_equal(cache_open(&c, root, SUB, err, sizeof err), 0);

  snprintf(want, sizeof want, "%s/a/b/root/%s", f->dir, SUB);
  assert_string_equal(cache_dir(c), want);
  check_mode(want, 0700);
  snprintf(p, sizeof p, "%s/a/b/root", f->dir);
  check_mode(p, 0700);
  snprintf(p, sizeof p, "%s/a/b", f->dir);
  check_mode(p, 0700);
  snprintf(p, sizeof p, "%s/a", f->dir);
  check_mode(p, 0700);
  cache_close(c);

  /* Opening again leaves existing folders alone and succeeds. */
  assert_int_equal(cache_open(&c, root, SUB, err, sizeof err), 0);
  cache_close(c);

  /* Readable by others is fine; only writable is refused. */
  snprintf(p, sizeof p, "%s/a/b/root", f->dir);
  assert_int_equal(chmod(p, 0755), 0);
  assert_int_equal(cache_open(&c, root, SUB, err, sizeof err), 0);
  cache_close(c);
}

/* ---- 3. corrupt entries are rebuilt ------------------------------------------------------- */

static void flip_byte(const char *path, long from_end) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  long off = file_size(path) - from_end;
  unsigned char b;
  assert_int_equal(pread(fd, &b, 1, off), 1);
  b ^= 0x01;
  assert_int_equal(pwrite(fd, &b, 1, off), 1);
  assert_int_equal(close(fd), 0);
}

static void test_corrupt_rebuilt(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  char path[PATH_MAX];
  unsigned char key[32];

  /* A flipped payload byte (inside the cubin, 100 bytes from the end). */
  key_of("flip", key);
  build_ud ud = {.seed = "flip"};
  entry_path(c, key, path, sizeof path);
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT);
  long size = file_size(path);
  flip_byte(path, 100);
  assert_int_equal(get_ok(c, key, &ud), CACHE_REBUILT);
  assert_int_equal(ud.calls, 2);
  assert_int_equal(file_size(path), size);
  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  assert_int_equal(ud.calls, 2);

  /* The flipped byte is the last NUL of the log: the sizes still add up. */
  flip_byte(path, 1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_REBUILT);
  assert_int_equal(ud.calls, 3);

  /* Truncated by one byte, then cut inside the header, then emptied. */
  key_of("trunc", key);
  build_ud ut = {.seed = "trunc"};
  entry_path(c, key, path, sizeof path);
  assert_int_equal(get_ok(c, key, &ut), CACHE_BUILT);
  size = file_size(path);
  long cuts[] = {size - 1, 50, 0};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    assert_int_equal(truncate(path, cuts[i]), 0);
    assert_int_equal(get_ok(c, key, &ut), CACHE_REBUILT);
    assert_int_equal(ut.calls, (int)i + 2);
    assert_int_equal(file_size(path), size);
    assert_int_equal(get_ok(c, key, &ut), CACHE_HIT);
  }

  /* A first byte that is not the magic. */
  flip_byte(path, size);
  assert_int_equal(get_ok(c, key, &ut), CACHE_REBUILT);
  assert_int_equal(get_ok(c, key, &ut), CACHE_HIT);

  /* Extra bytes at the end. */
  int fd = open(path, O_WRONLY | O_APPEND);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "zz", 2), 2);
  assert_int_equal(close(fd), 0);
  assert_int_equal(get_ok(c, key, &ut), CACHE_REBUILT);
  assert_int_equal(get_ok(c, key, &ut), CACHE_HIT);
  cache_close(c);
}

/* ---- 4. an entry under another key's name is foreign ------------------------------------- */

static void test_foreign_entry(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char ka[32], kb[32];
  char pa[PATH_MAX], pb[PATH_MAX];
  key_of("A", ka);
  key_of("B", kb);
  entry_path(c, ka, pa, sizeof pa);
  entry_path(c, kb, pb, sizeof pb);
  build_ud ua = {.seed = "content-A"}, ub = {.seed = "content-B"};

  assert_int_equal(get_ok(c, ka, &ua), CACHE_BUILT);
  copy_file(pa, pb); /* B has never been built: without the key check this would be a hit */
  assert_int_equal(get_ok(c, kb, &ub), CACHE_REBUILT); /* and get_ok checks it is B's content */
  assert_int_equal(ub.calls, 1);
  assert_int_equal(get_ok(c, kb, &ub), CACHE_HIT);
  assert_int_equal(get_ok(c, ka, &ua), CACHE_HIT); /* A is untouched */
  assert_int_equal(ua.calls, 1);
  cache_close(c);
}

/* ---- 5. WEFT_NO_COMPILE ------------------------------------------------------------------- */

static void test_no_compile(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char key[32];
  key_of("nc", key);
  build_ud ud = {.seed = "nc"};
  cache_entry e = {0};
  cache_result r;
  char err[512] = "", path[PATH_MAX];
  entry_path(c, key, path, sizeof path);

  setenv("WEFT_NO_COMPILE", "1", 1);
  assert_int_equal(cache_get(c, key, "row_softmax", build_cb, &ud, &e, &r, err, sizeof err), CACHE_FAIL_NO_COMPILE);
  assert_int_equal(ud.calls, 0);
  assert_non_null(strstr(err, "WEFT_NO_COMPILE"));
  assert_non_null(strstr(err, "row_softmax"));
  assert_non_null(strstr(err, path));
  assert_null(e.ptx);
  assert_int_equal(file_size(path), -1);

  /* "" and "0" mean unset. */
  setenv("WEFT_NO_COMPILE", "0", 1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT);
  assert_int_equal(unlink(path), 0);
  setenv("WEFT_NO_COMPILE", "", 1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT);
  assert_int_equal(ud.calls, 2);

  /* A hit is fine with it set. */
  setenv("WEFT_NO_COMPILE", "yes", 1);
  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  assert_int_equal(ud.calls, 2);

  /* A corrupt entry is no entry. */
  flip_byte(path, 10);
  err[0] = '\0';
  assert_int_equal(cache_get(c, key, "row_softmax", build_cb, &ud, &e, &r, err, sizeof err), CACHE_FAIL_NO_COMPILE);
  assert_int_equal(ud.calls, 2);
  assert_non_null(strstr(err, "WEFT_NO_COMPILE"));
  assert_non_null(strstr(err, "row_softmax"));

  /* A value WEFT_NO_COMPILE cannot take is the environment's mistake, told apart by the value */
  setenv("WEFT_NO_COMPILE", "ture", 1);
  err[0] = '\0';
  assert_int_equal(cache_get(c, key, "row_softmax", build_cb, &ud, &e, &r, err, sizeof err), CACHE_FAIL_ENV);
  assert_non_null(strstr(err, "WEFT_NO_COMPILE = \"ture\""));
  setenv("WEFT_NO_COMPILE", "yes", 1);

  /* A tiny buffer gets a truncated message, not an overflow. */
  char tiny[8];
  memset(tiny, 'Q', sizeof tiny);
  assert_int_equal(cache_get(c, key, "row_softmax", build_cb, &ud, &e, &r, tiny, 5), CACHE_FAIL_NO_COMPILE);
  assert_int_equal(tiny[4], '\0');
  assert_int_equal(tiny[5], 'Q');
  cache_close(c);
}

/* ---- 6. refused folders ------------------------------------------------------------------- */

static void expect_refused(const char *root, const char *sub, const char *named,
                           const char *why) {
  cache *c = (cache *)&c; /* not NULL, so we see cache_open clear it */
  char err[512] = "";
  assert_int_equal(cache_open(&c, root, sub, err, sizeof err), -1);
  assert_null(c);
  if (!strstr(err, named) || !strstr(err, why)) print_error("message: %s\n", err);
  assert_non_null(strstr(err, named));
  assert_non_null(strstr(err, why));
  assert_non_null(strstr(err, "WEFT_CACHE_DIR")); /* says how to fix it */
}

static void test_refused_folders(void **state) {
  fixture *f = *state;
  char root[PATH_MAX], dir[PATH_MAX + 64], link[PATH_MAX], err[512];
  cache *c = NULL;
  snprintf(root, sizeof root, "%s/shared", f->dir);
  snprintf(dir, sizeof dir, "%s/%s", root, SUB);

  /* Group-writable root: refused before anything is created in it. */
  assert_int_equal(mkdir(root, 0700), 0);
  assert_int_equal(chmod(root, 0770), 0);
  expect_refused(root, SUB, root, "writable by group or others");
  assert_int_equal(access(dir, F_OK), -1);

  /* Other-writable subfolder under a good root. */
  assert_int_equal(chmod(root, 0700), 0);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0702), 0);
  expect_refused(root, SUB, dir, "writable by group or others");
  assert_int_equal(chmod(dir, 0700), 0);
  assert_int_equal(cache_open(&c, root, SUB, err, sizeof err), 0);
  cache_close(c);

  /* A symbolic link at either level. */
  snprintf(link, sizeof link, "%s/link", f->dir);
  assert_int_equal(symlink(root, link), 0);
  expect_refused(link, SUB, link, "symbolic link"); /* the subfolder level: next test */

  /* Owned by someone else: only root can make such a folder. */
  if (geteuid() == 0) {
    assert_int_equal(chown(root, 12345, (gid_t)-1), 0);
    expect_refused(root, SUB, root, "owned by uid 12345, not by you (uid 0)");
    assert_int_equal(chown(root, 0, (gid_t)-1), 0);
    assert_int_equal(chown(dir, 12345, (gid_t)-1), 0);
    expect_refused(root, SUB, dir, "owned by uid 12345");
  } else {
    print_message("[   NOTE   ] not root: the other-owner case is skipped\n");
  }
}

/* Links and files at the subfolder level. */
static void test_refused_link_subdir(void **state) {
  fixture *f = *state;
  char root[PATH_MAX], target[PATH_MAX], link[PATH_MAX + 16];
  snprintf(root, sizeof root, "%s/r", f->dir);
  snprintf(target, sizeof target, "%s/elsewhere", f->dir);
  snprintf(link, sizeof link, "%s/linked", root);
  assert_int_equal(mkdir(root, 0700), 0);
  assert_int_equal(mkdir(target, 0700), 0);
  assert_int_equal(symlink(target, link), 0);
  expect_refused(root, "linked", link, "symbolic link");

  /* And a file where the folder should be. */
  snprintf(link, sizeof link, "%s/plain", root);
  int fd = open(link, O_WRONLY | O_CREAT, 0600);
  assert_true(fd >= 0);
  assert_int_equal(close(fd), 0);
  expect_refused(root, "plain", link, "not a folder");
}

/* ---- 7. a failing build stores nothing ---------------------------------------------------- */

static void test_build_failure(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char key[32];
  key_of("fails", key);
  build_ud ud = {.seed = "fails", .fail = "nvrtc: error: expected a \";\" (kernel.cu:12)"};
  cache_entry e = {0};
  cache_result r = CACHE_HIT;
  char err[512] = "";

  assert_int_equal(cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err), CACHE_FAIL_BUILD);
  assert_int_equal(ud.calls, 1);
  assert_string_equal(err, ud.fail); /* exactly its message, nothing prepended */
  assert_null(e.ptx);
  assert_int_equal(count_names(cache_dir(c), ".bin", ".tmp."), 0);

  /* A failure while writing (file size limit) leaves no entry and no temporary file either. */
  ud.fail = NULL;
  struct rlimit old, small;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  small = old;
  small.rlim_cur = 1000; /* the entry is over 4 KiB */
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_true(old_handler != SIG_ERR);
  int set = setrlimit(RLIMIT_FSIZE, &small);
  int rc = cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err);
  int reset = setrlimit(RLIMIT_FSIZE, &old); /* before any assert can jump away */
  signal(SIGXFSZ, old_handler);
  assert_int_equal(set, 0);
  assert_int_equal(reset, 0);
  assert_int_equal(rc, -1);
  assert_int_equal(ud.calls, 2);
  assert_non_null(strstr(err, "cannot write"));
  /* ... said as the cache's failure, with the way out, not only a temporary file's name */
  assert_non_null(strstr(err, "was compiled, but the kernel cache cannot store it"));
  assert_non_null(strstr(err, "WEFT_CACHE_DIR"));
  assert_null(e.ptx);
  assert_int_equal(count_names(cache_dir(c), ".bin", ".tmp."), 0);

  /* With room again it builds and stores; only the entry (and its lock) remain. */
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT);
  assert_int_equal(count_names(cache_dir(c), ".bin", NULL), 1);
  assert_int_equal(count_names(cache_dir(c), NULL, ".tmp."), 0);
  cache_close(c);
}

/* ---- 8. concurrent builders build once ---------------------------------------------------- */

/* One child: waits for the start signal, gets the shared key, reports result and digest. */
static int child_main(const char *root, const char *counter, int go_fd, int res_fd) {
  char b, err[512];
  unsigned char key[32], rec[33] = {'E'};
  cache *c = NULL;
  cache_entry e = {0};
  cache_result r;
  int ok = 0;
  build_ud ud = {.seed = "shared", .counter = counter, .sleep_ms = 200};

  if (read(go_fd, &b, 1) != 0) return 1; /* EOF = go */
  key_of("shared-kernel", key);
  if (cache_open(&c, root, SUB, err, sizeof err) == 0 &&
      cache_get(c, key, "shared", build_cb, &ud, &e, &r, err, sizeof err) == 0) {
    rec[0] = (unsigned char)('0' + r);
    entry_digest(&e, rec + 1);
    ok = entry_is(&e, "shared");
  }
  if (write(res_fd, rec, sizeof rec) != (ssize_t)sizeof rec) ok = 0;
  cache_entry_free(&e);
  cache_close(c);
  return ok ? 0 : 1;
}

static void test_concurrent_builders(void **state) {
  fixture *f = *state;
  char root[PATH_MAX], counter[PATH_MAX];
  snprintf(root, sizeof root, "%s/root", f->dir); /* created by the children, concurrently */
  snprintf(counter, sizeof counter, "%s/counter", f->dir);
  int go[2], res[2];
  pid_t pids[NCHILDREN];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(res), 0);

  fflush(stdout);
  fflush(stderr);
  int started = 0;
  for (; started < NCHILDREN; started++) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      close(go[1]);
      close(res[0]);
      _exit(child_main(root, counter, go[0], res[1])); /* _exit: skip cmocka's handlers */
    }
    pids[started] = pid;
  }
  close(go[0]);
  close(res[1]);
  close(go[1]); /* all children start now */

  unsigned char recs[NCHILDREN][33];
  size_t got = 0;
  ssize_t n;
  while (got < sizeof recs && (n = read(res[0], (unsigned char *)recs + got, sizeof recs - got)) > 0)
    got += (size_t)n;
  close(res[0]);
  int failed = 0;
  for (int i = 0; i < started; i++) {
    int status;
    if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status))
      failed++;
  }
  assert_int_equal(started, NCHILDREN);
  assert_int_equal(failed, 0);
  assert_int_equal(got, sizeof recs);

  assert_int_equal(file_size(counter), 1); /* exactly one build */
  int built = 0, hits = 0;
  for (int i = 0; i < NCHILDREN; i++) {
    built += recs[i][0] == '0' + CACHE_BUILT;
    hits += recs[i][0] == '0' + CACHE_HIT;
    assert_memory_equal(recs[i] + 1, recs[0] + 1, 32); /* identical content */
  }
  assert_int_equal(built, 1);
  assert_int_equal(hits, NCHILDREN - 1);
}

/* ---- 9. default root ---------------------------------------------------------------------- */

static void expect_default(const char *prefix) {
  cache *c = NULL;
  char err[512] = "", want[PATH_MAX + 64];
  int rc = cache_open(&c, NULL, SUB, err, sizeof err);
  if (rc != 0) print_error("cache_open: %s\n", err);
  assert_int_equal(rc, 0);
  snprintf(want, sizeof want, "%s/%s", prefix, SUB);
  assert_string_equal(cache_dir(c), want);
  check_mode(want, 0700);
  cache_close(c);
}

static void test_default_root(void **state) {
  fixture *f = *state;
  char xdg[PATH_MAX], home[PATH_MAX], mine[PATH_MAX], p[PATH_MAX + 16];
  snprintf(xdg, sizeof xdg, "%s/xdg", f->dir);
  snprintf(home, sizeof home, "%s/home", f->dir);
  snprintf(mine, sizeof mine, "%s/mine", f->dir);
  assert_int_equal(mkdir(xdg, 0700), 0);
  setenv("HOME", home, 1);

  /* XDG_CACHE_HOME, with WEFT_CACHE_DIR unset. */
  unsetenv("WEFT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  snprintf(p, sizeof p, "%s/weft", xdg);
  expect_default(p);

  /* WEFT_CACHE_DIR wins over both. */
  setenv("WEFT_CACHE_DIR", mine, 1);
  expect_default(mine);

  /* Empty WEFT_CACHE_DIR and a relative XDG_CACHE_HOME are ignored: $HOME/.cache/weft. */
  setenv("WEFT_CACHE_DIR", "", 1);
  setenv("XDG_CACHE_HOME", "relative/cache", 1);
  snprintf(p, sizeof p, "%s/.cache/weft", home);
  expect_default(p);

  /* Nothing set at all: a message, not a folder somewhere odd. */
  unsetenv("WEFT_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  cache *c = (cache *)&c;
  char err[512] = "";
  assert_int_equal(cache_open(&c, NULL, SUB, err, sizeof err), -1);
  assert_null(c);
  assert_non_null(strstr(err, "WEFT_CACHE_DIR"));
}

/* ---- 10. an entry we may not read, a lock that is no file, a root that is a file ---------- */

/* In a child: as uid 12345 when root (root reads a mode-000 file anyway), else as ourselves.
 * Builds an entry under base, makes it unreadable (chmod 000), and gets it again: it must be
 * rebuilt and replaced, not fail forever.  Exit 0, or the number of the step that failed. */
static int unreadable_child(const char *base) {
  if (geteuid() == 0 && (setgid(12345) != 0 || setuid(12345) != 0)) return 10;
  char root[PATH_MAX + 8], err[512] = "", path[PATH_MAX + 80];
  snprintf(root, sizeof root, "%s/root", base);
  cache *c = NULL;
  if (cache_open(&c, root, SUB, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 11; }
  unsigned char key[32];
  key_of("unreadable", key);
  entry_path(c, key, path, sizeof path);
  build_ud ud = {.seed = "unreadable"};
  cache_entry e = {0};
  cache_result r = CACHE_HIT;
  if (cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err) != 0 || r != CACHE_BUILT) return 12;
  cache_entry_free(&e);
  if (chmod(path, 0) != 0 || access(path, R_OK) == 0) return 13; /* really unreadable now */
  if (cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 14; }
  if (r != CACHE_REBUILT || !entry_is(&e, "unreadable") || ud.calls != 2) return 15;
  cache_entry_free(&e);
  if (access(path, R_OK) != 0) return 16; /* replaced by a readable one */
  if (cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err) != 0 || r != CACHE_HIT) return 17;
  cache_entry_free(&e);
  cache_close(c);
  return 0;
}

static void test_unreadable_entry(void **state) {
  fixture *f = *state;
  char base[PATH_MAX];
  snprintf(base, sizeof base, "%s/u", f->dir);
  assert_int_equal(mkdir(base, 0700), 0);
  if (geteuid() == 0) { /* the child's own folder, reachable by it */
    assert_int_equal(chown(base, 12345, 12345), 0);
    assert_int_equal(chmod(f->dir, 0711), 0);
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(unreadable_child(base));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status)) print_error("unreadable_child failed at step %d\n", WEXITSTATUS(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A link or a folder at <key>.lock: refused with what it is and what to do, the link's target
 * untouched. */
static void test_lock_not_a_file(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char key[32];
  char hex[65], lock[PATH_MAX + 80], target[PATH_MAX], err[512] = "";
  key_of("lock-link", key);
  hash_hex(key, hex);
  snprintf(lock, sizeof lock, "%s/%s.lock", cache_dir(c), hex);
  snprintf(target, sizeof target, "%s/elsewhere", f->dir);
  assert_int_equal(symlink(target, lock), 0);
  build_ud ud = {.seed = "lock-link"};
  cache_entry e = {0};
  cache_result r;
  assert_int_equal(cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err), -1);
  if (!strstr(err, "is a symbolic link, not a regular file: remove it (the cache recreates it)"))
    print_error("message: %s\n", err);
  assert_non_null(strstr(err, "is a symbolic link, not a regular file: remove it (the cache recreates it)"));
  assert_non_null(strstr(err, lock));
  assert_int_equal(access(target, F_OK), -1);
  assert_int_equal(ud.calls, 0);

  assert_int_equal(unlink(lock), 0);
  assert_int_equal(mkdir(lock, 0700), 0);
  assert_int_equal(cache_get(c, key, "k", build_cb, &ud, &e, &r, err, sizeof err), -1);
  if (!strstr(err, "is a folder, not a regular file: remove it")) print_error("message: %s\n", err);
  assert_non_null(strstr(err, "is a folder, not a regular file: remove it (the cache recreates it)"));
  assert_int_equal(rmdir(lock), 0);
  assert_int_equal(get_ok(c, key, &ud), CACHE_BUILT); /* removed, as the message says: it works */
  cache_close(c);
}

/* WEFT_CACHE_DIR (or the root given) is a file, or lies under one: the message names the cache
 * folder and the variable, not only "<path>: not a folder". */
static void test_root_is_a_file(void **state) {
  fixture *f = *state;
  char file[PATH_MAX], under[PATH_MAX + 8];
  snprintf(file, sizeof file, "%s/rr.lua", f->dir);
  snprintf(under, sizeof under, "%s/sub", file);
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(close(fd), 0);
  expect_refused(file, SUB, file, "exists but is not a folder");
  expect_refused(under, SUB, under, "cache folder");
  setenv("WEFT_CACHE_DIR", file, 1); /* the default root, from the variable */
  expect_refused(NULL, SUB, file, "exists but is not a folder");
}

/* ---- 11. an entry without an ELF cubin ------------------------------------------------------ */

/* An entry file with a valid checksum around the given cubin (the layout in cache.c). */
static void write_raw_entry(const char *path, const unsigned char key[32], const void *cubin, size_t cubin_size) {
  static const char ptx[] = "// ptx\n", log[] = "";
  unsigned char hdr[96] = "WEFTKC01";
  memcpy(hdr + 8, key, 32);
  unsigned long long sizes[3] = {sizeof ptx, cubin_size, sizeof log};
  for (int s = 0; s < 3; s++)
    for (int i = 0; i < 8; i++) hdr[40 + 8 * s + i] = (unsigned char)(sizes[s] >> (8 * i));
  hash_ctx *h = hash_begin();
  hash_add(h, hdr, 64);
  hash_add(h, ptx, sizeof ptx);
  hash_add(h, cubin, cubin_size);
  hash_add(h, log, sizeof log);
  hash_end(h, hdr + 64);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(hdr, 1, sizeof hdr, fp), sizeof hdr);
  assert_int_equal(fwrite(ptx, 1, sizeof ptx, fp), sizeof ptx);
  if (cubin_size) assert_int_equal(fwrite(cubin, 1, cubin_size, fp), cubin_size);
  assert_int_equal(fwrite(log, 1, sizeof log, fp), sizeof log);
  assert_int_equal(fclose(fp), 0);
}

static int build_no_elf(void *p, cache_entry *out, char *err, size_t errlen) {
  int rc = build_cb(p, out, err, errlen);
  if (rc == 0) memcpy(out->cubin, "NOPE", 4);
  return rc;
}

static void test_cubin_not_elf(void **state) {
  fixture *f = *state;
  cache *c = open_cache(f);
  unsigned char key[32];
  char path[PATH_MAX], err[512] = "";
  key_of("no-elf", key);
  entry_path(c, key, path, sizeof path);
  build_ud ud = {.seed = "no-elf"};

  /* An entry whose checksum is right but whose cubin is empty, then not an ELF image: corrupt
   * (weft build wrote the empty cubin as the .cubin and exited 0). */
  write_raw_entry(path, key, "", 0);
  assert_int_equal(get_ok(c, key, &ud), CACHE_REBUILT);
  write_raw_entry(path, key, "NOPE, not an ELF", 16);
  assert_int_equal(get_ok(c, key, &ud), CACHE_REBUILT);
  assert_int_equal(get_ok(c, key, &ud), CACHE_HIT);
  assert_int_equal(ud.calls, 2);

  /* A build that returns no ELF is refused, never stored to be called corrupt on every read. */
  unsigned char key2[32];
  key_of("builds-no-elf", key2);
  cache_entry e = {0};
  cache_result r;
  assert_int_equal(cache_get(c, key2, "k", build_no_elf, &ud, &e, &r, err, sizeof err), CACHE_FAIL_BUILD);
  assert_non_null(strstr(err, "returned a cubin that is not an ELF image"));
  assert_int_equal(count_names(cache_dir(c), ".bin", NULL), 1);
  cache_close(c);
}

/* ---- argument checks ---------------------------------------------------------------------- */

static void test_bad_arguments(void **state) {
  fixture *f = *state;
  cache *c = NULL;
  char err[512] = "", root[PATH_MAX];
  snprintf(root, sizeof root, "%s/root", f->dir);
  const char *bad[] = {"", "a/b", "..", "."};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(cache_open(&c, root, bad[i], err, sizeof err), -1);
    assert_true(err[0] != '\0');
  }
  assert_int_equal(cache_open(&c, root, NULL, err, sizeof err), -1);
  assert_int_equal(cache_open(&c, "", SUB, err, sizeof err), -1);

  c = open_cache(f);
  unsigned char key[32];
  key_of("x", key);
  cache_entry e = {0};
  cache_result r;
  assert_int_equal(cache_get(c, key, "x", NULL, NULL, &e, &r, err, sizeof err), -1);
  assert_int_equal(cache_get(NULL, key, "x", build_cb, NULL, &e, &r, err, sizeof err), -1);
  cache_close(c);
  cache_close(NULL);
  cache_entry_free(NULL);
}

int main(void) {
  umask(022); /* so 0700 folders can only come from the cache asking for 0700 */
  test_env_save(&env);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_miss_then_hit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_folder_modes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_rebuilt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_entry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_compile, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_folders, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_link_subdir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_build_failure, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_builders, setup, teardown),
      cmocka_unit_test_setup_teardown(test_default_root, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_entry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lock_not_a_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_root_is_a_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cubin_not_elf, setup, teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  test_env_free(&env);
  return rc;
}
