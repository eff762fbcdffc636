/* util.c: files, strings, environment. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* The most util_read_file reads: WEFT_CONFIG_MAX_MB megabytes (default 16).  Configs, sweeps
 * and the generator's sources are small text; /dev/zero, or a file of gigabytes, is a mistake
 * to report, not to read into memory. */
#define READ_DEFAULT_MB 16
/* WEFT_CONFIG_SECONDS's default (util_config_seconds) */
#define CONFIG_DEFAULT_SECONDS 10

/* One read of fd into buf: regular files as they are; a pipe (not regular: a named pipe, a shell's
 * <(...), a terminal) only once poll says it has something, within the deadline, so that neither a
 * pipe nobody opens for writing nor one a writer keeps open without writing blocks weft.  Bytes read,
 * 0 at the end, -1 with errno (ETIMEDOUT past the deadline). */
static ssize_t read_some(int fd, int pipe_like, char *buf, size_t len, double deadline_ms) {
  for (;;) {
    if (pipe_like) {
      double left = deadline_ms - util_now_ms();
      if (left <= 0) { errno = ETIMEDOUT; return -1; }
      struct pollfd p = {.fd = fd, .events = POLLIN};
      int r = poll(&p, 1, left > 1e9 ? 1000000000 : (int)left + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return -1;
      if (r == 0) continue;   /* (the deadline, above) */
    }
    ssize_t got = read(fd, buf, len);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return got;
  }
}

int util_read_file(const char *path, char **out, size_t *size, char *err, size_t errlen) {
  long max_mb, seconds;
  if (util_config_max_mb(&max_mb, err, errlen) || util_config_seconds(&seconds, err, errlen))
    return UTIL_READ_SETTING;
  size_t max = (size_t)max_mb << 20;
  /* Opened without blocking: a named pipe nobody writes to would block open() forever.  A folder
   * is said to be one; a pipe is read as it comes, for at most WEFT_CONFIG_SECONDS. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  char sh[UTIL_SHOWN];
  const char *shown = util_shown(path, sh, sizeof sh);   /* (path as messages show it) */
  if (fd < 0) { util_set_err(err, errlen, "%s: cannot open: %s", shown, strerror(errno)); return -1; }
  struct stat st;
  int stat_failed = fstat(fd, &st) != 0;
  if (stat_failed || S_ISDIR(st.st_mode)) {
    util_set_err(err, errlen, "%s: %s", shown, stat_failed ? strerror(errno) : "is a folder, not a file");
    close(fd);
    return -1;
  }
  int pipe_like = !S_ISREG(st.st_mode);
  double deadline = util_now_ms() + 1000.0 * (double)seconds;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  ssize_t got;
  do {
    if (n > max) {
      free(buf);
      close(fd);
      util_set_err(err, errlen, "%s: larger than %ld MB: a config, sweep or tuning table is at most that "
                   "(WEFT_CONFIG_MAX_MB raises it)", shown, max_mb);
      return -1;
    }
    if (n + 65536 + 1 > cap) {
      cap = cap ? cap * 2 : 65536 * 2;
      char *nb = realloc(buf, cap);
      if (!nb) { free(buf); close(fd); util_set_err(err, errlen, "%s: out of memory", shown); return UTIL_READ_NOMEM; }
      buf = nb;
    }
    got = read_some(fd, pipe_like, buf + n, cap - n - 1, deadline);
    if (got > 0) n += (size_t)got;
  } while (got > 0);
  int why = errno;
  close(fd);
  if (got < 0) {
    free(buf);
    if (why == ETIMEDOUT)
      util_set_err(err, errlen, "%s: a pipe that %s within %ld s (WEFT_CONFIG_SECONDS): a config, sweep or table is "
                   "read whole", shown, n ? "did not end" : "nothing was written to", seconds);
    else
      util_set_err(err, errlen, "%s: read error: %s", shown, strerror(why));
    return -1;
  }
  if (pipe_like && n == 0 && S_ISFIFO(st.st_mode)) {   /* a writer came and went without a byte */
    free(buf);
    util_set_err(err, errlen, "%s: a named pipe whose writer wrote nothing (a config, sweep or table is a file)", shown);
    return -1;
  }
  buf[n] = 0;
  *out = buf;
  if (size) *size = n;
  return 0;
}

int util_parse_whole(const char *s, long long *out) {
  if (!*s || strspn(s, "0123456789") != strlen(s)) return -1;
  errno = 0;
  long long n = strtoll(s, NULL, 10);
  if (errno) return -1;
  *out = n;
  return 0;
}

int util_parse_decimal(const char *s, double *out) {
  if (!*s || isspace((unsigned char)s[0]) || strpbrk(s, "xX")) return -1;
  char *end;
  errno = 0;
  double t = strtod(s, &end);
  if (*end || errno) return -1;
  *out = t;
  return 0;
}

const char *util_shown(const char *s, char *buf, size_t n) {
  size_t len = strlen(s);
  if (len < n || n < 64) return s;
  size_t keep = (n - 40) / 2;
  snprintf(buf, n, "%.*s[... %zu bytes ...]%s", (int)keep, s, len - 2 * keep, s + len - keep);
  return buf;
}

/* 1 for a byte that must not reach a terminal as it is: C0 controls and DEL (newline and tab too
 * unless lines) */
static int is_control(unsigned char b, int lines) {
  return (b < 32 && !(lines && (b == '\n' || b == '\t'))) || b == 127;
}

size_t util_escape(char *dst, size_t n, const char *src, size_t len, int lines, int *held, size_t *consumed) {
  const unsigned char *p = (const unsigned char *)src;
  size_t at = 0, i = 0;
  int c2 = held ? *held : 0;   /* a \xc2 not written yet: the byte before p[i] (or before src) */
  if (!n) {
    if (consumed) *consumed = 0;
    return 0;
  }
  for (; i < len; i++) {
    unsigned char b = p[i];
    char piece[16];
    size_t w = 0;
    int next_c2 = 0;
    if (c2 && b >= 0x80 && b <= 0x9f) {   /* a C1 control (U+0080-U+009F in UTF-8): escaped whole */
      w = (size_t)snprintf(piece, sizeof piece, "\\xc2\\x%02x", b);
    } else {
      if (c2) piece[w++] = (char)0xc2;   /* (the lead byte of another character: as it is) */
      if (b == 0xc2) next_c2 = 1;           /* decided by the byte after it */
      else if (is_control(b, lines)) w += (size_t)snprintf(piece + w, sizeof piece - w, "\\x%02x", b);
      else piece[w++] = (char)b;
    }
    if (at + w >= n) break;   /* no room: p[i], and a \xc2 held before it, are left */
    memcpy(dst + at, piece, w);
    at += w;
    c2 = next_c2;
  }
  size_t used = c2 && i > 0 ? i - 1 : i;   /* (a \xc2 held from src is not consumed yet) */
  if (i == len && c2 && !held) {   /* a string that ends in a lone \xc2: shown escaped */
    if (at + 4 < n) {
      memcpy(dst + at, "\\xc2", 4);
      at += 4;
      used = len;
    }
    c2 = 0;
  }
  dst[at] = 0;
  if (held) *held = c2;
  if (consumed) *consumed = held ? i : used;   /* (a stream's \xc2 before p[i] is in *held: consumed) */
  return at;
}

int util_write_all(int fd, const void *buf, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, (const char *)buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    if (w == 0) {   /* no progress and no error: said as a full disk rather than spun on */
      errno = ENOSPC;
      return -1;
    }
    done += (size_t)w;
  }
  return 0;
}

#define LINE_MAX_RAW 2048   /* a library line's text before its escapes; longer is cut, said */

/* fmt's text through util_escape into esc (4 * LINE_MAX_RAW + 8 bytes): its length, or -1 */
static int format_escaped(char *esc, size_t n, const char *fmt, va_list ap) {
  char raw[LINE_MAX_RAW];
  int len = vsnprintf(raw, sizeof raw, fmt, ap);
  if (len < 0) return -1;
  if ((size_t)len >= sizeof raw) memcpy(raw + sizeof raw - 8, " [...]\n", 8);   /* cut: said, the line ended */
  return (int)util_escape(esc, n, raw, strlen(raw), 1, NULL, NULL);
}

int util_fd_printf(int fd, const char *fmt, ...) {
  char esc[4 * LINE_MAX_RAW + 8];
  va_list ap;
  va_start(ap, fmt);
  int len = format_escaped(esc, sizeof esc, fmt, ap);
  va_end(ap);
  return len < 0 ? -1 : util_write_all(fd, esc, (size_t)len);
}

void util_warn(const char *fmt, ...) {
  char esc[4 * LINE_MAX_RAW + 8];
  va_list ap;
  va_start(ap, fmt);
  int len = format_escaped(esc, sizeof esc, fmt, ap);
  va_end(ap);
  if (len >= 0) fputs(esc, stderr);
}

const char *util_printable(const char *s, char *buf, size_t n) {
  if (!n) return buf;
  size_t len = strlen(s), used = 0;
  util_escape(buf, n, s, len, 0, NULL, &used);
  if (used == len || n < 4) return buf;
  size_t at = util_escape(buf, n - 3, s, len, 0, NULL, NULL);   /* cut: "..." after the last whole escape */
  memcpy(buf + at, "...", 4);
  return buf;
}

const char *util_file_kind(unsigned mode) {
  return S_ISREG(mode) ? "a regular file" : S_ISLNK(mode) ? "a symbolic link" : S_ISDIR(mode) ? "a folder"
         : S_ISFIFO(mode) ? "a named pipe" : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

int util_not_regular(const char *path, char *err, size_t errlen) {
  struct stat st, to;
  if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;   /* (no such file: it is made new) */
  /* a link to a regular file, or to nothing, is replaced and its target kept (never written
   * through); a link to anything else (/dev/stdout) is refused as that would be */
  if (S_ISLNK(st.st_mode) && (stat(path, &to) != 0 || S_ISREG(to.st_mode))) return 0;
  const int link = S_ISLNK(st.st_mode);
  char sh[UTIL_SHOWN];
  util_set_err(err, errlen, "%s is %s%s, not a regular file: weft writes a new file and renames it into place, "
               "which would replace it; give the path of a file", util_shown(path, sh, sizeof sh), link ? "a link to " : "",
               util_file_kind(link ? to.st_mode : st.st_mode));
  return 1;
}

int util_write_atomic(const char *path, const void *data, size_t size, char *err, size_t errlen) {
  if (util_not_regular(path, err, errlen)) return -1;
  char sh[UTIL_SHOWN];   /* (a path as messages show it) */
  size_t plen = strlen(path) + 32;
  char *tmp = malloc(plen);
  if (!tmp) { snprintf(err, errlen, "out of memory"); return -1; }
  snprintf(tmp, plen, "%s.tmp.%ld", path, (long)getpid());
  /* a new file, never a planted link: a leftover of a killed run of this pid is removed once */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) { snprintf(err, errlen, "%s: cannot create: %s", util_shown(tmp, sh, sizeof sh), strerror(errno)); free(tmp); return -1; }
  if (util_write_all(fd, data, size) != 0) {
    snprintf(err, errlen, "%s: write failed: %s", util_shown(tmp, sh, sizeof sh), strerror(errno));
    close(fd); unlink(tmp); free(tmp); return -1;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    snprintf(err, errlen, "%s: cannot flush: %s", util_shown(tmp, sh, sizeof sh), strerror(errno));
    unlink(tmp); free(tmp); return -1;
  }
  if (rename(tmp, path) != 0) {
    snprintf(err, errlen, "%s: cannot rename into place: %s", util_shown(path, sh, sizeof sh), strerror(errno));
    unlink(tmp); free(tmp); return -1;
  }
  free(tmp);
  return 0;
}

int util_mkdirs(const char *path, unsigned mode, char *err, size_t errlen) {
  char sh[UTIL_SHOWN];   /* (a path as messages show it) */
  if (!path || !*path) { snprintf(err, errlen, "an empty path is not a folder"); return -1; }
  char *p = util_strdup(path);
  if (!p) { snprintf(err, errlen, "out of memory"); return -1; }
  for (char *s = p + 1;; s++) {   /* from p + 1: an absolute path's leading "/" is no component */
    if (*s != '/' && *s != 0) continue;
    char c = *s;
    *s = 0;
    if (mkdir(p, mode) != 0 && errno != EEXIST) {
      /* e.g. EROFS or EACCES on a folder that already exists on a read-only mount: no reason to
       * fail as long as it is a folder */
      int e = errno;
      struct stat st;
      if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cannot create folder %s: %s", util_shown(p, sh, sizeof sh), strerror(e));
        free(p);
        return -1;
      }
    }
    *s = c;
    if (!c) break;
  }
  free(p);
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: not a folder", util_shown(path, sh, sizeof sh));
    return -1;
  }
  return 0;
}

char *util_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

char *util_fmt(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
  return buf;
}

/* An environment value as a message quotes it: its first 80 bytes, a control byte as '?' (a newline
 * in the value does not split the message), "..." after a longer one. */
static const char *env_shown(const char *v, char *buf, size_t len) {
  size_t n = 0;
  for (; v[n] && n < 80 && n + 4 < len; n++) buf[n] = (unsigned char)v[n] < 0x20 || v[n] == 0x7f ? '?' : v[n];
  if (v[n] && n + 3 < len) { memcpy(buf + n, "...", 3); n += 3; }
  buf[n] = 0;
  return buf;
}

int util_env_bool(const char *name, const char *what, int *on, char *err, size_t errlen) {
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"", "0", "false", "no", "off"};
  const char *v = getenv(name);
  *on = 0;
  if (!v) return 0;
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)   /* (any case: TRUE, Yes, ON) */
    if (!strcasecmp(v, yes[i])) { *on = 1; return 0; }
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (!strcasecmp(v, no[i])) return 0;
  char shown[88];
  util_set_err(err, errlen, "%s = \"%s\": must be 1, true, yes or on (%s), or 0, false, no, off or unset", name,
               env_shown(v, shown, sizeof shown), what);
  return -1;
}

int util_env_long(const char *name, long lo, long hi, long dflt, const char *unit, const char *what, long *out,
                  char *err, size_t errlen) {
  const char *v = getenv(name);
  *out = dflt;
  if (!v || !*v) return 0;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  /* (digits, after a minus where lo allows one: no "+5", as no number flag takes it) */
  if (errno || *end || end == v || !isdigit((unsigned char)v[v[0] == '-']) || n < lo || n > hi) {
    char unset[48] = "";
    if (dflt >= lo && dflt <= hi) snprintf(unset, sizeof unset, "; unset: %ld", dflt);
    char shown[88];
    util_set_err(err, errlen, "%s = \"%s\": must be a whole number%s%s in %ld..%ld (%s%s)", name,
                 env_shown(v, shown, sizeof shown), unit ? " of " : "", unit ? unit : "", lo, hi, what, unset);
    return -1;
  }
  *out = n;
  return 0;
}

int util_config_max_mb(long *mb, char *err, size_t errlen) {
  return util_env_long("WEFT_CONFIG_MAX_MB", 1, 65536, READ_DEFAULT_MB, "megabytes",
                       "the largest config or sweep file weft reads", mb, err, errlen);
}

int util_config_seconds(long *seconds, char *err, size_t errlen) {
  return util_env_long("WEFT_CONFIG_SECONDS", 1, 86400, CONFIG_DEFAULT_SECONDS, "seconds",
                       "the config sandbox's wall-clock cap", seconds, err, errlen);
}

int util_signal_timeout_ms(double *ms, char *err, size_t errlen) {
  const char *v = getenv("WEFT_SIGNAL_TIMEOUT_MS");
  *ms = 0;
  if (!v || !*v) return 0;
  double t = 0;
  /* !(t > 0) also refuses NaN */
  if (util_parse_decimal(v, &t) || !(t > 0) || t > UTIL_SIGNAL_TIMEOUT_MAX_MS) {
    util_set_err(err, errlen, "WEFT_SIGNAL_TIMEOUT_MS = \"%.80s%s\": must be a number of milliseconds above 0 and "
                 "at most %.0f (a day) (how long a kernel waits for a signal before it stops and names it; 0 is "
                 "refused, since a wait without an end can hang; unset: 5000 between ranks, 60000 for stream-K)", v,
                 strlen(v) > 80 ? "..." : "", UTIL_SIGNAL_TIMEOUT_MAX_MS);
    return -1;
  }
  *ms = t;
  return 0;
}

void util_set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return; /* the caller did not want a message */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void util_set_msg(char *err, size_t errlen, const char *prefix, const char *text) {
  if (!err || errlen == 0) return;
  if (!prefix) prefix = "";
  if (!text) text = "(no message)";
  size_t pl = strlen(prefix), tl = strlen(text);
  if (pl + tl < errlen) {
    memcpy(err, prefix, pl);
    memcpy(err + pl, text, tl + 1);
    return;
  }
  /* Too long: keep whole lines, and say how much was left out, so no message ends mid-word
   * looking complete.  The note needs at most ~120 bytes. */
  char note[160];
  size_t room = errlen > sizeof note + pl ? errlen - sizeof note - pl : 0, cut = 0;
  for (size_t i = 0; i < tl && i < room; i++)
    if (text[i] == '\n') cut = i;
  if (cut == 0) cut = room;   /* one huge line: cut it, and say so */
  size_t lines = 0;
  for (size_t i = cut; i < tl; i++) lines += text[i] == '\n';
  int w = snprintf(note, sizeof note, "\n(... %zu more bytes, %zu more lines: the message is longer than the %zu bytes "
                   "weft keeps)", tl - cut, lines + (text[tl - 1] != '\n'), errlen);
  if (w < 0 || (size_t)w >= sizeof note) note[0] = 0;
  if (pl >= errlen) pl = errlen - 1, cut = 0;
  memcpy(err, prefix, pl);
  memcpy(err + pl, text, cut);
  snprintf(err + pl + cut, errlen - pl - cut, "%s", note);
}

char *util_strprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

char *util_path_join(const char *a, const char *b) {
  size_t n = strlen(a);
  while (n > 1 && a[n - 1] == '/') n--;
  if (n == 1 && a[0] == '/') return util_strprintf("/%s", b);
  return util_strprintf("%.*s/%s", (int)n, a, b);
}

char *util_path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return util_strdup(".");
  if (slash == path) return util_strdup("/");
  size_t n = (size_t)(slash - path);
  char *dir = malloc(n + 1);
  if (!dir) return NULL;
  memcpy(dir, path, n);
  dir[n] = 0;
  return dir;
}

char *util_weft_cache_path(const char *env, const char *leaf, const char *what, char *err, size_t errlen) {
  const char *v = getenv(env), *sub;
  char *p;
  if (v && *v) {
    p = util_strdup(v);
  } else {
    if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') {
      sub = "weft";
    } else if ((v = getenv("HOME")) && *v) {
      sub = ".cache/weft";
    } else {
      util_set_err(err, errlen, "%s: %s, XDG_CACHE_HOME and HOME are all unset; set %s to %s of your own", what, env,
                   env, leaf ? "a file" : "a folder");
      return NULL;
    }
    char *tail = leaf ? util_strprintf("%s/%s", sub, leaf) : util_strdup(sub);
    p = tail ? util_path_join(v, tail) : NULL;
    free(tail);
  }
  if (!p) util_set_err(err, errlen, "out of memory choosing %s", what);
  return p;
}

double util_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Room for extra more bytes and the NUL: 0, or -1 with oom set (the text kept as it was). */
static int buf_reserve(util_buf *b, size_t extra) {
  if (b->oom) return -1;
  if (b->p && extra < b->cap - b->len) return 0;
  size_t cap = b->cap ? b->cap : 256;
  if (extra > SIZE_MAX - 1 - b->len) { b->oom = 1; return -1; }
  while (cap < b->len + extra + 1) {
    if (cap > SIZE_MAX / 2) { b->oom = 1; return -1; }
    cap *= 2;
  }
  char *q = realloc(b->p, cap);
  if (!q) { b->oom = 1; return -1; }
  if (!b->p) q[0] = 0;
  b->p = q;
  b->cap = cap;
  return 0;
}

int util_buf_printf(util_buf *b, const char *fmt, ...) {
  if (b->oom) return -1;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = b->p ? vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap) : -2;
    va_end(ap);
    if (n == -1) { b->oom = 1; return -1; }   /* an encoding error: nothing sensible to append */
    if (n >= 0 && (size_t)n < b->cap - b->len) { b->len += (size_t)n; return 0; }
    if (b->p) b->p[b->len] = 0;   /* (the cut-off text vsnprintf wrote is not kept) */
    if (buf_reserve(b, n > 0 ? (size_t)n : 0)) return -1;
  }
}

int util_buf_append(util_buf *b, const char *s, size_t n) {
  if (buf_reserve(b, n)) return -1;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

void util_buf_free(util_buf *b) {
  free(b->p);
  *b = (util_buf){0};
}
