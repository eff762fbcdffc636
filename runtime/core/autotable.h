/* autotable.h: the shipped tuning table (tune/h200.tsv), the third place weft_auto_choose looks.
 *
 * The table is text, tab-separated, so a person can read a diff of it and `weft tune --export`
 * can write it:
 *
 *   # weft tuning table: the fastest config `weft tune` measured per shape
 *   # gpu: NVIDIA H200
 *   # sm: 90
 *   # driver: 13000            (informational: the table is used on any driver)
 *   # nvrtc: 13.0
 *   # date: 2026-12-01
 *   # command: weft tune --export tune/h200.tsv (from the sweeps in bench/auto/)
 *   family	dtype	ranks	shape	time_us	config
 *   row_softmax	bf16	1	cols=50257 rows=4096	123.4	cluster=2;mode=onchip;threads=1024
 *
 * config: key=value pairs joined by ';' (keys [A-Za-z0-9_.]+, values [A-Za-z0-9_.+-]+), relative
 * to `return { family = "<family>", dtype = "<dtype>" }`.  A bad row is skipped with a warning
 * naming the file, the line, the column and what is allowed; a bad header (first line, gpu, sm,
 * the column line) makes the whole table ignored with a warning.  Either way the caller still
 * answers, from the rule.
 */
#ifndef WEFT_AUTOTABLE_H
#define WEFT_AUTOTABLE_H
#include <stddef.h>

#include "bridge.h"
#include "util.h"

#define AUTOTABLE_FILE "tune/h200.tsv"   /* in the repo, embedded in the library */
#define AUTOTABLE_MAX_LINE 4096           /* bytes a line may hold (a longer one is skipped) */
#define AUTOTABLE_MAX_WARNED 20           /* lines whose warning is shown; the rest are counted */
#define AUTOTABLE_MAX_SIZES 4             /* sizes a shape may name (WEFT_MAX_SIZES) */
#define AUTOTABLE_MAX_SETS 64             /* key=value pairs a config may hold */
#define AUTOTABLE_MAX_RANKS 65536         /* the most ranks a row may name (1..this) */

typedef struct autotable_row {
  char *family, *dtype;
  int ranks;
  char *shape;       /* canonical: "name=value" sorted by name, joined by one space */
  double time_us;
  int n_sets;
  char **sets;       /* "key=value" */
  int line;          /* where it is in the file */
} autotable_row;

typedef struct autotable {
  char *file;        /* for messages: the path, or "tune/h200.tsv (built in)" */
  char *gpu;         /* "# gpu:" */
  int sm;            /* "# sm:" */
  char *driver, *nvrtc, *date, *command;   /* informational ("" when absent) */
  int n_rows;
  autotable_row *rows;
} autotable;

/* Parses a table's text.  0 and *out (perhaps with rows skipped: one line each in warn), or -1
 * with *out NULL and why in warn (a bad header, out of memory). */
int autotable_parse(const char *file, const char *text, size_t len, autotable **out, util_buf *warn);
/* The table weft uses: $WEFT_AUTO_TABLE (a path; "none": no table), else the one built in (read
 * through b: WEFT_SOURCE_DIR's tune/h200.tsv when set).  0 and *out; 1 when switched off (*out
 * NULL); -1 with warn when it cannot be read or its header is bad (*out NULL). */
int autotable_load(bridge *b, autotable **out, util_buf *warn);
void autotable_free(autotable *t);

/* A shape in canonical form ("cols=50257 rows=4096").  text: name=value pairs separated by
 * spaces or commas in any order, or, when sizes is given, positional values in that order
 * joined by x ("4096x50257").  sizes NULL: any names (lower case, digits, _).  Every value a
 * whole number in 1..2^62.  0, or -1 with why naming the size, its value and what is allowed. */
int autotable_shape(const char *text, const char *const *sizes, int n_sizes, char *canon, size_t len, char *why,
                    size_t wlen);

#endif
