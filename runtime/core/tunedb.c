/* tunedb.c: the tuning database's rows -- keys, storing a sweep's results, reading the best
 * (behaviour documented in tunedb.h; the file, its schema and opening it are tunedb_file.c's).
 * Every value goes through a bound parameter of a prepared statement; the only SQL text is
 * fixed at compile time.
 */
#include "tunedb.h"
#include "tunedb_internal.h"

#include "util.h"

#include <sqlite3.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A time a reader may rank: a positive, finite number (a hand-edited row's 0, -5, 'abc' or NULL,
 * or a text-typed column's '1006.3', would sort first or as text). */
#define GOOD_TIME "(typeof(time_us) IN ('real', 'integer') AND time_us > 0 AND time_us < 9e999)"

/* ---- keys --------------------------------------------------------------------------------- */

/* The key's string fields must all be there; names the first one missing. */
static int check_key(const tunedb *t, const tune_key *k, char *err, size_t errlen) {
  const char *missing = !k          ? "the key"
                        : !k->gpu    ? "gpu"
                        : !k->nvrtc  ? "nvrtc"
                        : !k->family ? "family"
                        : !k->dtype  ? "dtype"
                        : !k->shape  ? "shape"
                                     : NULL;
  if (missing) {
    util_set_err(err, errlen, "tune database %s: the tune key has no %s", t->path, missing);
    return -1;
  }
  return 0;
}

/* The key in messages: "row_softmax f32 [rows=8192 cols=32768] on NVIDIA H200 (sm_90, ...)". */
static void key_text(const tune_key *k, char *buf, size_t len) {
  snprintf(buf, len, "%s %s [%s] on %s (sm_%d, driver %d, NVRTC %s, %d rank%s)", k->family,
           k->dtype, k->shape, k->gpu, k->sm, k->driver, k->nvrtc, k->ranks,
           k->ranks == 1 ? "" : "s");
}

/* Binds the key to parameters ?1..?8 (gpu, sm, driver, nvrtc, ranks, family, dtype, shape).
 * The strings must outlive the statement's next step (SQLITE_STATIC). */
static int bind_key(sqlite3_stmt *st, const tune_key *k) {
  int rc = SQLITE_OK;
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, k->gpu, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 2, k->sm);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, k->driver);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, k->nvrtc, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 5, k->ranks);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 6, k->family, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 7, k->dtype, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 8, k->shape, -1, SQLITE_STATIC);
  return rc;
}

/* ---- writing ------------------------------------------------------------------------------ */

static const char *const insert_sql =
    "INSERT OR REPLACE INTO results (" RESULTS_COLUMNS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

static int bind_row(sqlite3_stmt *st, const tune_row *r, long long now) {
  int rc = SQLITE_OK;
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 9, r->config, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 10, r->base ? r->base : "", -1, SQLITE_STATIC);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_text(st, 11, r->kernel ? r->kernel : "", -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(st, 12, r->time_us);
  if (rc == SQLITE_OK)
    rc = isnan(r->metric) ? sqlite3_bind_null(st, 13) : sqlite3_bind_double(st, 13, r->metric);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_text(st, 14, r->metric_name ? r->metric_name : "", -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 15, r->sweep ? r->sweep : "", -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 16, r->when ? r->when : now);
  return rc;
}

int tunedb_put(tunedb *t, const tune_key *key, const tune_row *rows, int n, char *err,
               size_t errlen) {
  if (!t) {
    util_set_err(err, errlen, "tunedb_put: no database");
    return -1;
  }
  if (check_key(t, key, err, errlen) != 0) return -1;
  if (n < 0 || (n > 0 && !rows)) {
    util_set_err(err, errlen, "tune database %s: tunedb_put: %d rows at %p", t->path, n,
            (const void *)rows);
    return -1;
  }
  if (n == 0) return 0;

  char kt[512], what[1024];
  key_text(key, kt, sizeof kt);
  snprintf(what, sizeof what, "cannot start storing results for %s", kt);
  if (tdb_exec(t, "BEGIN IMMEDIATE", what, err, errlen) != 0) return -1;

  sqlite3_stmt *st = NULL;
  snprintf(what, sizeof what, "cannot store results for %s", kt);
  if (tdb_prepare(t, insert_sql, &st, what, err, errlen) != 0) goto fail;
  int rc = bind_key(st, key);
  if (rc != SQLITE_OK) {
    tdb_err(t, rc, what, err, errlen);
    goto fail;
  }
  long long now = (long long)time(NULL);
  for (int i = 0; i < n; i++) {
    const tune_row *r = &rows[i];
    if (!r->config) {
      util_set_err(err, errlen,
              "tune database %s: cannot store results for %s: row %d has no config (use \"\" "
              "for the base config); nothing was stored", t->path, kt, i);
      goto fail;
    }
    if (!isfinite(r->time_us) || r->time_us <= 0) {
      util_set_err(err, errlen,
              "tune database %s: cannot store results for %s: row %d (config \"%s\") has time "
              "%g us, not a positive finite time; nothing was stored", t->path, kt, i, r->config,
              r->time_us);
      goto fail;
    }
    rc = bind_row(st, r, now);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
      snprintf(what, sizeof what, "cannot store results for %s: row %d (config \"%s\")", kt, i,
               r->config);
      tdb_err(t, rc, what, err, errlen);
      goto fail;
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  st = NULL;
  snprintf(what, sizeof what, "cannot commit results for %s", kt);
  if (tdb_exec(t, "COMMIT", what, err, errlen) != 0) goto fail;
  return 0;
fail:
  sqlite3_finalize(st); /* NULL is fine */
  tdb_rollback(t);
  return -1;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Fastest first; equal times by config, so the order never depends on insertion.  ?9 is the
 * row limit (-1: all).  Rows without a good time are not read. */
static const char *const select_sql =
    "SELECT config, base, kernel, time_us, metric, metric_name, sweep, recorded FROM results"
    " WHERE gpu = ?1 AND sm = ?2 AND driver = ?3 AND nvrtc = ?4 AND ranks = ?5 AND family = ?6"
    " AND dtype = ?7 AND shape = ?8 AND " GOOD_TIME " ORDER BY time_us, config LIMIT ?9";

/* A text column as a malloc'd string ("" for NULL).  NULL only when out of memory. */
static char *column_dup(sqlite3_stmt *st, int col) {
  const unsigned char *s = sqlite3_column_text(st, col);
  int len = sqlite3_column_bytes(st, col);
  if (!s) {
    if (sqlite3_column_type(st, col) != SQLITE_NULL) return NULL; /* conversion ran out of memory */
    len = 0;
  }
  char *d = malloc((size_t)len + 1);
  if (!d) return NULL;
  if (len) memcpy(d, s, (size_t)len);
  d[len] = '\0';
  return d;
}

/* Fills r from the current result row; 0, or -1 when out of memory (r freed). */
static int read_row(sqlite3_stmt *st, tune_row *r) {
  memset(r, 0, sizeof *r);
  r->config = column_dup(st, 0);
  r->base = column_dup(st, 1);
  r->kernel = column_dup(st, 2);
  r->time_us = sqlite3_column_double(st, 3);
  r->metric = sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4);
  r->metric_name = column_dup(st, 5);
  r->sweep = column_dup(st, 6);
  r->when = sqlite3_column_int64(st, 7);
  if (!r->config || !r->base || !r->kernel || !r->metric_name || !r->sweep) {
    tunedb_row_free(r);
    return -1;
  }
  return 0;
}

/* The rows for key, at most limit (-1: all), fastest first.  0, or -1 with err. */
static int query(tunedb *t, const tune_key *key, int limit, tune_row **rows, int *n, char *err,
                 size_t errlen) {
  *rows = NULL;
  *n = 0;
  if (check_key(t, key, err, errlen) != 0) return -1;
  char kt[512], what[1024];
  key_text(key, kt, sizeof kt);
  snprintf(what, sizeof what, "cannot read results for %s", kt);
  sqlite3_stmt *st = NULL;
  if (tdb_prepare(t, select_sql, &st, what, err, errlen) != 0) return -1;
  int rc = bind_key(st, key);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 9, limit);
  if (rc != SQLITE_OK) {
    tdb_err(t, rc, what, err, errlen);
    sqlite3_finalize(st);
    return -1;
  }
  tune_row *out = NULL;
  int count = 0, cap = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == cap) {
      if (cap > INT_MAX / 2) goto nomem;
      int ncap = cap ? cap * 2 : 16;
      tune_row *grown = realloc(out, (size_t)ncap * sizeof *grown);
      if (!grown) goto nomem;
      out = grown;
      cap = ncap;
    }
    if (read_row(st, &out[count]) != 0) goto nomem;
    count++;
  }
  if (rc != SQLITE_DONE) {
    tdb_err(t, rc, what, err, errlen);
    goto fail;
  }
  sqlite3_finalize(st);
  *rows = out;
  *n = count;
  return 0;
nomem:
  util_set_err(err, errlen, "tune database %s: %s: out of memory", t->path, what);
fail:
  sqlite3_finalize(st);
  tunedb_rows_free(out, count);
  return -1;
}

int tunedb_best(tunedb *t, const tune_key *key, tune_row *out, char *err, size_t errlen) {
  if (!t || !out) {
    util_set_err(err, errlen, "tunedb_best: no database or no place for the result");
    if (out) memset(out, 0, sizeof *out);
    return -1;
  }
  memset(out, 0, sizeof *out);
  tune_row *rows = NULL;
  int n = 0;
  if (query(t, key, 1, &rows, &n, err, errlen) != 0) return -1;
  if (n == 0) return 1;
  *out = rows[0]; /* the strings move to *out */
  free(rows);
  return 0;
}

int tunedb_list(tunedb *t, const tune_key *key, tune_row **rows, int *n, char *err,
                size_t errlen) {
  if (!t || !rows || !n) {
    util_set_err(err, errlen, "tunedb_list: no database or no place for the result");
    if (rows) *rows = NULL;
    if (n) *n = 0;
    return -1;
  }
  return query(t, key, -1, rows, n, err, errlen);
}

void tunedb_row_free(tune_row *r) {
  if (!r) return;
  free(r->config);
  free(r->base);
  free(r->kernel);
  free(r->metric_name);
  free(r->sweep);
  r->config = r->base = r->kernel = r->metric_name = r->sweep = NULL;
}

void tunedb_rows_free(tune_row *rows, int n) {
  if (!rows) return;
  for (int i = 0; i < n; i++) tunedb_row_free(&rows[i]);
  free(rows);
}

/* ---- best per group ------------------------------------------------------------------------ */

/* Columns 0..7 as select_sql (read_row), then the group's fields.  row_number() ranks the rows
 * of each group, fastest first and ties by config, so the answer never depends on insertion
 * order; the fastest TUNEDB_PER_GROUP of each are returned, because the key has no column for
 * the family's key fields (op, residual, eps, ...): one group may hold rows of several, and the
 * caller keeps the fastest row of each it needs. */
#define TUNEDB_PER_GROUP_TEXT "32"   /* TUNEDB_PER_GROUP in tunedb.h */
#define BEST_COLUMNS                                                                               \
  "SELECT config, base, kernel, time_us, metric, metric_name, sweep, recorded, shape, driver, nvrtc," \
  " family, dtype, ranks, quote(time_us), " GOOD_TIME " FROM (SELECT *, row_number() OVER (PARTITION BY "
/* (the nearest rows skip bad times; the export's keep them, after the good ones, to say why each
 * is not exported) */
static const char *const nearest_sql =
    BEST_COLUMNS "shape, driver, nvrtc ORDER BY time_us, config) AS rn FROM results WHERE gpu = ?1 AND sm = ?2"
    " AND ranks = ?3 AND family = ?4 AND dtype = ?5 AND " GOOD_TIME ") WHERE rn <= " TUNEDB_PER_GROUP_TEXT
    " ORDER BY shape, driver, nvrtc, rn";
static const char *const per_shape_sql =
    BEST_COLUMNS "family, dtype, ranks, shape ORDER BY " GOOD_TIME " DESC, time_us, config) AS rn FROM results"
    " WHERE gpu = ?1 AND sm = ?2 AND driver = ?3 AND nvrtc = ?4) WHERE rn <= " TUNEDB_PER_GROUP_TEXT
    " ORDER BY family, dtype, ranks, shape, rn";

void tunedb_best_free(tune_best *v, int n) {
  if (!v) return;
  for (int i = 0; i < n; i++) {
    free(v[i].family); free(v[i].dtype); free(v[i].shape); free(v[i].nvrtc); free(v[i].time_text);
    tunedb_row_free(&v[i].row);
  }
  free(v);
}

/* Runs a prepared, bound best-per-group statement (finalizing it). */
static int read_best(tunedb *t, sqlite3_stmt *st, const char *what, tune_best **out, int *n, char *err, size_t errlen) {
  tune_best *v = NULL;
  int count = 0, cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == cap) {
      int ncap = cap ? cap * 2 : 16;
      tune_best *g = cap > INT_MAX / 2 ? NULL : realloc(v, (size_t)ncap * sizeof *g);
      if (!g) goto nomem;
      v = g;
      cap = ncap;
    }
    tune_best *b = &v[count];
    memset(b, 0, sizeof *b);
    if (read_row(st, &b->row) != 0) goto nomem;
    count++;
    b->shape = column_dup(st, 8);
    b->driver = sqlite3_column_int64(st, 9);   /* (64 bits: a stored 2^32 + 1 must not read as 1) */
    b->nvrtc = column_dup(st, 10);
    b->family = column_dup(st, 11);
    b->dtype = column_dup(st, 12);
    b->ranks = sqlite3_column_int64(st, 13);
    b->time_text = column_dup(st, 14);
    b->time_ok = sqlite3_column_int(st, 15);
    if (!b->shape || !b->nvrtc || !b->family || !b->dtype || !b->time_text) goto nomem;
  }
  if (rc != SQLITE_DONE) {
    tdb_err(t, rc, what, err, errlen);
    goto fail;
  }
  sqlite3_finalize(st);
  *out = v;
  *n = count;
  return 0;
nomem:
  util_set_err(err, errlen, "tune database %s: %s: out of memory", t->path, what);
fail:
  sqlite3_finalize(st);
  tunedb_best_free(v, count);
  return -1;
}

int tunedb_nearest(tunedb *t, const char *gpu, int sm, int ranks, const char *family, const char *dtype,
                   tune_best **out, int *n, char *err, size_t errlen) {
  if (!out || !n) { util_set_err(err, errlen, "tunedb_nearest: no place for the result"); return -1; }
  *out = NULL;
  *n = 0;
  if (!t || !gpu || !family || !dtype) { util_set_err(err, errlen, "tunedb_nearest: no database, gpu, family or dtype"); return -1; }
  char what[512];
  snprintf(what, sizeof what, "cannot read the results near %s %s on %s (sm_%d, %d rank%s)", family, dtype, gpu, sm,
           ranks, ranks == 1 ? "" : "s");
  sqlite3_stmt *st = NULL;
  if (tdb_prepare(t, nearest_sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_bind_text(st, 1, gpu, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 2, sm);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, ranks);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, family, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 5, dtype, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) { tdb_err(t, rc, what, err, errlen); sqlite3_finalize(st); return -1; }
  return read_best(t, st, what, out, n, err, errlen);
}

int tunedb_best_per_shape(tunedb *t, const char *gpu, int sm, int driver, const char *nvrtc, tune_best **out, int *n,
                          char *err, size_t errlen) {
  if (!out || !n) { util_set_err(err, errlen, "tunedb_best_per_shape: no place for the result"); return -1; }
  *out = NULL;
  *n = 0;
  if (!t || !gpu || !nvrtc) { util_set_err(err, errlen, "tunedb_best_per_shape: no database, gpu or nvrtc"); return -1; }
  char what[512];
  snprintf(what, sizeof what, "cannot read the best results on %s (sm_%d, driver %d, NVRTC %s)", gpu, sm, driver, nvrtc);
  sqlite3_stmt *st = NULL;
  if (tdb_prepare(t, per_shape_sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_bind_text(st, 1, gpu, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 2, sm);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, driver);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, nvrtc, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) { tdb_err(t, rc, what, err, errlen); sqlite3_finalize(st); return -1; }
  return read_best(t, st, what, out, n, err, errlen);
}
