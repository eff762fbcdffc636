/* sweep.c: gen/core/sweep.lua's expansion, converted to C (see sweep.h). */
#include "sweep.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static char *str_field(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  char *s = lua_isstring(L, -1) ? util_strdup(lua_tostring(L, -1)) : util_strdup("");
  lua_pop(L, 1);
  return s;
}

static int int_field(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  int v = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return v;
}

/* the string list at t[k] */
static char **str_list(lua_State *L, int t, const char *k, int *n) {
  lua_getfield(L, t, k);
  *n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  char **v = calloc((size_t)*n + 1, sizeof *v);
  for (int i = 0; v && i < *n; i++) {
    lua_rawgeti(L, -1, i + 1);
    v[i] = util_strdup(lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return v;
}

static void free_list(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

static void to_shape(lua_State *L, int t, sweep_shape *sh) {
  sh->name = str_field(L, t, "name");
  sh->sets = str_list(L, t, "sets", &sh->n_sets);
  sh->total = int_field(L, t, "total");
  sh->pruned_where = int_field(L, t, "pruned_where");
  sh->duplicates = int_field(L, t, "duplicates");
  /* size: a map; keys sorted for a stable order */
  lua_getfield(L, t, "size");
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) { n++; lua_pop(L, 1); }
  sh->size_keys = calloc((size_t)n + 1, sizeof(char *));
  sh->size_vals = calloc((size_t)n + 1, sizeof(long));
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && sh->n_size < n) {
      sh->size_keys[sh->n_size] = util_strdup(lua_tostring(L, -2));
      sh->size_vals[sh->n_size] = (long)lua_tointeger(L, -1);
      sh->n_size++;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  for (int i = 1; i < sh->n_size; i++)   /* insertion sort by key */
    for (int j = i; j > 0 && strcmp(sh->size_keys[j - 1], sh->size_keys[j]) > 0; j--) {
      char *k = sh->size_keys[j]; sh->size_keys[j] = sh->size_keys[j - 1]; sh->size_keys[j - 1] = k;
      long v = sh->size_vals[j]; sh->size_vals[j] = sh->size_vals[j - 1]; sh->size_vals[j - 1] = v;
    }
  lua_getfield(L, t, "candidates");
  sh->n_cand = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  sh->cand = calloc((size_t)sh->n_cand + 1, sizeof *sh->cand);
  for (int i = 0; i < sh->n_cand; i++) {
    lua_rawgeti(L, -1, i + 1);
    int c = lua_gettop(L);
    sh->cand[i].sets = str_list(L, c, "sets", &sh->cand[i].n_sets);
    sh->cand[i].label = str_field(L, c, "label");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_getfield(L, t, "pruned");
  sh->n_rules = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  sh->rules = calloc((size_t)sh->n_rules + 1, sizeof *sh->rules);
  for (int i = 0; i < sh->n_rules; i++) {
    lua_rawgeti(L, -1, i + 1);
    int c = lua_gettop(L);
    sh->rules[i].rule = str_field(L, c, "rule");
    sh->rules[i].count = int_field(L, c, "count");
    sh->rules[i].example = str_field(L, c, "example");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

weft_status sweep_expand(bridge *b, const char *file, const char *text, const char *const *ov, int n_ov,
                         sweep **out, char *err, size_t errlen) {
  lua_State *L = bridge_lua(b);
  int top = lua_gettop(L);
  weft_status st = WEFT_OK;
  *out = NULL;
  if (bridge_check_env(b, err, errlen) != 0) return WEFT_ERR_INVALID;
  lua_getglobal(L, "require");
  lua_pushstring(L, "gen.core.sweep");
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc != LUA_OK) {
    st = bridge_failure(b, rc, "loading weft's sweep expander", lua_tostring(L, -1), err, errlen);
    goto done;
  }
  lua_getfield(L, -1, "expand");
  lua_pushstring(L, text);
  lua_pushstring(L, file);
  lua_createtable(L, n_ov, 0);
  for (int i = 0; i < n_ov; i++) { lua_pushstring(L, ov[i]); lua_rawseti(L, -2, i + 1); }
  rc = lua_pcall(L, 3, 2, 0);
  if (rc != LUA_OK) {
    st = bridge_failure(b, rc, "weft's sweep expander", lua_tostring(L, -1), err, errlen);
    goto done;
  }
  bridge_sandbox_reset(b);
  if (lua_isnil(L, -2)) {
    util_set_msg(err, errlen, "", lua_isstring(L, -1) ? lua_tostring(L, -1) : "invalid sweep");
    st = WEFT_ERR_CONFIG;
    goto done;
  }
  int t = lua_gettop(L) - 1;
  sweep *s = calloc(1, sizeof *s);
  if (!s) { st = WEFT_ERR_NOMEM; goto done; }
  s->family = str_field(L, t, "family");
  s->file = str_field(L, t, "file");
  s->base_text = str_field(L, t, "base_text");
  s->keys = str_list(L, t, "keys", &s->n_keys);
  lua_getfield(L, t, "shapes");
  s->n_shapes = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  s->shapes = calloc((size_t)s->n_shapes + 1, sizeof *s->shapes);
  for (int i = 0; i < s->n_shapes; i++) {
    lua_rawgeti(L, -1, i + 1);
    to_shape(L, lua_gettop(L), &s->shapes[i]);
    lua_pop(L, 1);
  }
  *out = s;
done:
  lua_settop(L, top);
  return st;
}

long sweep_size(const sweep_shape *s, const char *key) {
  for (int i = 0; i < s->n_size; i++)
    if (!strcmp(s->size_keys[i], key)) return s->size_vals[i];
  return -1;
}

void sweep_free(sweep *s) {
  if (!s) return;
  for (int i = 0; i < s->n_shapes; i++) {
    sweep_shape *sh = &s->shapes[i];
    free(sh->name);
    free_list(sh->size_keys, sh->n_size);
    free(sh->size_vals);
    free_list(sh->sets, sh->n_sets);
    for (int j = 0; j < sh->n_cand; j++) { free_list(sh->cand[j].sets, sh->cand[j].n_sets); free(sh->cand[j].label); }
    free(sh->cand);
    for (int j = 0; j < sh->n_rules; j++) { free(sh->rules[j].rule); free(sh->rules[j].example); }
    free(sh->rules);
  }
  free(s->shapes);
  free_list(s->keys, s->n_keys);
  free(s->family); free(s->file); free(s->base_text);
  free(s);
}
