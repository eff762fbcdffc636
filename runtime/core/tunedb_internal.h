/* tunedb_internal.h: what tunedb.c (the rows) and tunedb_file.c (the file) share; not an API. */
#pragma once
#include <sqlite3.h>
#include <stddef.h>

#include "tunedb.h"

struct tunedb {
  sqlite3 *db;
  char *path; /* for tunedb_path and every message */
};

/* The results table's columns in order: the INSERT names them, and the file's check lists them
 * when some are missing (it checks them against RESULTS_DEFS, tunedb_file.c's CREATE TABLE). */
#define RESULTS_COLUMNS                                                                              \
  "gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config, base, kernel, time_us, metric, "     \
  "metric_name, sweep, recorded"

/* Sets err to "tune database <path>: <what>: <SQLite's message><hint>".  Call it before any
 * ROLLBACK, which would replace SQLite's message. */
void tdb_err(const tunedb *t, int rc, const char *what, char *err, size_t errlen);
/* Runs fixed SQL (no values in it).  0, or -1 with err. */
int tdb_exec(tunedb *t, const char *sql, const char *what, char *err, size_t errlen);
/* Ends an open transaction without keeping anything.  The caller has set err already. */
void tdb_rollback(tunedb *t);
/* sqlite3_prepare_v2: 0, or -1 with err (and *st NULL). */
int tdb_prepare(tunedb *t, const char *sql, sqlite3_stmt **st, const char *what, char *err, size_t errlen);
