/* cmd_run_auto.c: `weft run --auto`: per shape, the config weft_auto_choose picks (and, with
 * WEFT_AUTOTUNE=1, first-use tuning: its candidates checked and timed, the fastest stored),
 * then checked and timed as `weft run` does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "cli.h"
#include "hash.h"
#include "ranks.h"
#include "util.h"

#define AUTOTUNE_CANDIDATES 6   /* the rule's neighbours timed beside its choice */
#define AUTOTUNE_ITERS 20

/* WEFT_AUTOTUNE: 1, true, yes, on; 0, false, no, off, empty or unset (the spellings weft.torch
 * takes); anything else is refused, so a typo never turns tuning (and database writes) on or off
 * unnoticed.  0, or -1 with the message. */
int cli_autotune_flag(int *on) {
  char why[512];
  if (!util_env_bool("WEFT_AUTOTUNE", "tune each shape the database does not know on first use", on, why, sizeof why))
    return 0;
  cli_err("weft run: %s\n", why);
  return -1;
}

int cli_autotune_budget(double *ms) {
  char why[512];
  long n;
  *ms = 2000;
  if (util_env_long("WEFT_AUTOTUNE_BUDGET_MS", 1, 600000, 2000, "milliseconds", "first-use tuning's time for one shape",
                    &n, why, sizeof why)) {
    cli_err("weft run: %s\n", why);
    return -1;
  }
  *ms = (double)n;
  return 0;
}

/* Times choice 0 and its candidates at shape sh (each checked first, on a slice capped as weft
 * tune caps it; a wrong one is never timed), the times the MAX over ranks; the first candidate
 * always runs, the others while the budget lasts.  Returns the fastest right one, or -1. */
static int autotune(weft_ctx *ctx, const weft_auto *a, const weft_shape *sh, double budget_ms, double *best_us) {
  double t0 = util_now_ms();
  int best = -1;
  for (int i = 0; i < weft_auto_count(a); i++) {
    if (i > 0 && ranks_any(util_now_ms() - t0 > budget_ms)) {
      printf("autotune: the budget (WEFT_AUTOTUNE_BUDGET_MS = %.0f) ran out after %d of %d candidates\n", budget_ms, i,
             weft_auto_count(a));
      break;
    }
    weft_kernel *k = NULL;
    int built = weft_auto_compile(ctx, a, i, &k) == WEFT_OK;
    if (!built) printf("autotune: candidate %d (%s) does not compile: %s\n", i, weft_auto_name(a, i), weft_ctx_error(ctx));
    if (!ranks_all(built)) { weft_kernel_destroy(k); continue; }
    const weft_manifest *m = weft_kernel_manifest(k);
    run_result chk = {0}, tim = {0};
    run_opts oc = {.iters = 1, .check = 1, .quiet = 1, .result = &chk, .n_check = 1, .shapes_only = 1, .ctx = ctx,
                   .seed = 4321 + (unsigned)i};
    run_opts ot = {.iters = AUTOTUNE_ITERS, .warmup = 3, .timing = 1, .quiet = 1, .result = &tim, .n_time = 1,
                   .shapes_only = 1, .ctx = ctx, .seed = 99};
    for (int d = 0; d < m->run.n_sizes; d++) {
      long long cap = m->run.check_cap[d], v = sh->v[d];
      ot.time_shapes[0].v[d] = v;
      oc.check_shapes[0].v[d] = cap > 0 && v > cap ? cap : v;
    }
    int r = run_kernel(k, &oc);
    int right = r == CLI_OK && (!chk.checked || chk.passed);
    if (ranks_all(right)) r = run_kernel(k, &ot);
    else r = CLI_FAIL;
    int ok = r == CLI_OK && tim.timed;
    double us = ranks_max(ok ? tim.us : 0.0);
    if (!ranks_all(ok)) {
      printf("autotune: candidate %d (%s): %s\n", i, weft_auto_name(a, i),
             ranks_all(right) ? "failed to run" : "WRONG RESULT (on some rank): not timed");
    } else {
      printf("autotune: candidate %d (%s): %.2f us%s\n", i, weft_auto_name(a, i), us, chk.checked ? "" : " (NOT CHECKED)");
      if (best < 0 || us < *best_us) { best = i; *best_us = us; }
    }
    weft_kernel_destroy(k);
  }
  return best;
}

int cli_run_auto(weft_ctx *ctx, const run_opts *o, const weft_run_spec *rs, const char *db_path) {
  int tune = 0;
  double budget = 2000;
  if (cli_autotune_flag(&tune) || (tune && cli_autotune_budget(&budget))) return CLI_USAGE;
  /* the shapes, each once: checked (and timed where also listed to time), then only timed */
  weft_shape shapes[2 * CLI_MAX_SHAPES];
  int check[2 * CLI_MAX_SHAPES], timed[2 * CLI_MAX_SHAPES], n = 0;
  for (int i = 0; o->check && i < o->n_check; i++) { shapes[n] = o->check_shapes[i]; check[n] = 1; timed[n++] = 0; }
  for (int j = 0; o->timing && j < o->n_time; j++) {
    int at = -1;
    for (int i = 0; i < n && at < 0; i++)
      if (!timed[i] && !memcmp(&shapes[i], &o->time_shapes[j], sizeof(weft_shape))) at = i;
    if (at >= 0) timed[at] = 1;
    else { shapes[n] = o->time_shapes[j]; check[n] = 0; timed[n++] = 1; }
  }
  for (int s = 0; s < n; s++) {
    char key[512];
    weft_auto *a = NULL;
    weft_kernel *k = NULL;
    int rc = CLI_OK, w = 0;
    if (cli_shape_key(rs, &shapes[s], key, sizeof key)) { cli_err("weft run: --auto: the shape's name is too long\n"); rc = CLI_USAGE; }
    weft_status st = rc ? WEFT_OK : weft_auto_choose(ctx, o->c.config, o->c.sets, o->c.n_sets, key, ranks_world_size(),
                                                     tune ? AUTOTUNE_CANDIDATES : 0, db_path, &a);
    if (st) { cli_err("weft run: %s\n", weft_ctx_error(ctx)); rc = cli_status_exit(st); }
    if ((rc = ranks_agree(rc, cli_last_error(), "run")) != CLI_OK) { weft_auto_free(a); return rc; }
    printf("auto: %s: %s %s: %s\n", auto_shape(a), weft_auto_source(a), weft_auto_name(a, 0), weft_auto_detail(a));
    /* tuning is collective: every rank must tune (or not) the same candidates, or they would meet
     * different collectives (rank 0's database may already hold a row the others lack) */
    {
      hash_ctx *tc = hash_begin();
      unsigned char td[32] = {0};
      if (tc) {
        hash_add_str(tc, tune && strcmp(weft_auto_source(a), "database") ? "tune" : "no");
        for (int j = 0; j < weft_auto_count(a); j++) hash_add_str(tc, weft_auto_name(a, j));
        hash_end(tc, td);
      }
      unsigned long long th = 0;
      for (int j = 0; j < 8; j++) th = th << 8 | td[j];
      if (!ranks_same(th)) {
        cli_err("weft run: --auto: rank %d's choice for %s (%s, %d candidate%s%s) differs from another rank's: give "
                "every rank the same WEFT_TUNE_DB, WEFT_AUTO_TABLE and WEFT_AUTOTUNE\n", ranks_rank(), auto_shape(a),
                weft_auto_source(a), weft_auto_count(a), weft_auto_count(a) == 1 ? "" : "s", tune ? ", tuning" : "");
        weft_auto_free(a);
        return CLI_FAIL;
      }
    }
    if (tune && strcmp(weft_auto_source(a), "database")) {
      double us = 0;
      int b = autotune(ctx, a, &shapes[s], budget, &us);
      if (b >= 0) {
        w = b;
        printf("autotune: fastest: candidate %d (%s), %.2f us\n", b, weft_auto_name(a, b), us);
        if (ranks_rank() == 0) {
          st = weft_auto_record(ctx, a, b, us, db_path);
          if (st) cli_err("weft run: autotune: %s\n", weft_ctx_error(ctx));
          else printf("autotune: stored: the next --auto at %s answers from the database\n", auto_shape(a));
        }
      } else {
        printf("autotune: no candidate ran right; running the choice unmeasured\n");
      }
    }
    /* every rank must launch the same kernel (a fused collective would wait forever otherwise) */
    hash_ctx *hc = hash_begin();
    unsigned char d[32] = {0};
    if (hc) { hash_add_str(hc, weft_auto_name(a, w)); hash_end(hc, d); }
    unsigned long long h = 0;
    for (int i = 0; i < 8; i++) h = h << 8 | d[i];
    if (!ranks_same(h)) {
      cli_err("weft run: --auto: rank %d chose %s for %s, other ranks chose otherwise (their tuning databases or "
              "tables differ): give every rank the same WEFT_TUNE_DB and WEFT_AUTO_TABLE\n", ranks_rank(),
              weft_auto_name(a, w), auto_shape(a));
      rc = CLI_FAIL;
    } else if ((st = weft_auto_compile(ctx, a, w, &k))) {
      cli_err("weft run: %s\n", weft_ctx_error(ctx));
      rc = cli_status_exit(st);
    } else {
      printf("compile: %s in %.1f ms (%s)\n", weft_kernel_manifest(k)->name, weft_kernel_compile_ms(k),
             weft_kernel_cache_hit(k) ? "cache hit" : "NVRTC");
    }
    if ((rc = ranks_agree(rc, cli_last_error(), "run")) == CLI_OK) {
      run_opts one = *o;
      one.n_check = check[s];
      one.n_time = timed[s];
      one.check_shapes[0] = one.time_shapes[0] = shapes[s];
      one.check = check[s];
      one.timing = timed[s];
      one.shapes_only = 1;
      rc = run_kernel(k, &one);
    }
    weft_kernel_destroy(k);
    weft_auto_free(a);
    if (rc != CLI_OK) return rc;
  }
  return CLI_OK;
}
