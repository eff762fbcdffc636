/* lua_runner.c: weft-lua, the Lua unit-test runner.  Runs a script inside weft's own embedded
 * Lua environment (the same package searcher, weft_read and libraries as the generator), with
 * io and os opened so tests can print and exit.
 *
 *   weft-lua SOURCE_DIR SCRIPT.lua [ARGS...]      arg = { ARGS... }
 *
 * gen/ and templates/ are read from SOURCE_DIR, so tests see the working tree. */
#include <stdio.h>

#include "bridge.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: weft-lua SOURCE_DIR SCRIPT.lua [ARGS...]\n");
    return 2;
  }
  char err[8192];
  bridge *b;
  if (bridge_open(&b, argv[1], 1, err, sizeof err) != 0) {
    fprintf(stderr, "weft-lua: %s\n", err);
    return 1;
  }
  int rc = bridge_run_script(b, argv[2], argc - 3, argv + 3, err, sizeof err);
  if (rc != 0) fprintf(stderr, "weft-lua: %s: %s\n", argv[2], err);
  bridge_close(b);
  fflush(stdout);
  return rc ? 1 : 0;
}
