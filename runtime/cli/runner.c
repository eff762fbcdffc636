/* runner.c: the registry of family runners (runner.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

#define RUNNER_MAX 64
static const runner *table[RUNNER_MAX];
static int n_table;

void runner_register(const runner *r) {
  if (n_table == RUNNER_MAX || runner_find(r->family)) {
    /* a build error, not a user error: two files claim a family, or the table is too small */
    fprintf(stderr, "weft: runner for family %s registered twice or more than %d runners\n", r->family, RUNNER_MAX);
    abort();
  }
  table[n_table++] = r;
}

const runner *runner_find(const char *family) {
  for (int i = 0; family && i < n_table; i++)
    if (!strcmp(table[i]->family, family)) return table[i];
  return NULL;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const runner *const *)a)->family, (*(const runner *const *)b)->family);
}

void runner_list(char *buf, size_t len) {
  const runner *sorted[RUNNER_MAX];
  memcpy(sorted, table, (size_t)n_table * sizeof *sorted);
  qsort(sorted, (size_t)n_table, sizeof *sorted, by_name);
  size_t at = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < n_table && at < len; i++) {
    int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", sorted[i]->family);
    if (w < 0 || (size_t)w >= len - at) { buf[at] = 0; break; }   /* cut at a whole name */
    at += (size_t)w;
  }
}
