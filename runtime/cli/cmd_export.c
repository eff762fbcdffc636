/* cmd_export.c: `weft export-table` and `weft tune --export FILE`: the tuning database's best
 * config per (family, dtype, ranks, shape) for one GPU, written as a tuning table (the format of
 * tune/h200.tsv, runtime/core/autotable.h), atomically. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "autotable.h"
#include "cli.h"
#include "internal.h"
#include "jit.h"
#include "tunedb.h"
#include "util.h"

void cmd_export_help(void) {
  printf("usage: weft export-table [--db PATH] [--gpu NAME --sm N --driver N [--nvrtc V]] FILE\n\n"
         "Writes FILE, a tuning table like tune/h200.tsv (the one weft ships and weft suggest reads): the\n"
         "fastest config the tuning database holds per family, dtype, rank count and shape, for this GPU,\n"
         "driver and NVRTC (or the ones given: a database copied from the GPU machine exports anywhere).\n"
         "Each config is written whole, relative to { family, dtype }, and kept only where it regenerates\n"
         "the kernel that was measured (a custom operator's Lua cannot be written as key=value: skipped, said).\n"
         "WEFT_AUTO_TABLE=FILE makes weft use it in place of the shipped table.\n");
}

/* v is non-empty and made only of the characters in set */
static int made_of(const char *v, const char *set) { return v && *v && !v[strspn(v, set)]; }

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_"
/* a table value: [A-Za-z0-9_.+-]+ (autotable.h) */
static int table_value_ok(const char *v) { return made_of(v, NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+-"); }
/* A family's or dtype's name as the database holds it: [a-z0-9_]+ (written into a Lua string) */
static int name_ok(const char *v) { return made_of(v, NAME_CHARS); }

/* s for a header line of the table: control characters (a newline in a path or a --gpu) as '?',
 * so a value never starts a line of its own; into buf, cut to its size */
static const char *header_text(const char *s, char *buf, size_t len) {
  size_t i = 0;
  for (; s && s[i] && i + 1 < len; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  buf[i] = 0;
  return buf;
}

/* The row's whole config as key=value;... relative to { family, dtype }, checked by generating it
 * back, and its variant: the values of the family's key fields (what changes the result: op,
 * residual, eps, ...), one table row per variant and shape; 0, or -1 with why. */
static int row_config(weft_ctx *ctx, const tune_best *b, util_buf *out, util_buf *variant, char *why, size_t wlen) {
  int n = 0;
  char *cfg = util_strdup(b->row.config);
  const char *sets[CLI_MAX_SETS];
  char *save = NULL, *p = cfg ? strtok_r(cfg, "\n", &save) : NULL;
  for (; p && n < CLI_MAX_SETS; p = strtok_r(NULL, "\n", &save)) sets[n++] = p;
  weft_manifest *m = NULL, *back = NULL;
  int rc = -1;
  if (!cfg) { util_set_err(why, wlen, "out of memory"); return -1; }
  if (p) {   /* cut, it would generate another kernel (and blame weft for the difference) */
    util_set_err(why, wlen, "its config has more than %d fields", CLI_MAX_SETS);
    goto done;
  }
  if (!name_ok(b->family) || !name_ok(b->dtype)) {   /* they go into Lua source below */
    util_set_err(why, wlen, "its family \"%.60s\" or dtype \"%.60s\" is not a name ([a-z0-9_]+)", b->family, b->dtype);
    goto done;
  }
  if (weft_generate_string(ctx, b->row.sweep, b->row.base, sets, n, &m)) {
    util_set_err(why, wlen, "its config no longer generates: %.300s", weft_ctx_error(ctx));
    goto done;
  }
  if (b->row.kernel && *b->row.kernel && strcmp(m->name, b->row.kernel)) {
    util_set_err(why, wlen, "its config now makes %.200s, not the measured %.200s (weft changed since: tune again)",
                 m->name, b->row.kernel);
    goto done;
  }
  int np = 0;
  util_buf text = {0};
  for (int i = 0; i < m->n_params && np < 256; i++) {
    const char *k = m->params[i].key, *v = m->params[i].value;
    size_t kl = strlen(k);
    if (!strcmp(k, "family") || !strcmp(k, "dtype")) continue;
    if ((kl > 8 && !strcmp(k + kl - 8, ".combine")) || (kl > 9 && !strcmp(k + kl - 9, ".identity")) ||
        (kl > 4 && !strcmp(k + kl - 4, ".ref")))
      continue;   /* a built-in operator is its name; a custom one fails the check below */
    /* a custom field normalised to a table (rmsnorm's eps: { tag, value }) is written as its value */
    char parent[128];
    if (kl > 6 && !strcmp(k + kl - 6, ".value") && kl - 6 < sizeof parent) {
      memcpy(parent, k, kl - 6);
      parent[kl - 6] = 0;
      k = parent;
    }
    if (!table_value_ok(v)) {
      util_set_err(why, wlen, "%s = \"%.60s\" cannot be written as a table value ([A-Za-z0-9_.+-]+)", k, v);
      util_buf_free(&text);
      goto done;
    }
    util_buf_printf(&text, "%s%s=%s", np++ ? ";" : "", k, v);
    for (int j = 0; j < m->run.n_key; j++) {
      size_t l = strlen(m->run.key[j]);
      if (!strncmp(k, m->run.key[j], l) && (k[l] == 0 || k[l] == '.')) util_buf_printf(variant, "%s=%s;", k, v);
    }
  }
  char *base = util_strprintf("return { family = \"%s\", dtype = \"%s\" }", b->family, b->dtype);
  char *copy = text.p ? util_strdup(text.p) : util_strdup("");
  const char *bs[256];
  int nb = 0;
  char *rest = NULL;
  for (char *p = copy ? strtok_r(copy, ";", &rest) : NULL; p && nb < 256; p = strtok_r(NULL, ";", &rest)) bs[nb++] = p;
  if (!base || !copy || text.oom) util_set_err(why, wlen, "out of memory");
  else if (weft_generate_string(ctx, "(table row)", base, bs, nb, &back))
    util_set_err(why, wlen, "written as a table row it does not generate: %.300s", weft_ctx_error(ctx));
  else if (strcmp(back->name, m->name))
    util_set_err(why, wlen, "written as a table row it makes %s, not the measured %s", back->name, m->name);
  else if (util_buf_printf(out, "%s", text.p ? text.p : "") == 0)
    rc = 0;
  free(base);
  free(copy);
  util_buf_free(&text);
done:
  weft_manifest_free(m);
  weft_manifest_free(back);
  free(cfg);
  return rc;
}

int cli_export_refused(const char *who, const char *file, const char *db_path) {
  struct stat f, d;
  char why[1200];
  /* a device, pipe or socket, or a link to one: the table's rename would replace it (/dev/null
   * made a file) */
  if (lstat(file, &f) == 0 && !S_ISDIR(f.st_mode) && util_not_regular(file, why, sizeof why)) {
    cli_err("%s: %s; nothing written\n", who, why);
    return 1;
  }
  if (stat(file, &f) != 0) return 0;   /* (no file: nothing to lose; a folder is the writer's to refuse) */
  if (db_path && stat(db_path, &d) == 0 && f.st_dev == d.st_dev && f.st_ino == d.st_ino) {
    cli_err("%s %s: is the tuning database itself (%s): the table is another file (a .tsv); nothing written\n", who,
            file, db_path);
    return 1;
  }
  char head[16] = {0};
  int fd = S_ISREG(f.st_mode) ? open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) : -1;
  ssize_t got = fd >= 0 ? read(fd, head, sizeof head) : 0;
  if (fd >= 0) close(fd);
  if (got == (ssize_t)sizeof head && !memcmp(head, "SQLite format 3", 16)) {
    cli_err("%s %s: is an SQLite database (a tuning database?), not a table: refusing to replace it; nothing "
            "written\n", who, file);
    return 1;
  }
  return 0;
}

int cli_export_table(weft_ctx *ctx, const char *who, const char *db_path, const char *file, const char *gpu, int sm,
                     int driver, const char *nv, const char *command) {
  char err[2048];
  tunedb *db = NULL;
  tune_best *v = NULL;
  int n = 0, written = 0, skipped = 0;
  int dbst = tunedb_open_readonly(&db, db_path, err, sizeof err);
  if (dbst == 1) {   /* (the default named: a user who gave no --db sees where weft looked) */
    char derr[256];
    char *def = db_path ? NULL : tunedb_default_path(derr, sizeof derr);
    cli_err("%s %s: there is no tuning database at %s (--db or WEFT_TUNE_DB); nothing written\n", who, file,
            db_path ? db_path : def ? def : "the default path");
    free(def);
    return CLI_FAIL;
  }
  if (dbst || tunedb_best_per_shape(db, gpu, sm, driver, nv, &v, &n, err, sizeof err)) {
    cli_err("%s: %s\n", who, err);
    tunedb_close(db);
    return CLI_FAIL;
  }
  if (cli_export_refused(who, file, tunedb_path(db))) {
    tunedb_best_free(v, n);
    tunedb_close(db);
    return CLI_FAIL;
  }
  char date[32];
  time_t now = time(NULL);
  struct tm tm;
  if (!gmtime_r(&now, &tm) || !strftime(date, sizeof date, "%Y-%m-%d", &tm)) snprintf(date, sizeof date, "unknown");
  util_buf out = {0};
  char hg[256], hn[64], hc[600], hd[1100];
  util_buf_printf(&out, "# weft tuning table: the fastest config `weft tune` measured per shape\n# gpu: %s\n# sm: %d\n"
                  "# driver: %d\n# nvrtc: %s\n# date: %s\n# command: %s (from %s)\n"
                  "family\tdtype\tranks\tshape\ttime_us\tconfig\n", header_text(gpu, hg, sizeof hg), sm, driver,
                  header_text(nv, hn, sizeof hn), date, header_text(command, hc, sizeof hc),
                  header_text(tunedb_path(db), hd, sizeof hd));
  /* the group (family, dtype, ranks, shape) of rows i0..: their variants written so far */
  int i0 = 0;
  util_buf seen = {0};
  for (int i = 0; i < n; i++) {
    util_buf cfg = {0}, variant = {0}, needle = {0};
    char why[1024], canon[512];
    if (i > i0 && (strcmp(v[i].family, v[i0].family) || strcmp(v[i].dtype, v[i0].dtype) || v[i].ranks != v[i0].ranks ||
                   strcmp(v[i].shape, v[i0].shape))) {
      i0 = i;
      util_buf_free(&seen);
    }
    int bad_time = !v[i].time_ok,
        bad_ranks = v[i].ranks < 1 || v[i].ranks > AUTOTABLE_MAX_RANKS, bad_tab = strchr(v[i].shape, '\t') != NULL;
    if (bad_time)   /* what the table's reader would refuse (autotable.c): not written */
      snprintf(why, sizeof why, "time_us = %.40s%s: a time is a positive number of microseconds", v[i].time_text,
               strlen(v[i].time_text) > 40 ? "..." : "");
    else if (bad_ranks)
      snprintf(why, sizeof why, "ranks = %lld: a rank count is in 1..%d", v[i].ranks, AUTOTABLE_MAX_RANKS);
    else if (bad_tab)
      snprintf(why, sizeof why, "its shape holds a tab (the table's columns are separated by tabs)");
    if (bad_time || bad_ranks || bad_tab ||
        autotable_shape(v[i].shape, NULL, 0, canon, sizeof canon, why, sizeof why) ||
        row_config(ctx, &v[i], &cfg, &variant, why, sizeof why)) {
      fprintf(stderr, "%s: skipped %.100s %.40s %.200s (%lld rank%s, kernel %.200s): %s\n", who,
              v[i].family, v[i].dtype, v[i].shape, v[i].ranks, v[i].ranks == 1 ? "" : "s", v[i].row.kernel, why);
      skipped++;
    } else if (variant.oom || util_buf_printf(&needle, "|%s|", variant.p ? variant.p : "") ||
               (seen.p && strstr(seen.p, needle.p))) {
      /* a slower row of a variant already written (or no memory to tell): not exported.  seen
       * holds "|v|" per variant written; a variant is key=value; pairs, never a "|" */
    } else {
      util_buf_printf(&seen, "%s", needle.p);
      util_buf_printf(&out, "%s\t%s\t%lld\t%s\t%.3f\t%s\n", v[i].family, v[i].dtype, v[i].ranks, canon, v[i].row.time_us,
                      cfg.p ? cfg.p : "");
      written++;
    }
    util_buf_free(&cfg);
    util_buf_free(&variant);
    util_buf_free(&needle);
  }
  util_buf_free(&seen);
  int rc = CLI_OK;
  if (written == 0) {   /* a mistyped --gpu or --db, or a database of another machine: say so, write nothing */
    cli_err("%s %s: %s holds no row to export for %s (sm_%d, driver %d, NVRTC %s)%s; nothing written\n", who,
            file, tunedb_path(db), gpu, sm, driver, nv, skipped ? " that still makes its measured kernel" : "");
    rc = CLI_FAIL;
  } else if (out.oom) { cli_err("%s: out of memory\n", who); rc = CLI_FAIL; }
  else if (util_write_atomic(file, out.p, out.len, err, sizeof err)) { cli_err("%s %s: %s\n", who, file, err); rc = CLI_FAIL; }
  else printf("exported %d row%s (%d skipped) for %s (sm_%d, driver %d, NVRTC %s) to %s\n", written,
              written == 1 ? "" : "s", skipped, gpu, sm, driver, nv, file);
  util_buf_free(&out);
  tunedb_best_free(v, n);
  tunedb_close(db);
  return rc;
}

int cmd_export(int argc, char **argv) {
  const char *db_path = NULL, *file = NULL, *gpu = NULL, *nv = NULL;
  int sm = 0, driver = 0, given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { cmd_export_help(); return CLI_OK; }
    if (!strcmp(a, "--db") || !strcmp(a, "--gpu") || !strcmp(a, "--nvrtc")) {
      const char *v = cli_flag_value(argc, argv, &i, "weft export-table", !strcmp(a, "--db") ? "a path" : "a name");
      if (!v) return CLI_USAGE;
      if (!strcmp(a, "--db")) db_path = v;
      else if (!strcmp(a, "--gpu")) { gpu = v; given |= 1; }
      else { nv = v; given |= 2; }
      continue;
    }
    if (!strcmp(a, "--sm") || !strcmp(a, "--driver")) {
      const int is_sm = !strcmp(a, "--sm");
      long long v;
      if (cli_flag_whole(argc, argv, &i, "weft export-table", 0, is_sm ? 1000 : 1000000, NULL, &v)) return CLI_USAGE;
      *(is_sm ? &sm : &driver) = (int)v;
      given |= is_sm ? 4 : 8;
      continue;
    }
    if (a[0] == '-' || file) { cli_err("weft export-table: unexpected '%s' (weft help export-table)\n", a); return CLI_USAGE; }
    file = a;
  }
  if (!file) { cli_err("weft export-table: needs FILE (weft help export-table)\n"); return CLI_USAGE; }
  if (!file[0]) { cli_err("weft export-table: FILE is empty: name the table's file\n"); return CLI_USAGE; }
  if (given && (given | 2) != 15) {
    cli_err("weft export-table: --gpu, --sm and --driver go together (or none: this machine's GPU)\n");
    return CLI_USAGE;
  }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) { cli_err("weft export-table: cannot create a context\n"); return CLI_FAIL; }
  char name[256], nvb[32];
  int rc;
  if (!given) {
    weft_status st = api_device_info(ctx, name, sizeof name, &sm, &driver);
    if (st) {
      cli_err("weft export-table: needs --gpu, --sm and --driver (--nvrtc: this NVRTC's unless given), or this "
              "machine's GPU to read them from: %s\n", weft_ctx_error(ctx));
      weft_ctx_destroy(ctx);
      return cli_status_exit(st);
    }
    gpu = name;
  }
  jit_nvrtc_version(nvb, sizeof nvb);
  if (!nv) nv = nvb;
  char command[512];
  if (snprintf(command, sizeof command, "weft export-table %.400s", file) >= (int)sizeof command) command[0] = 0;
  rc = cli_export_table(ctx, "weft export-table", db_path, file, gpu, sm, driver, nv, command);
  weft_ctx_destroy(ctx);
  return rc;
}
