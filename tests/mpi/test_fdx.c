/* test_fdx.c: the ranks of one machine exchange fds under mpirun (2 and 3 ranks): by pidfd, by
 * socket, and auto with its fallback; failures reach every rank; no fd leaks.  No GPU needed. */
#include <dirent.h>
#include <linux/capability.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdx.h"
#include "hash.h"
#include "mpitest.h"

#define PAGE 4096


static int same_int_everywhere(int v) {
  int lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* "rank R pattern", padded with a byte of R's own to a page */
static void pattern(char *buf, int r) {
  memset(buf, 'a' + r, PAGE);
  snprintf(buf, PAGE, "rank %d pattern", r);
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d) return -1;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

static int all_closed(const int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] != -1) return 0;
  return 1;
}

/* Every fds[i] reads local rank i's pattern and is close-on-exec; through it this rank writes its
 * mark into rank i's file, and then finds every peer's mark in its own (one open file, not a copy).
 * Closes them all. */
static void check_round(MPI_Comm node, int mfd, int *fds, const char *what) {
  int me, n;
  MPI_Comm_rank(node, &me);
  MPI_Comm_size(node, &n);
  char want[PAGE], got[PAGE];
  for (int i = 0; i < n; i++) {
    pattern(want, i);
    CHECK(fds[i] >= 0 && pread(fds[i], got, PAGE, 0) == PAGE && !memcmp(got, want, PAGE), "%s: fds[%d] = %d reads %.20s",
          what, i, fds[i], fds[i] >= 0 ? got : "(nothing)");
    CHECK(fds[i] >= 0 && (fcntl(fds[i], F_GETFD) & FD_CLOEXEC), "%s: fds[%d] is close-on-exec", what, i);
    int mark = 1000 + me;
    CHECK(fds[i] >= 0 && pwrite(fds[i], &mark, sizeof mark, (off_t)PAGE * (1 + me)) == sizeof mark, "%s: write to %d", what, i);
  }
  MPI_Barrier(node);
  for (int i = 0; i < n; i++) {
    int mark = 0;
    CHECK(pread(mfd, &mark, sizeof mark, (off_t)PAGE * (1 + i)) == sizeof mark && mark == 1000 + i,
          "%s: local rank %d's mark in my file: %d", what, i, mark);
  }
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
  /* clear the marks before anyone writes the next round's (fdx_allgather syncs first) */
  char zero[PAGE] = {0};
  for (int i = 0; i < n; i++) pwrite(mfd, zero, sizeof(int), (off_t)PAGE * (1 + i));
  MPI_Barrier(node);
}

/* CAP_SYS_PTRACE in this thread's effective set, on or off; returns whether it was on */
static int ptrace_cap(int on) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d)) return 0;
  int was = !!(d[0].effective & (1u << CAP_SYS_PTRACE));
  if (on && (d[0].permitted & (1u << CAP_SYS_PTRACE))) d[0].effective |= 1u << CAP_SYS_PTRACE;
  if (!on) d[0].effective &= ~(1u << CAP_SYS_PTRACE);
  syscall(SYS_capset, &h, d);
  return was;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size, me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &me);
  MPI_Comm_size(node, &n);
  CHECK(n == size && me == rank_, "one node: local %d of %d", me, n);
  weft_world *w = NULL;   /* fdx runs over a world's node; its node is the same ranks as `node` */
  CHECK(weft_world_create(NULL, &w) == WEFT_OK && weft_world_local_rank(w) == me && weft_world_local_size(w) == n,
        "weft_world_create");
  unsetenv("WEFT_FD_EXCHANGE");

  /* a page of pattern, then one page per rank for the marks of check_round */
  int mfd = memfd_create("test_fdx", MFD_CLOEXEC);
  char page[PAGE];
  pattern(page, me);
  CHECK(mfd >= 0 && ftruncate(mfd, (off_t)PAGE * (1 + n)) == 0 && pwrite(mfd, page, PAGE, 0) == PAGE, "memfd");
  int *fds = malloc((size_t)n * sizeof *fds);
  char err[2048];
  fdx_method used;

  CHECK(!strcmp(fdx_method_name(FDX_AUTO), "auto") && !strcmp(fdx_method_name(FDX_PIDFD), "pidfd") &&
        !strcmp(fdx_method_name(FDX_SOCKET), "socket") && !strcmp(fdx_method_name((fdx_method)7), "unknown"),
        "fdx_method_name");

  /* pidfd, forced: the kernel may refuse it here (EPERM under Yama or seccomp, ENOSYS when old) */
  int rc = fdx_allgather(w, mfd, fds, FDX_PIDFD, &used, err, sizeof err);
  int pidfd_ok = rc == 0;
  CHECK(same_int_everywhere(rc), "pidfd: the same result on every rank (%d)", rc);
  if (rc == 0) {
    CHECK(used == FDX_PIDFD && !err[0], "pidfd: used %s, err '%s'", fdx_method_name(used), err);
    check_round(node, mfd, fds, "pidfd");
  } else if (strstr(err, "Operation not permitted") || strstr(err, "Function not implemented")) {
    if (rank_ == 0) printf("note: the kernel refuses pidfd_getfd here, so the pidfd path is NOT tested: %s\n", err);
  } else {
    CHECK(0, "pidfd: %s", err);
  }

  /* socket, forced */
  rc = fdx_allgather(w, mfd, fds, FDX_SOCKET, &used, err, sizeof err);
  CHECK(rc == 0 && used == FDX_SOCKET && !err[0], "socket: rc %d used %s: %s", rc, fdx_method_name(used), err);
  if (rc == 0) check_round(node, mfd, fds, "socket");

  /* auto: pidfd where the kernel allows it, else the socket */
  rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
  CHECK(rc == 0 && used == (pidfd_ok ? FDX_PIDFD : FDX_SOCKET), "auto: rc %d used %s: %s", rc, fdx_method_name(used), err);
  if (rc == 0) check_round(node, mfd, fds, "auto");

  /* WEFT_FD_EXCHANGE picks the path under auto, and only there */
  setenv("WEFT_FD_EXCHANGE", "socket", 1);
  rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
  CHECK(rc == 0 && used == FDX_SOCKET, "WEFT_FD_EXCHANGE=socket: rc %d used %s: %s", rc, fdx_method_name(used), err);
  if (rc == 0) check_round(node, mfd, fds, "env socket");
  if (pidfd_ok) {
    rc = fdx_allgather(w, mfd, fds, FDX_PIDFD, &used, err, sizeof err);
    CHECK(rc == 0 && used == FDX_PIDFD, "an explicit pidfd beats the environment: rc %d used %s", rc, fdx_method_name(used));
    if (rc == 0) check_round(node, mfd, fds, "explicit pidfd");
    setenv("WEFT_FD_EXCHANGE", "pidfd", 1);
    rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
    CHECK(rc == 0 && used == FDX_PIDFD, "WEFT_FD_EXCHANGE=pidfd: rc %d used %s: %s", rc, fdx_method_name(used), err);
    if (rc == 0) check_round(node, mfd, fds, "env pidfd");
  }
  setenv("WEFT_FD_EXCHANGE", "carrier-pigeon", 1);
  rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "WEFT_FD_EXCHANGE=carrier-pigeon") && all_closed(fds, n), "bad variable: rc %d: %s", rc, err);
  CHECK(same_everywhere(err), "bad variable: the same message everywhere: %s", err);
  unsetenv("WEFT_FD_EXCHANGE");

  /* the ranks ask for different paths: every rank fails, none hangs */
  if (n >= 2) {
    if (me == n - 1) setenv("WEFT_FD_EXCHANGE", "socket", 1);
    rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "every rank must ask for the same") && all_closed(fds, n), "mixed methods: rc %d: %s",
          rc, err);
    CHECK(same_everywhere(err), "mixed methods: the same message everywhere: %s", err);
    unsetenv("WEFT_FD_EXCHANGE");
  }

  /* the last rank's fd is no fd: every rank fails, and the message names that rank */
  char who[64];
  snprintf(who, sizeof who, "local rank %d cannot dup its own fd -1", n - 1);
  for (int m = FDX_AUTO; m <= FDX_SOCKET; m++) {
    rc = fdx_allgather(w, me == n - 1 ? -1 : mfd, fds, (fdx_method)m, &used, err, sizeof err);
    CHECK(rc == -1 && strstr(err, who) && strstr(err, "Bad file descriptor") && all_closed(fds, n), "bad fd (%s): rc %d: %s",
          fdx_method_name((fdx_method)m), rc, err);
    CHECK(same_everywhere(err), "bad fd: the same message everywhere: %s", err);
  }

  /* pidfd refused for one rank's fd (it is not dumpable and its peers lack CAP_SYS_PTRACE):
   * forced pidfd fails on every rank; auto falls back to the socket on every rank */
  if (pidfd_ok && n >= 2) {
    int had_cap = ptrace_cap(0);
    if (me == 1) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    MPI_Barrier(node);
    rc = fdx_allgather(w, mfd, fds, FDX_PIDFD, &used, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "local rank 0 could not take local rank 1's fd") &&
          strstr(err, "pidfd_getfd: Operation not permitted") && all_closed(fds, n), "refused pidfd: rc %d: %s", rc, err);
    CHECK(same_everywhere(err), "refused pidfd: the same message everywhere: %s", err);
    rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
    CHECK(rc == 0 && used == FDX_SOCKET && strstr(err, "pidfd did not work"), "fallback: rc %d used %s: %s", rc,
          fdx_method_name(used), err);
    if (rc == 0) check_round(node, mfd, fds, "fallback");
    if (me == 1) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (had_cap) ptrace_cap(1);
    MPI_Barrier(node);
    rc = fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err);
    CHECK(rc == 0 && used == FDX_PIDFD, "pidfd again after: rc %d used %s: %s", rc, fdx_method_name(used), err);
    if (rc == 0) check_round(node, mfd, fds, "pidfd again");
  }

  /* no fd leaks: successes and failures, many times over */
  int before = open_fds(), bad = 0, calls = 0;
  const fdx_method loop[2] = {FDX_SOCKET, FDX_AUTO};
  for (int k = 0; k < 200; k++) {
    for (int j = 0; j < 2; j++, calls++) {
      if (fdx_allgather(w, mfd, fds, loop[j], &used, err, sizeof err)) bad++;
      for (int i = 0; i < n; i++)
        if (fds[i] >= 0) close(fds[i]);
    }
    if (k % 20 == 0 && n >= 2) {
      if (me == n - 1) setenv("WEFT_FD_EXCHANGE", "socket", 1);
      if (!fdx_allgather(w, mfd, fds, FDX_AUTO, &used, err, sizeof err) || !all_closed(fds, n)) bad++;
      unsetenv("WEFT_FD_EXCHANGE");
      calls++;
    }
  }
  int after = open_fds();
  CHECK(bad == 0, "%d of the %d calls in the leak loop went the wrong way; last: %s", bad, calls, err);
  CHECK(before == after && before > 0, "open fds before %d, after %d calls %d", before, calls, after);

  free(fds);
  close(mfd);
  MPI_Comm_free(&node);
  int all_failed = 0;
  MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0)
    printf("%d ranks, pidfd path %s: %d passed, %d failed\n", size, pidfd_ok ? "tested" : "NOT tested (refused here)",
           passed, all_failed);
  MPI_Finalize();
  return all_failed ? 1 : 0;
}
