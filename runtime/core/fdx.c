/* fdx.c: every rank of one machine gets an fd for each other rank's file, through pidfd_getfd or
 * SCM_RIGHTS, and the ranks agree on the outcome before any of them returns (fdx.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fdx.h"
#include "world.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434   /* one number on x86_64 and in the generic table (aarch64) */
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define MSG_MAX 512
#define TIMEOUT_MS 10000   /* a peer's message that has not come by then is not coming */

/* what each rank tells the others; they share one machine, so raw bytes travel fine */
struct rec {
  long long pid, fd, pidns, method;
  char boot[40];   /* the kernel's boot id: equal ones mean one machine, so pids mean the same */
};

const char *fdx_method_name(fdx_method m) {
  static const char *names[] = {"auto", "pidfd", "socket"};
  return (unsigned)m < 3 ? names[m] : "unknown";
}

static void close_fds(int *fds, int n, int keep) {
  for (int i = 0; i < n; i++)
    if (i != keep && fds[i] >= 0) { close(fds[i]); fds[i] = -1; }
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Collective: 0 if no rank has a message in msg, else -1 with the lowest failing rank's message on
 * every rank.  It is also the barrier that keeps each `mine` open until every peer has taken it. */
static int first_failure(weft_world *w, char *msg) {
  return world_first_failure(w, WORLD_NODE, msg[0] != 0, msg, MSG_MAX) == -1 ? 0 : -1;
}

static void by_pidfd(int me, int n, const struct rec *who, int *fds, char *msg) {
  for (int i = 0; i < n; i++) {
    if (i == me) continue;
    const char *call = "pidfd_open";
    int pfd = (int)syscall(SYS_pidfd_open, (pid_t)who[i].pid, 0), e = errno;
    if (pfd >= 0) {
      call = "pidfd_getfd";   /* its fd comes back close-on-exec */
      fds[i] = (int)syscall(SYS_pidfd_getfd, pfd, (int)who[i].fd, 0);
      e = errno;
      close(pfd);
    }
    if (fds[i] < 0) {
      snprintf(msg, MSG_MAX, "local rank %d could not take local rank %d's fd %lld (pid %lld): %s: %s", me, i,
               who[i].fd, who[i].pid, call, strerror(e));
      return;
    }
  }
}

static socklen_t sock_name(struct sockaddr_un *a, const unsigned long long tag[2], int rank) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  /* abstract namespace (leading NUL): no file to remove, and the name goes with the socket */
  int len = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "weft-fdx.%llu.%016llx.%d", tag[0], tag[1], rank);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* Wait up to wait_ms for one message and file its fd under the sender's rank.  Strays (a bad rank,
 * a second copy, a pid that is not that rank's) are dropped, their fds closed.
 * 1: took one; 0: nothing taken; -1: error in msg. */
static int recv_one(int s, int me, int n, const struct rec *who, int check_pid, int *fds, int wait_ms, char *msg) {
  struct pollfd p = {.fd = s, .events = POLLIN};
  int r = poll(&p, 1, wait_ms);
  if (r < 0 && errno != EINTR) {
    snprintf(msg, MSG_MAX, "local rank %d: poll: %s", me, strerror(errno));
    return -1;
  }
  if (r <= 0) return 0;
  int from = -1, fd = -1;
  pid_t pid = -1;
  struct iovec iov = {&from, sizeof from};
  union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))]; } c;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof c.b};
  ssize_t got = recvmsg(s, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0) {
    if (errno == EAGAIN || errno == EINTR) return 0;
    snprintf(msg, MSG_MAX, "local rank %d: recvmsg: %s", me, strerror(errno));
    return -1;
  }
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
    if (h->cmsg_level != SOL_SOCKET) continue;
    if (h->cmsg_type == SCM_CREDENTIALS) {
      struct ucred u;
      memcpy(&u, CMSG_DATA(h), sizeof u);
      pid = u.pid;
    } else if (h->cmsg_type == SCM_RIGHTS) {
      size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t j = 0; j < k; j++) {
        int f;
        memcpy(&f, CMSG_DATA(h) + j * sizeof f, sizeof f);
        if (fd < 0 && k == 1) fd = f;
        else close(f);
      }
    }
  }
  if (fd < 0 || got != sizeof from || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || from < 0 || from >= n ||
      fds[from] >= 0 || (check_pid && pid != (pid_t)who[from].pid)) {
    if (fd >= 0) close(fd);
    return 0;
  }
  fds[from] = fd;
  return 1;
}

static void by_socket(weft_world *w, int me, int n, int mine, const struct rec *who, int same_ns, int *fds,
                      char *msg) {
  /* names unique to this call: local rank 0's pid and a nonce that it draws */
  unsigned long long tag[2] = {(unsigned long long)who[0].pid, 0};
  if (me == 0 && getrandom(&tag[1], sizeof tag[1], GRND_NONBLOCK) != (ssize_t)sizeof tag[1])
    tag[1] = (unsigned long long)time(NULL) * 0x9e3779b97f4a7c15ULL ^ (unsigned long long)now_ms();
  if (world_bcast(w, WORLD_NODE, tag, sizeof tag, 0)) {
    snprintf(msg, MSG_MAX, "%s", world_transport_error(w));
    return;
  }
  struct sockaddr_un a;
  socklen_t alen = sock_name(&a, tag, me);
  const char *call = NULL;
  int on = 1, s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  /* SO_PASSCRED: the kernel stamps each message with its sender's pid, which a stray cannot fake */
  if (s < 0) call = "socket";
  else if (setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) call = "setsockopt(SO_PASSCRED)";
  else if (bind(s, (struct sockaddr *)&a, alen) < 0) call = "bind";
  if (call) snprintf(msg, MSG_MAX, "local rank %d: %s of \"@%s\": %s", me, call, a.sun_path + 1, strerror(errno));
  /* every address exists before anyone sends */
  if (first_failure(w, msg)) {
    if (s >= 0) close(s);
    return;
  }
  long long deadline = now_ms() + TIMEOUT_MS;
  int have = 1;   /* fds[me] is in already */
  for (int k = 1; k < n && !msg[0]; k++) {
    int to = (me + k) % n;   /* a rotation: no one queue takes everyone's message at once */
    struct sockaddr_un b;
    int payload = me;
    struct iovec iov = {&payload, sizeof payload};
    union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } c;
    memset(&c, 0, sizeof c);
    struct msghdr m = {.msg_name = &b, .msg_namelen = sock_name(&b, tag, to), .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = c.b, .msg_controllen = sizeof c.b};
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &mine, sizeof mine);
    /* never block in send: a peer's queue (net.unix.max_dgram_qlen) can be full while that peer is
     * itself sending, so drain our own queue while we wait */
    while (!msg[0] && sendmsg(s, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        snprintf(msg, MSG_MAX, "local rank %d could not send its fd to local rank %d: sendmsg: %s", me, to,
                 strerror(errno));
      else if (now_ms() > deadline)
        snprintf(msg, MSG_MAX, "local rank %d could not send its fd to local rank %d: its queue stayed full for %d s",
                 me, to, TIMEOUT_MS / 1000);
      else if (recv_one(s, me, n, who, same_ns, fds, 1, msg) > 0) have++;
    }
  }
  while (!msg[0] && have < n) {
    long long left = deadline - now_ms();
    if (left <= 0) {
      int missing = 0;
      while (fds[missing] >= 0) missing++;
      snprintf(msg, MSG_MAX, "local rank %d heard from %d of its %d peers in %d s; local rank %d's fd never came",
               me, have - 1, n - 1, TIMEOUT_MS / 1000, missing);
    } else if (recv_one(s, me, n, who, same_ns, fds, (int)left, msg) > 0) have++;
  }
  close(s);
}

int fdx_allgather(weft_world *w, int mine, int *fds, fdx_method method, fdx_method *used, char *err,
                  size_t errlen) {
  int me = world_scope_rank(w, WORLD_NODE), n = world_scope_size(w, WORLD_NODE);
  char msg[MSG_MAX] = "", why[MSG_MAX] = "";
  int agreed = 0;   /* until the ranks know they asked for one method, name none (so all say the same) */
  if (err && errlen) err[0] = 0;
  if (used) *used = FDX_AUTO;
  for (int i = 0; fds && i < n; i++) fds[i] = -1;

  /* 1: the method, this rank's own copy, and who everyone is */
  fdx_method m = method;
  const char *env = getenv("WEFT_FD_EXCHANGE");
  struct rec self = {.pid = getpid(), .fd = mine};
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) == 0) self.pidns = (long long)st.st_ino;
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(self.boot, sizeof self.boot, f)) self.boot[0] = 0;
    fclose(f);
  }
  struct rec *who = malloc((size_t)n * sizeof *who);
  if (!fds || !who) snprintf(msg, MSG_MAX, "local rank %d: %s", me, fds ? "out of memory" : "fds is NULL");
  else if (m != FDX_AUTO && m != FDX_PIDFD && m != FDX_SOCKET)
    snprintf(msg, MSG_MAX, "local rank %d asked for method %d, which does not exist", me, (int)m);
  else if (m == FDX_AUTO && env && *env) {
    if (!strcmp(env, "pidfd")) m = FDX_PIDFD;
    else if (!strcmp(env, "socket")) m = FDX_SOCKET;
    else snprintf(msg, MSG_MAX, "local rank %d: WEFT_FD_EXCHANGE=%s: expected pidfd or socket", me, env);
  }
  if (!msg[0] && (fds[me] = fcntl(mine, F_DUPFD_CLOEXEC, 0)) < 0)
    snprintf(msg, MSG_MAX, "local rank %d cannot dup its own fd %d: %s", me, mine, strerror(errno));
  self.method = m;
  if (first_failure(w, msg)) goto fail;
  if (world_allgather(w, WORLD_NODE, &self, who, sizeof self)) {
    snprintf(msg, MSG_MAX, "%s", world_transport_error(w));
    goto fail;
  }
  /* every rank sees the same table, so every rank takes the same branch below */
  int same_ns = 1;
  for (int i = 1; i < n && !msg[0]; i++) {
    if (strcmp(who[i].boot, who[0].boot))
      snprintf(msg, MSG_MAX, "local ranks 0 and %d are not on one machine (their boot ids differ): "
               "fds can only be exchanged within a node communicator", i);
    else if (who[i].method != who[0].method)
      snprintf(msg, MSG_MAX, "local rank 0 asked for %s and local rank %d for %s: every rank must ask for the same",
               fdx_method_name((fdx_method)who[0].method), i, fdx_method_name((fdx_method)who[i].method));
    same_ns &= who[i].pidns == who[0].pidns;
  }
  if (msg[0]) goto fail;
  agreed = 1;

  /* 2: pidfd, unless told otherwise; under auto, a failure anywhere sends everyone to the socket */
  if (m != FDX_SOCKET) {
    if (!same_ns) snprintf(msg, MSG_MAX, "the local ranks are in different pid namespaces, so their pids mislead");
    else by_pidfd(me, n, who, fds, msg);
    if (!first_failure(w, msg)) {
      if (used) *used = FDX_PIDFD;
      goto done;
    }
    close_fds(fds, n, me);
    if (m == FDX_PIDFD) goto fail;
    snprintf(why, sizeof why, "%s", msg);
    msg[0] = 0;
  }
  by_socket(w, me, n, mine, who, same_ns, fds, msg);
  if (first_failure(w, msg)) goto fail;
  if (used) *used = FDX_SOCKET;
  if (why[0] && err && errlen) snprintf(err, errlen, "fdx: pidfd did not work (%s), so the socket path ran", why);
done:
  free(who);
  return 0;

fail:
  if (fds) close_fds(fds, n, -1);
  if (err && errlen) {
    if (why[0]) snprintf(err, errlen, "fdx (auto): pidfd failed (%s), and then the socket path: %s", why, msg);
    else if (agreed) snprintf(err, errlen, "fdx (%s): %s", fdx_method_name(m), msg);
    else snprintf(err, errlen, "fdx: %s", msg);
  }
  free(who);
  return -1;
}
