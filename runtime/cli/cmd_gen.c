/* cmd_gen.c: `weft gen` and `weft build`.  Files are written only after everything succeeded
 * (generation, and for build the compile), and all of them or none (see stage below): a bad
 * config, a failed compile or a full disk writes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auto.h"
#include "cli.h"
#include "util.h"

int cli_common_arg(cli_common *c, int argc, char **argv, int *i, const char *cmd) {
  const char *a = argv[*i];
  const char *v = NULL;
  if (!strcmp(a, "--set") || !strcmp(a, "-s")) {
    if (!(v = cli_flag_value(argc, argv, i, cmd, "key=value"))) return -1;
  } else if (!strncmp(a, "--set=", 6)) {
    v = a + 6;
  }
  if (v) {
    if (c->n_sets == CLI_MAX_SETS) { cli_err("%s: too many --set (max %d)\n", cmd, CLI_MAX_SETS); return -1; }
    c->sets[c->n_sets++] = v;
    return 1;
  }
  if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
    return (c->out_dir = cli_flag_value(argc, argv, i, cmd, "a folder")) ? 1 : -1;
  }
  if (a[0] != '-') {
    if (c->config) { cli_err("%s: two configs given ('%s' and '%s'); one per command\n", cmd, c->config, a); return -1; }
    c->config = a;
    return 1;
  }
  return 0;
}

int cli_status_exit(weft_status st) {
  switch (st) {
    case WEFT_OK: return CLI_OK;
    case WEFT_ERR_CONFIG: case WEFT_ERR_INVALID: case WEFT_ERR_IO: return CLI_USAGE;
    case WEFT_ERR_NO_DRIVER: case WEFT_ERR_NO_DEVICE: return CLI_NO_GPU;
    default: return CLI_FAIL;
  }
}

void cmd_gen_help(int build) {
  printf("usage: weft %s CONFIG.lua [--set key=value ...] [--auto --shape S] -o DIR\n\n", build ? "build" : "gen");
  if (build)
    printf("Generates and compiles the kernel for sm_90a (NVRTC, through the cache), then writes\n"
           "DIR/<name>.cu, .json, .ptx and .cubin and prints the kernel's registers, shared memory\n"
           "and local memory (spills).  Needs no GPU.\n");
  else
    printf("Writes DIR/<name>.cu (self-contained CUDA C, #line directives into templates/) and\n"
           "DIR/<name>.json (the manifest: name, entry, block, cluster, smem, args, grid, limits).\n");
  printf("--auto --shape S: first choose the fields the config leaves out or sets to \"auto\" for shape S\n"
         "(\"rows=4096 cols=50257\", rows=4096,cols=50257 or 4096x50257), as `weft suggest` prints;\n"
         "needs no GPU.\n");
  printf("A config that launches several kernels (ag_gemm's gather_then_gemm: the gather, then the\n"
         "GEMM) writes the files of every kernel; each .json lists them all under \"kernels\".\n");
}

/* Output is all or nothing: every file goes first into a staging folder made by mkdtemp beside
 * or inside DIR, then into place by rename, so a full disk, a write error or a failed compile
 * leaves nothing half-written.  A DIR that does not exist yet is the staging folder renamed
 * (one atomic step); into an existing DIR each file is renamed over its old version. */
typedef struct stage {
  const char *cmd;        /* "weft gen" or "weft build": its messages start with it */
  const char *out;        /* DIR as given */
  char dir[4096];         /* the staging folder */
  int fresh;              /* DIR did not exist: the staging folder becomes it */
  char *names[64];        /* files written into it, relative */
  int n;
  util_buf wrote;         /* "  wrote DIR/x" lines, printed once everything is in place */
} stage;

void cli_not_a_folder(const char *cmd, const char *out, const char *tail) {
  char target[4096];
  ssize_t n = readlink(out, target, sizeof target - 1);
  if (n >= 0) {
    target[n] = 0;
    struct stat st;
    cli_err("%s: -o %s: a symbolic link to %s, which %s%s\n", cmd, out, target,
            stat(out, &st) == 0 ? "is not a folder" : "does not exist (give a folder, or create it first)", tail);
  } else {
    cli_err("%s: -o %s: exists and is not a folder%s\n", cmd, out, tail);
  }
}

static int stage_open(stage *g, const char *cmd, const char *out) {
  char err[1024];
  struct stat st;
  memset(g, 0, sizeof *g);
  g->cmd = cmd;
  g->out = out;
  if (stat(out, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) { cli_not_a_folder(cmd, out, ""); return -1; }
  } else if (errno == ENOENT) {
    /* nothing, or a dangling link -- or, between the two calls, another weft gen's new DIR */
    if (lstat(out, &st) != 0) {
      if (errno != ENOENT) { cli_err("%s: -o %s: %s\n", cmd, out, strerror(errno)); return -1; }
      g->fresh = 1;
    } else if (!S_ISDIR(st.st_mode) && !(S_ISLNK(st.st_mode) && stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
      cli_not_a_folder(cmd, out, "");   /* (a link whose folder appeared meanwhile is that folder) */
      return -1;
    }
  } else {
    cli_err("%s: -o %s: %s\n", cmd, out, strerror(errno));
    return -1;
  }
  if (g->fresh) {
    /* the parent, so the staging folder sits on DIR's file system and rename can move it */
    char *parent = util_strdup(out);
    if (!parent) { cli_err("%s: out of memory\n", cmd); return -1; }
    size_t l = strlen(parent);
    while (l > 1 && parent[l - 1] == '/') parent[--l] = 0;
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) *slash = 0;
    int have_parent = slash != NULL;
    if (slash == parent) parent[1] = 0;
    if (have_parent && util_mkdirs(parent, 0755, err, sizeof err) != 0) {
      cli_err("%s: %s\n", cmd, err);
      free(parent);
      return -1;
    }
    free(parent);
    int w = snprintf(g->dir, sizeof g->dir, "%.*s.weft-tmp-XXXXXX", (int)l, out);
    if (w < 0 || (size_t)w >= sizeof g->dir) { cli_err("%s: -o %s: path too long\n", cmd, out); return -1; }
  } else {
    int w = snprintf(g->dir, sizeof g->dir, "%s/.weft-tmp-XXXXXX", out);
    if (w < 0 || (size_t)w >= sizeof g->dir) { cli_err("%s: -o %s: path too long\n", cmd, out); return -1; }
  }
  /* A new DIR is this folder renamed, so it is made again by mkdir(0777) (mkdtemp picked a free
   * name but made it 0700): DIR gets the mode mkdir(DIR) would give it, from the umask or the
   * parent's default ACL, without changing the process's umask to read it.  A name taken by
   * someone else in between is an error, never their folder used. */
  if (!mkdtemp(g->dir) || (g->fresh && (rmdir(g->dir) != 0 || mkdir(g->dir, 0777) != 0))) {
    cli_err("%s: cannot create a folder beside %s: %s\n", cmd, out, strerror(errno));
    return -1;
  }
  return 0;
}

static int stage_file(stage *g, const char *name, const char *ext, const void *data, size_t n) {
  char rel[512], path[4608], err[1024];
  int w = snprintf(rel, sizeof rel, "%s%s", name, ext);
  if (w < 0 || (size_t)w >= sizeof rel || strchr(rel, '/') || g->n == (int)(sizeof g->names / sizeof *g->names)) {
    cli_err("%s: cannot write %s%s: name too long, or too many files\n", g->cmd, name, ext);
    return -1;
  }
  snprintf(path, sizeof path, "%s/%s", g->dir, rel);
  if (!(g->names[g->n] = util_strdup(rel))) { cli_err("%s: out of memory\n", g->cmd); return -1; }
  g->n++;
  if (util_write_atomic(path, data, n, err, sizeof err) != 0) {
    cli_err("%s: %s (nothing was written to %s)\n", g->cmd, err, g->out);
    return -1;
  }
  if (util_buf_printf(&g->wrote, "  wrote %s/%s\n", g->out, rel) != 0) { cli_err("%s: out of memory\n", g->cmd); return -1; }
  return 0;
}

/* Removes the staging folder and what is in it. */
static void stage_drop(stage *g) {
  char path[4608];
  for (int i = 0; i < g->n; i++) {
    snprintf(path, sizeof path, "%s/%s", g->dir, g->names[i]);
    (void)unlink(path);   /* already failing, or renamed away: nothing more to do */
  }
  if (g->dir[0]) (void)rmdir(g->dir);
  for (int i = 0; i < g->n; i++) free(g->names[i]);
  util_buf_free(&g->wrote);
  g->n = 0;
}

static int stage_commit(stage *g) {
  if (g->fresh) {
    if (rename(g->dir, g->out) == 0) {
      g->dir[0] = 0;
      for (int i = 0; i < g->n; i++) free(g->names[i]);
      g->n = 0;
      if (g->wrote.p) fputs(g->wrote.p, stdout);
      util_buf_free(&g->wrote);
      return 0;
    }
    int e = errno;
    struct stat st;
    if ((e == ENOTEMPTY || e == EEXIST) && lstat(g->out, &st) == 0 && S_ISDIR(st.st_mode)) {
      /* another process (a second weft gen into the same new DIR) made the folder meanwhile:
       * go into it file by file, as into any folder that was there */
      g->fresh = 0;
    } else {
      if (e == ENOTDIR || e == EISDIR) cli_not_a_folder(g->cmd, g->out, " (nothing was written)");
      else cli_err("%s: cannot move %s to %s: %s (nothing was written)\n", g->cmd, g->dir, g->out, strerror(e));
      stage_drop(g);
      return -1;
    }
  }
  /* Into an existing folder: every target must be absent or a plain file, and each file it
   * replaces is first kept (a hard link in the staging folder), so a rename that fails puts the
   * old files back -- the folder ends as it was, or with every new file. */
  char from[4608], to[4608], keep[4608];
  int *kept = calloc((size_t)g->n + 1, sizeof *kept);
  if (!kept) { cli_err("%s: out of memory (nothing was written)\n", g->cmd); stage_drop(g); return -1; }
  for (int i = 0; i < g->n; i++) {
    struct stat st;
    snprintf(to, sizeof to, "%s/%s", g->out, g->names[i]);
    snprintf(keep, sizeof keep, "%s/%s.kept", g->dir, g->names[i]);
    if (lstat(to, &st) == 0 && !S_ISREG(st.st_mode)) {
      cli_err("%s: %s exists and is not a file (nothing was written)\n", g->cmd, to);
      goto undo_none;
    }
    if (lstat(to, &st) == 0) {
      if (link(to, keep) != 0) {
        cli_err("%s: cannot keep %s while replacing it: %s (nothing was written)\n", g->cmd, to, strerror(errno));
        goto undo_none;
      }
      kept[i] = 1;
    }
  }
  for (int i = 0; i < g->n; i++) {
    snprintf(from, sizeof from, "%s/%s", g->dir, g->names[i]);
    snprintf(to, sizeof to, "%s/%s", g->out, g->names[i]);
    if (rename(from, to) != 0) {
      cli_err("%s: cannot move %s to %s: %s (the folder is left as it was)\n", g->cmd, from, to, strerror(errno));
      for (int j = 0; j < i; j++) {   /* take back what was moved: all or nothing */
        snprintf(to, sizeof to, "%s/%s", g->out, g->names[j]);
        snprintf(keep, sizeof keep, "%s/%s.kept", g->dir, g->names[j]);
        if (kept[j]) (void)rename(keep, to);
        else (void)unlink(to);
      }
      goto undo_none;
    }
  }
  for (int i = 0; i < g->n; i++) {
    snprintf(keep, sizeof keep, "%s/%s.kept", g->dir, g->names[i]);
    if (kept[i]) (void)unlink(keep);
  }
  free(kept);
  if (g->wrote.p) fputs(g->wrote.p, stdout);
  stage_drop(g);   /* only the empty folder is left */
  return 0;
undo_none:
  for (int i = 0; i < g->n; i++) {   /* the kept links are the old files' second names: drop them */
    snprintf(keep, sizeof keep, "%s/%s.kept", g->dir, g->names[i]);
    if (kept[i]) (void)unlink(keep);
  }
  free(kept);
  stage_drop(g);
  return -1;
}

void cli_parse_resources(const char *log, cli_resources *r) {
  const char *p;
  r->registers = r->stack = r->spill_stores = r->spill_loads = -1;
  r->smem = 0;
  if ((p = strstr(log, "Used "))) sscanf(p, "Used %d registers", &r->registers);
  if ((p = strstr(log, "bytes stack frame"))) {
    while (p > log && p[-1] != '\n' && p[-1] != '.') p--;
    sscanf(p, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &r->stack, &r->spill_stores,
           &r->spill_loads);
  }
  if ((p = strstr(log, "registers, used")) && (p = strstr(p, "barriers, "))) sscanf(p, "barriers, %d bytes smem", &r->smem);
  /* WGMMAs ptxas cannot prove ordered (one under a branch, a missing fence) are serialised:
   * correct, and measured 1.1-1.4x slower (bench/RESULTS.md) */
  r->serialized = strstr(log, "Potential Performance Loss: wgmma") != NULL;
}

static void print_resources(const char *log) {
  cli_resources r;
  cli_parse_resources(log, &r);
  printf("  registers %d, static shared memory %d bytes, stack frame %d bytes, spill stores %d bytes, "
         "spill loads %d bytes\n", r.registers, r.smem, r.stack, r.spill_stores, r.spill_loads);
  if (r.spill_stores > 0 || r.spill_loads > 0) printf("  warning: the kernel spills registers to local memory\n");
  if (r.serialized) {
    const char *w = strstr(log, "Potential Performance Loss"), *e = strchr(w, '\n');
    printf("  warning: ptxas: %.*s\n", e ? (int)(e - w) : (int)strlen(w), w);
  }
}

int cmd_gen(int argc, char **argv, int build) {
  cli_common c = {0};
  int auto_mode = 0;
  const char *shape = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { cmd_gen_help(build); return CLI_OK; }
    if (!strcmp(argv[i], "--auto")) { auto_mode = 1; continue; }
    if (!strcmp(argv[i], "--shape")) {
      const char *was = shape;
      shape = cli_flag_value(argc, argv, &i, build ? "weft build" : "weft gen", "a shape (rows=4096 cols=50257, or 4096x50257)");
      if (!shape) return CLI_USAGE;
      if (was) {   /* one kernel per command: a second shape would silently replace the first */
        cli_err("weft %s: --shape given twice ('%s' and '%s'): --auto generates the kernel of one shape; run it once "
                "per shape\n", build ? "build" : "gen", was, shape);
        return CLI_USAGE;
      }
      continue;
    }
    int r = cli_common_arg(&c, argc, argv, &i, build ? "weft build" : "weft gen");
    if (r < 0) return CLI_USAGE;
    if (r == 0) { cli_err("weft %s: unknown option '%s' (weft help %s)\n", build ? "build" : "gen", argv[i], build ? "build" : "gen"); return CLI_USAGE; }
  }
  if (!c.config || !c.out_dir) {
    cli_err("weft %s: needs CONFIG.lua and -o DIR (weft help %s)\n", build ? "build" : "gen", build ? "build" : "gen");
    return CLI_USAGE;
  }
  if (auto_mode != (shape != NULL)) {
    cli_err("weft %s: --auto and --shape S go together: --auto chooses the config's open fields for shape S\n",
            build ? "build" : "gen");
    return CLI_USAGE;
  }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) { cli_err("weft %s: cannot create a context\n", build ? "build" : "gen"); return CLI_FAIL; }
  weft_manifest *m = NULL;
  weft_kernel *k = NULL;
  weft_auto *a = NULL;
  int rc = CLI_FAIL;
  weft_status st = WEFT_OK;
  if (auto_mode) {
    /* the choice's sets go after the user's own: exactly the config the choice describes */
    st = weft_auto_choose(ctx, c.config, c.sets, c.n_sets, shape, 1, 0, NULL, &a);
    if (st) { cli_err("%s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto out; }
    int ns;
    const char *const *sets = auto_sets(a, 0, &ns);
    printf("auto: %s: %s\n", auto_shape(a), weft_auto_detail(a));   /* (the detail starts with the source) */
    if (c.n_sets + ns > CLI_MAX_SETS) {   /* dropping the choice's own sets would build another kernel */
      cli_err("weft %s: %d --set and the %d fields --auto chose are more than %d: give fewer --set\n",
              build ? "build" : "gen", c.n_sets, ns, CLI_MAX_SETS);
      rc = CLI_USAGE;
      goto out;
    }
    for (int j = 0; j < ns; j++) c.sets[c.n_sets++] = sets[j];
  }
  st = weft_generate_file(ctx, c.config, c.sets, c.n_sets, &m);
  if (st) { cli_err("%s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto out; }
  const weft_manifest *mm = m;
  if (build) {
    st = weft_compile_manifest(ctx, m, &k);
    m = NULL;   /* owned by the kernel now, or freed */
    if (st) { cli_err("%s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); goto out; }
    mm = weft_kernel_manifest(k);
  }
  stage g;
  if (stage_open(&g, build ? "weft build" : "weft gen", c.out_dir) != 0) { rc = CLI_USAGE; goto out; }
  /* every kernel of the config, in launch order (a multi-launch variant has several) */
  for (int i = 0; i < mm->n_parts; i++) {
    const weft_manifest *pm = weft_manifest_part(mm, i);
    weft_kernel *pk = build ? weft_kernel_part(k, i) : NULL;
    if (mm->n_parts > 1) printf("%s (kernel %d of %d)\n", pm->name, i + 1, mm->n_parts);
    else printf("%s\n", pm->name);
    if (stage_file(&g, pm->name, ".cu", pm->source, strlen(pm->source)) ||
        stage_file(&g, pm->name, ".json", pm->json, strlen(pm->json))) {
      stage_drop(&g);
      goto out;
    }
    if (build) {
      size_t np, nc;
      const char *ptx = weft_kernel_ptx(pk, &np);
      const void *cubin = weft_kernel_cubin(pk, &nc);
      if (stage_file(&g, pm->name, ".ptx", ptx, np ? np - 1 : 0) || stage_file(&g, pm->name, ".cubin", cubin, nc)) {
        stage_drop(&g);
        goto out;
      }
      printf("  compiled in %.1f ms (%s)\n", weft_kernel_compile_ms(pk), weft_kernel_cache_hit(pk) ? "cache hit" : "NVRTC");
      print_resources(weft_kernel_log(pk));
    }
  }
  if (stage_commit(&g) != 0) goto out;
  rc = CLI_OK;
out:
  weft_manifest_free(m);
  weft_kernel_destroy(k);
  weft_auto_free(a);
  weft_ctx_destroy(ctx);
  return rc;
}
