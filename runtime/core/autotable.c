/* autotable.c: the shipped tuning table's parser (format and behaviour in autotable.h). */
#include "autotable.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A macro's value as string text (the limit written once, in autotable.h) */
#define LITERAL_TEXT_(x) #x
#define LITERAL_TEXT(x) LITERAL_TEXT_(x)

#define MAX_VALUE (1LL << 62)

static const char *const columns[] = {"family", "dtype", "ranks", "shape", "time_us", "config"};
enum { COL_FAMILY, COL_DTYPE, COL_RANKS, COL_SHAPE, COL_TIME, COL_CONFIG, N_COLS };

static int is_name_char(int c) { return islower(c) || isdigit(c) || c == '_'; }
static int is_key_char(int c) { return isalnum(c) || c == '_' || c == '.'; }
static int is_value_char(int c) { return isalnum(c) || c == '_' || c == '.' || c == '+' || c == '-'; }

/* ---- shapes ------------------------------------------------------------------------------ */

typedef struct size_kv { char name[64]; long long v; } size_kv;

static int by_size(const void *a, const void *b) { return strcmp(((const size_kv *)a)->name, ((const size_kv *)b)->name); }

/* A size's value: 1..2^62, digits only. */
static int size_number(const char *name, const char *s, size_t n, long long *out, char *why, size_t wlen) {
  char buf[32];
  int digits = n > 0 && n < sizeof buf;
  for (size_t i = 0; digits && i < n; i++) digits = isdigit((unsigned char)s[i]) != 0;
  long long v = 0;
  if (digits) {
    memcpy(buf, s, n);
    buf[n] = 0;
    errno = 0;
    v = strtoll(buf, NULL, 10);
    if (errno) v = -1;
  }
  if (!digits || v < 1 || v > MAX_VALUE) {
    util_set_err(why, wlen, "shape: %s = %.*s: must be a whole number in 1..%lld", name, (int)(n > 40 ? 40 : n), s,
                 MAX_VALUE);
    return -1;
  }
  *out = v;
  return 0;
}

static void names_list(const char *const *sizes, int n, const char *sep, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < n; i++) {
    int w = snprintf(buf + at, len - at, "%s%s", i ? sep : "", sizes[i]);
    if (w < 0 || (size_t)w >= len - at) return;
    at += (size_t)w;
  }
}

int autotable_shape(const char *text, const char *const *sizes, int n_sizes, char *canon, size_t len, char *why,
                    size_t wlen) {
  size_kv kv[AUTOTABLE_MAX_SIZES];
  int n = 0;
  char names[256];
  names_list(sizes, n_sizes, ", ", names, sizeof names);
  if (!text) text = "";
  if (sizes && !strchr(text, '=')) {   /* positional: 4096x50257 in the family's order */
    const char *at = text;
    while (*at == ' ') at++;
    for (int j = 0; j < n_sizes; j++) {
      size_t k = strcspn(at, "xX* ");
      if (strlen(sizes[j]) >= sizeof kv[0].name) { util_set_err(why, wlen, "shape: size name too long"); return -1; }
      snprintf(kv[n].name, sizeof kv[n].name, "%s", sizes[j]);
      if (k == 0 || (j < n_sizes - 1 ? (at[k] != 'x' && at[k] != 'X' && at[k] != '*') : (at[k] && at[k] != ' '))) {
        char xs[256];
        names_list(sizes, n_sizes, "x", xs, sizeof xs);
        util_set_err(why, wlen, "shape \"%.80s\": expected %s (%d whole numbers joined by x) or name=value pairs of "
                     "the sizes %s", text, xs, n_sizes, names);
        return -1;
      }
      if (size_number(sizes[j], at, k, &kv[n].v, why, wlen)) return -1;
      n++;
      at += k + (at[k] != 0);
    }
    while (*at == ' ') at++;
    if (*at) {
      util_set_err(why, wlen, "shape \"%.80s\": text after the last size (%d sizes: %s)", text, n_sizes, names);
      return -1;
    }
  } else {
    for (const char *p = text;;) {
      while (*p == ' ' || *p == ',' || *p == '\t') p++;
      if (!*p) break;
      size_t nl = 0;
      while (is_name_char((unsigned char)p[nl])) nl++;
      if (nl == 0 || nl >= sizeof kv[0].name || p[nl] != '=') {
        if (sizes)
          util_set_err(why, wlen, "shape \"%.80s\": at \"%.20s\": expected name=value pairs separated by spaces or "
                       "commas (sizes: %s), or the values joined by x", text, p, names);
        else
          util_set_err(why, wlen, "shape \"%.80s\": at \"%.20s\": expected name=value pairs separated by spaces or "
                       "commas (names: lower case, digits, _)", text, p);
        return -1;
      }
      if (n == AUTOTABLE_MAX_SIZES) {
        util_set_err(why, wlen, "shape \"%.80s\": more than %d sizes", text, AUTOTABLE_MAX_SIZES);
        return -1;
      }
      memcpy(kv[n].name, p, nl);
      kv[n].name[nl] = 0;
      for (int i = 0; i < n; i++)
        if (!strcmp(kv[i].name, kv[n].name)) {
          util_set_err(why, wlen, "shape \"%.80s\": size %s given twice", text, kv[n].name);
          return -1;
        }
      if (sizes) {
        int known = 0;
        for (int j = 0; j < n_sizes && !known; j++) known = !strcmp(sizes[j], kv[n].name);
        if (!known) {
          util_set_err(why, wlen, "shape: %s: not a size of this family (its sizes: %s)", kv[n].name, names);
          return -1;
        }
      }
      const char *v = p + nl + 1;
      size_t vl = strcspn(v, " ,\t");
      if (size_number(kv[n].name, v, vl, &kv[n].v, why, wlen)) return -1;
      n++;
      p = v + vl;
    }
    for (int j = 0; sizes && j < n_sizes; j++) {
      int have = 0;
      for (int i = 0; i < n && !have; i++) have = !strcmp(kv[i].name, sizes[j]);
      if (!have) {
        util_set_err(why, wlen, "shape \"%.80s\": size %s is missing (the family's sizes: %s)", text, sizes[j], names);
        return -1;
      }
    }
    if (n == 0) {
      util_set_err(why, wlen, "shape \"%.80s\": empty: expected name=value pairs%s%s", text, sizes ? " of " : "",
                   sizes ? names : "");
      return -1;
    }
  }
  qsort(kv, (size_t)n, sizeof *kv, by_size);
  size_t at = 0;
  canon[0] = 0;
  for (int i = 0; i < n; i++) {
    int w = snprintf(canon + at, len - at, "%s%s=%lld", i ? " " : "", kv[i].name, kv[i].v);
    if (w < 0 || (size_t)w >= len - at) { util_set_err(why, wlen, "shape \"%.80s\": too long", text); return -1; }
    at += (size_t)w;
  }
  return 0;
}

/* ---- rows -------------------------------------------------------------------------------- */

static void row_free(autotable_row *r) {
  free(r->family);
  free(r->dtype);
  free(r->shape);
  for (int i = 0; i < r->n_sets; i++) free(r->sets[i]);
  free(r->sets);
}

void autotable_free(autotable *t) {
  if (!t) return;
  for (int i = 0; i < t->n_rows; i++) row_free(&t->rows[i]);
  free(t->rows);
  free(t->file); free(t->gpu); free(t->driver); free(t->nvrtc); free(t->date); free(t->command);
  free(t);
}

/* One warning line: "FILE:LINE: column C (NAME) = "VALUE": what is allowed; line skipped". */
static void warn_field(util_buf *w, const char *file, int line, int col, const char *name, const char *v, size_t vl,
                       const char *allowed) {
  util_buf_printf(w, "%s:%d: column %d (%s) = \"", file, line, col, name);
  for (size_t i = 0; i < vl && i < 60; i++) {   /* (a NUL or a control byte shown, not the text cut at it) */
    unsigned char c = (unsigned char)v[i];
    if (c < 32 || c >= 127 || c == '"' || c == '\\') util_buf_printf(w, "\\x%02x", c);
    else util_buf_printf(w, "%c", c);
  }
  util_buf_printf(w, "%s\": %s; line skipped\n", vl > 60 ? "..." : "", allowed);
}

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) { memcpy(d, s, n); d[n] = 0; }
  return d;
}

/* A row from its fields (in file order, mapped by col[]); 0, or -1 with a warning (skipped), or
 * -2 out of memory. */
static int parse_row(const char *file, int line, const char *const *f, const size_t *fl, const int *col,
                     autotable_row *r, util_buf *w) {
  const char *v[N_COLS];
  size_t vl[N_COLS];
  int at[N_COLS];
  for (int i = 0; i < N_COLS; i++) { v[col[i]] = f[i]; vl[col[i]] = fl[i]; at[col[i]] = i + 1; }
  memset(r, 0, sizeof *r);
  r->line = line;
  for (int c = COL_FAMILY; c <= COL_DTYPE; c++) {
    int ok = vl[c] > 0 && vl[c] < 64;
    for (size_t i = 0; ok && i < vl[c]; i++) ok = is_name_char((unsigned char)v[c][i]);
    if (!ok) {
      warn_field(w, file, line, at[c], columns[c], v[c], vl[c], c == COL_FAMILY ? "a family name (lower case, digits, _)"
                 : "a dtype name (f32, f16, bf16)");
      return -1;
    }
  }
  char buf[AUTOTABLE_MAX_LINE + 1], why[512], canon[512];
  memcpy(buf, v[COL_RANKS], vl[COL_RANKS]);
  buf[vl[COL_RANKS]] = 0;
  long long ranks = 0;
  if (util_parse_whole(buf, &ranks) || ranks < 1 || ranks > AUTOTABLE_MAX_RANKS) {
    warn_field(w, file, line, at[COL_RANKS], "ranks", v[COL_RANKS], vl[COL_RANKS],
               "a whole number of ranks in 1.." LITERAL_TEXT(AUTOTABLE_MAX_RANKS));
    return -1;
  }
  r->ranks = (int)ranks;
  memcpy(buf, v[COL_SHAPE], vl[COL_SHAPE]);
  buf[vl[COL_SHAPE]] = 0;
  if (autotable_shape(buf, NULL, 0, canon, sizeof canon, why, sizeof why)) {
    util_buf_printf(w, "%s:%d: column %d (shape): %s; line skipped\n", file, line, at[COL_SHAPE], why);
    return -1;
  }
  memcpy(buf, v[COL_TIME], vl[COL_TIME]);
  buf[vl[COL_TIME]] = 0;
  double t = 0;
  if (util_parse_decimal(buf, &t) || !isfinite(t) || t <= 0) {
    warn_field(w, file, line, at[COL_TIME], "time_us", v[COL_TIME], vl[COL_TIME],
               "a positive number of microseconds (123.4)");
    return -1;
  }
  r->time_us = t;
  /* config: k=v;k=v, possibly empty (the family's defaults at that dtype) */
  const char *p = v[COL_CONFIG], *e = p + vl[COL_CONFIG];
  char *sets[AUTOTABLE_MAX_SETS];
  int ns = 0;
  while (p < e) {
    const char *q = memchr(p, ';', (size_t)(e - p));
    if (!q) q = e;
    const char *eq = memchr(p, '=', (size_t)(q - p));
    int ok = eq && eq > p && eq + 1 < q && ns < AUTOTABLE_MAX_SETS;
    for (const char *c = p; ok && c < eq; c++) ok = is_key_char((unsigned char)*c);
    for (const char *c = eq ? eq + 1 : q; ok && c < q; c++) ok = is_value_char((unsigned char)*c);
    /* (a key the row's own columns hold, or one set twice: the row would be dropped, or one value
     * taken, with nothing said) */
    const char *clash = NULL;
    if (ok && ((eq - p == 6 && !memcmp(p, "family", 6)) || (eq - p == 5 && !memcmp(p, "dtype", 5))))
      clash = "is a column of the table's own, not a config key";
    for (int i = 0; ok && !clash && i < ns; i++)
      if (!strncmp(sets[i], p, (size_t)(eq - p + 1))) clash = "sets a key an earlier pair of the row set";
    if (clash) {
      char allowed[256];
      snprintf(allowed, sizeof allowed, "pair \"%.*s\": %.*s %s", (int)(q - p > 60 ? 60 : q - p), p,
               (int)(eq - p > 40 ? 40 : eq - p), p, clash);
      warn_field(w, file, line, at[COL_CONFIG], "config", v[COL_CONFIG], vl[COL_CONFIG], allowed);
      for (int i = 0; i < ns; i++) free(sets[i]);
      return -1;
    }
    if (!ok) {
      char allowed[256];
      snprintf(allowed, sizeof allowed, "pair \"%.*s\" is not key=value (keys [A-Za-z0-9_.]+, values "
               "[A-Za-z0-9_.+-]+, at most %d pairs joined by ;)", (int)(q - p > 60 ? 60 : q - p), p, AUTOTABLE_MAX_SETS);
      warn_field(w, file, line, at[COL_CONFIG], "config", v[COL_CONFIG], vl[COL_CONFIG], allowed);
      for (int i = 0; i < ns; i++) free(sets[i]);
      return -1;
    }
    if (!(sets[ns] = dupn(p, (size_t)(q - p)))) { for (int i = 0; i < ns; i++) free(sets[i]); return -2; }
    ns++;
    p = q + 1;
  }
  r->family = dupn(v[COL_FAMILY], vl[COL_FAMILY]);
  r->dtype = dupn(v[COL_DTYPE], vl[COL_DTYPE]);
  r->shape = util_strdup(canon);
  r->sets = calloc((size_t)ns + 1, sizeof *r->sets);
  if (r->sets) memcpy(r->sets, sets, (size_t)ns * sizeof *sets);
  else for (int i = 0; i < ns; i++) free(sets[i]);
  r->n_sets = r->sets ? ns : 0;
  if (!r->family || !r->dtype || !r->shape || !r->sets) { row_free(r); return -2; }
  return 0;
}

/* ---- the table --------------------------------------------------------------------------- */

static const char *const first_line = "# weft tuning table";

int autotable_parse(const char *file, const char *text, size_t len, autotable **out, util_buf *w) {
  *out = NULL;
  autotable *t = calloc(1, sizeof *t);
  if (!t || !(t->file = util_strdup(file))) { free(t); util_buf_printf(w, "%s: out of memory reading it\n", file); return -1; }
  int col[N_COLS], have_cols = 0, have_sm = 0, line = 0, cap = 0, warned = 0;
  const char *p = text, *end = text + len;
  const char *bad = NULL;
  while (p < end && !bad) {
    /* each line's warning kept for the first AUTOTABLE_MAX_WARNED lines, then only counted (a
     * garbage file gave hundreds of lines of them) */
    const size_t w_at = w->len;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    size_t n = (size_t)(le - p);
    if (n && p[n - 1] == '\r') n--;
    line++;
    if (n > AUTOTABLE_MAX_LINE) {
      if (!have_cols) { bad = "a header line longer than the limit"; break; }
      util_buf_printf(w, "%s:%d: the line is %zu bytes long, at most %d are allowed; line skipped\n", file, line, n,
                      AUTOTABLE_MAX_LINE);
    } else if (line == 1) {
      if (n < strlen(first_line) || memcmp(p, first_line, strlen(first_line))) bad = "its first line is not \"# weft tuning table...\"";
    } else if (n && p[0] == '#') {
      const char *keys[] = {"gpu", "sm", "driver", "nvrtc", "date", "command"};
      char **dst[] = {&t->gpu, NULL, &t->driver, &t->nvrtc, &t->date, &t->command};
      for (int k = 0; k < 6; k++) {
        size_t kl = strlen(keys[k]);
        if (n > kl + 3 && !memcmp(p + 2, keys[k], kl) && p[1] == ' ' && p[2 + kl] == ':') {
          const char *v = p + 3 + kl;
          while (v < p + n && *v == ' ') v++;
          size_t vl = (size_t)(p + n - v);
          if (dst[k]) { free(*dst[k]); *dst[k] = dupn(v, vl); }
          else {
            char b[32];
            char *e2;
            snprintf(b, sizeof b, "%.*s", (int)(vl < 31 ? vl : 31), v);
            long sm = strtol(b, &e2, 10);
            if (*e2 || vl == 0 || vl > 31 || sm < 0 || sm > 1000) { bad = "its \"# sm:\" is not a number such as 90"; break; }
            t->sm = (int)sm;
            have_sm = 1;
          }
        }
      }
    } else if (n && !have_cols) {
      /* the column line: every name known, each once, all there (any order) */
      const char *f = p;
      int i = 0;
      for (int c = 0; c < N_COLS; c++) col[c] = -1;
      while (f <= p + n && !bad) {
        const char *tab = memchr(f, '\t', (size_t)(p + n - f));
        size_t fl = (size_t)((tab ? tab : p + n) - f);
        int c = -1;
        for (int k = 0; k < N_COLS && c < 0; k++) if (strlen(columns[k]) == fl && !memcmp(columns[k], f, fl)) c = k;
        if (c < 0 || i >= N_COLS || col[c] >= 0) {
          util_buf_printf(w, "%s:%d: column %d = \"%.*s\": %s (the columns: family, dtype, ranks, shape, time_us, "
                          "config, each once, tab-separated)\n", file, line, i + 1, (int)(fl > 40 ? 40 : fl), f,
                          c < 0 ? "not a column of the table" : i >= N_COLS ? "one column too many" : "given twice");
          bad = "its column line is bad";
          break;
        }
        col[c] = i++;
        if (!tab) break;
        f = tab + 1;
      }
      if (!bad && i != N_COLS) {
        util_buf_printf(w, "%s:%d: %d columns; the table has 6: family, dtype, ranks, shape, time_us, config\n", file,
                        line, i);
        bad = "its column line is bad";
      }
      /* fields arrive in file order; parse_row wants, for file position i, the column there */
      int pos[N_COLS];
      for (int c = 0; c < N_COLS; c++) if (col[c] >= 0) pos[col[c]] = c;
      memcpy(col, pos, sizeof col);
      have_cols = 1;
      if (!bad && (!t->gpu || !*t->gpu)) bad = "it has no \"# gpu:\" line before its columns";
      else if (!bad && !have_sm) bad = "it has no \"# sm:\" line before its columns";
    } else if (n) {
      const char *f[N_COLS + 1];
      size_t fl[N_COLS + 1];
      int nf = 0;
      for (const char *q = p; nf <= N_COLS;) {
        const char *tab = memchr(q, '\t', (size_t)(p + n - q));
        f[nf] = q;
        fl[nf++] = (size_t)((tab ? tab : p + n) - q);
        if (!tab) break;
        q = tab + 1;
      }
      if (nf != N_COLS) {
        util_buf_printf(w, "%s:%d: %s%d tab-separated fields; each row has 6 (family, dtype, ranks, shape, time_us, "
                        "config); line skipped\n", file, line, nf > N_COLS ? "more than " : "", nf > N_COLS ? N_COLS : nf);
      } else {
        if (t->n_rows == cap) {
          int nc = cap ? cap * 2 : 32;
          autotable_row *g = realloc(t->rows, (size_t)nc * sizeof *g);
          if (!g) { bad = "out of memory"; break; }
          t->rows = g;
          cap = nc;
        }
        int r = parse_row(file, line, f, fl, col, &t->rows[t->n_rows], w);
        if (r == -2) { bad = "out of memory"; break; }
        if (r == 0) t->n_rows++;
      }
    }
    if (!bad && w->len > w_at && ++warned > AUTOTABLE_MAX_WARNED && w->p) w->p[w->len = w_at] = 0;
    p = nl ? nl + 1 : end;
  }
  if (warned > AUTOTABLE_MAX_WARNED)
    util_buf_printf(w, "%s: %d more lines skipped, as above (the first %d are shown)\n", file,
                    warned - AUTOTABLE_MAX_WARNED, AUTOTABLE_MAX_WARNED);
  if (!bad && line == 0) bad = "it is empty";
  if (!bad && !have_cols) bad = "it has no column line (family, dtype, ranks, shape, time_us, config)";
  if (!bad && (!t->gpu || !*t->gpu)) bad = "it has no \"# gpu:\" line";
  if (bad) {
    util_buf_printf(w, "%s: the tuning table is ignored: %s (the format: runtime/core/autotable.h)\n", file, bad);
    autotable_free(t);
    return -1;
  }
  char **opt[] = {&t->driver, &t->nvrtc, &t->date, &t->command};
  for (int k = 0; k < 4; k++)
    if (!*opt[k] && !(*opt[k] = util_strdup(""))) { autotable_free(t); util_buf_printf(w, "%s: out of memory\n", file); return -1; }
  *out = t;
  return 0;
}

int autotable_load(bridge *b, autotable **out, util_buf *w) {
  *out = NULL;
  const char *env = getenv("WEFT_AUTO_TABLE");
  if (env && !strcmp(env, "none")) return 1;
  if (env && *env) {
    char *text, err[1024];
    size_t n;
    if (util_read_file(env, &text, &n, err, sizeof err)) {
      util_buf_printf(w, "WEFT_AUTO_TABLE = \"%s\": %s (a table file, or none for no table); the tuning table is "
                      "ignored\n", env, err);
      return -1;
    }
    int r = autotable_parse(env, text, n, out, w);
    free(text);
    return r;
  }
  const char *data;
  size_t n;
  if (bridge_read(b, AUTOTABLE_FILE, &data, &n)) {
    util_buf_printf(w, "%s: not found in the generator's files (WEFT_SOURCE_DIR, or the build's embedded copy); "
                    "the tuning table is ignored\n", AUTOTABLE_FILE);
    return -1;
  }
  return autotable_parse(AUTOTABLE_FILE " (built in)", data, n, out, w);
}
