/* tunedb.h: the tuning database of `weft tune` (autotune sweeps), one SQLite file.
 *
 * A sweep times many candidate configs of one kernel family on one problem and stores each
 * result here; later runs ask for the fastest config instead of sweeping again.
 *
 * - Location: an explicit path, else $WEFT_TUNE_DB, else $XDG_CACHE_HOME/weft/tune.db, else
 *   $HOME/.cache/weft/tune.db.  The folder is created (mode 0700) when missing.
 * - Several processes may tune at once (one sweep per GPU, or sweeps run side by side): the file
 *   is in WAL journal mode, so readers never wait for a writer; every write is one
 *   BEGIN IMMEDIATE transaction, so writers queue up instead of deadlocking; and a writer waits
 *   up to 30 s for the lock before giving up.
 * - The schema carries a version.  A file written by a newer weft (a version this build does not
 *   know) is refused rather than misread or altered; so is an SQLite file that holds other
 *   tables but is not a tune database (a mistyped WEFT_TUNE_DB).
 * - Every message names the database path and, where SQLite failed, its error text.  Nothing is
 *   printed and nothing exits: the caller decides.
 * - A tunedb handle belongs to one process: never use one across fork() (SQLite's rule; the
 *   child must open its own).  One handle is not for concurrent use by several threads.
 */
#ifndef WEFT_TUNEDB_H
#define WEFT_TUNEDB_H
#include <stddef.h>

typedef struct tunedb tunedb;

/* What a tuned result is valid for: the same GPU, architecture, driver, NVRTC, rank count,
 * family, dtype and problem shape.  A timing measured under any other combination says nothing
 * reliable about this one (other clocks, other code generation, other sizes), so every field is
 * part of the lookup and compared exactly (strings byte for byte).  All strings are required. */
typedef struct tune_key {
  const char *gpu;      /* device name, e.g. "NVIDIA H200" */
  int sm;               /* 90 */
  int driver;           /* CUDA driver version, e.g. 13000 */
  const char *nvrtc;    /* "13.0" */
  int ranks;            /* 1 for single-process families */
  const char *family;   /* "row_softmax" */
  const char *dtype;    /* "f32" */
  const char *shape;    /* "rows=8192 cols=32768" */
} tune_key;

/* One measured candidate.  config identifies the candidate within its key: it is compared byte
 * for byte, so the caller must write it in the canonical form below ("" = the base config with
 * no overrides).  On put, config is required and time_us must be finite and > 0; any other
 * string may be NULL (stored as ""), metric may be NaN (no metric), and when 0 means "now".
 * Rows returned by best/list have every string non-NULL and malloc'd (free with
 * tunedb_row_free / tunedb_rows_free); metric is NaN where none was stored. */
typedef struct tune_row {
  char *config;         /* the candidate's overrides, "key=value" one per line (values may hold spaces) */
  char *base;           /* the sweep's base config (Lua text returning a table) */
  char *kernel;         /* kernel name */
  double time_us;       /* median time */
  double metric;        /* e.g. GB/s */
  char *metric_name;    /* "GB/s" */
  char *sweep;          /* sweep file it came from */
  long long when;       /* unix seconds */
} tune_row;

/* path NULL: $WEFT_TUNE_DB, else $XDG_CACHE_HOME/weft/tune.db, else $HOME/.cache/weft/tune.db
 * (folder created 0700). 0 or -1 with err.
 * Opening creates the schema when missing (so it may wait for another writer, up to 30 s) and
 * refuses a file that is not a tune database, is corrupt, or has a newer schema version. */
int tunedb_open(tunedb **out, const char *path, char *err, size_t errlen);
/* For lookups only (weft_auto_choose, the export): opens an existing database read-only, never
 * creating a file, a folder or a schema and never taking the write lock.  0 opened; 1 there is
 * no database there (no file, or an empty one: no rows, not an error; err says which); -1 with
 * err (not a tune database, a newer schema, damaged). */
int tunedb_open_readonly(tunedb **out, const char *path, char *err, size_t errlen);
/* The path tunedb_open and tunedb_open_readonly take for path NULL ($WEFT_TUNE_DB, else
 * $XDG_CACHE_HOME/weft/tune.db, else $HOME/.cache/weft/tune.db), malloc'd; NULL with err when
 * none of the three is set, or out of memory.  Nothing is opened or created. */
char *tunedb_default_path(char *err, size_t errlen);
void tunedb_close(tunedb *db);            /* NULL is fine */
/* SQLite's quick check of every page (a damaged page deep in the file passes the open's checks
 * and fails only the store it is written in: weft tune asks before its run).  0, or -1 with err
 * naming the file and the first damage found. */
int tunedb_check(tunedb *db, char *err, size_t errlen);
const char *tunedb_path(const tunedb *db);
/* Stores rows for key in ONE transaction (all or nothing). A row with the same key and config
 * replaces the older one. 0 or -1 with err.
 * All or nothing because a sweep's results are only comparable with each other: half a sweep
 * stored would make `best` pick among an arbitrary subset.  An invalid row (NULL config, bad
 * time) fails the whole call and leaves the database as it was. */
int tunedb_put(tunedb *db, const tune_key *key, const tune_row *rows, int n, char *err, size_t errlen);
/* The fastest row for key: 0 and *out filled (malloc'd strings), 1 if none, -1 with err.
 * Ties in time_us go to the smallest config (byte order), so the answer is deterministic.  Rows
 * whose time is not a positive, finite number (a hand-edited file) are never read, here, by
 * tunedb_list or by tunedb_nearest; tunedb_best_per_shape returns them after the good ones.
 * On 1 or -1, *out is zeroed (safe to pass to tunedb_row_free). */
int tunedb_best(tunedb *db, const tune_key *key, tune_row *out, char *err, size_t errlen);
/* All rows for key, fastest first: *rows malloc'd array of *n. 0 or -1.
 * Same order as best (time, then config).  No rows: 0 with *rows NULL and *n 0. */
int tunedb_list(tunedb *db, const tune_key *key, tune_row **rows, int *n, char *err, size_t errlen);
/* The best row of each group, for what is tuned near a key rather than at it.  Each group's
 * best is its fastest row, ties to the smallest config (as tunedb_best). */
typedef struct tune_best {
  char *family, *dtype, *shape, *nvrtc;
  long long ranks, driver;   /* as stored: the caller checks their range */
  char *time_text;           /* time_us as stored, SQL-quoted (for a message about a bad one) */
  int time_ok;               /* 1: a positive, finite number (the rows tunedb_best would read) */
  tune_row row;
} tune_best;
/* The tuning key has no column for a family's key fields (op, residual, eps, ...), so rows of
 * several of them share a group: each query below returns the fastest TUNEDB_PER_GROUP rows of
 * every group, fastest first within it, and the caller keeps the fastest of each it needs. */
#define TUNEDB_PER_GROUP 32
/* weft_auto_choose's "nearest" step: the fastest rows per (shape, driver, nvrtc) for this gpu, sm,
 * ranks, family and dtype -- every shape measured on this GPU, under any driver and NVRTC (the
 * caller tells an exact environment from the driver and nvrtc fields).  Sorted by shape, then
 * driver, then nvrtc, then time.  0 and *out (NULL when none) of *n, or -1 with err. */
int tunedb_nearest(tunedb *db, const char *gpu, int sm, int ranks, const char *family, const char *dtype,
                   tune_best **out, int *n, char *err, size_t errlen);
/* `weft tune --export`: the fastest rows per (family, dtype, ranks, shape) for this gpu, sm, driver
 * and nvrtc, sorted by family, dtype, ranks, shape, then time.  0 and *out of *n, or -1 with err. */
int tunedb_best_per_shape(tunedb *db, const char *gpu, int sm, int driver, const char *nvrtc, tune_best **out, int *n,
                          char *err, size_t errlen);
void tunedb_best_free(tune_best *v, int n);
void tunedb_row_free(tune_row *r);       /* frees the strings of one row */
void tunedb_rows_free(tune_row *rows, int n);  /* frees each row's strings, then the array */

#endif
