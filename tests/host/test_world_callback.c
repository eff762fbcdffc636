/* test_world_callback.c: a world without MPI (weft_world_create_with).  N threads are N ranks
 * of one process; their all-gather is a mutex and condition-variable barrier around one shared
 * array.  The rendezvous, the node scope, the bad-argument messages (the same on every rank), a
 * callback that fails on one rank (every rank fails, nobody hangs, the call counts stay equal)
 * and the fd exchange (pidfd_getfd on our own pid, and SCM_RIGHTS) run here with no MPI.
 * alarm() turns a hang into a failure. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdx.h"
#include "weft.h"
#include "world.h"

#define MAXN 8
#define CAP (MAXN * 4096)

typedef struct hub {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, arrived, gen;
  size_t bytes;      /* this round's, to catch ranks that pass different sizes */
  int bytes_differ;
  int fail_rank, fail_call;   /* that rank's callback returns -7 on its fail_call'th call (from 0) */
  char buf[CAP];
} hub;

typedef struct rank_ctx {
  hub *h;
  int rank, calls;
  weft_world_bootstrap b;   /* what this rank passes */
  void (*body)(struct rank_ctx *);
  weft_status st, st2;
  char msg[2048], msg2[2048];
  long long out[8];
} rank_ctx;

/* both barriers with the lock held: the waiters release it inside pthread_cond_wait */
static void barrier(hub *h) {
  int g = h->gen;
  if (++h->arrived == h->n) {
    h->arrived = 0;
    h->gen++;
    pthread_cond_broadcast(&h->cv);
  } else
    while (g == h->gen) pthread_cond_wait(&h->cv, &h->mu);
}

static int gather(const void *send, void *recv, size_t bytes, void *user) {
  rank_ctx *r = user;
  hub *h = r->h;
  int call = r->calls++;
  pthread_mutex_lock(&h->mu);
  if (h->arrived == 0) h->bytes = bytes;
  else if (h->bytes != bytes) h->bytes_differ = 1;
  if (bytes * (size_t)h->n <= CAP) memcpy(h->buf + (size_t)r->rank * bytes, send, bytes);
  barrier(h);
  if (bytes * (size_t)h->n <= CAP) memcpy(recv, h->buf, bytes * (size_t)h->n);
  barrier(h);   /* nobody refills buf before everyone has copied it */
  pthread_mutex_unlock(&h->mu);
  return r->rank == h->fail_rank && call == h->fail_call ? -7 : 0;
}

static void *thread_main(void *arg) {
  rank_ctx *r = arg;
  r->body(r);
  return NULL;
}

/* n ranks, local_size per node, running body; afterwards every rank made the same calls */
static void run_ranks(hub *h, rank_ctx *c, int n, int local_size, void (*body)(rank_ctx *)) {
  memset(h, 0, sizeof *h);
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->n = n;
  h->fail_rank = -1;
  for (int i = 0; i < n; i++) {
    memset(&c[i], 0, sizeof c[i]);
    c[i] = (rank_ctx){.h = h, .rank = i, .body = body,
                      .b = {.rank = i, .size = n, .local_rank = i % local_size, .local_size = local_size,
                            .allgather = gather}};
    c[i].b.user = &c[i];
  }
}

static void go(hub *h, rank_ctx *c) {
  pthread_t t[MAXN];
  for (int i = 0; i < h->n; i++) assert_int_equal(pthread_create(&t[i], NULL, thread_main, &c[i]), 0);
  for (int i = 0; i < h->n; i++) pthread_join(t[i], NULL);
  assert_false(h->bytes_differ);
  for (int i = 1; i < h->n; i++) assert_int_equal(c[i].calls, c[0].calls);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
}

static void same_everywhere(const rank_ctx *c, int n) {
  for (int i = 1; i < n; i++) {
    assert_int_equal(c[i].st, c[0].st);
    assert_string_equal(c[i].msg, c[0].msg);
    assert_int_equal(c[i].st2, c[0].st2);
    assert_string_equal(c[i].msg2, c[0].msg2);
  }
}

/* ---- bodies ---- */
static void body_agree(rank_ctx *r) {
  weft_world *w = NULL;
  r->st = weft_world_create_with(&r->b, &w, r->msg, sizeof r->msg);
  if (r->st) return;
  r->out[0] = weft_world_rank(w);
  r->out[1] = weft_world_size(w);
  r->out[2] = weft_world_local_rank(w);
  r->out[3] = weft_world_local_size(w);
  r->st2 = weft_world_agree(w, "same", "bytes=4096 kernel=abc");
  if (!r->st2) {
    r->st2 = weft_world_agree(w, "test_agree", r->rank % 2 ? "bytes=2" : "bytes=1");
    snprintf(r->msg2, sizeof r->msg2, "%s", weft_world_error(w));
  }
  weft_world_destroy(w);
}

static void body_ops(rank_ctx *r) {
  weft_world *w = NULL;
  r->st = weft_world_create_with(&r->b, &w, r->msg, sizeof r->msg);
  if (r->st) return;
  /* a record longer than one chunk of the callback world, gathered over this node */
  struct { int rank; char pad[600]; int tail; } mine = {r->rank, {0}, 1000 + r->rank}, got[MAXN];
  memset(got, 0xab, sizeof got);
  int ok = !world_allgather(w, WORLD_NODE, &mine, got, sizeof mine);
  int first = r->rank - weft_world_local_rank(w);
  for (int i = 0; ok && i < weft_world_local_size(w); i++)
    ok = got[i].rank == first + i && got[i].tail == 1000 + first + i;
  long long lo = -5 * r->rank, hi = -5 * r->rank;
  unsigned long long ulo = 0xffffffff00000000ULL + (unsigned long long)r->rank, uhi = ulo;
  ok = ok && !world_reduce_i64(w, WORLD_ALL, &lo, WORLD_MIN) && !world_reduce_i64(w, WORLD_ALL, &hi, WORLD_MAX) &&
       !world_reduce_u64(w, WORLD_NODE, &ulo, WORLD_MIN) && !world_reduce_u64(w, WORLD_NODE, &uhi, WORLD_MAX);
  char text[1024];
  snprintf(text, sizeof text, "from rank %d", r->rank);
  ok = ok && !world_bcast(w, WORLD_NODE, text, sizeof text, 1) && !world_barrier(w);
  r->out[0] = ok;
  r->out[1] = lo;
  r->out[2] = hi;
  r->out[3] = (long long)(ulo - 0xffffffff00000000ULL);
  r->out[4] = (long long)(uhi - 0xffffffff00000000ULL);
  snprintf(r->msg2, sizeof r->msg2, "%s", text);
  weft_world_destroy(w);
}

static void body_fail(rank_ctx *r) {
  weft_world *w = NULL;
  r->st = weft_world_create_with(&r->b, &w, r->msg, sizeof r->msg);
  if (r->st) return;
  /* the failure comes in the first agree; the second shows the world stays failed */
  r->st = weft_world_agree(w, "first", "x");
  snprintf(r->msg, sizeof r->msg, "%s", r->st ? weft_world_error(w) : "");
  r->st2 = weft_world_agree(w, "second", "x");
  snprintf(r->msg2, sizeof r->msg2, "%s", weft_world_error(w));
  weft_world_destroy(w);
}

/* symmetric memory: out[2] (1 or 2) allocations of (size_t)out[0], then out[1] bytes, their
 * statuses and messages in st, msg and st2, msg2 (each freed if it worked) */
static void body_symm(rank_ctx *r) {
  weft_world *w = NULL;
  r->st = weft_world_create_with(&r->b, &w, r->msg, sizeof r->msg);
  if (r->st) return;
  weft_ctx *ctx = NULL;
  if (weft_ctx_create(&ctx, NULL) == WEFT_OK) {
    for (int i = 0; i < r->out[2]; i++) {
      weft_symm *s = NULL;
      weft_status st = weft_symm_alloc(ctx, w, (size_t)r->out[i], "t", &s);
      snprintf(i ? r->msg2 : r->msg, sizeof r->msg, "%s", weft_ctx_error(ctx));
      *(i ? &r->st2 : &r->st) = st;
      if (s) weft_symm_free(s);
    }
    weft_ctx_destroy(ctx);
  }
  weft_world_destroy(w);
}

/* ---- tests ---- */
static void test_agree(void **state) {
  hub h;
  rank_ctx c[4];
  run_ranks(&h, c, 4, 2, body_agree);
  go(&h, c);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(c[i].st, WEFT_OK);
    assert_int_equal(c[i].out[0], i);
    assert_int_equal(c[i].out[1], 4);
    assert_int_equal(c[i].out[2], i % 2);
    assert_int_equal(c[i].out[3], 2);
    assert_int_equal(c[i].st2, WEFT_ERR_MISMATCH);
  }
  same_everywhere(c, 4);
  assert_string_equal(c[0].msg2, "test_agree: the 4 ranks disagree, so none of them goes on: "
                                 "ranks 0, 2: bytes=1; ranks 1, 3: bytes=2");
}

static void test_ops(void **state) {
  hub h;
  rank_ctx c[6];
  run_ranks(&h, c, 6, 3, body_ops);   /* two nodes: ranks 0-2 and 3-5 */
  go(&h, c);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(c[i].st, WEFT_OK);
    assert_int_equal(c[i].out[0], 1);
    assert_int_equal(c[i].out[1], -25);
    assert_int_equal(c[i].out[2], 0);
    assert_int_equal(c[i].out[3], i < 3 ? 0 : 3);
    assert_int_equal(c[i].out[4], i < 3 ? 2 : 5);
    char want[64];
    snprintf(want, sizeof want, "from rank %d", i < 3 ? 1 : 4);
    assert_string_equal(c[i].msg2, want);
  }
}

/* one rank passes a bad value: every rank fails with the same message naming it */
static void bad_arg(int which, const char *want) {
  hub h;
  rank_ctx c[4];
  run_ranks(&h, c, 4, 2, body_agree);
  if (which == 0) c[1].b.size = 5;
  if (which == 1) c[2].b.rank = 9;
  if (which == 2) c[3].b.local_rank = 2;
  if (which == 3) c[2].b.local_rank = 1;   /* its node would start at rank 1, which rank 1 disputes */
  for (int i = 0; which == 4 && i < 4; i++) {   /* nodes of one rank, but the last claims two */
    c[i].b.local_rank = 0;
    c[i].b.local_size = i == 3 ? 2 : 1;
  }
  go(&h, c);
  for (int i = 0; i < 4; i++) assert_int_equal(c[i].st, WEFT_ERR_INVALID);
  same_everywhere(c, 4);
  if (!strstr(c[0].msg, want)) fail_msg("got \"%s\", want \"%s\"", c[0].msg, want);
}

static void test_bad_args(void **state) {
  bad_arg(0, "weft_world_create_with: the rank in place 1 of the gather (rank=1) passed size=5, and the one in "
             "place 0 size=4");
  bad_arg(1, "the rank in place 2 of the gather passed rank=9");
  bad_arg(2, "rank 3 passed local_rank=2 with local_size=2: allowed 0 to local_size - 1");
  bad_arg(3, "rank 2 (local_rank=1, local_size=2) and rank 1 (local_rank=1, local_size=2) disagree about their node");
  bad_arg(4, "rank 3 passed local_rank=0 and local_size=2: its node would hold ranks 3 to 4, past the last rank 3");

  /* a rank that cannot take part says so at once, without calling the callback */
  char err[256];
  weft_world *w = (weft_world *)&err;
  weft_world_bootstrap b = {.rank = 0, .size = 0, .local_rank = 0, .local_size = 1, .allgather = gather};
  assert_int_equal(weft_world_create_with(&b, &w, err, sizeof err), WEFT_ERR_INVALID);
  assert_null(w);
  assert_string_equal(err, "weft_world_create_with: size=0: allowed 1 to 1048576");
  b.size = 1;
  b.allgather = NULL;
  assert_int_equal(weft_world_create_with(&b, &w, err, sizeof err), WEFT_ERR_INVALID);
  assert_string_equal(err, "weft_world_create_with: allgather is NULL");
  assert_int_equal(weft_world_create_with(NULL, &w, err, sizeof err), WEFT_ERR_INVALID);
  assert_string_equal(err, "weft_world_create_with: the bootstrap is NULL");
}

static void test_callback_fails(void **state) {
  hub h;
  rank_ctx c[3];
  /* in the creation's own gather */
  run_ranks(&h, c, 3, 3, body_fail);
  h.fail_rank = 2;
  h.fail_call = 0;
  go(&h, c);
  for (int i = 0; i < 3; i++) assert_int_equal(c[i].st, WEFT_ERR_IO);
  same_everywhere(c, 3);
  assert_string_equal(c[0].msg, "weft_world_create_with: the allgather callback returned -7 on rank 2");

  /* later: calls 0 and 1 made the world, the first agree is a reduction (calls 2, 3) and the
   * digests (4, 5), the second agree starts at 6.  A failed result call (1, 3, 5, 7) fails the
   * next operation instead: for 5, that is the second agree */
  for (int call = 1; call < 8; call++) {
    run_ranks(&h, c, 3, 3, body_fail);
    h.fail_rank = 1;
    h.fail_call = call;
    go(&h, c);
    weft_status first = call < 5 ? WEFT_ERR_IO : WEFT_OK;
    for (int i = 0; i < 3; i++) {
      assert_int_equal(c[i].st, first);
      assert_int_equal(c[i].st2, WEFT_ERR_IO);
    }
    same_everywhere(c, 3);
    if (first) assert_string_equal(c[0].msg, "first: the allgather callback returned -7 on rank 1");
    assert_string_equal(c[0].msg2, "second: the allgather callback returned -7 on rank 1");
  }
}

/* ---- the fd exchange over a callback world ---- */
static void body_fdx(rank_ctx *r) {
  weft_world *w = NULL;
  r->st = weft_world_create_with(&r->b, &w, r->msg, sizeof r->msg);
  if (r->st) return;
  int n = weft_world_local_size(w), fds[MAXN];
  int mfd = memfd_create("test_world_callback", MFD_CLOEXEC);
  char page[64];
  snprintf(page, sizeof page, "rank %d", r->rank);
  if (mfd < 0 || pwrite(mfd, page, sizeof page, 0) != (ssize_t)sizeof page) {
    r->st = WEFT_ERR_IO;
    return;
  }
  fdx_method m[3] = {FDX_PIDFD, FDX_SOCKET, FDX_AUTO};
  for (int k = 0; k < 3; k++) {
    fdx_method used = FDX_AUTO;
    char err[1024];
    /* the last round: the last rank has no fd to give, so every rank fails */
    int rc = fdx_allgather(w, k == 2 && r->rank == n - 1 ? -1 : mfd, fds, m[k], &used, err, sizeof err);
    r->out[k] = rc;
    r->out[3 + k] = used;
    for (int i = 0; rc == 0 && i < n; i++) {
      char got[64] = "", want[64];
      snprintf(want, sizeof want, "rank %d", i);
      if (pread(fds[i], got, sizeof got, 0) != (ssize_t)sizeof got || strcmp(got, want)) r->out[6] = 1 + i;
      close(fds[i]);
    }
    if (k == 2) snprintf(r->msg2, sizeof r->msg2, "%s", err);
  }
  close(mfd);
  weft_world_destroy(w);
}

static void test_fdx(void **state) {
  hub h;
  rank_ctx c[3];
  unsetenv("WEFT_FD_EXCHANGE");
  run_ranks(&h, c, 3, 3, body_fdx);
  go(&h, c);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(c[i].st, WEFT_OK);
    /* pidfd_getfd on our own pid needs no ptrace permission; a kernel without it says ENOSYS */
    assert_int_equal(c[i].out[0], c[0].out[0]);
    if (c[i].out[0] == 0) assert_int_equal(c[i].out[3], FDX_PIDFD);
    assert_int_equal(c[i].out[1], 0);
    assert_int_equal(c[i].out[4], FDX_SOCKET);
    assert_int_equal(c[i].out[2], -1);
    assert_int_equal(c[i].out[6], 0);
    assert_string_equal(c[i].msg2, c[0].msg2);
  }
  if (!strstr(c[0].msg2, "local rank 2 cannot dup its own fd -1"))
    fail_msg("the failed exchange said \"%s\"", c[0].msg2);
  if (c[0].out[0]) print_message("pidfd was refused here; the socket path ran\n");
}

static void test_symm_bytes(void **state) {
  hub h;
  rank_ctx c[2];
  /* refused alike on every rank after the rendezvous (SIZE_MAX wrapped to an allocation of 0
   * bytes when rounded up to the granularity) */
  run_ranks(&h, c, 2, 2, body_symm);
  for (int i = 0; i < 2; i++) c[i].out[0] = -1, c[i].out[1] = 0, c[i].out[2] = 2;   /* SIZE_MAX, 0 */
  go(&h, c);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(c[i].st, WEFT_ERR_INVALID);
    assert_int_equal(c[i].st2, WEFT_ERR_INVALID);
  }
  same_everywhere(c, 2);
  assert_string_equal(c[0].msg, "weft_symm_alloc: bytes = 18446744073709551615: 1 .. 1099511627776 per rank (1 TiB, "
                                "more than any GPU holds)");
  assert_string_equal(c[0].msg2, "weft_symm_alloc: bytes = 0: 1 .. 1099511627776 per rank (none to share)");
}

static void test_symm_callback_fails(void **state) {
  (void)state;
  hub h;
  rank_ctx c[2];
  /* calls 0 and 1 made the world; 2-5 are the rendezvous (its reduction, then the digests); 6 the
   * data call of the next step's verdict, whatever this machine's GPU let the step do */
  for (int call = 2; call <= 6; call += 4) {
    /* (WEFT_ERR_IO on every rank, as weft.h promises for a failed transport, in the rendezvous or
     * in a later step's verdict) */
    run_ranks(&h, c, 2, 2, body_symm);
    for (int i = 0; i < 2; i++) c[i].out[0] = 4096, c[i].out[2] = 1;
    h.fail_rank = 1;
    h.fail_call = call;
    go(&h, c);
    for (int i = 0; i < 2; i++) assert_int_equal(c[i].st, WEFT_ERR_IO);
    same_everywhere(c, 2);
    assert_string_equal(c[0].msg, "weft_symm_alloc: the allgather callback returned -7 on rank 1");
  }
}

int main(void) {
  alarm(60);   /* a hang is a failure (the whole file runs in about a second) */
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_agree),          cmocka_unit_test(test_ops), cmocka_unit_test(test_bad_args),
    cmocka_unit_test(test_callback_fails), cmocka_unit_test(test_fdx), cmocka_unit_test(test_symm_bytes),
    cmocka_unit_test(test_symm_callback_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
