/* sweep.h: an expanded autotune sweep (gen/core/sweep.lua), as C data for `weft tune`. */
#ifndef WEFT_SWEEP_H
#define WEFT_SWEEP_H
#include "bridge.h"
#include "weft.h"

typedef struct sweep_candidate {
  int n_sets;
  char **sets;          /* --set overrides on top of base_text and the shape's sets */
  char *label;
} sweep_candidate;

typedef struct sweep_rule {
  char *rule;           /* a validation rule with the numbers taken out */
  int count;            /* candidates it removed */
  char *example;        /* one full message */
} sweep_rule;

typedef struct sweep_shape {
  char *name;           /* "cols=32768 rows=8192" */
  int n_size;
  char **size_keys;     /* "rows", "cols", ... */
  long *size_vals;
  int n_sets;
  char **sets;          /* per-shape overrides */
  int n_cand;
  sweep_candidate *cand;
  int total, pruned_where, duplicates;
  int n_rules;
  sweep_rule *rules;
} sweep_shape;

typedef struct sweep {
  char *family, *file, *base_text;
  int n_keys;
  char **keys;
  int n_shapes;
  sweep_shape *shapes;
} sweep;

/* Expands a sweep file's text. WEFT_ERR_CONFIG for a bad sweep. */
weft_status sweep_expand(bridge *b, const char *file, const char *text, const char *const *overrides,
                         int n_overrides, sweep **out, char *err, size_t errlen);
void sweep_free(sweep *s);
/* the size value called key in shape s, or -1 */
long sweep_size(const sweep_shape *s, const char *key);

#endif
