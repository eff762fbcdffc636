/* cli.h: the weft command line (runtime/cli/). */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H
#include "driver.h"
#include "weft.h"

/* exit codes */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_NO_GPU = 77 };

#define CLI_MAX_SETS 128

/* Options shared by every command. */
typedef struct cli_common {
  const char *config;
  const char *sets[CLI_MAX_SETS];
  int n_sets;
  const char *out_dir;
} cli_common;

/* Takes --set k=v / --set=k=v / -o DIR / --out DIR and the positional config from argv[i].
 * Returns 1 if argv[*i] was consumed (advancing *i past any value), 0 if not ours, -1 on error,
 * its message prefixed with cmd ("weft run"), as the command's other messages are. */
int cli_common_arg(cli_common *c, int argc, char **argv, int *i, const char *cmd);
int cli_status_exit(weft_status st);   /* map a status to an exit code */
/* -o DIR names something other than a folder: says what on stderr, "CMD: -o DIR: ...TAIL", a link
 * with its target (a dangling link is no folder either: mkdir does not follow one). */
void cli_not_a_folder(const char *cmd, const char *out, const char *tail);

/* ptxas's resource report (--ptxas-options=--verbose), from the NVRTC log; -1 where absent */
/* ptxas's report from a kernel's NVRTC log; serialized: ptxas serialised its WGMMAs (C7520) */
typedef struct cli_resources { int registers, smem, stack, spill_stores, spill_loads, serialized; } cli_resources;
void cli_parse_resources(const char *log, cli_resources *r);

/* What one run measured (weft run / weft tune). */
typedef struct run_result {
  int checked, passed;     /* checked against the reference, and correct */
  int timed;
  double us;               /* median time of one launch */
  double metric;           /* e.g. GB/s */
  double baseline;         /* ratio to the family's baseline (copy bandwidth), 0 if none */
  char metric_name[16], baseline_name[16];
} run_result;

#define CLI_MAX_SHAPES 64

typedef struct run_opts {
  cli_common c;
  weft_ctx *ctx;           /* the context the kernel came from */
  /* The shapes to check and to time, each in the family's size order (the manifest's
   * run.sizes): the family's own lists (run.check, run.time), with the command line's added --
   * or only the command line's, when shapes_only. */
  weft_shape check_shapes[CLI_MAX_SHAPES], time_shapes[CLI_MAX_SHAPES];
  int n_check, n_time;
  int shapes_only;         /* the lists are the user's alone: add no shape of the runner's own */
  int iters, warmup;
  unsigned long long seed;
  int check, timing;
  int quiet;               /* print only failures */
  run_result *result;      /* filled when not NULL */
} run_opts;

/* For runners that check and time one shape at a time: calls one() for every shape to check
 * (do_time set where it is also a shape to time: one pass does both), then for every shape only
 * to time.  Stops at the first result other than CLI_OK and returns it. */
typedef int (*cli_shape_fn)(weft_kernel *k, const run_opts *o, const weft_shape *sh, int do_check, int do_time,
                            void *ud);
int cli_each_shape(weft_kernel *k, const run_opts *o, cli_shape_fn one, void *ud);

/* Size `name` of shape sh, by the kernel's run spec; -1 if the family has no such size. */
long long cli_size(const weft_manifest *m, const weft_shape *sh, const char *name);

/* The GEMM runners' shapes (ag_gemm, gemm_rs, gemm_ar), by their sizes m, n and k: the shapes
 * to check are o's, then the runner's own `extra` (left out when o->shapes_only, or when extra
 * is NULL); the shapes to time are o's.  A list is empty where o does not check / time. */
typedef struct cli_mnk { long long m, n, k; } cli_mnk;
typedef struct cli_mnk_lists {
  cli_mnk check[CLI_MAX_SHAPES + 1], time[CLI_MAX_SHAPES];
  int n_check, n_time;
} cli_mnk_lists;
void cli_mnk_shapes(const weft_manifest *m, const run_opts *o, const cli_mnk *extra, cli_mnk_lists *l);
/* The most elements any shape of l asks of a communicator (the family's elems(), at least 1):
 * what weft_comm_create's max_elems must hold for every launch of the run. */
long long cli_mnk_max_elems(const cli_mnk_lists *l, long long (*elems)(const cli_mnk *s));

/* Runs a compiled kernel on random data: check, then time (see weft help run), through the
 * runner its family registered (runner.h). */
int run_kernel(weft_kernel *k, const run_opts *o);

/* cli.c: what every command and runner shares. */
/* An error message for the user: printed to stderr (ending the line) and kept, so that under
 * mpirun the ranks can agree on it (ranks_agree).  Every message of weft run and weft tune
 * goes through it. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *cli_last_error(void);   /* the last one, without its newline ("" if none) */

/* guard.c: the CLI's stdout and stderr write every byte that could drive a terminal (a control
 * byte but newline and tab, DEL, a C1 control) as \xNN, whatever text a user gave (util_escape).
 * cli_guard_output replaces them at start (0, or -1 out of memory, left as they were). */
int cli_guard_output(void);
int cli_guard_drop_stdout(void);             /* stdout writes nothing from now on (a rank not 0) */
void cli_tty_raw(const char *seq);           /* seq to the terminal as it is (the progress line's \r) */
/* The device this process should use: $WEFT_DEVICE, else its local rank (mpirun) modulo the
 * GPUs here, else 0. */
int cli_device(void);
/* The value of the flag at argv[*i] (a path, a shape, a name): argv[*i + 1], consumed, or NULL
 * with the message on stderr when it is missing, empty, or the next flag ("--db --plot" once made
 * a database named --plot).  cmd prefixes the message ("weft tune"); what says what the flag
 * takes ("a path"; a path or folder also gets the hint ./-name for a name that starts with '-'). */
const char *cli_flag_value(int argc, char **argv, int *i, const char *cmd, const char *what);
/* The value of the flag at argv[*i] as a whole number in lo..hi (lo >= 0; decimal digits only):
 * 0 with *out, argv[*i + 1] consumed; or -1 with the message on stderr naming cmd, the flag, the
 * value and the range, then why when not NULL (" (a median of three ...)"). */
int cli_flag_whole(int argc, char **argv, int *i, const char *cmd, long long lo, long long hi, const char *why,
                   long long *out);
/* WEFT_DEVICE checked (cli_device reads it): 0, or -1 with the message on stderr, cmd its prefix */
int cli_device_env_check(const char *cmd);
/* A driver call's result: 1 if it succeeded; else 0 and its message on stderr, "weft run: rank R:
 * ..." (rank < 0: without the rank). */
int cli_cu_ok(const drv_table *d, int rank, CUresult r, const char *what);
/* Device memory of `bytes` (16 when 0), or 0 with the driver's message on stderr. */
CUdeviceptr cli_dev_alloc(const drv_table *d, size_t bytes);
/* Fills the launch's argument slots in manifest order from (names[j], vals[j]) pairs; -1 (and
 * a message) if the manifest names an argument without a value. */
int cli_bind_args(const weft_manifest *m, void **slots, const char *const *names, void *const *vals, int n);
/* The runners of kernels that talk to other ranks.  cli_comm_launch: weft_comm_launch, -1 with
 * "weft run: rank R: <why>" on stderr.  cli_comm_finish: after the caller's synchronize (its result
 * sync, what: what it waited for), 0 if that succeeded and no launch on c timed out (c NULL: none to
 * ask), else -1 with the driver's message or the timeout record, naming the rank. */
int cli_comm_launch(weft_comm *c, void **args, void *stream, int rank);
int cli_comm_finish(const drv_table *d, int rank, CUresult sync, const char *what, weft_comm *c);
/* Prints (and stores in o->result) a bandwidth-bound kernel's time: `bytes` moved in `ms`,
 * beside a device copy of `copy_bytes` (read + write) that took copy_ms. */
void cli_report_bandwidth(const run_opts *o, const char *name, double ms, double bytes, double copy_ms,
                          double copy_bytes);

int cmd_gen(int argc, char **argv, int build);
int cmd_tune(int argc, char **argv);
void cmd_tune_help(void);
int cmd_run(int argc, char **argv);
void cmd_gen_help(int build);
void cmd_run_help(void);
int cmd_suggest(int argc, char **argv);
/* The tuning database's name of a shape: "name=value" sorted by size name, as sweeps name them. */
int cli_shape_key(const weft_run_spec *rs, const weft_shape *sh, char *buf, size_t len);
/* weft run --auto (cmd_run_auto.c): every shape of o with its own chosen kernel. */
int cli_run_auto(weft_ctx *ctx, const run_opts *o, const weft_run_spec *rs, const char *db_path);
/* $WEFT_AUTOTUNE_BUDGET_MS in ms (2000 unset); -1 with a message naming the variable. */
int cli_autotune_budget(double *ms);
int cli_autotune_flag(int *on);   /* WEFT_AUTOTUNE: 0 and *on, or -1 with the message (not 0, 1 or unset) */
/* cmd_export.c: the database's best per (family, dtype, ranks, shape) for this GPU as a tuning
 * table, written atomically to file (who: the messages' prefix, "weft export-table"; command: what
 * the header says made it). */
int cli_export_table(weft_ctx *ctx, const char *who, const char *db_path, const char *file, const char *gpu, int sm,
                     int driver, const char *nvrtc, const char *command);
/* 1 with the message (who: its prefix) when the table FILE may not be replaced: a database
 * (db_path's, by any name, or any SQLite file: `export-table --db A A`, or the two swapped, would
 * replace the measurements with the table), or a device, pipe or socket, or a link to one (the
 * table's rename would replace it: /dev/null made a file).  0 otherwise (no FILE yet is fine; a
 * folder is the writer's to refuse). */
int cli_export_refused(const char *who, const char *file, const char *db_path);
int cmd_export(int argc, char **argv);
void cmd_export_help(void);
void cmd_suggest_help(void);

#endif
