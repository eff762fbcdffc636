/* bridge_manifest.c: the generator's manifest table (gen/core/weft.lua's generate) converted
 * to weft_manifest (weft.h), with the kernels launched after it.  The field names here are the
 * manifest's JSON keys; manifest_check then checks what the runtime relies on. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "manifest.h"
#include "util.h"

/* ---- manifest table -> weft_manifest ---------------------------------------------------- */

static const char *field_str(lua_State *L, int t, const char *k, weft_manifest *m) {
  lua_getfield(L, t, k);
  const char *s = lua_type(L, -1) == LUA_TSTRING ? manifest_str(m, lua_tostring(L, -1)) : NULL;
  lua_pop(L, 1);
  return s;
}

static long field_int(lua_State *L, int t, const char *k, long dflt) {
  lua_getfield(L, t, k);
  long v = lua_isinteger(L, -1) ? (long)lua_tointeger(L, -1) : dflt;
  lua_pop(L, 1);
  return v;
}

static void field_dim3(lua_State *L, int t, const char *k, unsigned out[3]) {
  lua_getfield(L, t, k);
  for (int i = 0; i < 3; i++) {
    lua_rawgeti(L, -1, i + 1);
    out[i] = lua_isinteger(L, -1) ? (unsigned)lua_tointeger(L, -1) : 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* t[k], a list of strings, owned by m: its length in *n; NULL if absent (*n = 0) or out of
 * memory.  An entry that is not a string stays NULL, for manifest_check to name. */
static const char **field_strs(lua_State *L, int t, const char *k, weft_manifest *m, int *n, int *oom) {
  lua_getfield(L, t, k);
  *n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  const char **v = NULL;
  if (*n) {
    v = manifest_alloc(m, sizeof(char *) * (size_t)(*n + 1));
    if (!v) *oom = 1;
    for (int i = 0; v && i < *n; i++) {
      lua_rawgeti(L, -1, i + 1);
      if (lua_type(L, -1) == LUA_TSTRING && !(v[i] = manifest_str(m, lua_tostring(L, -1)))) *oom = 1;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return v;
}

/* tmaps = { { name, source, dtype, dims = {...}, box = {...}, swizzle, l2_promotion }, ... } (weft_tmap) */
static int to_tmaps(lua_State *L, int t, weft_manifest *m, char *err, size_t errlen) {
  lua_getfield(L, t, "tmaps");
  int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  weft_tmap *tm = manifest_alloc(m, sizeof(weft_tmap) * (size_t)(n + 1));
  int rc = tm ? 0 : -1, oom = 0;
  for (int i = 0; tm && rc == 0 && i < n; i++) {
    lua_rawgeti(L, -1, i + 1);
    int g = lua_gettop(L);
    if (!lua_istable(L, g)) {
      snprintf(err, errlen, "%s: tmaps[%d] is a %s, not a table", m->name, i + 1, luaL_typename(L, g));
      rc = -1;
    } else {
      tm[i].name = field_str(L, g, "name", m);
      tm[i].source = field_str(L, g, "source", m);
      tm[i].dtype = field_str(L, g, "dtype", m);
      int nd, nb;
      const char **dims = field_strs(L, g, "dims", m, &nd, &oom);
      lua_getfield(L, g, "box");
      nb = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
      tm[i].n_dims = nd;
      for (int d = 0; dims && d < nd && d < nb && d < WEFT_TMAP_MAX_DIMS; d++) {
        tm[i].dims[d] = dims[d];
        lua_rawgeti(L, -1, d + 1);
        lua_Integer b = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
        tm[i].box[d] = b >= 0 && b <= 65536 ? (unsigned)b : 0;   /* out of range: 0, refused below */
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
      lua_getfield(L, g, "swizzle");
      tm[i].swizzle = lua_isnil(L, -1) ? 0 : lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
      lua_pop(L, 1);
      lua_getfield(L, g, "l2_promotion");   /* absent: 256; the allowed values: manifest_check */
      lua_Integer l2 = lua_isnil(L, -1) ? 256 : lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
      if (!lua_isnil(L, -1) && (!lua_isinteger(L, -1) || l2 < 0 || l2 > 256)) {
        char v[64];
        if (lua_isinteger(L, -1)) snprintf(v, sizeof v, "%lld", (long long)l2);
        else snprintf(v, sizeof v, "a %s", luaL_typename(L, -1));
        snprintf(err, errlen, "%s: tensor map %s: l2_promotion = %s: must be the integer 0, 64, 128 or 256 (bytes; "
                 "absent: 256)", m->name, tm[i].name ? tm[i].name : "?", v);
        rc = -1;
      }
      tm[i].l2_promotion = (int)(l2 >= 0 && l2 <= 256 ? l2 : -1);
      lua_pop(L, 1);
      if (nb != nd) {
        snprintf(err, errlen, "%s: tensor map %s: %d dims but %d box sizes", m->name, tm[i].name ? tm[i].name : "?", nd, nb);
        rc = -1;
      }
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  m->n_tmaps = n;
  m->tmaps = tm;
  return oom ? -1 : rc;
}

/* run = { sizes = {...}, aliases = {...}, check_cap = {...}, check = { {...}, ... }, time = ...,
 * metric, baseline, ranks } (weft_run_spec; gen/core/weft.lua's run_spec checked its form) */
static weft_shape *to_shapes(lua_State *L, int r, const char *k, int n_sizes, weft_manifest *m, int *n) {
  lua_getfield(L, r, k);
  *n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  weft_shape *out = manifest_alloc(m, sizeof(weft_shape) * (size_t)(*n + 1));
  for (int i = 0; out && i < *n; i++) {
    lua_rawgeti(L, -1, i + 1);
    for (int j = 0; j < n_sizes; j++) {
      lua_rawgeti(L, -1, j + 1);
      out[i].v[j] = (long long)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return out;
}

static int to_run(lua_State *L, int t, weft_manifest *m) {
  weft_run_spec *rs = &m->run;
  lua_getfield(L, t, "run");
  if (!lua_istable(L, -1)) { lua_pop(L, 1); return 0; }
  int r = lua_gettop(L);
  const char *lists[3] = {"sizes", "aliases", "check_cap"};
  for (int l = 0; l < 3; l++) {
    lua_getfield(L, r, lists[l]);
    int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
    if (n > WEFT_MAX_SIZES) n = WEFT_MAX_SIZES;
    if (l == 0) rs->n_sizes = n;
    for (int j = 0; j < n; j++) {
      lua_rawgeti(L, -1, j + 1);
      if (l == 2) rs->check_cap[j] = (long long)lua_tointeger(L, -1);
      else if (!((l == 0 ? rs->sizes : rs->aliases)[j] = manifest_str(m, lua_tostring(L, -1)))) return -1;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  int oom = 0;
  rs->key = field_strs(L, r, "key", m, &rs->n_key, &oom);
  if (oom) return -1;
  rs->check = to_shapes(L, r, "check", rs->n_sizes, m, &rs->n_check);
  rs->time = to_shapes(L, r, "time", rs->n_sizes, m, &rs->n_time);
  rs->metric = field_str(L, r, "metric", m);
  rs->baseline = field_str(L, r, "baseline", m);
  lua_getfield(L, r, "ranks");
  rs->ranks = lua_toboolean(L, -1);
  lua_pop(L, 2);
  return rs->check && rs->time && rs->metric && rs->baseline ? 0 : -1;
}

static int to_manifest(lua_State *L, int t, weft_manifest *m, char *err, size_t errlen) {
  m->family = field_str(L, t, "family", m);
  m->name = field_str(L, t, "name", m);
  m->entry = field_str(L, t, "entry", m);
  m->source = field_str(L, t, "source", m);
  m->json = field_str(L, t, "json", m);
  if (!m->family || !m->name || !m->entry || !m->source || !m->json) return -1;
  /* its custom operator's host reference, kept in this bridge (gen/core/weft.lua's M.refs) */
  lua_getfield(L, t, "ref_key");
  long key = lua_isinteger(L, -1) ? (long)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  if (key > 0) manifest_set_ref(m, bridge_refs_of(*(bridge **)lua_getextraspace(L)), key);
  field_dim3(L, t, "block", m->block);
  field_dim3(L, t, "cluster", m->cluster);
  m->smem = (unsigned)field_int(L, t, "smem", 0);
  lua_getfield(L, t, "nonportable_cluster");
  m->nonportable_cluster = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, t, "pdl");
  m->pdl = lua_toboolean(L, -1);
  lua_pop(L, 1);

  int opts_oom = 0;
  m->options = field_strs(L, t, "options", m, &m->n_options, &opts_oom);

  lua_getfield(L, t, "args");
  m->n_args = (int)lua_rawlen(L, -1);
  weft_arg *args = manifest_alloc(m, sizeof(weft_arg) * (size_t)(m->n_args + 1));
  for (int i = 0; args && i < m->n_args; i++) {
    lua_rawgeti(L, -1, i + 1);
    int a = lua_gettop(L);
    args[i].name = field_str(L, a, "name", m);
    args[i].type = field_str(L, a, "type", m);
    args[i].dtype = field_str(L, a, "dtype", m);
    args[i].role = field_str(L, a, "role", m);
    args[i].congruent = field_str(L, a, "congruent", m);
    args[i].align = (int)field_int(L, a, "align", 0);
    lua_pop(L, 1);
  }
  m->args = args;
  lua_pop(L, 1);

  lua_getfield(L, t, "workspace");
  if (lua_istable(L, -1)) {
    int w = lua_gettop(L);
    m->workspace_flags = field_int(L, w, "flags", -1);
    m->workspace_per_cta = field_int(L, w, "per_cta", -1);
    /* (a table with zero counts still gives the kernel its parameter, and the kernel reads its
     * flags after the runtime's header: manifest_check refuses either) */
    if (m->workspace_flags < 1 || m->workspace_per_cta < 1 || field_int(L, w, "header", -1) != WEFT_WORKSPACE_HEADER)
      m->workspace_flags = m->workspace_per_cta = -1;
  } else if (!lua_isnil(L, -1)) {
    m->workspace_flags = m->workspace_per_cta = -1;   /* manifest_check names it */
  }
  lua_pop(L, 1);

  lua_getfield(L, t, "grid");
  int by_bad = 0;
  for (int i = 0; i < 3; i++) {
    lua_rawgeti(L, -1, i + 1);
    int g = lua_gettop(L);
    m->grid[i].arg = field_str(L, g, "arg", m);
    m->grid[i].per = field_int(L, g, "per", 1);
    m->grid[i].times = field_int(L, g, "times", 1);
    m->grid[i].cap = field_str(L, g, "cap", m);
    m->grid[i].split = field_str(L, g, "split", m);
    m->grid[i].shards = field_str(L, g, "shards", m);
    m->grid[i].max = field_int(L, g, "max", 0);
    lua_getfield(L, g, "by");
    if (lua_istable(L, -1)) {
      int b = lua_gettop(L);
      m->grid[i].by = field_str(L, b, "arg", m);
      m->grid[i].by_per = field_int(L, b, "per", 1);
      if (!m->grid[i].by) by_bad = 1;
    } else if (!lua_isnil(L, -1)) {
      by_bad = 1;
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);

  lua_getfield(L, t, "limits");
  m->n_limits = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  weft_limit *lim = manifest_alloc(m, sizeof(weft_limit) * (size_t)(m->n_limits + 1));
  for (int i = 0; lim && i < m->n_limits; i++) {
    lua_rawgeti(L, -1, i + 1);
    int g = lua_gettop(L);
    lim[i].arg = field_str(L, g, "arg", m);
    lim[i].min = field_int(L, g, "min", 0);
    lim[i].max = field_int(L, g, "max", 0);
    lim[i].multiple = field_int(L, g, "multiple", 0);
    lim[i].hint = field_str(L, g, "hint", m);
    lua_pop(L, 1);
  }
  m->limits = lim;
  lua_pop(L, 1);

  lua_getfield(L, t, "params");
  m->n_params = (int)lua_rawlen(L, -1);
  weft_param *par = manifest_alloc(m, sizeof(weft_param) * (size_t)(m->n_params + 1));
  for (int i = 0; par && i < m->n_params; i++) {
    lua_rawgeti(L, -1, i + 1);
    int g = lua_gettop(L);
    par[i].key = field_str(L, g, "key", m);
    par[i].value = field_str(L, g, "value", m);
    lua_pop(L, 1);
  }
  m->params = par;
  lua_pop(L, 1);
  lua_getfield(L, t, "comm");
  const char **sigs = NULL;
  if (lua_istable(L, -1)) {
    int c = lua_gettop(L);
    lua_getfield(L, c, "signals");
    m->comm.n_signals = (int)lua_rawlen(L, -1);
    sigs = manifest_alloc(m, sizeof(char *) * (size_t)(m->comm.n_signals + 1));
    for (int i = 0; sigs && i < m->comm.n_signals; i++) {
      lua_rawgeti(L, -1, i + 1);
      sigs[i] = manifest_str(m, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    m->comm.signals = sigs;
    m->comm.halves = (int)field_int(L, c, "halves", 1);
    m->comm.elem_bytes = (int)field_int(L, c, "elem_bytes", 1);
    lua_getfield(L, c, "multimem");
    m->comm.multimem = lua_toboolean(L, -1);
    lua_getfield(L, c, "emulate");
    m->comm.emulate = lua_toboolean(L, -1);
    lua_getfield(L, c, "per_rank");
    m->comm.per_rank = lua_toboolean(L, -1);
    lua_getfield(L, c, "scatter");
    m->comm.scatter = lua_toboolean(L, -1);
    lua_pop(L, 4);
    int oom = 0;
    m->comm.elems = field_strs(L, c, "elems", m, &m->comm.n_elems, &oom);
    m->comm.divide = field_str(L, c, "divide", m);
    m->comm.ranks = (int)field_int(L, c, "ranks", 0);
    m->comm.flag_div = (int)field_int(L, c, "flag_div", 0);
    if (!sigs || oom) { lua_pop(L, 1); return -1; }
  }
  lua_pop(L, 1);
  if (opts_oom || !args || !lim || !par || by_bad) return -1;
  for (int i = 0; i < 3; i++) {
    if (m->grid[i].arg && manifest_arg_index(m, m->grid[i].arg) < 0) return -1;
    if (m->grid[i].cap && strcmp(m->grid[i].cap, "coresident") != 0) return -1;
    if (m->grid[i].split && strcmp(m->grid[i].split, "ranks") != 0) return -1;
    if (m->grid[i].shards && (strcmp(m->grid[i].shards, "ranks") != 0 || !m->grid[i].arg)) return -1;
    if (m->grid[i].per < 1) return -1;
    if (m->grid[i].by) {   /* a second size argument (an integer the launch reads as one) */
      int b = manifest_arg_index(m, m->grid[i].by);
      if (!m->grid[i].arg || b < 0 || m->grid[i].by_per < 1 || !m->args[b].role || strcmp(m->args[b].role, "size") != 0)
        return -1;
    }
  }
  if (to_run(L, t, m) != 0) { snprintf(err, errlen, "%s: out of memory reading the run spec", m->name); return -1; }
  if (to_tmaps(L, t, m, err, errlen) != 0 || manifest_check(m, err, errlen) != 0) return -1;
  manifest_seal(m);
  return 0;
}

/* The kernels launched after the first (t.parts, in launch order), each converted like it and
 * handed to m. */
static int to_parts(lua_State *L, int t, weft_manifest *m, char *err, size_t errlen) {
  lua_getfield(L, t, "parts");
  int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0, rc = 0;
  for (int i = 0; rc == 0 && i < n; i++) {
    lua_rawgeti(L, -1, i + 1);
    weft_manifest *p = lua_istable(L, -1) ? manifest_new() : NULL;
    if (!p) {
      snprintf(err, errlen, "%s: parts[%d] is %s", m->name, i + 1, lua_istable(L, -1) ? "out of memory" : "not a table");
      rc = -1;
    } else if (to_manifest(L, lua_gettop(L), p, err, errlen) != 0 || manifest_add_part(m, p) != 0) {
      if (!err[0]) snprintf(err, errlen, "%s: parts[%d] is an incomplete manifest", m->name, i + 1);
      manifest_free(p);
      rc = -1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return rc;
}

/* Converts the manifest table at the top of the stack, with the kernels launched after it; on
 * failure says why (a bug in the generator: derive produced something the runtime cannot
 * launch). */
weft_status bridge_convert(lua_State *L, const char *chunkname, weft_manifest **out, char *err, size_t errlen) {
  weft_manifest *m = manifest_new();
  if (!m) { snprintf(err, errlen, "out of memory"); return WEFT_ERR_NOMEM; }
  char why[2048] = "";
  if (to_manifest(L, lua_gettop(L), m, why, sizeof why) != 0 || to_parts(L, lua_gettop(L), m, why, sizeof why) != 0) {
    if (why[0])
      snprintf(err, errlen, "weft's generator returned a manifest the runtime cannot use for %s (a bug in weft): %s",
               chunkname, why);
    else
      snprintf(err, errlen, "weft's generator returned an incomplete manifest for %s (a bug in weft)", chunkname);
    manifest_free(m);
    return WEFT_ERR_INTERNAL;
  }
  *out = m;
  return WEFT_OK;
}

