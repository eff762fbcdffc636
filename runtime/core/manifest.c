/* manifest.c: the C side of the manifest (see weft.h).  Every string and array lives in a list
 * of allocations owned by the manifest, freed at once by weft_manifest_free. */
#include "manifest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "util.h"

typedef struct manifest_impl {
  weft_manifest pub;       /* first: a weft_manifest * is a manifest_impl * */
  void **allocs;
  int n, cap;
  weft_manifest **parts;   /* on the first kernel of a config: the ones launched after it, owned */
  int n_parts;
  bridge_refs *refs;       /* who holds its op.ref's key (bridge.h), or NULL */
  long ref_key;
} manifest_impl;

weft_manifest *manifest_new(void) {
  manifest_impl *im = calloc(1, sizeof *im);
  if (im) im->pub.n_parts = 1;
  return im ? &im->pub : NULL;
}

void *manifest_alloc(weft_manifest *m, size_t size) {
  manifest_impl *im = (manifest_impl *)m;
  if (im->n == im->cap) {
    int cap = im->cap ? im->cap * 2 : 32;
    void **a = realloc(im->allocs, (size_t)cap * sizeof *a);
    if (!a) return NULL;
    im->allocs = a;
    im->cap = cap;
  }
  void *p = calloc(1, size ? size : 1);
  if (p) im->allocs[im->n++] = p;
  return p;
}

const char *manifest_str(weft_manifest *m, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = manifest_alloc(m, n);
  if (d) memcpy(d, s, n);
  return d;
}

void manifest_seal(weft_manifest *m) {
  hash_ctx *h = hash_begin();
  hash_add_str(h, m->source);
  for (int i = 0; i < m->n_options; i++) hash_add_str(h, m->options[i]);
  unsigned char d[32];
  hash_end(h, d);
  hash_hex(d, m->hash);
}

int manifest_arg_index(const weft_manifest *m, const char *name) {
  for (int i = 0; i < m->n_args; i++)
    if (strcmp(m->args[i].name, name) == 0) return i;
  return -1;
}

/* an argument the runtime can read as a number (a size) */
static int int_arg(const weft_manifest *m, const char *name) {
  int a = name ? manifest_arg_index(m, name) : -1;
  if (a < 0 || !m->args[a].type) return -1;
  return strcmp(m->args[a].type, "i32") == 0 || strcmp(m->args[a].type, "i64") == 0 ? a : -1;
}

manifest_dim manifest_tmap_dim(const weft_manifest *m, const char *dim, int *arg) {
  *arg = -1;
  if (!dim) return DIM_BAD;
  if (strcmp(dim, "ranks") == 0) return DIM_RANKS;
  if (strcmp(dim, "halves") == 0) return DIM_HALVES;
  const char *slash = strchr(dim, '/');
  if (!slash) return (*arg = int_arg(m, dim)) >= 0 ? DIM_ARG : DIM_BAD;
  if (strcmp(slash, "/ranks") != 0 || slash == dim || (size_t)(slash - dim) >= 128) return DIM_BAD;
  char name[128];
  memcpy(name, dim, (size_t)(slash - dim));
  name[slash - dim] = 0;
  return (*arg = int_arg(m, name)) >= 0 ? DIM_ARG_PER_RANK : DIM_BAD;
}

int manifest_dtype_bytes(const char *dt) {
  if (!dt) return 0;
  if (strcmp(dt, "f32") == 0) return 4;
  return strcmp(dt, "f16") == 0 || strcmp(dt, "bf16") == 0 ? 2 : 0;
}

long manifest_arg_long(const weft_arg *a, const void *p) {
  if (strcmp(a->type, "i64") == 0) return (long)*(const int64_t *)p;
  return (long)*(const int32_t *)p;
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int check_tmap(const weft_manifest *m, int i, char *err, size_t errlen) {
  const weft_tmap *t = &m->tmaps[i];
  char tn[160];
  if (t->name) snprintf(tn, sizeof tn, "tensor map %s", t->name);
  else snprintf(tn, sizeof tn, "tmaps[%d]", i + 1);
  if (!t->name) BAD("%s: %s has no name", m->name, tn);
  if (!t->source) BAD("%s: %s has no source (a pointer argument, \"comm.shards\" or \"comm.local\")", m->name, tn);
  int esize = manifest_dtype_bytes(t->dtype);
  if (!esize) BAD("%s: %s: dtype = %s: TMA maps here take f32, f16 or bf16", m->name, tn, t->dtype ? t->dtype : "(none)");
  if (t->n_dims < 1 || t->n_dims > WEFT_TMAP_MAX_DIMS)
    BAD("%s: %s: %d dims; TMA takes 1..%d", m->name, tn, t->n_dims, WEFT_TMAP_MAX_DIMS);
  int comm = strncmp(t->source, "comm.", 5) == 0;
  if (comm) {
    if (strcmp(t->source, "comm.shards") != 0 && strcmp(t->source, "comm.local") != 0)
      BAD("%s: %s: source = \"%s\": the communicator's buffer is \"comm.shards\" or \"comm.local\"", m->name, tn,
          t->source);
    if (!m->comm.signals)
      BAD("%s: %s: source = \"%s\" needs a comm section: only a kernel launched with weft_comm_launch has a "
          "communicator's buffer", m->name, tn, t->source);
  } else {
    int a = manifest_arg_index(m, t->source);
    if (a < 0 || !m->args[a].type || strcmp(m->args[a].type, "ptr") != 0)
      BAD("%s: %s: source = \"%s\": must be a pointer argument, \"comm.shards\" or \"comm.local\"", m->name, tn,
          t->source);
    if (m->args[a].dtype && strcmp(m->args[a].dtype, t->dtype) != 0)
      BAD("%s: %s: dtype = %s, but its source %s holds %s", m->name, tn, t->dtype, t->source, m->args[a].dtype);
  }
  manifest_dim kind[WEFT_TMAP_MAX_DIMS];
  for (int d = 0; d < t->n_dims; d++) {
    int a;
    kind[d] = manifest_tmap_dim(m, t->dims[d], &a);
    if (kind[d] == DIM_BAD)
      BAD("%s: %s: dims[%d] = %s: must be a size argument (\"k\"), \"<size argument>/ranks\", \"ranks\" or "
          "\"halves\"", m->name, tn, d + 1, t->dims[d] ? t->dims[d] : "(not a string)");
    if (kind[d] == DIM_HALVES && !comm)
      BAD("%s: %s: dims[%d] = \"halves\": only the communicator's buffer (source \"comm.*\") has halves", m->name, tn,
          d + 1);
    if (t->box[d] < 1 || t->box[d] > 256)
      BAD("%s: %s: box[%d] = %u: TMA moves 1..256 elements per dim", m->name, tn, d + 1, t->box[d]);
    if ((kind[d] == DIM_RANKS || kind[d] == DIM_HALVES) && t->box[d] != 1)
      BAD("%s: %s: box[%d] = %u: a \"%s\" dim is walked one at a time (box 1)", m->name, tn, d + 1, t->box[d], t->dims[d]);
  }
  if (strcmp(t->source, "comm.shards") == 0 &&
      (t->n_dims != 4 || kind[0] > DIM_ARG_PER_RANK || kind[1] > DIM_ARG_PER_RANK || kind[2] != DIM_RANKS ||
       kind[3] != DIM_HALVES)) {
    char got[256] = "";
    for (int d = 0, n = 0; d < t->n_dims && n < (int)sizeof got; d++)
      n += snprintf(got + n, sizeof got - (size_t)n, "%s%s", d ? ", " : "", t->dims[d]);
    BAD("%s: %s: source = \"comm.shards\" takes dims { K, rows, \"ranks\", \"halves\" } (K and rows size "
        "arguments: the shards' row length and rows), not { %s }", m->name, tn, got);
  }
  if (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128)
    BAD("%s: %s: swizzle = %d: must be 0, 32, 64 or 128 (bytes)", m->name, tn, t->swizzle);
  if (t->l2_promotion != 0 && t->l2_promotion != 64 && t->l2_promotion != 128 && t->l2_promotion != 256)
    BAD("%s: %s: l2_promotion = %d: must be 0, 64, 128 or 256 (bytes; absent: 256)", m->name, tn, t->l2_promotion);
  unsigned inner = t->box[0] * (unsigned)esize;
  if (inner % 16)
    BAD("%s: %s: box[1] = %u: its rows are %u bytes; TMA moves multiples of 16 bytes", m->name, tn, t->box[0], inner);
  if (t->swizzle && inner > (unsigned)t->swizzle)
    BAD("%s: %s: box[1] = %u: its rows are %u bytes, wider than the %d-byte swizzle", m->name, tn, t->box[0], inner,
        t->swizzle);
  return 0;
}

int manifest_check(const weft_manifest *m, char *err, size_t errlen) {
  for (int i = 0; i < m->n_limits; i++) {
    if (int_arg(m, m->limits[i].arg) < 0)
      BAD("%s: limits[%d]: arg = %s: must name a size argument", m->name, i + 1,
          m->limits[i].arg ? m->limits[i].arg : "(none)");
    if (m->limits[i].multiple < 0)
      BAD("%s: limits[%d]: multiple = %ld: must be positive (or absent)", m->name, i + 1, m->limits[i].multiple);
  }
  for (int i = 0; i < m->comm.n_elems; i++)
    if (int_arg(m, m->comm.elems[i]) < 0)
      BAD("%s: comm.elems[%d] = %s: must name a size argument", m->name, i + 1,
          m->comm.elems[i] ? m->comm.elems[i] : "(not a string)");
  if (m->comm.flag_div < 0) BAD("%s: comm.flag_div = %d: must be > 0, or 0 for no flag region", m->name, m->comm.flag_div);
  if (m->comm.divide && int_arg(m, m->comm.divide) < 0)
    BAD("%s: comm.divide = %s: must name a size argument", m->name, m->comm.divide);
  /* a half of max_elems / P holds the share only where the launch bounds the product and one of
   * its factors is a multiple of the world size */
  if (m->comm.scatter && (m->comm.per_rank || !m->comm.n_elems || !m->comm.divide))
    BAD("%s: comm.scatter needs comm.elems and comm.divide, and not per_rank", m->name);
  /* a workspace: both counts, flags for every block the grid may have (its max caps it there) */
  if (m->workspace_flags || m->workspace_per_cta) {
    if (m->workspace_flags < 1 || m->workspace_flags > MANIFEST_MAX_WORKSPACE_FLAGS || m->workspace_per_cta < 1 ||
        m->workspace_per_cta > MANIFEST_MAX_WORKSPACE_PER_CTA)
      BAD("%s: workspace = { flags = %ld, per_cta = %ld }: needs header = %d, 1..%d flags and 1..%ld bytes per block",
          m->name, m->workspace_flags, m->workspace_per_cta, WEFT_WORKSPACE_HEADER, MANIFEST_MAX_WORKSPACE_FLAGS,
          (long)MANIFEST_MAX_WORKSPACE_PER_CTA);
    long blocks = 1;
    for (int i = 0; i < 3; i++)
      blocks *= m->grid[i].arg ? (m->grid[i].max > 0 ? m->grid[i].max * m->grid[i].times : -1) : m->grid[i].times;
    if (blocks < 1 || blocks > m->workspace_flags)
      BAD("%s: workspace = { flags = %ld }: the grid must be capped (grid max) at that many blocks", m->name,
          m->workspace_flags);
  }
  if (m->n_tmaps > MANIFEST_MAX_TMAPS)
    BAD("%s: %d tensor maps; the runtime passes at most %d", m->name, m->n_tmaps, MANIFEST_MAX_TMAPS);
  if (m->n_args + m->n_tmaps + 2 > MANIFEST_MAX_PARAMS)
    BAD("%s: %d arguments and %d tensor maps; the runtime passes at most %d parameters", m->name, m->n_args,
        m->n_tmaps, MANIFEST_MAX_PARAMS - 2);
  for (int i = 0; i < m->n_tmaps; i++)
    if (check_tmap(m, i, err, errlen) != 0) return -1;
  return 0;
}

#undef BAD

int manifest_add_part(weft_manifest *head, weft_manifest *part) {
  manifest_impl *im = (manifest_impl *)head;
  weft_manifest **p = realloc(im->parts, (size_t)(im->n_parts + 1) * sizeof *p);
  if (!p) return -1;
  im->parts = p;
  p[im->n_parts++] = part;
  head->n_parts = part->n_parts = im->n_parts + 1;
  part->part = im->n_parts;
  for (int i = 0; i < im->n_parts; i++) p[i]->n_parts = head->n_parts;
  return 0;
}

const weft_manifest *weft_manifest_part(const weft_manifest *m, int i) {
  if (!m || m->part != 0 || i < 0 || i >= m->n_parts) return NULL;
  return i == 0 ? m : ((const manifest_impl *)m)->parts[i - 1];
}

const char *weft_manifest_param(const weft_manifest *m, const char *key) {
  if (!m || !key) return NULL;
  for (int i = 0; i < m->n_params; i++)
    if (strcmp(m->params[i].key, key) == 0) return m->params[i].value;
  return NULL;
}

void manifest_set_ref(weft_manifest *m, bridge_refs *r, long key) {
  manifest_impl *im = (manifest_impl *)m;
  bridge_refs_hold(r);
  im->refs = r;
  im->ref_key = key;
}

long manifest_ref(const weft_manifest *m, bridge_refs **r) {
  const manifest_impl *im = (const manifest_impl *)m;
  *r = im->refs;
  return im->refs ? im->ref_key : 0;
}

void manifest_free(weft_manifest *m) {
  if (!m) return;
  manifest_impl *im = (manifest_impl *)m;
  if (im->refs) bridge_refs_release(im->refs, im->ref_key);
  for (int i = 0; i < im->n_parts; i++) manifest_free(im->parts[i]);
  free(im->parts);
  for (int i = 0; i < im->n; i++) free(im->allocs[i]);
  free(im->allocs);
  free(im);
}

/* A part belongs to its config's first kernel, which frees it: freeing it alone would leave the
 * first holding a freed part (weft_manifest_part hands parts out as const for that reason). */
void weft_manifest_free(weft_manifest *m) {
  if (m && m->part == 0) manifest_free(m);
}

int weft_run_size_index(const weft_run_spec *spec, const char *name) {
  for (int i = 0; spec && name && i < spec->n_sizes; i++)
    if (!strcmp(spec->sizes[i], name) || (spec->aliases[i] && spec->aliases[i][0] && !strcmp(spec->aliases[i], name)))
      return i;
  return -1;
}

static int is_size(const weft_arg *a) { return a->role && !strcmp(a->role, "size"); }

int weft_manifest_check_size(const weft_manifest *m, const char *name, long long v, char *why, size_t len) {
  char none[1];
  if (!why) why = none, len = sizeof none;   /* (the verdict alone) */
  if (!m || !name) {
    snprintf(why, len, "weft_manifest_check_size: %s is NULL", !m ? "the manifest" : "the size's name");
    return -1;
  }
  /* a name the kernel has no use for (a typo, a pointer, another family's size) is refused, not
   * allowed: its size arguments, its limits and its config's run sizes (a part of a several-kernel
   * config may be asked about a size only another part takes) are the names it knows; a run
   * size's alias (allreduce's elems) is checked as the size it names */
  int run = weft_run_size_index(&m->run, name), known = run >= 0;
  if (run >= 0) name = m->run.sizes[run];
  for (int i = 0; i < m->n_args && !known; i++) known = is_size(&m->args[i]) && !strcmp(m->args[i].name, name);
  for (int i = 0; i < m->n_limits && !known; i++) known = !strcmp(m->limits[i].arg, name);
  if (!known) {
    char sizes[256] = "", shown[96];
    size_t at = 0;
    for (int i = 0; i < m->n_args && at < sizeof sizes; i++) {
      if (!is_size(&m->args[i])) continue;
      int w = snprintf(sizes + at, sizeof sizes - at, "%s%s", at ? ", " : "", m->args[i].name);
      if (w < 0 || (size_t)w >= sizeof sizes - at) { sizes[at] = 0; break; }   /* (whole names only) */
      at += (size_t)w;
    }
    snprintf(why, len, "%s: '%s' is no size of this kernel (its sizes: %s)", m->name, util_printable(name, shown, sizeof shown),
             sizes[0] ? sizes : "none");
    return -1;
  }
  for (int i = 0; i < m->n_limits; i++) {
    const weft_limit *l = &m->limits[i];
    if (strcmp(l->arg, name)) continue;
    if (v < l->min || v > l->max) {
      snprintf(why, len, "%s: %s = %lld: this kernel takes %s in %ld..%ld%s%s%s%s", m->name, name, v, name, l->min, l->max,
               l->max < 2147483647L / 2 ? " (set by its config: raise it there, or use another mode)" : "",
               l->hint ? " (or " : "", l->hint ? l->hint : "", l->hint ? ")" : "");
      return -1;
    }
    if (l->multiple > 1 && v % l->multiple) {
      /* the next multiple up, or where that passes the limit, the last one below it */
      long long below = v / l->multiple * l->multiple;
      int up = below <= (long long)l->max - l->multiple;
      snprintf(why, len, "%s: %s = %lld: this kernel takes %s a multiple of %ld (%s it to %lld%s%s)", m->name, name, v,
               name, l->multiple, up ? "pad" : "cut", up ? below + l->multiple : below, l->hint ? "; or " : "",
               l->hint ? l->hint : "");
      return -1;
    }
  }
  return 0;
}
