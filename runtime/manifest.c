/* manifest.c: the C side of the manifest (see weft.h).  Every string and array lives in a list
 * of allocations owned by the manifest, freed at once by weft_manifest_free. */
#include "manifest.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

typedef struct manifest_impl {
  weft_manifest pub;       /* first: a weft_manifest * is a manifest_impl * */
  void **allocs;
  int n, cap;
} manifest_impl;

weft_manifest *manifest_new(void) { return calloc(1, sizeof(manifest_impl)); }

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

const char *weft_manifest_param(const weft_manifest *m, const char *key) {
  if (!m || !key) return NULL;
  for (int i = 0; i < m->n_params; i++)
    if (strcmp(m->params[i].key, key) == 0) return m->params[i].value;
  return NULL;
}

void weft_manifest_free(weft_manifest *m) {
  if (!m) return;
  manifest_impl *im = (manifest_impl *)m;
  for (int i = 0; i < im->n; i++) free(im->allocs[i]);
  free(im->allocs);
  free(im);
}
