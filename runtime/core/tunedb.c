/* tunedb.c: the tuning database (behaviour documented in tunedb.h).
 *
 * Schema, version 1:
 *
 *   tunedb_schema(version INTEGER NOT NULL)           one row: the schema version
 *   results(gpu, sm, driver, nvrtc, ranks, family, dtype, shape,    -- the tune_key
 *           config,                                                 -- the candidate
 *           base, kernel, time_us, metric, metric_name, sweep, recorded,
 *           PRIMARY KEY (the key's eight fields, config))
 *
 * The primary key makes "same key and config" one row: INSERT OR REPLACE swaps the older one out,
 * and lookups by key use the key's index prefix.  metric is NULL where the caller had none (NaN).
 *
 * Concurrency: WAL journal mode (readers do not block the writer nor the writer them), a busy
 * timeout, and BEGIN IMMEDIATE for every write, so a writer takes the write lock up front; a
 * deferred transaction that reads first and writes later can fail with SQLITE_BUSY at once,
 * without waiting, when another writer got in between.  Every value goes through a bound
 * parameter of a prepared statement; the only SQL text is fixed at compile time.
 */
#include "tunedb.h"

#include "util.h"

#include <sqlite3.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define TUNEDB_SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 30000

struct tunedb {
  sqlite3 *db;
  char *path; /* for tunedb_path and every message */
};

/* ---- small helpers ------------------------------------------------------------------------ */




/* A hint for the errors that mean the file itself is bad, not the call. */
static const char *damage_hint(int rc) {
  switch (rc & 0xff) {
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return " (the file is damaged or not an SQLite database: move it away; tuning results are "
           "only measurements and can be taken again)";
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return " (another process held the database for more than 30 s)";
  default:
    return "";
  }
}

/* ---- choosing and preparing the path ------------------------------------------------------ */

/* The default path (see tunedb.h), malloc'd; NULL with err. */
static char *default_path(char *err, size_t errlen) {
  return util_weft_cache_path("WEFT_TUNE_DB", "tune.db", "no place for the tune database", err, errlen);
}

/* Creates the folder that will hold path (mkdir -p, mode 0700 for what it creates).  Folders
 * that exist are left as they are. */
static int make_parent(const char *path, char *err, size_t errlen) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return 0; /* in the current folder, or in "/" */
  char *p = util_strprintf("%.*s", (int)(slash - path), path);
  if (!p) {
    util_set_err(err, errlen, "out of memory creating the folder of tune database %s", path);
    return -1;
  }
  char e[512];
  int rc = util_mkdirs(p, 0700, e, sizeof e);
  if (rc) util_set_err(err, errlen, "tune database %s: %s", path, e);
  free(p);
  return rc;
}

/* ---- SQLite helpers ----------------------------------------------------------------------- */

/* Sets err to "tune database <path>: <what>: <SQLite's message><hint>".  Call it before any
 * ROLLBACK, which would replace SQLite's message. */
static void db_err(const tunedb *t, int rc, const char *what, char *err, size_t errlen) {
  util_set_err(err, errlen, "tune database %s: %s: %s%s", t->path, what, sqlite3_errmsg(t->db),
          damage_hint(rc));
}

/* Runs fixed SQL (no values in it).  0, or -1 with err. */
static int exec_sql(tunedb *t, const char *sql, const char *what, char *err, size_t errlen) {
  int rc = sqlite3_exec(t->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    db_err(t, rc, what, err, errlen);
    return -1;
  }
  return 0;
}

/* Ends an open transaction without keeping anything.  The caller has set err already. */
static void rollback(tunedb *t) {
  if (!sqlite3_get_autocommit(t->db)) sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}

static int prepare(tunedb *t, const char *sql, sqlite3_stmt **st, const char *what, char *err,
                   size_t errlen) {
  int rc = sqlite3_prepare_v2(t->db, sql, -1, st, NULL);
  if (rc != SQLITE_OK) {
    db_err(t, rc, what, err, errlen);
    sqlite3_finalize(*st);
    *st = NULL;
    return -1;
  }
  return 0;
}

/* Runs a statement that returns one integer (or NULL: *isnull).  0, or -1 with err. */
static int query_int(tunedb *t, const char *sql, long long *out, int *isnull, const char *what,
                     char *err, size_t errlen) {
  sqlite3_stmt *st = NULL;
  if (prepare(t, sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE) util_set_err(err, errlen, "tune database %s: %s: no result", t->path, what);
    else db_err(t, rc, what, err, errlen);
    sqlite3_finalize(st);
    return -1;
  }
  if (isnull) *isnull = sqlite3_column_type(st, 0) == SQLITE_NULL;
  *out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return 0;
}

/* ---- opening ------------------------------------------------------------------------------ */

/* PRAGMA journal_mode=WAL.  Switching modes needs an exclusive lock; a process that is creating
 * the same new file at this moment can make it fail with SQLITE_BUSY, so it is retried for as
 * long as the busy timeout would wait. */
static int set_wal(tunedb *t, char *err, size_t errlen) {
  const char *what = "cannot switch to WAL journal mode";
  for (int waited_ms = 0;; waited_ms += 10) {
    sqlite3_stmt *st = NULL;
    if (prepare(t, "PRAGMA journal_mode=WAL", &st, what, err, errlen) != 0) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const char *mode = (const char *)sqlite3_column_text(st, 0);
      int ok = mode && strcmp(mode, "wal") == 0;
      if (!ok)
        util_set_err(err, errlen,
                "tune database %s: cannot switch to WAL journal mode (it stays in \"%s\" mode); "
                "several processes could not tune at once: put the database on a local file "
                "system (WEFT_TUNE_DB)", t->path, mode ? mode : "?");
      sqlite3_finalize(st);
      return ok ? 0 : -1;
    }
    int busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || waited_ms >= BUSY_TIMEOUT_MS) {
      db_err(t, rc, what, err, errlen);
      sqlite3_finalize(st);
      return -1;
    }
    sqlite3_finalize(st);
    sqlite3_sleep(10);
  }
}

/* The results table's columns, in RESULTS_DEFS' order: the INSERT names them, and a file's table
 * is checked to have every one (by name), each of the type RESULTS_DEFS gives it. */
#define RESULTS_COLUMNS                                                                              \
  "gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config, base, kernel, time_us, metric, "     \
  "metric_name, sweep, recorded"
#define RESULTS_NCOLUMNS 16
#define RESULTS_DEFS                                                                                 \
  " gpu TEXT NOT NULL, sm INTEGER NOT NULL, driver INTEGER NOT NULL, nvrtc TEXT NOT NULL,"         \
  " ranks INTEGER NOT NULL, family TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,"       \
  " config TEXT NOT NULL,"                                                                         \
  " base TEXT NOT NULL, kernel TEXT NOT NULL, time_us REAL NOT NULL, metric REAL,"                 \
  " metric_name TEXT NOT NULL, sweep TEXT NOT NULL, recorded INTEGER NOT NULL,"                    \
  " PRIMARY KEY (gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config)"

static const char *const create_results = "CREATE TABLE IF NOT EXISTS results (" RESULTS_DEFS ")";

/* A time a reader may rank: a positive, finite number (a hand-edited row's 0, -5, 'abc' or NULL,
 * or a text-typed column's '1006.3', would sort first or as text). */
#define GOOD_TIME "(typeof(time_us) IN ('real', 'integer') AND time_us > 0 AND time_us < 9e999)"

/* Each column of the file's results table has the type weft declares (a TEXT time_us sorts
 * "1006.3" before "115.7"): compared with a temporary table made from RESULTS_DEFS (the temp
 * schema is writable on a read-only connection too).  0, or -1 with err naming the column. */
static int check_types(tunedb *t, char *err, size_t errlen) {
  if (exec_sql(t, "CREATE TEMP TABLE IF NOT EXISTS weft_results (" RESULTS_DEFS ")", "cannot check the results table",
               err, errlen) != 0)
    return -1;
  sqlite3_stmt *st = NULL;
  const char *what = "cannot read the results table's columns";
  if (prepare(t,
              "SELECT w.name, w.type, r.type FROM pragma_table_info('weft_results', 'temp') w JOIN "
              "pragma_table_info('results') r ON r.name = w.name WHERE upper(r.type) != w.type ORDER BY w.cid LIMIT 1",
              &st, what, err, errlen) != 0)
    return -1;
  int rc = sqlite3_step(st), bad = rc == SQLITE_ROW;
  if (bad) {
    const char *have = (const char *)sqlite3_column_text(st, 2);
    util_set_err(err, errlen, "tune database %s: its results table's column %s is declared \"%.40s\", not %s as weft "
                 "makes it: the file is damaged or another program's; move it away", t->path,
                 (const char *)sqlite3_column_text(st, 0), have ? have : "", (const char *)sqlite3_column_text(st, 1));
  } else if (rc != SQLITE_DONE) {
    db_err(t, rc, what, err, errlen);
    bad = 1;
  }
  sqlite3_finalize(st);
  return bad ? -1 : 0;
}

/* The file's schema: 0 with *empty = 1 for a file without one (new, or empty), 0 with *empty = 0
 * for a usable version; -1 with err for someone else's SQLite file (a mistyped WEFT_TUNE_DB), a
 * damaged version, or a newer one.  Reads only. */
static int read_schema(tunedb *t, int *empty, char *err, size_t errlen) {
  long long have = 0, others = 0, version = 0;
  int isnull = 0;
  *empty = 0;
  if (query_int(t,
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                "'tunedb_schema'",
                &have, NULL, "cannot read the schema", err, errlen) != 0)
    return -1;
  if (!have) {
    if (query_int(t,
                  "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                  &others, NULL, "cannot read the schema", err, errlen) != 0)
      return -1;
    if (others) {
      util_set_err(err, errlen,
              "tune database %s is an SQLite database but not a weft tune database (it has no "
              "tunedb_schema table): refusing to change it; point WEFT_TUNE_DB elsewhere",
              t->path);
      return -1;
    }
    *empty = 1;
    return 0;
  }
  if (query_int(t, "SELECT max(version) FROM tunedb_schema", &version, &isnull,
                "cannot read the schema version", err, errlen) != 0)
    return -1;
  if (isnull) {
    util_set_err(err, errlen,
            "tune database %s has no schema version (its tunedb_schema table is empty): the file "
            "is damaged; move it away", t->path);
    return -1;
  }
  if (version > TUNEDB_SCHEMA_VERSION) {
    util_set_err(err, errlen,
            "tune database %s has schema version %lld, newer than this weft understands "
            "(version %d): use a newer weft, or point WEFT_TUNE_DB at another file",
            t->path, version, TUNEDB_SCHEMA_VERSION);
    return -1;
  }
  if (version < 1) {
    util_set_err(err, errlen, "tune database %s has an invalid schema version (%lld read as a number; weft writes "
                 "1 and up): move it away", t->path, version);
    return -1;
  }
  /* its results table, where there is one, has weft's columns: else every store would fail, after
   * the whole run */
  long long tables = 0, cols = 0;
  if (query_int(t, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'results'", &tables, NULL,
                "cannot read the schema", err, errlen) != 0)
    return -1;
  if (tables && query_int(t,
                          "SELECT count(*) FROM pragma_table_info('results') WHERE "
                          "instr(name, ',') = 0 AND instr(', " RESULTS_COLUMNS ", ', ', ' || name || ', ') > 0",
                          &cols, NULL, "cannot read the results table's columns", err, errlen) != 0)
    return -1;
  if (tables && cols != RESULTS_NCOLUMNS) {
    util_set_err(err, errlen, "tune database %s: its results table has %lld of weft's %d columns (" RESULTS_COLUMNS
                 "): the file is damaged or another program's; move it away", t->path, cols, RESULTS_NCOLUMNS);
    return -1;
  }
  return tables ? check_types(t, err, errlen) : 0;
}

/* Under the write lock: the schema read, created when the file has none. */
static int ensure_schema(tunedb *t, char *err, size_t errlen) {
  if (exec_sql(t, "BEGIN IMMEDIATE", "cannot lock it to check the schema", err, errlen) != 0)
    return -1;
  int empty = 0;
  if (read_schema(t, &empty, err, errlen) != 0) goto fail;
  if (empty && exec_sql(t,
                        "CREATE TABLE tunedb_schema (version INTEGER NOT NULL);"
                        "INSERT INTO tunedb_schema (version) VALUES (1)",
                        "cannot create the schema", err, errlen) != 0)
    goto fail;
  if (exec_sql(t, create_results, "cannot create the results table", err, errlen) != 0) goto fail;
  if (exec_sql(t, "COMMIT", "cannot commit the schema", err, errlen) != 0) goto fail;
  return 0;
fail:
  rollback(t);
  return -1;
}

/* path as an SQLite URI naming that file and nothing else (malloc'd; NULL out of memory): every
 * byte but [A-Za-z0-9/._~-] percent-encoded.  SQLite as Debian builds it reads a name that starts
 * with "file:" as a URI (--db 'file:x?mode=memory' was an in-memory database), so every name goes
 * through this; an absolute path gets the empty authority ("file:///abs").  immutable: "?immutable=1". */
static char *path_uri(const char *path, int immutable) {
  util_buf u = {0};
  util_buf_printf(&u, "file:%s", path[0] == '/' ? "//" : "");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/._~-", *p))
      util_buf_printf(&u, "%c", *p);
    else
      util_buf_printf(&u, "%%%02X", *p);
  }
  if (immutable) util_buf_printf(&u, "?immutable=1");
  if (u.oom) { util_buf_free(&u); return NULL; }
  return u.p;
}

/* A handle with its path chosen (see tunedb.h) and the file opened with flags: 0, or -1 with err
 * (*out holds what was made, for tunedb_close).  immutable: opened as a file nothing changes
 * (no lock, no -shm; see tunedb_open_readonly). */
static int open_handle(tunedb **out, const char *path, int flags, int make_folder, int immutable, char *err,
                       size_t errlen) {
  tunedb *t = *out = calloc(1, sizeof *t);
  if (!t) {
    util_set_err(err, errlen, "out of memory opening the tune database");
    return -1;
  }
  if (path && !*path) {
    util_set_err(err, errlen, "tune database path is empty");
    return -1;
  }
  t->path = path ? util_strprintf("%s", path) : default_path(err, errlen);
  if (!t->path) {
    if (path) util_set_err(err, errlen, "out of memory opening tune database %s", path);
    return -1;
  }
  if (make_folder && make_parent(t->path, err, errlen) != 0) return -1;
  struct stat sb;
  if (stat(t->path, &sb) != 0) {
    if (!make_folder && errno == ENOENT) {   /* read-only: no file is no database (err says so, for a caller that tells) */
      util_set_err(err, errlen, "there is no tuning database at %s", t->path);
      return 1;
    }
  } else if (!S_ISREG(sb.st_mode)) {   /* SQLite would block on a named pipe, or say "disk I/O error" */
    util_set_err(err, errlen, "tune database %s is %s, not a file: point --db or WEFT_TUNE_DB at a file", t->path,
                 S_ISDIR(sb.st_mode) ? "a folder" : S_ISFIFO(sb.st_mode) ? "a named pipe" : "a device or socket");
    return -1;
  }
  char *uri = path_uri(t->path, immutable);
  if (!uri) {
    util_set_err(err, errlen, "tune database %s: cannot open it: out of memory", t->path);
    return -1;
  }
  int rc = sqlite3_open_v2(uri, &t->db, flags | SQLITE_OPEN_URI, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    if (t->db) db_err(t, rc, "cannot open it", err, errlen);
    else util_set_err(err, errlen, "tune database %s: cannot open it: out of memory", t->path);
    return -1;
  }
  sqlite3_extended_result_codes(t->db, 1);
  sqlite3_busy_timeout(t->db, BUSY_TIMEOUT_MS);
  return 0;
}

int tunedb_open(tunedb **out, const char *path, char *err, size_t errlen) {
  if (!out) {
    util_set_err(err, errlen, "tunedb_open: no place for the result");
    return -1;
  }
  tunedb *t = NULL;
  *out = NULL;
  if (open_handle(&t, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1, 0, err, errlen) != 0 ||
      set_wal(t, err, errlen) != 0 || ensure_schema(t, err, errlen) != 0) {
    tunedb_close(t);
    return -1;
  }
  *out = t;
  return 0;
}

/* 1 when the process may make files in path's folder (where SQLite puts -wal and -shm) */
static int folder_writable(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return access(".", W_OK | X_OK) == 0;
  if (slash == path) return access("/", W_OK | X_OK) == 0;
  char *dir = util_strprintf("%.*s", (int)(slash - path), path);
  int ok = !dir || access(dir, W_OK | X_OK) == 0;   /* (out of memory: say writable, no retry) */
  free(dir);
  return ok;
}

int tunedb_open_readonly(tunedb **out, const char *path, char *err, size_t errlen) {
  if (!out) {
    util_set_err(err, errlen, "tunedb_open_readonly: no place for the result");
    return -1;
  }
  tunedb *t = NULL;
  *out = NULL;
  int rc = open_handle(&t, path, SQLITE_OPEN_READONLY, 0, 0, err, errlen), empty = 0;
  if (rc == 0) rc = read_schema(t, &empty, err, errlen) != 0 ? -1 : empty;   /* an empty file: no rows */
  if (rc == -1 && t && t->db && !folder_writable(t->path)) {
    /* A database shared read-only (its folder too): reading a WAL file needs its -shm, which
     * nobody can make there ("attempt to write a readonly database").  Nothing can write it
     * there either, so it is read as immutable: no locks, no -shm. */
    tunedb *ro = NULL;
    char err2[1024];
    int rc2 = open_handle(&ro, t->path, SQLITE_OPEN_READONLY, 0, 1, err2, sizeof err2);
    if (rc2 == 0) rc2 = read_schema(ro, &empty, err2, sizeof err2) != 0 ? -1 : empty;
    if (rc2 != -1) {
      tunedb_close(t);
      t = ro;
      rc = rc2;
    } else {
      tunedb_close(ro);
    }
  }
  if (rc == 1 && empty) util_set_err(err, errlen, "tuning database %s has no schema and no rows (an empty file)", t->path);
  if (rc != 0) {
    tunedb_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

void tunedb_close(tunedb *t) {
  if (!t) return;
  sqlite3_close_v2(t->db); /* NULL is fine; every statement is finalized by now */
  free(t->path);
  free(t);
}

const char *tunedb_path(const tunedb *t) { return t ? t->path : NULL; }

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
  if (exec_sql(t, "BEGIN IMMEDIATE", what, err, errlen) != 0) return -1;

  sqlite3_stmt *st = NULL;
  snprintf(what, sizeof what, "cannot store results for %s", kt);
  if (prepare(t, insert_sql, &st, what, err, errlen) != 0) goto fail;
  int rc = bind_key(st, key);
  if (rc != SQLITE_OK) {
    db_err(t, rc, what, err, errlen);
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
      db_err(t, rc, what, err, errlen);
      goto fail;
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  st = NULL;
  snprintf(what, sizeof what, "cannot commit results for %s", kt);
  if (exec_sql(t, "COMMIT", what, err, errlen) != 0) goto fail;
  return 0;
fail:
  sqlite3_finalize(st); /* NULL is fine */
  rollback(t);
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
  if (prepare(t, select_sql, &st, what, err, errlen) != 0) return -1;
  int rc = bind_key(st, key);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 9, limit);
  if (rc != SQLITE_OK) {
    db_err(t, rc, what, err, errlen);
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
    db_err(t, rc, what, err, errlen);
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
    db_err(t, rc, what, err, errlen);
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
  if (prepare(t, nearest_sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_bind_text(st, 1, gpu, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 2, sm);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, ranks);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, family, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 5, dtype, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) { db_err(t, rc, what, err, errlen); sqlite3_finalize(st); return -1; }
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
  if (prepare(t, per_shape_sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_bind_text(st, 1, gpu, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 2, sm);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 3, driver);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 4, nvrtc, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) { db_err(t, rc, what, err, errlen); sqlite3_finalize(st); return -1; }
  return read_best(t, st, what, out, n, err, errlen);
}
