/* test_cublaslt.c: runtime/measure/cublaslt.c without the library: what the runner reads from a
 * chosen algorithm's config (blt_output_type_split) through a stand-in for
 * cublasLtMatmulAlgoConfigGetAttribute, and that it says "cannot tell" rather than guess. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "cublaslt.h"

/* the stand-in's algorithm: split-K parts (id 2) and the reduction scheme (id 3), each a
 * uint32_t; an id past them fails as the library's does */
static uint32_t SPLIT, SCHEME;
static int fail_all;
static int fake_get(const void *algo, int attr, void *buf, size_t size, size_t *written) {
  (void)algo;
  if (fail_all || (attr != 2 && attr != 3)) return 7;   /* CUBLAS_STATUS_INVALID_VALUE */
  if (!buf) { *written = sizeof(uint32_t); return 0; }
  if (size < sizeof(uint32_t)) return 7;
  memcpy(buf, attr == 2 ? &SPLIT : &SCHEME, sizeof(uint32_t));
  *written = sizeof(uint32_t);
  return 0;
}

static int split_of(uint32_t split, uint32_t scheme) {
  blt L;
  blt_plan p;
  memset(&L, 0, sizeof L);
  memset(&p, 0, sizeof p);
  L.algo_get = fake_get;
  p.ready = 1;
  SPLIT = split, SCHEME = scheme;
  return blt_output_type_split(&L, &p);
}

static void test_output_type_split(void **state) {
  (void)state;
  assert_int_equal(split_of(4, 1), 4);   /* inplace: parts added in the output type */
  assert_int_equal(split_of(3, 4), 3);   /* output type in the workspace */
  assert_int_equal(split_of(4, 2), 0);   /* compute type (f32): as precise as one sum */
  assert_int_equal(split_of(1, 1), 0);   /* no split */
  assert_int_equal(split_of(0, 4), 0);
  assert_int_equal(split_of(4096, 1), 0);   /* not a split count cuBLASLt uses: cannot tell */
}

static void test_cannot_tell(void **state) {
  (void)state;
  blt L;
  blt_plan p;
  memset(&L, 0, sizeof L);
  memset(&p, 0, sizeof p);
  p.ready = 1;
  assert_int_equal(blt_output_type_split(&L, &p), 0);   /* no algo_get in this library */
  L.algo_get = fake_get;
  p.ready = 0;
  SPLIT = 4, SCHEME = 1;
  assert_int_equal(blt_output_type_split(&L, &p), 0);   /* no plan */
  p.ready = 1;
  fail_all = 1;
  assert_int_equal(blt_output_type_split(&L, &p), 0);   /* the library refuses the query */
  fail_all = 0;
  assert_int_equal(blt_output_type_split(&L, &p), 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_output_type_split), cmocka_unit_test(test_cannot_tell)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
