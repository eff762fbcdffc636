/* cli.h: the weft command line (runtime/cli/). */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H
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

int cmd_gen(int argc, char **argv, int build);
int cmd_run(int argc, char **argv);
void cmd_gen_help(int build);
void cmd_run_help(void);

#endif
