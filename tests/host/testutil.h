/* testutil.h: fixtures shared by the host tests: a private temporary folder under
 * $WEFT_TEST_TMP, and saving/restoring the environment variables a test changes. */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* dir = $WEFT_TEST_TMP/<prefix>.XXXXXX, created (the base too); 0 or -1 */
static inline int test_mkdtemp(const char *prefix, char *dir, size_t len) {
  const char *base = getenv("WEFT_TEST_TMP");
  if (!base || !*base) base = "/tmp";   /* ctest sets it; plain runs by hand need not */
  char e[512];
  if (util_mkdirs(base, 0755, e, sizeof e) != 0) return -1;
  int n = snprintf(dir, len, "%s/%s.XXXXXX", base, prefix);
  return n < 0 || (size_t)n >= len || !mkdtemp(dir) ? -1 : 0;
}

static inline int test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* rm -r dir (not following links); 0 or -1 */
static inline int test_rmtree(const char *dir) { return nftw(dir, test_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* The variables a test may change, saved once and restored after every test. */
typedef struct test_env {
  const char *const *names;
  size_t n;
  char *saved[16];
} test_env;

static inline void test_env_save(test_env *t) {
  for (size_t i = 0; i < t->n && i < 16; i++) {
    const char *v = getenv(t->names[i]);
    t->saved[i] = v ? strdup(v) : NULL;
  }
}

static inline void test_env_restore(const test_env *t) {
  for (size_t i = 0; i < t->n && i < 16; i++) {
    if (t->saved[i]) setenv(t->names[i], t->saved[i], 1);
    else unsetenv(t->names[i]);
  }
}

static inline void test_env_free(test_env *t) {
  for (size_t i = 0; i < t->n && i < 16; i++) free(t->saved[i]);
}

#endif
