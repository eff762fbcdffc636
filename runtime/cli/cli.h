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
 * Returns 1 if argv[*i] was consumed (advancing *i past any value), 0 if not ours, -1 on error. */
int cli_common_arg(cli_common *c, int argc, char **argv, int *i);
int cli_status_exit(weft_status st);   /* map a status to an exit code */

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

/* A GEMM shape, M x N x K (ag_gemm: --shape, --time-shape). */
#define CLI_MAX_SHAPES 16
typedef struct cli_shape { long long m, n, k; } cli_shape;

typedef struct run_opts {
  cli_common c;
  weft_ctx *ctx;           /* the context the kernel came from; a runner that compiles a second
                            * kernel (ag_gemm's gather_then_gemm) uses it (NULL: it makes one) */
  long rows, cols, clusters;
  long long elems;         /* allreduce: check and time only this many elements per rank */
  int iters, warmup;
  unsigned long long seed;
  int check, timing;
  int quiet;               /* print only failures */
  cli_shape shapes[CLI_MAX_SHAPES], time_shapes[CLI_MAX_SHAPES]; /* ag_gemm: added to the defaults */
  int n_shapes, n_time_shapes;
  int shapes_only;         /* ag_gemm: only the shapes given, no default lists */
  run_result *result;      /* filled when not NULL */
} run_opts;

/* Runs a compiled kernel on random data: check, then time (see weft help run), through the
 * runner its family registered (runner.h). */
int run_kernel(weft_kernel *k, const run_opts *o);

/* cli.c: what every command and runner shares. */
/* The device this process should use: $WEFT_DEVICE, else its local rank (mpirun) modulo the
 * GPUs here, else 0. */
int cli_device(void);
/* A driver call's result: 1 if it succeeded; else 0 and its message on stderr, "weft run: rank R:
 * ..." (rank < 0: without the rank). */
int cli_cu_ok(const drv_table *d, int rank, CUresult r, const char *what);
/* Fills the launch's argument slots in manifest order from (names[j], vals[j]) pairs; -1 (and
 * a message) if the manifest names an argument without a value. */
int cli_bind_args(const weft_manifest *m, void **slots, const char *const *names, void *const *vals, int n);
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

#endif
