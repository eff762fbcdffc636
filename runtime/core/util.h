/* util.h: small helpers shared by runtime modules (files, strings, errors). */
#ifndef WEFT_UTIL_H
#define WEFT_UTIL_H
#include <stddef.h>

/* Reads a whole file; *out is NUL-terminated (size excludes the NUL).  0, or with err: -1 (the
 * file cannot be read, or is too large), UTIL_READ_SETTING (WEFT_CONFIG_MAX_MB or
 * WEFT_CONFIG_SECONDS is not a number weft takes), UTIL_READ_NOMEM (out of memory). */
#define UTIL_READ_SETTING (-2)
#define UTIL_READ_NOMEM (-3)
int util_read_file(const char *path, char **out, size_t *size, char *err, size_t errlen);
/* Writes atomically: a temporary file in the same folder, fsync, rename. 0 or -1 with err.  A path
 * that exists as a folder, device, pipe or socket, or a link to one, is refused before anything is
 * written: the rename would replace it, not write through it (/dev/null, /dev/stdout, a pipe a
 * reader waits on).  A link to a regular file (or to nothing) is replaced, its target kept. */
int util_write_atomic(const char *path, const void *data, size_t size, char *err, size_t errlen);
/* What a file of this st_mode is, for a message: "a regular file", "a symbolic link", "a folder",
 * "a named pipe", "a character device", "a block device", "a socket" */
const char *util_file_kind(unsigned mode);
/* 1 with a message in err when util_write_atomic would refuse path (a folder, device, pipe or
 * socket, or a link to one), else 0: what a command checks before its run */
int util_not_regular(const char *path, char *err, size_t errlen);
/* s as a whole number in decimal digits only (no blank, sign or "0x": " 5", "+5" and "-0" are
 * refused, "010" is ten), within long long: 0 with *out, else -1 */
int util_parse_whole(const char *s, long long *out);
/* s as a decimal number, all of it (no leading blank, no hex float: strtod reads "0x10" as 16), in
 * range of a double: 0 with *out (which may still be 0, negative, inf or NaN: the caller's range
 * check), else -1 */
int util_parse_decimal(const char *s, double *out);
/* mkdir -p with the given mode for every created component. 0 or -1 with err. */
int util_mkdirs(const char *path, unsigned mode, char *err, size_t errlen);
char *util_strdup(const char *s);
/* snprintf that never overflows and returns buf */
char *util_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* vsnprintf into err (if err and errlen): messages truncate, never overflow */
void util_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* err = prefix + text; a text too long for err is cut at a line end and followed by a note of
 * what was left out (never cut mid-line silently) */
void util_set_msg(char *err, size_t errlen, const char *prefix, const char *text);
/* s as a message shows it: s itself when shorter than n, else its start and its end around a note
 * of how many bytes were left out, in buf (n >= 64), so that a long path never pushes the reason
 * out of a bounded message */
#define UTIL_SHOWN 320
const char *util_shown(const char *s, char *buf, size_t n);
/* src[0..len) into dst (n bytes, NUL-terminated) with every byte that could drive a terminal
 * written as \xNN: C0 controls (newline and tab kept when lines), DEL, and C1 controls (U+0080 to
 * U+009F, UTF-8's \xc2\x80-\x9f, written \xc2\xNN).  A stream passes held (0 at first): a \xc2
 * that ends one piece is decided by the next piece's first byte.  Stops before a byte whose text
 * would not fit; returns the bytes written, *consumed (when given) the bytes of src done.  4 * len
 * + 5 bytes of dst always suffice. */
size_t util_escape(char *dst, size_t n, const char *src, size_t len, int lines, int *held, size_t *consumed);
/* Writes all n bytes: 0, or -1 with errno (ENOSPC for a write that made no progress). */
int util_write_all(int fd, const void *buf, size_t n);
/* A line (a warning, a notice) to fd, its text through util_escape
 * (newlines kept): a path or a table's text in it never drives the terminal.  0, or -1.  Cut at
 * 2 KB, said. */
int util_fd_printf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ... the same to stderr, the FILE (a host program that redirects it gets weft's lines too) */
void util_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s on one line as a message shows it: util_escape's escapes, newlines and tabs too (cut to fit n,
 * with "..." after the last whole escape); returns buf. */
const char *util_printable(const char *s, char *buf, size_t n);
/* a malloc'd formatted string, NULL when out of memory */
char *util_strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a + "/" + b, without doubling a slash that a already ends with; malloc'd */
char *util_path_join(const char *a, const char *b);
/* The folder that holds path, malloc'd (NULL out of memory): what comes before its last '/', "/"
 * when that is its first byte, "." when it has none.  Not dirname(3): "a/b/" gives "a/b". */
char *util_path_dir(const char *path);
/* Where weft keeps a per-user file or folder: $<env> if set; else $XDG_CACHE_HOME/weft/<leaf>
 * (a relative XDG_CACHE_HOME is ignored, as the XDG spec says); else $HOME/.cache/weft/<leaf>.
 * leaf NULL: the weft folder itself.  NULL with a message (naming env) when none is set. */
char *util_weft_cache_path(const char *env, const char *leaf, const char *what, char *err, size_t errlen);
/* A growing string: every append is bounded and checked.  A failed allocation sets oom and
 * keeps what was built; the text is always NUL-terminated (p NULL until the first append). */
typedef struct util_buf { char *p; size_t len, cap; int oom; } util_buf;
int util_buf_printf(util_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));  /* 0 or -1 */
/* n bytes of s, whatever their length (printf's %.*s takes an int) and content (NULs too); 0 or -1 */
int util_buf_append(util_buf *b, const char *s, size_t n);
void util_buf_free(util_buf *b);
/* Wall-clock milliseconds (CLOCK_MONOTONIC). */
double util_now_ms(void);
/* An on/off variable: *on = 1 for 1, true, yes, on; 0 for 0, false, no, off, empty or unset (any case).
 * Anything else is -1 with a message naming the variable, its value and the spellings (what:
 * what it switches on), so a typo never turns a switch on or off unnoticed. */
int util_env_bool(const char *name, const char *what, int *on, char *err, size_t errlen);
/* A whole number in lo..hi from $name into *out: dflt when unset or empty; -1 with a message
 * naming the variable, its value, the range, the unit (NULL: none) and what it sets (what) for anything else,
 * so a typo in the environment is reported, never taken as the default.  The message gives the
 * default when it lies in lo..hi; a dflt outside says "the caller decides" (what says how). */
int util_env_long(const char *name, long lo, long hi, long dflt, const char *unit, const char *what, long *out,
                  char *err, size_t errlen);
/* $WEFT_CONFIG_SECONDS into *seconds: the config sandbox's wall-clock cap, and how long a config
 * read from a pipe may take to arrive; 1..86400, 10 when unset or empty.  -1 with util_env_long's
 * message for anything else. */
int util_config_seconds(long *seconds, char *err, size_t errlen);
/* $WEFT_CONFIG_MAX_MB into *mb: the largest file util_read_file reads, 1..65536 megabytes, 16
 * when unset or empty; -1 with util_env_long's message for anything else. */
int util_config_max_mb(long *mb, char *err, size_t errlen);
/* $WEFT_SIGNAL_TIMEOUT_MS, how long a kernel's bounded waits last (signals between ranks,
 * stream-K's hand-over), in milliseconds: a number in (0, UTIL_SIGNAL_TIMEOUT_MAX_MS] ("0.5"
 * taken), or 0 when unset or empty (each caller's default).  -1 with the message when set to
 * anything else ("0", "soon", "-3": a wait must end, and a typo must not pick the default). */
#define UTIL_SIGNAL_TIMEOUT_MAX_MS 86400000.0
int util_signal_timeout_ms(double *ms, char *err, size_t errlen);

#endif
