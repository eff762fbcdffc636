/* guard.c: what the CLI prints reaches the terminal without bytes that could drive it.
 *
 * A file name, a flag's value, a sweep's shape names, a database row or a table's text can hold an
 * escape sequence; printed as it is, it would move the cursor, clear the screen or retitle the
 * window of the user who ran weft.  Rather than escape each of the CLI's hundreds of prints, its
 * stdout and stderr are replaced at start by streams (glibc's fopencookie) that write every byte
 * util_escape would escape as \xNN, newlines and tabs kept.  The library does not do this (it must
 * not take over its host's streams): its few prints of its own escape their text (util_escape).
 * The progress line's own control sequences go out through cli_tty_raw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

typedef struct guard {
  int fd;
  int drop;   /* write nothing (cli_guard_drop_stdout) */
  int held;   /* util_escape's state: a \xc2 that ended the last write */
} guard;

static guard out_guard = {1, 0, 0}, err_guard = {2, 0, 0};
static int guarding;

static ssize_t guard_write(void *cookie, const char *buf, size_t n) {
  guard *g = cookie;
  if (g->drop) return (ssize_t)n;
  char esc[4 * 1024 + 8];   /* (util_escape's bound for 1024 bytes) */
  for (size_t done = 0; done < n;) {
    size_t piece = n - done < 1024 ? n - done : 1024, used = 0;
    size_t len = util_escape(esc, sizeof esc, buf + done, piece, 1, &g->held, &used);
    if (util_write_all(g->fd, esc, len) != 0) return (ssize_t)done;   /* (0 on error: fopencookie's rule) */
    done += used;
  }
  return (ssize_t)n;
}

/* a \xc2 that ended the output (nothing came after it to decide it): written as the text it is */
static void guard_flush_held(void) {
  fflush(stdout);
  fflush(stderr);
  if (out_guard.held && !out_guard.drop) (void)util_write_all(1, "\\xc2", 4);
  if (err_guard.held) (void)util_write_all(2, "\\xc2", 4);
  out_guard.held = err_guard.held = 0;
}

static FILE *guarded(guard *g, int mode) {
  cookie_io_functions_t io = {.write = guard_write};
  FILE *f = fopencookie(g, "w", io);
  if (f && setvbuf(f, NULL, mode, BUFSIZ) != 0) {
    fclose(f);
    return NULL;
  }
  return f;
}

int cli_guard_output(void) {
  if (guarding) return 0;
  fflush(stdout);
  fflush(stderr);
  FILE *out = guarded(&out_guard, isatty(1) ? _IOLBF : _IOFBF), *err = out ? guarded(&err_guard, _IONBF) : NULL;
  if (!out || !err) {   /* (out of memory: weft runs unguarded rather than not at all) */
    if (out) fclose(out);
    return -1;
  }
  if (atexit(guard_flush_held) != 0) {
    fclose(out);
    fclose(err);
    return -1;
  }
  stdout = out;   /* (glibc's stdout and stderr are variables a program may set) */
  stderr = err;
  guarding = 1;
  return 0;
}

int cli_guard_drop_stdout(void) {
  if (!guarding) return freopen("/dev/null", "w", stdout) ? 0 : -1;
  fflush(stdout);
  out_guard.drop = 1;
  return 0;
}

void cli_tty_raw(const char *seq) {
  fflush(stdout);
  if (!out_guard.drop) (void)util_write_all(1, seq, strlen(seq));
}
