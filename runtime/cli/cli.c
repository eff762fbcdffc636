/* cli.c: helpers every command and runner shares (cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

int cli_cu_ok(const drv_table *d, int rank, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 1;
  char buf[512];
  drv_describe(d, r, what, buf, sizeof buf);
  if (rank >= 0) fprintf(stderr, "weft run: rank %d: %s\n", rank, buf);
  else fprintf(stderr, "weft run: %s\n", buf);
  return 0;
}

/* $WEFT_DEVICE: 0 with *dv its index, or -1 when unset; -1 when it is set to something else,
 * with why (when given) */
static int device_env(long *dv, char *why, size_t len) {
  return util_env_long("WEFT_DEVICE", 0, 1023, -1, NULL,
                       "the index of the GPU weft runs on; unset: the local rank's under mpirun, else 0", dv, why, len);
}

int cli_device(void) {
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  long dv;
  if (device_env(&dv, NULL, 0)) return -1;   /* (cli_device_env_check said why, before) */
  if (dv >= 0) return (int)dv;
  if (!lr) return 0;
  const drv_table *d = drv_get(NULL, 0);
  int n = 0;
  if (!d || d->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) return 0;
  return atoi(lr) % n;
}

int cli_device_env_check(const char *cmd) {
  char why[512];
  long dv;
  if (!device_env(&dv, why, sizeof why)) return 0;
  cli_err("%s: %s\n", cmd, why);
  return -1;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *cmd, const char *what) {
  const char *flag = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!v || !*v) {
    cli_err("%s: %s needs %s%s\n", cmd, flag, what, v ? " (an empty name is none)" : "");
    return NULL;
  }
  if (v[0] == '-') {
    char hint[300] = "";
    if (strstr(what, "path") || strstr(what, "folder"))
      snprintf(hint, sizeof hint, " (a name that starts with '-': write ./%.200s)", v);
    cli_err("%s: %s needs %s, not the flag '%s'%s\n", cmd, flag, what, v, hint);
    return NULL;
  }
  ++*i;
  return v;
}

int cli_flag_whole(int argc, char **argv, int *i, const char *cmd, long long lo, long long hi, const char *why,
                   long long *out) {
  const char *flag = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (!v) {
    cli_err("%s: %s needs a whole number in %lld..%lld\n", cmd, flag, lo, hi);
    return -1;
  }
  long long n = 0;
  if (util_parse_whole(v, &n) || n < lo || n > hi) {
    cli_err("%s: %s %.80s%s: expected a whole number (decimal) in %lld..%lld%s\n", cmd, flag, v, strlen(v) > 80 ? "..." : "",
            lo, hi, why ? why : "");
    return -1;
  }
  *out = n;
  ++*i;
  return 0;
}

int cli_bind_args(const weft_manifest *m, void **slots, const char *const *names, void *const *vals, int n) {
  for (int i = 0; i < m->n_args; i++) {
    slots[i] = NULL;
    for (int j = 0; j < n; j++)
      if (!strcmp(m->args[i].name, names[j])) slots[i] = vals[j];
    if (!slots[i]) { fprintf(stderr, "weft run: no value for kernel argument %s\n", m->args[i].name); return -1; }
  }
  return 0;
}

int cli_comm_launch(weft_comm *c, void **args, void *stream, int rank) {
  if (!weft_comm_launch(c, args, stream)) return 0;
  fprintf(stderr, "weft run: rank %d: %s\n", rank, weft_comm_error(c));
  return -1;
}

int cli_comm_finish(const drv_table *d, int rank, CUresult sync, const char *what, weft_comm *c) {
  if (!cli_cu_ok(d, rank, sync, what)) return -1;
  if (c && weft_comm_check(c)) {
    fprintf(stderr, "weft run: rank %d: %s\n", rank, weft_comm_error(c));
    return -1;
  }
  return 0;
}

void cli_report_bandwidth(const run_opts *o, const char *name, double ms, double bytes, double copy_ms,
                          double copy_bytes) {
  double gbs = bytes / (ms * 1e6), cgbs = 2.0 * copy_bytes / (copy_ms * 1e6);
  if (o->result) {
    o->result->timed = 1;
    o->result->us = ms * 1e3;
    o->result->metric = gbs;
    o->result->baseline = gbs / cgbs;
    snprintf(o->result->metric_name, sizeof o->result->metric_name, "GB/s");
    snprintf(o->result->baseline_name, sizeof o->result->baseline_name, "copy");
  }
  if (o->quiet) return;
  printf("time: %s: median %.2f us, %.1f GB/s; device copy of the input: %.2f us, %.1f GB/s (read+write); "
         "ratio to copy %.3f\n", name, ms * 1e3, gbs, copy_ms * 1e3, cgbs, gbs / cgbs);
}

long long cli_size(const weft_manifest *m, const weft_shape *sh, const char *name) {
  int j = weft_run_size_index(&m->run, name);
  return j < 0 ? -1 : sh->v[j];
}

static cli_mnk mnk_of(const weft_manifest *m, const weft_shape *s) {
  return (cli_mnk){cli_size(m, s, "m"), cli_size(m, s, "n"), cli_size(m, s, "k")};
}

void cli_mnk_shapes(const weft_manifest *m, const run_opts *o, const cli_mnk *extra, cli_mnk_lists *l) {
  l->n_check = l->n_time = 0;
  for (int i = 0; i < o->n_check && l->n_check < CLI_MAX_SHAPES; i++) l->check[l->n_check++] = mnk_of(m, &o->check_shapes[i]);
  if (extra && !o->shapes_only) l->check[l->n_check++] = *extra;
  for (int i = 0; i < o->n_time && l->n_time < CLI_MAX_SHAPES; i++) l->time[l->n_time++] = mnk_of(m, &o->time_shapes[i]);
  if (!o->check) l->n_check = 0;
  if (!o->timing) l->n_time = 0;
}

long long cli_mnk_max_elems(const cli_mnk_lists *l, long long (*elems)(const cli_mnk *s)) {
  long long most = 1;
  for (int i = 0; i < l->n_check + l->n_time; i++) {
    long long e = elems(i < l->n_check ? &l->check[i] : &l->time[i - l->n_check]);
    if (e > most) most = e;
  }
  return most;
}

int cli_each_shape(weft_kernel *k, const run_opts *o, cli_shape_fn one, void *ud) {
  int timed[CLI_MAX_SHAPES] = {0};
  for (int i = 0; i < (o->check ? o->n_check : 0); i++) {
    int t = -1;
    for (int j = 0; o->timing && j < o->n_time && t < 0; j++)
      if (!timed[j] && !memcmp(&o->time_shapes[j], &o->check_shapes[i], sizeof(weft_shape))) t = j;
    if (t >= 0) timed[t] = 1;
    int rc = one(k, o, &o->check_shapes[i], 1, t >= 0, ud);
    if (rc != CLI_OK) return rc;
  }
  for (int j = 0; o->timing && j < o->n_time; j++) {
    if (timed[j]) continue;
    int rc = one(k, o, &o->time_shapes[j], 0, 1, ud);
    if (rc != CLI_OK) return rc;
  }
  return CLI_OK;
}

static char last_error[2048];

void cli_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  if (n < 0) snprintf(last_error, sizeof last_error, "(an error message that could not be formatted)");
  fputs(last_error, stderr);
  size_t len = strlen(last_error);
  if (len && last_error[len - 1] == '\n') last_error[len - 1] = 0;
  else if ((size_t)n >= sizeof last_error) fputs(" [...]\n", stderr);   /* cut: say so, end the line */
  else fputc('\n', stderr);
}

const char *cli_last_error(void) { return last_error; }

CUdeviceptr cli_dev_alloc(const drv_table *d, size_t bytes) {
  CUdeviceptr p = 0;
  if (!cli_cu_ok(d, -1, d->cuMemAlloc(&p, bytes ? bytes : 16), "cuMemAlloc")) return 0;
  return p;
}
