/* tunedb_file.c: the tuning database's file -- its path, opening it, its schema and journal
 * mode (behaviour documented in tunedb.h; the rows are tunedb.c's).
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
#include "tunedb_internal.h"

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

char *tunedb_default_path(char *err, size_t errlen) {
  return util_weft_cache_path("WEFT_TUNE_DB", "tune.db", "no place for the tune database", err, errlen);
}

/* Creates the folder that will hold path (mkdir -p, mode 0700 for what it creates).  Folders
 * that exist are left as they are. */
static int make_parent(const char *path, char *err, size_t errlen) {
  if (!strchr(path, '/')) return 0;   /* in the current folder */
  char *dir = util_path_dir(path);
  if (!dir) {
    util_set_err(err, errlen, "out of memory creating the folder of tune database %s", path);
    return -1;
  }
  int rc = strcmp(dir, "/") ? util_mkdirs(dir, 0700, err, errlen) : 0;   /* ("/" is there) */
  free(dir);
  if (rc) {   /* err = "tune database PATH: " + util_mkdirs' message, as long as err can hold */
    char *why = util_strdup(err);
    util_set_err(err, errlen, "tune database %s: %s", path, why ? why : "cannot create its folder");
    free(why);
  }
  return rc;
}

/* ---- SQLite helpers ----------------------------------------------------------------------- */

void tdb_err(const tunedb *t, int rc, const char *what, char *err, size_t errlen) {
  util_set_err(err, errlen, "tune database %s: %s: %s%s", t->path, what, sqlite3_errmsg(t->db),
          damage_hint(rc));
}

int tdb_exec(tunedb *t, const char *sql, const char *what, char *err, size_t errlen) {
  int rc = sqlite3_exec(t->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    tdb_err(t, rc, what, err, errlen);
    return -1;
  }
  return 0;
}

void tdb_rollback(tunedb *t) {
  if (!sqlite3_get_autocommit(t->db)) sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}

int tdb_prepare(tunedb *t, const char *sql, sqlite3_stmt **st, const char *what, char *err, size_t errlen) {
  int rc = sqlite3_prepare_v2(t->db, sql, -1, st, NULL);
  if (rc != SQLITE_OK) {
    tdb_err(t, rc, what, err, errlen);
    sqlite3_finalize(*st);
    *st = NULL;
    return -1;
  }
  return 0;
}

int tunedb_check(tunedb *t, char *err, size_t errlen) {
  sqlite3_stmt *st = NULL;
  if (tdb_prepare(t, "PRAGMA quick_check(1)", &st, "cannot check it", err, errlen) != 0) return -1;
  int rc = sqlite3_step(st);
  const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  int ok = res && !strcmp(res, "ok");
  if (rc != SQLITE_ROW) tdb_err(t, rc, "cannot check it", err, errlen);
  else if (!ok) {   /* (its report, "*** in database main ***\nOn tree page 5 ...", on one line) */
    char first[512];
    util_set_err(err, errlen, "tune database %s is damaged (SQLite's quick check: %s): move it away; tuning results "
                 "are only measurements and can be taken again", t->path, util_printable(res ? res : "?", first, sizeof first));
  }
  sqlite3_finalize(st);
  return ok ? 0 : -1;
}

/* Runs a statement that returns one integer (or NULL: *isnull).  0, or -1 with err. */
static int query_int(tunedb *t, const char *sql, long long *out, int *isnull, const char *what,
                     char *err, size_t errlen) {
  sqlite3_stmt *st = NULL;
  if (tdb_prepare(t, sql, &st, what, err, errlen) != 0) return -1;
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE) util_set_err(err, errlen, "tune database %s: %s: no result", t->path, what);
    else tdb_err(t, rc, what, err, errlen);
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
    if (tdb_prepare(t, "PRAGMA journal_mode=WAL", &st, what, err, errlen) != 0) return -1;
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
      tdb_err(t, rc, what, err, errlen);
      sqlite3_finalize(st);
      return -1;
    }
    sqlite3_finalize(st);
    sqlite3_sleep(10);
  }
}

/* The results table as weft makes it, in RESULTS_COLUMNS' order: a file's table is checked to
 * have every column (by name), each of the type given here. */
#define RESULTS_DEFS                                                                                 \
  " gpu TEXT NOT NULL, sm INTEGER NOT NULL, driver INTEGER NOT NULL, nvrtc TEXT NOT NULL,"         \
  " ranks INTEGER NOT NULL, family TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,"       \
  " config TEXT NOT NULL,"                                                                         \
  " base TEXT NOT NULL, kernel TEXT NOT NULL, time_us REAL NOT NULL, metric REAL,"                 \
  " metric_name TEXT NOT NULL, sweep TEXT NOT NULL, recorded INTEGER NOT NULL,"                    \
  " PRIMARY KEY (gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config)"

static const char *const create_results = "CREATE TABLE IF NOT EXISTS results (" RESULTS_DEFS ")";

/* The file's results table against weft's, one pass over weft's columns (a temporary table made
 * from RESULTS_DEFS: the temp schema is writable on a read-only connection too).  Each must be
 * there by name, else every store would fail, after the whole run; and each of the type weft
 * declares (a TEXT time_us sorts "1006.3" before "115.7").  0, or -1 with err: the columns missing
 * first, else the first column of another type, named. */
static int check_results(tunedb *t, char *err, size_t errlen) {
  if (tdb_exec(t, "CREATE TEMP TABLE IF NOT EXISTS weft_results (" RESULTS_DEFS ")", "cannot check the results table",
               err, errlen) != 0)
    return -1;
  sqlite3_stmt *st = NULL;
  const char *what = "cannot read the results table's columns";
  if (tdb_prepare(t,
              "SELECT w.name, w.type, r.type, r.name IS NOT NULL, upper(r.type) != w.type FROM "
              "pragma_table_info('weft_results', 'temp') w LEFT JOIN pragma_table_info('results') r ON r.name = w.name "
              "ORDER BY w.cid",
              &st, what, err, errlen) != 0)
    return -1;
  int rc, want = 0, have = 0, mistyped = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    want++;
    if (!sqlite3_column_int(st, 3)) continue;
    have++;
    if (mistyped || !sqlite3_column_int(st, 4)) continue;
    mistyped = 1;   /* (said unless a column is missing too) */
    const char *declared = (const char *)sqlite3_column_text(st, 2);
    util_set_err(err, errlen, "tune database %s: its results table's column %s is declared \"%.40s\", not %s as weft "
                 "makes it: the file is damaged or another program's; move it away", t->path,
                 (const char *)sqlite3_column_text(st, 0), declared ? declared : "",
                 (const char *)sqlite3_column_text(st, 1));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    tdb_err(t, rc, what, err, errlen);
    return -1;
  }
  if (have < want)
    util_set_err(err, errlen, "tune database %s: its results table has %d of weft's %d columns (" RESULTS_COLUMNS
                 "): the file is damaged or another program's; move it away", t->path, have, want);
  return have < want || mistyped ? -1 : 0;
}

/* The file's schema: 0 with *empty = 1 for a file without one (new, or empty), 0 with *empty = 0
 * for a usable version; -1 with err for someone else's SQLite file (a mistyped WEFT_TUNE_DB), a
 * damaged version, or a newer one.  Reads only. */
static int read_schema(tunedb *t, int *empty, char *err, size_t errlen) {
  long long state = 0, others = 0, version = 0;
  int isnull = 0;
  *empty = 0;
  /* One statement, so one snapshot: read as two, a process creating the same new file could
   * commit its schema between them, and the file looked like another program's (no
   * tunedb_schema, then tables). */
  if (query_int(t,
                "SELECT CASE WHEN EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                "name = 'tunedb_schema') THEN 1 WHEN EXISTS (SELECT 1 FROM sqlite_master WHERE "
                "name NOT LIKE 'sqlite\\_%' ESCAPE '\\') THEN 2 ELSE 0 END",
                &state, NULL, "cannot read the schema", err, errlen) != 0)
    return -1;
  if (state == 2) {
    util_set_err(err, errlen,
            "tune database %s is an SQLite database but not a weft tune database (it has no "
            "tunedb_schema table): refusing to change it; point WEFT_TUNE_DB elsewhere",
            t->path);
    return -1;
  }
  if (state == 0) {
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
  /* its results table, where there is one, is weft's; a view (or index) of that name would be
   * left in place by CREATE TABLE IF NOT EXISTS, and every store would fail after the whole run */
  long long tables = 0;
  if (query_int(t, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'results'", &tables, NULL,
                "cannot read the schema", err, errlen) != 0 ||
      query_int(t, "SELECT count(*) FROM sqlite_master WHERE type != 'table' AND name = 'results'", &others, NULL,
                "cannot read the schema", err, errlen) != 0)
    return -1;
  if (others) {
    util_set_err(err, errlen, "tune database %s: its results is not a table (a view or an index of that name): the "
                 "file is damaged or another program's; move it away", t->path);
    return -1;
  }
  return tables ? check_results(t, err, errlen) : 0;
}

/* Under the write lock: the schema read, created when the file has none. */
static int ensure_schema(tunedb *t, char *err, size_t errlen) {
  if (tdb_exec(t, "BEGIN IMMEDIATE", "cannot lock it to check the schema", err, errlen) != 0)
    return -1;
  int empty = 0;
  if (read_schema(t, &empty, err, errlen) != 0) goto fail;
  if (empty && tdb_exec(t,
                        "CREATE TABLE tunedb_schema (version INTEGER NOT NULL);"
                        "INSERT INTO tunedb_schema (version) VALUES (1)",
                        "cannot create the schema", err, errlen) != 0)
    goto fail;
  if (tdb_exec(t, create_results, "cannot create the results table", err, errlen) != 0) goto fail;
  if (tdb_exec(t, "COMMIT", "cannot commit the schema", err, errlen) != 0) goto fail;
  return 0;
fail:
  tdb_rollback(t);
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
  t->path = path ? util_strprintf("%s", path) : tunedb_default_path(err, errlen);
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
    if (t->db) tdb_err(t, rc, "cannot open it", err, errlen);
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
  int empty = 0;
  /* the schema read first: another program's SQLite file is refused before WAL mode, which
   * persists in the file, is switched on */
  if (open_handle(&t, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1, 0, err, errlen) != 0 ||
      read_schema(t, &empty, err, errlen) != 0 || set_wal(t, err, errlen) != 0 || ensure_schema(t, err, errlen) != 0) {
    tunedb_close(t);
    return -1;
  }
  *out = t;
  return 0;
}

/* 1 when the process may make files in path's folder (where SQLite puts -wal and -shm) */
static int folder_writable(const char *path) {
  char *dir = util_path_dir(path);
  int ok = !dir || access(dir, W_OK | X_OK) == 0;   /* (out of memory: say writable, no retry) */
  free(dir);
  return ok;
}

/* 1 when path's -wal file is absent or empty: nothing is written beside the database that an
 * immutable open (which ignores the -wal) would miss */
static int no_wal(const char *path) {
  char *wal = util_strprintf("%s-wal", path);
  struct stat sb;
  int none = wal && (stat(wal, &sb) != 0 || sb.st_size == 0);
  free(wal);
  return none;
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
  int code = t && t->db ? sqlite3_errcode(t->db) & 0xff : 0;
  if (rc == -1 && (code == SQLITE_READONLY || code == SQLITE_CANTOPEN) && !folder_writable(t->path) &&
      no_wal(t->path)) {
    /* A database shared read-only (its folder too): reading a WAL file needs its -shm, which
     * this process cannot make there ("attempt to write a readonly database").  With no -wal
     * beside it, every committed row is in the file, so it is read as immutable: no locks, no
     * -shm.  (A -wal with rows in it, its owner writing: the first error stands.) */
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
