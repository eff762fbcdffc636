/* runner.h: the registry of family runners.  A runner checks and times one family's kernels
 * (`weft run`, `weft tune`); it lives in runtime/cli/runners/<family>.c and registers itself
 * with one line, so adding a family never edits a dispatcher:
 *
 *   static int run_rmsnorm(weft_kernel *k, const run_opts *o) { ... }
 *   WEFT_RUNNER(rmsnorm, run_rmsnorm)
 *
 * The table is filled by constructors before main(); lookups are by the manifest's family. */
#ifndef WEFT_RUNNER_H
#define WEFT_RUNNER_H
#include "cli.h"

typedef int (*runner_fn)(weft_kernel *k, const run_opts *o);
typedef struct runner {
  const char *family;
  runner_fn run;
} runner;

void runner_register(const runner *r);
const runner *runner_find(const char *family);   /* NULL if no runner registered that family */
/* The registered families, comma-separated, in name order (for messages). */
void runner_list(char *buf, size_t len);

#define WEFT_RUNNER(fam, fn)                                                          \
  static const runner runner_##fam = {#fam, fn};                                      \
  __attribute__((constructor)) static void runner_register_##fam(void) { runner_register(&runner_##fam); }

#endif
