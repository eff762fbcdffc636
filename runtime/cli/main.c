/* main.c: `weft`, the command line: gen, build, run. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ranks.h"

static void usage(FILE *f) {
  fprintf(f,
    "weft %s: generates fused CUDA kernels from Lua configs, compiles them with NVRTC, runs them.\n"
    "\n"
    "usage: weft <command> CONFIG.lua [--set key=value ...] [options]\n"
    "\n"
    "commands:\n"
    "  gen    write <name>.cu and <name>.json (the manifest) to -o DIR\n"
    "  build  also compile: <name>.ptx and <name>.cubin, and print registers, shared and local memory\n"
    "  run    compile (JIT, cached), run on random data, check against a CPU reference, time it\n"
    "  tune   expand a sweep, compile its candidates in parallel, check and time each, keep the best\n"
    "         (--export FILE: write the best per shape as a tuning table, like tune/h200.tsv)\n"
    "  suggest  CONFIG.lua SHAPE...: the config --auto chooses per shape, and where it came from\n"
    "  export-table  [--db PATH] FILE: the database's best per shape as a tuning table\n"
    "  help   weft help <command>\n"
    "\n"
    "--auto (run; gen and build with --shape S): choose the fields the config leaves out or sets to\n"
    "\"auto\" from the shape (tuning database, then its nearest shape, then the shipped table, then the\n"
    "family's rule).  WEFT_AUTOTUNE=1 with run --auto times a few candidates first (within\n"
    "WEFT_AUTOTUNE_BUDGET_MS, default 2000) and stores the fastest; WEFT_AUTO_TABLE=FILE|none.  Without\n"
    "a GPU the choice is for an H200, or WEFT_AUTO_SMS=N and WEFT_AUTO_DRAM_GBS=N's GPU.\n"
    "\n"
    "--set key=value overrides a config key (nested keys with dots: --set tile.m=128); values are\n"
    "numbers, true/false, or strings.  Environment: WEFT_CACHE_DIR (kernel cache), WEFT_NO_COMPILE=1\n"
    "(cache misses are errors), WEFT_SOURCE_DIR (use gen/ and templates/ from a source tree).\n",
    weft_version());
}

int main(int argc, char **argv) {
  (void)cli_guard_output();   /* (out of memory: unguarded, not stopped) */
  if (argc < 2) { usage(stderr); return CLI_USAGE; }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) { usage(stdout); return CLI_OK; }
  if (!strcmp(cmd, "--version")) { printf("weft %s\n", weft_version()); return CLI_OK; }
  if (!strcmp(cmd, "help")) {
    if (argc < 3) { usage(stdout); return CLI_OK; }
    if (!strcmp(argv[2], "gen")) { cmd_gen_help(0); return CLI_OK; }
    if (!strcmp(argv[2], "build")) { cmd_gen_help(1); return CLI_OK; }
    if (!strcmp(argv[2], "run")) { cmd_run_help(); return CLI_OK; }
    if (!strcmp(argv[2], "tune")) { cmd_tune_help(); return CLI_OK; }
    if (!strcmp(argv[2], "suggest")) { cmd_suggest_help(); return CLI_OK; }
    if (!strcmp(argv[2], "export-table")) { cmd_export_help(); return CLI_OK; }
    cli_err("weft help: unknown command '%s' (commands: gen, build, run, tune, suggest, export-table)\n", argv[2]);
    return CLI_USAGE;
  }
#ifdef WEFT_NO_MPI
  /* every process would run as a world of one and write the same files: refuse instead */
  if (ranks_world_size() > 1) {
    fprintf(stderr, "weft: started as one of %d ranks, but this weft was built without MPI (WEFT_WITH_MPI=OFF): "
            "run it without mpirun, or rebuild with WEFT_WITH_MPI=ON\n", ranks_world_size());
    return CLI_USAGE;
  }
#endif
  if (!strcmp(cmd, "gen")) return cmd_gen(argc - 1, argv + 1, 0);
  if (!strcmp(cmd, "build")) return cmd_gen(argc - 1, argv + 1, 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "suggest")) return cmd_suggest(argc - 1, argv + 1);
  if (!strcmp(cmd, "export-table")) return cmd_export(argc - 1, argv + 1);
  cli_err("weft: unknown command '%s' (commands: gen, build, run, tune, suggest, export-table; weft --help)\n", cmd);
  return CLI_USAGE;
}
