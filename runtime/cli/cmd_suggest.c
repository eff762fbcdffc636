/* cmd_suggest.c: `weft suggest`: what `weft run --auto` would run for each shape, where it came
 * from (database, table, rule) and, for a measured hit, its time.  Needs no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "autotable.h"
#include "cli.h"

void cmd_suggest_help(void) {
  printf("usage: weft suggest CONFIG.lua SHAPE... [--set key=value ...] [--ranks P] [--candidates N] [--db PATH]\n\n"
         "Prints, for each SHAPE (\"rows=4096 cols=50257\", \"rows=4096,cols=50257\" or 4096x50257 in the family's\n"
         "size order), the config weft run --auto would choose: the fields CONFIG leaves out or sets to \"auto\"\n"
         "are chosen, the others stay.  The choice comes from the first of: the tuning database (this GPU,\n"
         "driver, NVRTC and shape: \"database\"), its nearest shape on this GPU (every size within a factor of 4:\n"
         "\"database-nearest\"), the table shipped with weft (tune/h200.tsv; WEFT_AUTO_TABLE=FILE replaces it,\n"
         "=none switches it off: \"table\", \"table-nearest\"), the family's rule (\"rule\").  Without a GPU the\n"
         "database is skipped and the device is taken to be an H200, or the one WEFT_AUTO_SMS=N and\n"
         "WEFT_AUTO_DRAM_GBS=N describe (an H100: WEFT_AUTO_DRAM_GBS=3352).  --ranks P: the world size it will run on\n"
         "(default 1).  --candidates N: also list the rule's next N candidates (what WEFT_AUTOTUNE=1 times).\n"
         "--db PATH: the tuning database (default $WEFT_TUNE_DB, else $XDG_CACHE_HOME/weft/tune.db or\n"
         "~/.cache/weft/tune.db).\n"
         "Exit status: 0, or 2 for a bad config or shape (the message names the size and its limit).\n");
}

/* --ranks, --candidates: an integer in lo..max */
int cmd_suggest(int argc, char **argv) {
  cli_common c = {0};
  const char *shapes[CLI_MAX_SHAPES];
  int n_shapes = 0, ranks = 1, n_cand = 0;
  const char *db_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { cmd_suggest_help(); return CLI_OK; }
    if (!strcmp(a, "--ranks") || !strcmp(a, "--candidates")) {
      const int is_ranks = !strcmp(a, "--ranks");
      long long v;
      if (cli_flag_whole(argc, argv, &i, "weft suggest", is_ranks ? 1 : 0, is_ranks ? AUTOTABLE_MAX_RANKS : 16, NULL, &v)) return CLI_USAGE;
      *(is_ranks ? &ranks : &n_cand) = (int)v;
      continue;
    }
    if (!strcmp(a, "--db")) {
      if (!(db_path = cli_flag_value(argc, argv, &i, "weft suggest", "a path"))) return CLI_USAGE;
      continue;
    }
    if (c.config && a[0] != '-') {   /* after the config, every positional is a shape */
      if (n_shapes == CLI_MAX_SHAPES) { cli_err("weft suggest: at most %d shapes\n", CLI_MAX_SHAPES); return CLI_USAGE; }
      shapes[n_shapes++] = a;
      continue;
    }
    int r = cli_common_arg(&c, argc, argv, &i, "weft suggest");
    if (r < 0) return CLI_USAGE;
    if (r == 0) { cli_err("weft suggest: unknown option '%s' (weft help suggest)\n", a); return CLI_USAGE; }
  }
  if (!c.config || !n_shapes) {
    cli_err("weft suggest: needs CONFIG.lua and at least one SHAPE (weft help suggest)\n");
    return CLI_USAGE;
  }
  if (c.out_dir) {
    cli_err("weft suggest: -o %s: suggest writes no files (weft build CONFIG --auto --shape S -o DIR writes the "
            "chosen kernel's)\n", c.out_dir);
    return CLI_USAGE;
  }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) { cli_err("weft suggest: cannot create a context\n"); return CLI_FAIL; }
  int rc = CLI_OK;
  for (int s = 0; s < n_shapes && rc == CLI_OK; s++) {
    weft_auto *a = NULL;
    weft_status st = weft_auto_choose(ctx, c.config, c.sets, c.n_sets, shapes[s], ranks, n_cand, db_path, &a);
    if (st) {   /* (a config or a shape: said as weft suggest's, like its flags' errors and run's) */
      cli_err("weft suggest: %s\n", weft_ctx_error(ctx));
      rc = cli_status_exit(st);
      break;
    }
    printf("%sshape: %s (%s %s, %d rank%s)\n", s ? "\n" : "", auto_shape(a), auto_family(a), auto_dtype(a), ranks,
           ranks == 1 ? "" : "s");
    printf("source: %s\n", weft_auto_source(a));
    printf("detail: %s\n", weft_auto_detail(a));
    if (weft_auto_time_us(a) > 0) printf("measured: %.2f us\n", weft_auto_time_us(a));
    int ns;
    const char *const *sets = auto_sets(a, 0, &ns);
    printf("kernel: %s\nchosen:", weft_auto_name(a, 0));
    for (int j = 0; j < ns; j++) printf(" %s", sets[j]);
    printf("%s\nconfig: %s\n", ns ? "" : " (nothing open: the config as given)", weft_auto_config(a, 0));
    for (int i = 1; i < weft_auto_count(a); i++) {
      sets = auto_sets(a, i, &ns);
      printf("candidate %d: %s:", i, weft_auto_name(a, i));
      for (int j = 0; j < ns; j++) printf(" %s", sets[j]);
      printf("\n");
    }
    weft_auto_free(a);
  }
  weft_ctx_destroy(ctx);
  return rc;
}
