/* cmd_tune.c: `weft tune`: expand a sweep (gen/core/sweep.lua), compile every candidate in parallel
 * through the disk cache, reject what the compiler says cannot run well, then check and time
 * each survivor on the GPU, rank them, and keep the results (CSV, tuning database). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "hash.h"
#include "internal.h"
#include "jit.h"
#include "ranks.h"
#include "sweep.h"
#include "tunedb.h"
#include "util.h"

void cmd_tune_help(void) {
  printf("usage: weft tune SWEEP.lua [--set key=value ...] [--jobs N] [--budget SECONDS] [--iters N]\n"
         "                 [--max-spill BYTES] [--no-run] [--fake-timing] [--db PATH] [-o DIR] [--plot]\n"
         "                 [--export FILE]\n\n"
         "Expands the sweep (base config x space, pruned by its `where` and by the generator's own\n"
         "validation, counted by rule), compiles every candidate for every shape on N threads through\n"
         "the kernel cache, rejects candidates that spill more than --max-spill bytes (default 0)\n"
         "or whose WGMMAs ptxas serialises (its C7520 report),\n"
         "then on the GPU checks each against the reference (a wrong kernel is reported, never timed)\n"
         "and times it (CUDA events, median of --iters).  Prints a ranked table per shape with the\n"
         "ratio to the best and to the family's baseline, writes DIR/tune-<family>.csv (-o DIR, default .),\n"
         "and stores the results in the tuning database (--db; default $WEFT_TUNE_DB, else\n"
         "$XDG_CACHE_HOME/weft/tune.db or ~/.cache/weft/tune.db), where `weft run --tuned` finds them.\n"
         "--budget stops cleanly when the time is up (0, the default: no limit); Ctrl-C or SIGTERM too,\n"
         "keeping what was measured (a second one stops at once).  --plot also writes\n"
         "DIR/tune-<family>.png (gnuplot): time against each swept key, per shape.\n"
         "--fake-timing replaces the GPU with made-up times (for testing the tool itself; the output says\n"
         "so).  --export FILE then writes the database's best config per shape on this GPU as a tuning\n"
         "table (weft help export-table; tune/h200.tsv is one).\n"
         "--no-run compiles and stops there (exit 0, or 1 if a compile failed): nothing is run, written\n"
         "or stored, so -o, --plot, --db and --export go unused.  Without a GPU it compiles and stops\n"
         "(exit 77).\n");
}

typedef struct job {
  int shape, cand;         /* cand -1: the shape's default (base config + shape sets) */
  const char **sets;
  int n_sets;
  /* compile phase */
  int compiled, hit, invalid;
  double compile_ms;
  cli_resources res;
  char kernel[256];
  char *error;
  /* run phase */
  int ran, rejected;
  run_result r;            /* r.us: the MAX over ranks */
  double local_us;         /* what this rank measured */
  char why[160];
} job;

typedef struct tune_state {
  const sweep *sw;
  job *jobs;
  int n_jobs;
  int next;                /* next job to compile */
  pthread_mutex_t lock;
  const char *source_dir;
  double deadline_ms;      /* --budget: no compile starts after it (0: none) */
  int out_of_time;         /* jobs left uncompiled by the budget */
} tune_state;

/* Ctrl-C or SIGTERM (timeout, kill, a cancelled job): stop after the kernel at hand, keeping what
 * was measured and printing it (killed outright, a redirected stdout lost all of its buffered
 * output); a second one (either): stop now, as without this handler. */
static volatile sig_atomic_t interrupted;   /* the signal that asked */
static void on_stop_signal(int sig) {
  if (interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  interrupted = sig;
}

static const char *job_label(const sweep *sw, const job *j) {
  return j->cand < 0 ? "(default: the base config)" : sw->shapes[j->shape].cand[j->cand].label;
}

static void *compile_worker(void *arg) {
  tune_state *ts = arg;
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) return NULL;
  for (;;) {
    pthread_mutex_lock(&ts->lock);
    int late = ts->deadline_ms > 0 && util_now_ms() > ts->deadline_ms;
    int i = late ? ts->n_jobs : ts->next++;
    if (late && ts->next < ts->n_jobs) { ts->out_of_time = ts->n_jobs - ts->next; ts->next = ts->n_jobs; }
    pthread_mutex_unlock(&ts->lock);
    if (i >= ts->n_jobs || interrupted) break;
    job *j = &ts->jobs[i];
    weft_kernel *k;
    weft_status st = weft_compile_string(ctx, ts->sw->file, ts->sw->base_text, j->sets, j->n_sets, &k);
    if (st == WEFT_ERR_CONFIG && j->cand < 0) {
      j->invalid = 1;   /* the base config does not fit this shape: no default to compare with */
      continue;
    }
    if (st) {
      j->error = util_strdup(weft_ctx_error(ctx));
      continue;
    }
    j->compiled = 1;
    j->hit = weft_kernel_cache_hit(k);
    j->compile_ms = weft_kernel_compile_ms(k);
    cli_parse_resources(weft_kernel_log(k), &j->res);
    snprintf(j->kernel, sizeof j->kernel, "%s", weft_kernel_manifest(k)->name);
    weft_kernel_destroy(k);
  }
  weft_ctx_destroy(ctx);
  return NULL;
}

static int cmp_time(const void *a, const void *b) {
  const job *x = *(job *const *)a, *y = *(job *const *)b;
  return x->r.us < y->r.us ? -1 : x->r.us > y->r.us;
}

static void progress(int tty, int done, int total, double t0, const job *best, const sweep *sw) {
  double el = (util_now_ms() - t0) / 1e3;
  if (tty) {
    int w = 30, f = total ? done * w / total : w;
    cli_tty_raw("\r");
    printf("  [%.*s%*s] %d/%d  %.0f s  best %s", f, "##############################", w - f, "", done, total, el,
           best ? "" : "-");
    if (best) printf("%.1f us (%s)", best->r.us, job_label(sw, best));
    cli_tty_raw("\033[K");
  }
}

/* The value of `key` in a job's --set list ("key=value"), or NULL. */
static const char *set_value(const job *j, const char *key) {
  size_t n = strlen(key);
  for (int i = 0; i < j->n_sets; i++)
    if (!strncmp(j->sets[i], key, n) && j->sets[i][n] == '=') return j->sets[i] + n + 1;
  return NULL;
}

/* A label (a title, a tick) as a gnuplot single-quoted string: no backquote substitution or
 * escapes happen inside one.  A quote becomes '"' (gnuplot 5.4 misreads a run of doubled quotes,
 * ending the string early), control characters '?', and long values are cut. */
static void gp_quote(util_buf *b, const char *s, size_t max) {
  util_buf_printf(b, "'");
  for (size_t i = 0; s[i] && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    util_buf_printf(b, "%c", c == '\'' ? '"' : c < 32 || c == 127 ? '?' : c);
  }
  util_buf_printf(b, "%s'", strlen(s) > max ? "..." : "");
}

/* gnuplot on the script `plot.gp` in folder DIR, run there (posix_spawnp: no shell ever sees a
 * path or a value), its output to /dev/null; 0 when it ran and exited 0.  No path of the user's
 * reaches gnuplot: it reads a file name that begins with '<' as a command whose output to plot,
 * an output that begins with '|' as a command to pipe into, its script argument as `load` does
 * (the same '<'), and misreads doubled quotes (`-o '<touch x;'` ran `touch x`; `-o "a''b"`
 * truncated a file a').  So the script and its files have fixed names in DIR. */
static int run_gnuplot(const char *dir) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa)) return -1;
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (posix_spawn_file_actions_addchdir_np(&fa, dir)) {
    posix_spawn_file_actions_destroy(&fa);
    return -1;
  }
  char *argv[] = {"gnuplot", "plot.gp", NULL};
  extern char **environ;
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The script's text: its output PNG and its data by plain names (weft's own: tune-<family>.png,
 * plot.png, ...) in the folder it runs in, then every plot, which reads `data` (the same body for
 * both scripts below). */
static void gp_script(util_buf *b, const char *png, const char *dat, const char *body, int width, int height) {
  util_buf_printf(b, "set terminal pngcairo size %d,%d\nset output '%s'\ndata = '%s'\n%s", width, height, png, dat, body);
}

/* DIR/tune-<family>.png: for every shape (rows) and swept key (columns), the time of every
 * measured candidate against that key's value, so a person sees which values are fast.
 * Nothing is written through a link planted at an output's name: the .dat and .gp are written
 * atomically (a new file renamed into place), and gnuplot, which opens its output plainly, writes
 * the PNG into a private folder beside it, from where it is renamed into place.  The .gp kept
 * beside the results names the PNG and the data by their names in its folder (to re-run by hand
 * there); gnuplot runs a copy in the private folder on a copy of the data, all by fixed names
 * (run_gnuplot: no path of the user's reaches it).  0, or -1 (and why on stderr). */
static int write_plot(const sweep *sw, const job *jobs, int n_jobs, const char *out_dir) {
  char dat[4096], gp[4096], png[4096], tmpdir[4096], err[4400];
  char tmp_gp[4200] = "", tmp_png[4200] = "", tmp_dat[4200] = "";   /* (unlinked at the end: set or empty) */
  char gp_png[300], gp_dat[300];   /* the kept script's names for its PNG and data, beside it */
  if (snprintf(dat, sizeof dat, "%s/tune-%s.dat", out_dir, sw->family) >= (int)sizeof dat ||
      snprintf(gp, sizeof gp, "%s/tune-%s.gp", out_dir, sw->family) >= (int)sizeof gp ||
      snprintf(png, sizeof png, "%s/tune-%s.png", out_dir, sw->family) >= (int)sizeof png ||
      snprintf(tmpdir, sizeof tmpdir, "%s/.tune-%s.png.XXXXXX", out_dir, sw->family) >= (int)sizeof tmpdir ||
      snprintf(gp_png, sizeof gp_png, "tune-%s.png", sw->family) >= (int)sizeof gp_png ||
      snprintf(gp_dat, sizeof gp_dat, "tune-%s.dat", sw->family) >= (int)sizeof gp_dat) {
    cli_err("weft tune: --plot: the output folder's name is too long\n");
    return -1;
  }
  int nk = sw->n_keys, rc = -1, made_tmp = 0;
  int width = 320 * (nk ? nk : 1) + 80, height = 300 * sw->n_shapes;
  /* distinct values of each key, in order of first appearance */
  const char **vals = calloc((size_t)nk * (size_t)n_jobs + 1, sizeof *vals);
  int *nv = calloc((size_t)nk + 1, sizeof *nv);
  util_buf d = {0}, body = {0}, f = {0}, tf = {0};
  if (!vals || !nv) { cli_err("weft tune: --plot: out of memory\n"); goto done; }
  util_buf_printf(&d, "# shape time_us");
  for (int k = 0; k < nk; k++) util_buf_printf(&d, " %s", sw->keys[k]);
  util_buf_printf(&d, "\n");
  for (int i = 0; i < n_jobs; i++) {
    const job *j = &jobs[i];
    if (!j->ran || j->cand < 0) continue;
    util_buf_printf(&d, "%d %.4f", j->shape, j->r.us);
    for (int k = 0; k < nk; k++) {
      const char *v = set_value(j, sw->keys[k]);
      int idx = -1;
      for (int x = 0; v && x < nv[k]; x++)
        if (!strcmp(vals[k * n_jobs + x], v)) idx = x;
      if (v && idx < 0) { idx = nv[k]; vals[k * n_jobs + nv[k]++] = v; }
      util_buf_printf(&d, " %d", idx);
    }
    util_buf_printf(&d, "\n");
  }
  util_buf_printf(&body, "set multiplot layout %d,%d\nset grid\nset ylabel 'time (us)'\n", sw->n_shapes, nk ? nk : 1);
  for (int s = 0; s < sw->n_shapes; s++)
    for (int k = 0; k < nk; k++) {
      char title[512];
      snprintf(title, sizeof title, "%.200s: %.200s", sw->shapes[s].name, sw->keys[k]);
      util_buf_printf(&body, "set title ");
      gp_quote(&body, title, sizeof title);
      util_buf_printf(&body, " noenhanced\nset xrange [-0.5:%f]\nset xtics (", nv[k] - 0.5);
      for (int x = 0; x < nv[k]; x++) {
        if (x) util_buf_printf(&body, ", ");
        gp_quote(&body, vals[k * n_jobs + x], 40);
        util_buf_printf(&body, " %d", x);
      }
      util_buf_printf(&body, ")\nplot data");
      util_buf_printf(&body, " using ($1 == %d ? $%d : 1/0):2 with points pt 7 ps 0.8 notitle\n", s, 3 + k);
    }
  util_buf_printf(&body, "unset multiplot\n");
  if (d.oom || body.oom) { cli_err("weft tune: --plot: out of memory\n"); goto done; }
  util_buf_printf(&f, "# run it in its folder: gnuplot tune-%s.gp\n", sw->family);
  gp_script(&f, gp_png, gp_dat, body.p, width, height);
  if (f.oom) { cli_err("weft tune: --plot: out of memory\n"); goto done; }
  if (util_write_atomic(dat, d.p, d.len, err, sizeof err) || util_write_atomic(gp, f.p, f.len, err, sizeof err)) {
    cli_err("weft tune: --plot: %s\n", err);
    goto done;
  }
  if (!mkdtemp(tmpdir)) { cli_err("weft tune: --plot: cannot create a folder %s: %s\n", tmpdir, strerror(errno)); goto done; }
  made_tmp = 1;
  if (snprintf(tmp_gp, sizeof tmp_gp, "%s/plot.gp", tmpdir) >= (int)sizeof tmp_gp ||
      snprintf(tmp_png, sizeof tmp_png, "%s/plot.png", tmpdir) >= (int)sizeof tmp_png ||
      snprintf(tmp_dat, sizeof tmp_dat, "%s/data.dat", tmpdir) >= (int)sizeof tmp_dat) {
    cli_err("weft tune: --plot: the output folder's name is too long\n");
    goto done;
  }
  gp_script(&tf, "plot.png", "data.dat", body.p, width, height);
  if (tf.oom) { cli_err("weft tune: --plot: out of memory\n"); goto done; }
  if (util_write_atomic(tmp_gp, tf.p, tf.len, err, sizeof err) || util_write_atomic(tmp_dat, d.p, d.len, err, sizeof err)) {
    cli_err("weft tune: --plot: %s\n", err);
    goto done;
  }
  if (run_gnuplot(tmpdir) != 0) {
    cli_err("weft tune: could not plot (is gnuplot installed? apt-get install gnuplot-nox); the script is %s\n", gp);
    goto done;
  }
  /* rename replaces whatever is at the PNG's name (a link too), never writing into a link's target */
  if (rename(tmp_png, png) != 0) {
    cli_err("weft tune: --plot: %s: cannot put the plot there: %s\n", png, strerror(errno));
    goto done;
  }
  printf("wrote %s\n", png);
  rc = 0;
done:
  if (made_tmp) {   /* the private folder: only what weft and gnuplot put there */
    unlink(tmp_gp);
    unlink(tmp_png);
    unlink(tmp_dat);
    rmdir(tmpdir);
  }
  util_buf_free(&d);
  util_buf_free(&body);
  util_buf_free(&f);
  util_buf_free(&tf);
  free(vals);
  free(nv);
  return rc;
}

/* --fake-timing: a deterministic time from the kernel name, so the ranking, CSV, database and
 * plot can be tested where there is no GPU.  Never a measurement: the output says so. */
static double fake_time_us(const char *kernel) {
  unsigned char d[32];
  hash_sha256(kernel, strlen(kernel), d);
  unsigned v = (unsigned)d[0] << 8 | d[1];
  return 100.0 + (double)(v % 10000) / 10.0;
}

static int tune_main(int argc, char **argv, int out_fd);

int cmd_tune(int argc, char **argv) {
  ranks_init(NULL, NULL);
  /* every rank runs the sweep; rank 0 reports, the others print only errors and what they
   * agreed on (to the original stdout) */
  int out_fd = dup(1);
  if (ranks_rank() != 0 && cli_guard_drop_stdout() != 0) out_fd = 1;
  int rc = tune_main(argc, argv, out_fd);
  fflush(stdout);
  if (out_fd != 1) close(out_fd);
  if (ranks_size() > 1) rc = ranks_any(rc != CLI_OK) ? (rc != CLI_OK ? rc : CLI_FAIL) : CLI_OK;
  ranks_finalize();
  return rc;
}

/* A CSV field, whole, in double quotes: a quote is doubled (RFC 4180), a newline becomes a space
 * (one row a line).  The config column is the candidate itself, so it is never cut. */
static void csv_field(util_buf *b, const char *s) {
  util_buf_append(b, "\"", 1);
  for (;;) {
    size_t n = strcspn(s, "\"\n\r");
    util_buf_append(b, s, n);
    s += n;
    if (!*s) break;
    util_buf_append(b, *s == '"' ? "\"\"" : " ", *s == '"' ? 2 : 1);
    s++;
  }
  util_buf_append(b, "\"", 1);
}

/* --export FILE's folder exists: checked before the run, which can take an hour (the table is
 * written after it).  1 with the message when it does not. */
static int export_dir_missing(const char *path) {
  const char *slash = strrchr(path, '/');
  struct stat at;   /* (a folder at the name itself fails only at the end, after the run: said now) */
  if ((slash && !slash[1]) || (stat(path, &at) == 0 && S_ISDIR(at.st_mode))) { cli_err("weft tune: --export %s: names a folder; it takes a file (a .tsv)\n", path); return 1; }
  char *dir = util_path_dir(path);
  struct stat st;
  int bad = 1;
  if (!dir) cli_err("weft tune: out of memory\n");
  else if (strlen(dir) >= PATH_MAX) cli_err("weft tune: --export %.200s...: the path is too long\n", path);
  else if (stat(dir, &st) != 0) cli_err("weft tune: --export %s: its folder %s does not exist\n", path, dir);
  else if (!S_ISDIR(st.st_mode)) cli_err("weft tune: --export %s: its folder %s is not a folder\n", path, dir);
  else bad = 0;
  free(dir);
  return bad;
}

static int tune_main(int argc, char **argv, int out_fd) {
  cli_common c = {0};
  long jobs_n = sysconf(_SC_NPROCESSORS_ONLN), budget = 0, iters = 20, max_spill = 0;
  int no_run = 0, plot = 0, fake = 0, rc = CLI_USAGE;
  const char *db_path = NULL, *out_dir = ".", *export_path = NULL;
  char err[8192];
  char *text = NULL;
  weft_ctx *ctx = NULL;
  sweep *sw = NULL;
  job *jobs = NULL;
  const char **set_store = NULL;
  tunedb *db = NULL;
  int n_jobs = 0;
  weft_status st;
  /* Every rank of an mpirun job passes each `agree` together: a rank that cannot go on (a flag,
   * a file, a sweep, the output folder, the database, its device) stops every rank with its
   * message, before any rank waits in a collective the others never reach. */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long *num = !strcmp(a, "--jobs") ? &jobs_n : !strcmp(a, "--budget") ? &budget : !strcmp(a, "--iters") ? &iters
              : !strcmp(a, "--max-spill") ? &max_spill : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { cmd_tune_help(); rc = CLI_OK; goto out; }
    if (num) {
      long max = num == &jobs_n ? 256 : num == &iters ? 100000 : 1L << 30;
      long min = num == &jobs_n ? 1 : num == &iters ? 3 : 0;
      long long v;
      if (cli_flag_whole(argc, argv, &i, "weft tune", min, max,
                         num == &iters ? " (a median of three timed loops needs three)" : NULL, &v))
        goto agree;
      *num = (long)v;
      continue;
    }
    if (!strcmp(a, "--no-run")) { no_run = 1; continue; }
    if (!strcmp(a, "--plot")) { plot = 1; continue; }
    if (!strcmp(a, "--fake-timing")) { fake = 1; continue; }
    if (!strcmp(a, "--db") || !strcmp(a, "--export")) {
      const char *v = cli_flag_value(argc, argv, &i, "weft tune", "a path");
      if (!v) goto agree;
      *(!strcmp(a, "--db") ? &db_path : &export_path) = v;
      continue;
    }
    int r = cli_common_arg(&c, argc, argv, &i, "weft tune");
    if (r < 0) goto agree;
    if (r == 0) { cli_err("weft tune: unknown option '%s' (weft help tune)\n", a); goto agree; }
  }
  if (!c.config) { cli_err("weft tune: needs SWEEP.lua (weft help tune)\n"); goto agree; }
  if (jobs_n < 1) jobs_n = 1;   /* (sysconf's answer: --jobs itself is at least 1) */
  if (export_path) {   /* (before the run, which can take an hour) */
    /* the database the run stores in: --db, else tunedb's own default (WEFT_TUNE_DB, XDG_CACHE_HOME,
     * HOME).  NULL when none is set or out of memory: tunedb_open fails then, before the run too */
    char *dflt = db_path ? NULL : tunedb_default_path(NULL, 0);
    int refused = export_dir_missing(export_path) ||
                  cli_export_refused("weft tune --export", export_path, db_path ? db_path : dflt);
    free(dflt);
    if (refused) goto agree;
  }
  if (export_path && fake) {
    cli_err("weft tune: --export with --fake-timing: a run with fake timings writes no tuning table (its rows are "
            "stored under the gpu \"FAKE (--fake-timing)\", apart from measured ones); drop one\n");
    goto agree;
  }
  if (c.out_dir) out_dir = c.out_dir;

  if (util_read_file(c.config, &text, NULL, err, sizeof err)) { cli_err("weft tune: %s\n", err); goto agree; }
  /* under mpirun each rank takes the GPU of its local rank, as `weft run` does (with one
   * context on device 0, two ranks of an allreduce sweep time-sliced one GPU: 2.25 ms a launch) */
  if (cli_device_env_check("weft tune")) goto agree;
  weft_ctx_options copts = {.device = cli_device()};
  if (weft_ctx_create(&ctx, &copts)) { cli_err("weft tune: cannot create a context\n"); rc = CLI_FAIL; goto agree; }
  st = sweep_expand(api_bridge(ctx), c.config, text, c.sets, c.n_sets, &sw, err, sizeof err);
  if (st) { cli_err("%s\n", err); rc = cli_status_exit(st); goto agree; }
  rc = CLI_OK;
agree:
  if ((rc = ranks_agree(rc, cli_last_error(), "tune")) != CLI_OK) goto out;
  rc = CLI_FAIL;

  /* ---- the same sweep and options on every rank ---------------------------------------------- */
  {
    hash_ctx *hc = hash_begin();
    hash_add_str(hc, sw->base_text);
    for (int s = 0; s < sw->n_shapes; s++) {
      hash_add_str(hc, sw->shapes[s].name);
      for (int ci = 0; ci < sw->shapes[s].n_cand; ci++)
        for (int k = 0; k < sw->shapes[s].cand[ci].n_sets; k++) hash_add_str(hc, sw->shapes[s].cand[ci].sets[k]);
    }
    char opts[256];
    snprintf(opts, sizeof opts, "run=%d fake=%d budget=%ld iters=%ld spill=%ld", !no_run, fake, budget, iters, max_spill);
    hash_add_str(hc, opts);
    unsigned char d[32];
    hash_end(hc, d);
    unsigned long long h = 0;
    for (int i = 0; i < 8; i++) h = h << 8 | d[i];
    if (!ranks_same(h)) {
      cli_err("weft tune: rank %d: the ranks expanded different sweeps or were given different options (another "
              "file, --set, --no-run, --fake-timing, --budget, --iters, --max-spill or weft version on some rank): "
              "every rank must tune the same candidates the same way\n", ranks_rank());
      rc = CLI_USAGE;
      goto out;
    }
  }

  /* ---- where the results go, before anything is measured (rank 0 writes them) ---------------- */
  {
    int bad = 0;
    if (ranks_rank() == 0 && !no_run) {
      struct stat dst;
      if (lstat(out_dir, &dst) == 0 && (stat(out_dir, &dst) != 0 || !S_ISDIR(dst.st_mode))) {
        cli_not_a_folder("weft tune", out_dir, "");   /* (as weft gen says it, and exit 2 as there) */
        bad = 2;
      } else if (util_mkdirs(out_dir, 0755, err, sizeof err)) { cli_err("weft tune: -o %s: %s\n", out_dir, err); bad = 1; }
      else if (stat(out_dir, &dst) || !S_ISDIR(dst.st_mode) || access(out_dir, W_OK | X_OK)) {
        cli_err("weft tune: -o %s: not a folder this user can write to\n", out_dir);
        bad = 1;
      } else if (tunedb_open(&db, db_path, err, sizeof err) || tunedb_check(db, err, sizeof err)) {
        cli_err("weft tune: the tuning database: %s (give --db PATH, or fix WEFT_TUNE_DB)\n", err);
        bad = 1;
      }
    }
    if ((rc = ranks_agree(bad == 2 ? CLI_USAGE : bad ? CLI_FAIL : CLI_OK, cli_last_error(), "tune")) != CLI_OK) goto out;
    rc = CLI_FAIL;
  }

  /* ---- what the sweep holds --------------------------------------------------------------- */
  printf("sweep %s: family %s, %d shape%s, space over", sw->file, sw->family, sw->n_shapes, sw->n_shapes == 1 ? "" : "s");
  for (int i = 0; i < sw->n_keys; i++) printf(" %s", sw->keys[i]);
  printf("\n");
  for (int s = 0; s < sw->n_shapes; s++) {
    const sweep_shape *sh = &sw->shapes[s];
    printf("  %s: %d combinations, %d pruned by `where`, %d by the generator's rules, %d duplicates, %d candidates\n",
           sh->name, sh->total, sh->pruned_where, sh->total - sh->pruned_where - sh->n_cand - sh->duplicates,
           sh->duplicates, sh->n_cand);
    for (int r = 0; r < sh->n_rules; r++)   /* the rule, numbers as N; then one message in full */
      printf("    %4d  %s\n          e.g. %s\n", sh->rules[r].count, sh->rules[r].rule,
             sh->rules[r].example ? sh->rules[r].example : "");
    n_jobs += sh->n_cand + 1;
  }

  /* ---- compile every candidate, in parallel, through the cache ----------------------------- */
  jobs = calloc((size_t)n_jobs, sizeof *jobs);
  set_store = calloc((size_t)n_jobs * 64, sizeof *set_store);
  if (!jobs || !set_store) cli_err("weft tune: out of memory for %d jobs\n", n_jobs);
  if ((rc = ranks_agree(jobs && set_store ? CLI_OK : CLI_FAIL, cli_last_error(), "tune")) != CLI_OK) goto out;
  rc = CLI_FAIL;
  int n = 0;
  for (int s = 0; s < sw->n_shapes; s++) {
    const sweep_shape *sh = &sw->shapes[s];
    for (int ci = -1; ci < sh->n_cand; ci++) {
      job *j = &jobs[n];
      j->shape = s;
      j->cand = ci;
      j->sets = set_store + (size_t)n * 64;
      for (int k = 0; k < sh->n_sets && j->n_sets < 64; k++) j->sets[j->n_sets++] = sh->sets[k];
      if (ci >= 0)
        for (int k = 0; k < sh->cand[ci].n_sets && j->n_sets < 64; k++) j->sets[j->n_sets++] = sh->cand[ci].sets[k];
      n++;
    }
  }
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  double t0 = util_now_ms();   /* --budget counts from here: compiling and running */
  tune_state ts = {.sw = sw, .jobs = jobs, .n_jobs = n_jobs, .deadline_ms = budget ? t0 + 1e3 * (double)budget : 0};
  pthread_mutex_init(&ts.lock, NULL);
  int want = (int)(jobs_n < n_jobs ? jobs_n : n_jobs), nt = 0;
  pthread_t *th = calloc((size_t)(want > 0 ? want : 1), sizeof *th);
  for (int i = 0; th && i < want; i++, nt++) {
    int e = pthread_create(&th[i], NULL, compile_worker, &ts);
    if (e) {   /* e.g. a process limit: go on with the threads there are */
      cli_err("weft tune: --jobs %ld: thread %d could not start (%s); compiling on %d thread%s\n", jobs_n, i + 1,
              strerror(e), nt ? nt : 1, nt == 1 ? "" : "s");
      break;
    }
  }
  if (nt == 0) compile_worker(&ts);   /* no thread at all: compile here */
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
  if (nt == 0) nt = 1;
  free(th);
  double compile_s = (util_now_ms() - t0) / 1e3;
  int compiled = 0, hits = 0, cold = 0, spilled = 0, serialized = 0, failed = 0, no_default = 0;
  double cold_sum = 0, cold_max = 0;
  for (int i = 0; i < n_jobs; i++) {
    job *j = &jobs[i];
    if (j->error) {
      printf("  compile failed: %s %s:\n    %s\n", sw->shapes[j->shape].name, job_label(sw, j), j->error);
      failed++;
      continue;
    }
    if (j->invalid) {
      printf("  %s: the base config is not valid for this shape, so there is no default to compare with\n",
             sw->shapes[j->shape].name);
      no_default++;
      continue;
    }
    if (!j->compiled) continue;
    compiled++;
    if (j->hit) hits++;
    else { cold++; cold_sum += j->compile_ms; if (j->compile_ms > cold_max) cold_max = j->compile_ms; }
    if (j->res.spill_stores > max_spill || j->res.spill_loads > max_spill) {
      j->rejected = 1;
      spilled++;
      snprintf(j->why, sizeof j->why, "spills %d/%d bytes (stores/loads) > --max-spill %ld", j->res.spill_stores,
               j->res.spill_loads, max_spill);
    } else if (j->res.serialized) {
      j->rejected = 1;
      serialized++;
      snprintf(j->why, sizeof j->why, "ptxas serialises its WGMMAs (C7520: correct but slow)");
    }
  }
  char nv[32];
  jit_nvrtc_version(nv, sizeof nv);
  printf("compiled %d of %d kernels in %.1f s on %d thread%s (NVRTC %s): %d from the cache, %d compiled",
         compiled, n_jobs - no_default, compile_s, nt, nt == 1 ? "" : "s", nv, hits, cold);
  if (cold) printf(" (cold compile mean %.0f ms, max %.0f ms)", cold_sum / cold, cold_max);
  printf("; %d rejected for spilling", spilled);
  if (serialized) printf(", %d for serialised WGMMAs", serialized);
  printf("\n");
  if (ts.out_of_time) printf("the budget (--budget %ld s) ran out while compiling: %d kernels not compiled\n", budget, ts.out_of_time);
  if (ranks_any(interrupted)) { printf("interrupted while compiling\n"); rc = CLI_FAIL; goto out; }
  if (no_run) { rc = failed ? CLI_FAIL : CLI_OK; goto out; }

  /* ---- check and time on the GPU ------------------------------------------------------------ */
  char gpu[256] = "FAKE (--fake-timing)";
  int sm = 0, driver = 0;
  st = fake ? WEFT_OK : api_device_info(ctx, gpu, sizeof gpu, &sm, &driver);
  if (fake) printf("FAKE TIMING (--fake-timing): times below are made up from kernel names, for testing weft tune\n");
  if (st) cli_err("weft tune: %s; compiled only\n", weft_ctx_error(ctx));
  if ((rc = ranks_agree(st ? cli_status_exit(st) : CLI_OK, cli_last_error(), "tune")) != CLI_OK) goto out;
  rc = CLI_FAIL;
  int tty = isatty(1) && ranks_size() == 1;
  int total_runs = 0, done = 0, stopped = 0;
  for (int i = 0; i < n_jobs; i++) total_runs += jobs[i].compiled && !jobs[i].rejected;
  double tr0 = util_now_ms();
  printf("running %d kernels on %s (sm_%d, driver %d)%s", total_runs, gpu, sm, driver,
         budget ? "" : "; no budget: Ctrl-C (or SIGTERM) stops and keeps what was measured");
  if (ranks_size() > 1) printf("; %d ranks run every candidate together, times are the MAX over ranks", ranks_size());
  printf("\n");
  /* Every rank walks the same jobs in the same order and makes the same collective calls for
   * each (eligible?, stop?, correct?, time), so the ranks can never disagree on a decision. */
  for (int s = 0; s < sw->n_shapes && !stopped; s++) {
    const sweep_shape *sh = &sw->shapes[s];
    job *best = NULL;
    for (int i = 0; i < n_jobs && !stopped; i++) {
      job *j = &jobs[i];
      if (j->shape != s) continue;
      if (!ranks_all(j->compiled && !j->rejected)) {
        if (j->compiled && !j->rejected) { j->rejected = 1; snprintf(j->why, sizeof j->why, "not runnable on every rank"); }
        continue;
      }
      if (ranks_any(interrupted || (budget && (util_now_ms() - t0) / 1e3 > (double)budget))) {
        stopped = 1;
        break;
      }
      int ok = 1;
      run_result chk = {0};
      memset(&j->r, 0, sizeof j->r);
      if (!tty) printf("  %s %s: ", sh->name, job_label(sw, j));
      fflush(stdout);
      if (fake) {
        j->r.timed = 1;
        j->r.us = fake_time_us(j->kernel) * (1.0 + 0.05 * ranks_rank());   /* ranks differ: MAX matters */
        j->r.metric = 1e3 / j->r.us;
        snprintf(j->r.metric_name, sizeof j->r.metric_name, "fake/s");
      } else {
        weft_kernel *k = NULL;
        /* every rank must have the kernel before any runs it: the runners make collective
         * calls, and a rank whose compile failed here (its own cache, a lock, NVRTC) would
         * leave the others waiting in them */
        int built = weft_compile_string(ctx, sw->file, sw->base_text, j->sets, j->n_sets, &k) == WEFT_OK;
        if (!ranks_all(built)) {
          ok = 0;
          weft_kernel_destroy(k);
        } else {
          /* Correctness first, on a slice of the shape (each size capped by the family's
           * run spec: a few rows or clusters, 2048 x 1024 of a GEMM), so the reference stays
           * cheap; then timing at the full shape.  The kernel is the same either way. */
          const weft_manifest *km = weft_kernel_manifest(k);
          run_opts oc = {.iters = 1, .warmup = 0, .seed = 1234 + (unsigned)i, .check = 1, .timing = 0, .quiet = 1,
                         .result = &chk, .n_check = 1, .shapes_only = 1};
          run_opts o = {.iters = (int)iters, .warmup = 3, .seed = 99, .check = 0, .timing = 1, .quiet = 1,
                        .result = &j->r, .n_time = 1, .shapes_only = 1};
          for (int d = 0; d < km->run.n_sizes; d++) {
            long v = sweep_size(sh, km->run.sizes[d]);
            long long cap = km->run.check_cap[d];
            o.time_shapes[0].v[d] = v;
            oc.check_shapes[0].v[d] = cap > 0 && v > cap ? cap : v;
          }
          int r = run_kernel(k, &oc);
          /* timed only where every rank's check passed (the decision is collective too) */
          if (ranks_all(r == CLI_OK && (!chk.checked || chk.passed))) r = run_kernel(k, &o);
          else if (r == CLI_OK) r = CLI_FAIL;
          ok = r == CLI_OK && j->r.timed && !(chk.checked && !chk.passed);
          j->r.checked = chk.checked;
          j->r.passed = chk.passed;
          weft_kernel_destroy(k);
        }
      }
      done++;
      int all_right = ranks_all(!(chk.checked && !chk.passed));
      int all_ok = ranks_all(ok);
      j->local_us = j->r.us;
      j->r.us = ranks_max(ok ? j->r.us : 0.0);
      if (!all_ok) {
        j->rejected = 1;
        snprintf(j->why, sizeof j->why, "%s", !all_right ? "WRONG RESULT (on some rank): not timed" : "failed to run");
        if (!tty) printf("%s\n", j->why);
        else printf("\n  %s %s: %s\n", sh->name, job_label(sw, j), j->why);
        continue;
      }
      j->ran = 1;
      if (!best || j->r.us < best->r.us) best = j;
      if (!tty) printf("%.2f us, %.1f %s%s\n", j->r.us, j->r.metric, j->r.metric_name, j->r.checked || fake ? "" : " (NOT CHECKED)");
      progress(tty, done, total_runs, tr0, best, sw);
    }
  }
  if (tty) printf("\n");
  if (stopped) printf("stopped %s after %d of %d runs; keeping what was measured\n",
                      interrupted == SIGTERM ? "by SIGTERM" : interrupted ? "by Ctrl-C" : "by the budget", done, total_runs);

  /* Rank 0 decides each shape's best and tells the others: every rank must launch the same
   * config, or fused kernels that wait on each other would deadlock. */
  for (int s = 0; s < sw->n_shapes; s++) {
    int bi = -1;
    for (int i = 0; i < n_jobs; i++)
      if (jobs[i].shape == s && jobs[i].ran && (bi < 0 || jobs[i].r.us < jobs[bi].r.us)) bi = i;
    bi = ranks_bcast_int(bi);
    if (ranks_size() > 1)
      util_fd_printf(out_fd, "agreed: rank %d of %d: %s: %s, %.3f us (max over ranks, this rank measured %.3f us)\n",
              ranks_rank(), ranks_size(), sw->shapes[s].name, bi >= 0 ? jobs[bi].kernel : "(none)",
              bi >= 0 ? jobs[bi].r.us : 0.0, bi >= 0 ? jobs[bi].local_us : 0.0);
  }
  if (ranks_rank() != 0) { rc = CLI_OK; goto out; }   /* rank 0 reports and stores */

  /* ---- results: ranked tables, CSV, database ------------------------------------------------ */
  char csv_path[4096], e2[1024];
  int store_failed = 0;
  if (snprintf(csv_path, sizeof csv_path, "%s/tune-%s.csv", out_dir, sw->family) >= (int)sizeof csv_path) {
    cli_err("weft tune: -o %s: the folder's name is too long\n", out_dir);
    goto out;
  }
  util_buf csv = {0};
  util_buf_printf(&csv, "shape,rank,config,time_us,metric,metric_name,vs_best,vs_baseline,baseline,kernel\n");
  int any = 0;
  for (int s = 0; s < sw->n_shapes; s++) {
    const sweep_shape *sh = &sw->shapes[s];
    job **ranked = calloc((size_t)n_jobs, sizeof *ranked);
    int nr = 0;
    job *dflt = NULL;
    for (int i = 0; i < n_jobs; i++)
      if (jobs[i].shape == s && jobs[i].ran) {
        ranked[nr++] = &jobs[i];
        if (jobs[i].cand < 0) dflt = &jobs[i];
      }
    qsort(ranked, (size_t)nr, sizeof *ranked, cmp_time);
    printf("\n%s, %s (%d measured):\n", sw->family, sh->name, nr);
    printf("  rank  %10s  %10s  %7s  %8s  config\n", "time us", ranked && nr ? ranked[0]->r.metric_name : "", "vs best",
           nr && ranked[0]->r.baseline_name[0] ? ranked[0]->r.baseline_name : "baseline");
    tune_row *rows = calloc((size_t)nr + 1, sizeof *rows);
    for (int r = 0; r < nr; r++) {
      job *j = ranked[r];
      double vb = ranked[0]->r.us / j->r.us;
      if (r < 20 || j == dflt)
        printf("  %4d  %10.2f  %10.1f  %7.3f  %8.3f  %s\n", r + 1, j->r.us, j->r.metric, vb, j->r.baseline, job_label(sw, j));
      csv_field(&csv, sh->name);
      util_buf_printf(&csv, ",%d,", r + 1);
      csv_field(&csv, j->cand < 0 ? "" : job_label(sw, j));
      util_buf_printf(&csv, ",%.3f,%.3f,%s,%.4f,%.4f,%s,%s\n", j->r.us, j->r.metric, j->r.metric_name, vb,
                      j->r.baseline, j->r.baseline_name, j->kernel);
      /* the database keeps the candidate as its full set list (shape sets + candidate sets), one
       * per line: values may hold spaces (op.combine = "fmaxf(a, b)") but never a newline */
      util_buf cfg = {0};
      util_buf_printf(&cfg, "%s", "");
      for (int k = 0; k < j->n_sets; k++) util_buf_printf(&cfg, "%s%s", k ? "\n" : "", j->sets[k]);
      if (cfg.oom) { cli_err("weft tune: out of memory for a candidate's config\n"); store_failed = 1; }
      rows[r].config = cfg.p;   /* freed with the rows */
      rows[r].base = (char *)sw->base_text;
      rows[r].kernel = j->kernel;
      rows[r].time_us = j->r.us;
      rows[r].metric = j->r.metric;
      rows[r].metric_name = j->r.metric_name;
      rows[r].sweep = (char *)sw->file;
      rows[r].when = (long long)time(NULL);
    }
    if (nr) {
      any = 1;
      printf("  best: %s, %.2f us", job_label(sw, ranked[0]), ranked[0]->r.us);
      if (dflt) printf("; %.2fx the default config (%.2f us)", dflt->r.us / ranked[0]->r.us, dflt->r.us);
      printf("\n");
    }
    if (db && nr) {
      char shape_key[512];
      snprintf(shape_key, sizeof shape_key, "%s", sh->name);
      tune_key key = {gpu, sm, driver, nv, ranks_size(), sw->family, NULL, shape_key};
      /* dtype from the candidate's config: the flattened manifest knows it */
      weft_manifest *m;
      if (!weft_generate_string(ctx, sw->file, sw->base_text, ranked[0]->sets, ranked[0]->n_sets, &m)) {
        key.dtype = util_strdup(weft_manifest_param(m, "dtype") ? weft_manifest_param(m, "dtype") : "");
        weft_manifest_free(m);
      }
      if (tunedb_put(db, &key, rows, nr, e2, sizeof e2)) { cli_err("weft tune: %s\n", e2); store_failed = 1; }
      free((char *)key.dtype);
    }
    for (int r = 0; r < nr; r++) free(rows[r].config);
    free(rows);
    free(ranked);
  }
  for (int i = 0; i < n_jobs; i++)
    if (jobs[i].rejected && jobs[i].compiled)
      printf("  not timed: %s %s: %s\n", sw->shapes[jobs[i].shape].name, job_label(sw, &jobs[i]), jobs[i].why);
  if (csv.oom) { cli_err("weft tune: out of memory for the CSV\n"); store_failed = 1; }
  else if (util_write_atomic(csv_path, csv.p, csv.len, e2, sizeof e2)) { cli_err("weft tune: %s\n", e2); store_failed = 1; }
  else printf("\nwrote %s\n", csv_path);
  util_buf_free(&csv);
  if (db && !store_failed) printf("stored in %s\n", tunedb_path(db));
  if (plot && any && write_plot(sw, jobs, n_jobs, out_dir)) store_failed = 1;
  if (export_path && db && !store_failed && !fake &&
      cli_export_table(ctx, "weft tune --export", tunedb_path(db), export_path, gpu, sm, driver, nv, "weft tune --export") != CLI_OK)
    store_failed = 1;
  rc = any && !store_failed ? CLI_OK : CLI_FAIL;
out:
  if (db) tunedb_close(db);
  free(text);
  for (int i = 0; jobs && i < n_jobs; i++) free(jobs[i].error);
  free(jobs);
  free(set_store);
  sweep_free(sw);
  weft_ctx_destroy(ctx);
  return rc;
}
