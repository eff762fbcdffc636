/* auto.c: the config chosen from the shape (weft.h's weft_auto_*).  The selection itself is Lua's
 * (gen/core/auto.lua: the rule of each family, the distance, which known row wins); this side
 * gathers what Lua cannot reach -- the device, the tuning database's rows, the shipped table --
 * and hands the result back as C data. */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto.h"
#include "autotable.h"
#include "bridge.h"
#include "internal.h"
#include "jit.h"
#include "tunedb.h"
#include "util.h"

typedef struct auto_choice {
  char **sets;
  int n_sets;
  char **keys;   /* the key fields' values (op, residual, eps, ...), as k=v: part of a recorded row */
  int n_keys;
  char *text, *name;
} auto_choice;

struct weft_auto {
  char *chunk, *text;        /* the user's config, as given */
  char **ov;
  int n_ov;
  char *family, *dtype, *shape;
  int ranks;
  char *source, *detail;
  double time_us;
  int n;
  auto_choice *ch;
};

/* One row the database or the table knows, as auto.choose's `known` wants it. */
typedef struct known_row {
  const char *source, *where, *shape, *base, *by;
  int exact_env, line;   /* line: a table row's, in its file (0: a database row) */
  double time_us;
  char **sets;
  int n_sets;
} known_row;

/* ---- small helpers ----------------------------------------------------------------------- */

static void free_list(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* Splits s at every sep into a malloc'd list; NULL when out of memory. */
static char **split(const char *s, char sep, int *n) {
  int cap = 1;
  for (const char *p = s; *p; p++) cap += *p == sep;
  char **v = calloc((size_t)cap + 1, sizeof *v);
  *n = 0;
  if (!v) return NULL;
  for (const char *p = s; *p;) {
    const char *e = strchr(p, sep);
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && !(v[(*n)++] = util_strprintf("%.*s", (int)len, p))) { free_list(v, *n); return NULL; }
    p += len + (e != NULL);
  }
  return v;
}

/* Warnings about the table or the database: once per process on stderr (a library that prints
 * every time would fill a training log), and always in the choice's detail. */
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;   /* contexts may live on several threads */
static void warn_once(const char *text) {
  static char said[8][64];
  static int n_said;
  char head[64];
  snprintf(head, sizeof head, "%.63s", text);
  pthread_mutex_lock(&said_lock);
  for (int i = 0; i < n_said; i++)
    if (!strcmp(said[i], head)) { pthread_mutex_unlock(&said_lock); return; }
  if (n_said < 8) snprintf(said[n_said++], sizeof said[0], "%s", head);
  pthread_mutex_unlock(&said_lock);
  util_warn("weft: warning: %s%s", text, *text && text[strlen(text) - 1] != '\n' ? "\n" : "");
}

void weft_auto_free(weft_auto *a) {
  if (!a) return;
  for (int i = 0; i < a->n; i++) {
    free_list(a->ch[i].sets, a->ch[i].n_sets);
    free_list(a->ch[i].keys, a->ch[i].n_keys);
    free(a->ch[i].text);
    free(a->ch[i].name);
  }
  free(a->ch);
  free_list(a->ov, a->n_ov);
  free(a->chunk); free(a->text); free(a->family); free(a->dtype); free(a->shape); free(a->source); free(a->detail);
  free(a);
}

/* ---- the calls into gen/core/auto.lua ---------------------------------------------------- */

static int l_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
  return 1;
}

typedef struct call_in {
  const char *fn;            /* "prepare" or "choose" */
  const char *chunk, *text, *shape;
  const char *const *ov;
  int n_ov, n_cand;
  const auto_device *dev;
  int ranks;
  const known_row *known;
  int n_known;
} call_in;

static void push_list(lua_State *L, const char *const *v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) { lua_pushstring(L, v[i]); lua_rawseti(L, -2, i + 1); }
}

/* Runs under lua_pcall, so building the arguments cannot longjmp past the API either: returns
 * what auto.<fn> returned (result, or nil and a message). */
static int l_call(lua_State *L) {
  const call_in *in = lua_touserdata(L, 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, "gen.core.auto");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, in->fn);
  lua_pushstring(L, in->text);
  lua_pushstring(L, in->chunk);
  push_list(L, in->ov, in->n_ov);
  if (!strcmp(in->fn, "prepare")) {
    lua_call(L, 3, 2);
    return 2;
  }
  lua_pushstring(L, in->shape);
  lua_createtable(L, 0, 5);
  lua_pushstring(L, in->dev->gpu); lua_setfield(L, -2, "gpu");
  lua_pushinteger(L, in->dev->sms); lua_setfield(L, -2, "sms");
  lua_pushinteger(L, in->dev->sm); lua_setfield(L, -2, "sm");
  lua_pushinteger(L, in->ranks); lua_setfield(L, -2, "ranks");
  if (in->dev->mem_gbs > 0) { lua_pushinteger(L, in->dev->mem_gbs); lua_setfield(L, -2, "mem_gbs"); }
  lua_createtable(L, in->n_known, 0);
  for (int i = 0; i < in->n_known; i++) {
    const known_row *k = &in->known[i];
    lua_createtable(L, 0, 8);
    lua_pushstring(L, k->source); lua_setfield(L, -2, "source");
    lua_pushstring(L, k->where); lua_setfield(L, -2, "where");
    lua_pushstring(L, k->shape); lua_setfield(L, -2, "shape");
    lua_pushboolean(L, k->exact_env); lua_setfield(L, -2, "exact_env");
    lua_pushnumber(L, k->time_us); lua_setfield(L, -2, "time_us");
    lua_pushstring(L, k->base); lua_setfield(L, -2, "base");
    push_list(L, (const char *const *)k->sets, k->n_sets); lua_setfield(L, -2, "sets");
    lua_pushstring(L, k->by); lua_setfield(L, -2, "by");
    lua_pushinteger(L, k->line); lua_setfield(L, -2, "line");
    lua_rawseti(L, -2, i + 1);
  }
  lua_createtable(L, 0, 1);
  lua_pushinteger(L, in->n_cand); lua_setfield(L, -2, "candidates");
  lua_call(L, 7, 2);
  return 2;
}

/* Calls auto.<fn>; WEFT_OK with its result table on top of the stack, or a status and err. */
static weft_status call_auto(bridge *b, const call_in *in, char *err, size_t errlen) {
  lua_State *L = bridge_lua(b);
  lua_pushcfunction(L, l_traceback);
  int h = lua_gettop(L);
  lua_pushcfunction(L, l_call);
  lua_pushlightuserdata(L, (void *)in);
  int rc = lua_pcall(L, 1, 2, h);
  bridge_sandbox_reset(b);
  if (rc != LUA_OK) return bridge_failure(b, rc, "weft's auto selection (gen/core/auto.lua)", lua_tostring(L, -1), err, errlen);
  if (!lua_istable(L, -2)) {
    util_set_msg(err, errlen, "", lua_isstring(L, -1) ? lua_tostring(L, -1) : "auto: no choice");
    return WEFT_ERR_CONFIG;
  }
  lua_pop(L, 1);
  return WEFT_OK;
}

static char *str_field(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  char *s = lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER ? util_strdup(lua_tostring(L, -1)) : NULL;
  lua_pop(L, 1);
  return s;
}

/* t[k] as a list of strings; NULL (and *n 0) when absent or out of memory, *bad when not strings */
static char **list_field(lua_State *L, int t, const char *k, int *n, int *bad) {
  lua_getfield(L, t, k);
  *n = 0;
  char **v = NULL;
  if (lua_istable(L, -1)) {
    int len = (int)lua_rawlen(L, -1);
    v = calloc((size_t)len + 1, sizeof *v);
    for (int i = 0; v && i < len; i++) {
      lua_rawgeti(L, -1, i + 1);
      if (lua_type(L, -1) != LUA_TSTRING) *bad = 1;
      else if (!(v[(*n)++] = util_strdup(lua_tostring(L, -1)))) *bad = 1;
      lua_pop(L, 1);
    }
    if (!v) *bad = 1;
  } else if (!lua_isnil(L, -1)) {
    *bad = 1;
  }
  lua_pop(L, 1);
  return v;
}

/* The result table on top of the stack into a (source, detail, time, choices). */
static weft_status take_result(lua_State *L, weft_auto *a, char *err, size_t errlen) {
  int t = lua_gettop(L), bad = 0;
  a->source = str_field(L, t, "source");
  a->detail = str_field(L, t, "detail");
  /* measured rows at this shape that were not used, and why (a table row that no longer checks) */
  char *unused = str_field(L, t, "unused");
  if (unused && *unused) warn_once(unused);
  if (unused && *unused && a->detail) {
    char *d = util_strprintf("%s; %s", a->detail, unused);
    if (d) { free(a->detail); a->detail = d; }
  }
  free(unused);
  lua_getfield(L, t, "time_us");
  a->time_us = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : -1;
  lua_pop(L, 1);
  lua_getfield(L, t, "choices");
  int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  a->ch = calloc((size_t)n + 1, sizeof *a->ch);
  for (int i = 0; a->ch && i < n; i++, a->n++) {
    lua_rawgeti(L, -1, i + 1);
    int c = lua_gettop(L);
    if (!lua_istable(L, c)) bad = 1;
    else {
      a->ch[i].sets = list_field(L, c, "sets", &a->ch[i].n_sets, &bad);
      a->ch[i].keys = list_field(L, c, "keys", &a->ch[i].n_keys, &bad);
      a->ch[i].text = str_field(L, c, "text");
      a->ch[i].name = str_field(L, c, "name");
      if (!a->ch[i].text || !a->ch[i].name) bad = 1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (!a->ch) return WEFT_ERR_NOMEM;
  if (bad || n < 1 || !a->source || !a->detail) {
    util_set_err(err, errlen, "weft's auto selection (gen/core/auto.lua) returned a result without %s (a bug in weft, "
                 "please report it)", n < 1 ? "a choice" : !a->source ? "a source" : !a->detail ? "a detail"
                 : "the text, name and sets of every choice");
    return WEFT_ERR_INTERNAL;
  }
  return WEFT_OK;
}

/* ---- what is known: the database's rows and the table's ----------------------------------- */

typedef struct known_set {
  known_row *v;
  int n, cap;
  tune_best *db;
  int n_db;
  char *db_where;            /* the database's path (rows point at it) */
  autotable *table;
  char *table_base;          /* `return { family = ..., dtype = ... }`: what table rows are relative to */
} known_set;

static known_row *known_add(known_set *k) {
  if (k->n == k->cap) {
    int nc = k->cap ? k->cap * 2 : 16;
    known_row *g = realloc(k->v, (size_t)nc * sizeof *g);
    if (!g) return NULL;
    k->v = g;
    k->cap = nc;
  }
  memset(&k->v[k->n], 0, sizeof *k->v);
  return &k->v[k->n++];
}

static const char *const db_source = "database", *const table_source = "table";

static void known_free(known_set *k) {
  for (int i = 0; i < k->n; i++)
    if (k->v[i].source == db_source) free_list(k->v[i].sets, k->v[i].n_sets);
  free(k->v);
  tunedb_best_free(k->db, k->n_db);
  free(k->db_where);
  autotable_free(k->table);
  free(k->table_base);
}

/* Gathers the rows; what went wrong (a corrupt file) goes into notes, never fails the choice.
 * -1 only when out of memory. */
static int gather(weft_ctx *c, const auto_device *dev, int ranks, const char *family, const char *dtype,
                  const char *db_path, known_set *k, util_buf *notes) {
  char err[2048];
  if (dev->have_gpu) {
    tunedb *db = NULL;
    /* read-only: a lookup never creates the database nor waits for a writer's lock (every rank
     * of a job looks up each new shape) */
    int dbst = tunedb_open_readonly(&db, db_path, err, sizeof err);
    if (dbst < 0 || (dbst == 0 && tunedb_nearest(db, dev->gpu, dev->sm, ranks, family, dtype, &k->db, &k->n_db, err,
                                                 sizeof err))) {
      char *w = util_strprintf("the tuning database is skipped: %s", err);
      warn_once(w ? w : err);
      free(w);
      util_buf_printf(notes, "; the tuning database is skipped: %s", err);
    }
    if (db && !(k->db_where = util_strdup(tunedb_path(db)))) { tunedb_close(db); return -1; }
    tunedb_close(db);
    for (int i = 0; i < k->n_db; i++) {
      known_row *r = known_add(k);
      if (!r) return -1;
      tune_best *b = &k->db[i];
      r->source = db_source;
      r->where = k->db_where;
      r->shape = b->shape;
      r->base = b->row.base;
      r->by = b->row.sweep;
      r->time_us = b->row.time_us;
      r->exact_env = b->driver == dev->driver && !strcmp(b->nvrtc, dev->nvrtc);
      if (!(r->sets = split(b->row.config, '\n', &r->n_sets))) return -1;
    }
  }
  util_buf w = {0};
  int r = autotable_load(api_bridge(c), &k->table, &w);
  if (w.p && w.len) {
    warn_once(w.p);
    int lines = 0;
    for (const char *p = w.p; *p; p++) lines += *p == '\n';
    const char *nl = strchr(w.p, '\n');
    util_buf_printf(notes, "; %s%.*s%s", r < 0 ? "" : "the tuning table: ", nl ? (int)(nl - w.p) : (int)w.len, w.p,
                    lines > 1 ? " (and more: stderr)" : "");
  }
  util_buf_free(&w);
  if (!k->table) return 0;
  /* A table measured on another GPU says nothing here.  Without a GPU: the default device takes any
   * table; a device WEFT_AUTO_SMS / WEFT_AUTO_DRAM_GBS describe has no name to match, so the
   * built-in (H200) table is skipped and a table the user names (WEFT_AUTO_TABLE) is taken as
   * theirs for it. */
  const char *named = getenv("WEFT_AUTO_TABLE");
  int described = !dev->have_gpu && strcmp(dev->gpu, AUTO_DEFAULT_GPU);
  if (dev->have_gpu ? strcmp(k->table->gpu, dev->gpu) != 0 : described && !(named && *named)) {
    util_buf_printf(notes, "; the tuning table %s is for %s, not this %s", k->table->file, k->table->gpu,
                    described ? "GPU (WEFT_AUTO_TABLE=FILE names one for it)" : dev->gpu);
    return 0;
  }
  if (!(k->table_base = util_strprintf("return { family = \"%s\", dtype = \"%s\" }", family, dtype))) return -1;
  for (int i = 0; i < k->table->n_rows; i++) {
    autotable_row *t = &k->table->rows[i];
    if (strcmp(t->family, family) || strcmp(t->dtype, dtype) || t->ranks != ranks) continue;
    known_row *kr = known_add(k);
    if (!kr) return -1;
    kr->source = table_source;
    kr->where = k->table->file;
    kr->shape = t->shape;
    kr->base = k->table_base;
    kr->by = k->table->command[0] ? k->table->command : k->table->file;
    kr->time_us = t->time_us;
    kr->line = t->line;
    kr->sets = t->sets;
    kr->n_sets = t->n_sets;
  }
  return 0;
}

/* ---- choose ------------------------------------------------------------------------------ */

/* Peak DRAM GB/s from the memory clock (kHz) and the bus width (bits), two transfers a clock; 0 when
 * the driver does not say or the product is out of reach (the rule then takes an H200's). */
int auto_mem_gbs(long long clock_khz, long long bus_bits) {
  if (clock_khz <= 0 || bus_bits <= 0 || clock_khz > 100000000LL || bus_bits > 100000LL) return 0;
  long long gbs = (clock_khz * bus_bits * 2 / 8 + 500000) / 1000000;   /* (to the nearest) */
  return gbs > 0 && gbs <= 1000000 ? (int)gbs : 0;
}

/* This machine's GPU, or without one the device the choice is for: the shipped table's H200, or the
 * SM count and DRAM rate that WEFT_AUTO_SMS and WEFT_AUTO_DRAM_GBS give (generating offline for
 * another GPU: the GEMM rule reads both).  With a GPU here they are not used, and the notes say so.
 * WEFT_ERR_INVALID (err set) for a value out of range. */
static weft_status this_device(weft_ctx *c, auto_device *d, char *gpu, size_t len, char *nv, size_t nvlen,
                               util_buf *notes, char *err, size_t errlen) {
  int sm = 0, driver = 0, sms = 0, clock_khz = 0, bus_bits = 0;
  long want_sms, want_gbs;
  if (util_env_long("WEFT_AUTO_SMS", 1, 1024, 0, "SMs", "the SM count auto chooses for without a GPU", &want_sms,
                    err, errlen) ||
      util_env_long("WEFT_AUTO_DRAM_GBS", 1, 100000, 0, "GB/s", "the DRAM rate auto chooses for without a GPU",
                    &want_gbs, err, errlen))
    return WEFT_ERR_INVALID;
  weft_status st = api_device_info(c, gpu, len, &sm, &driver);
  const drv_table *drv;
  CUdevice dev;
  if (!st) st = api_device(c, &drv, &dev);
  if (!st && drv->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS) sms = 0;
  jit_nvrtc_version(nv, nvlen);
  if (st || sms < 1) {
    const char *why = st == WEFT_ERR_NO_DRIVER ? "no NVIDIA driver" : st == WEFT_ERR_NO_DEVICE ? "no usable GPU"
                      : st ? weft_status_name(st) : "the driver gave no SM count";
    *d = (auto_device){0, AUTO_DEFAULT_GPU, AUTO_DEFAULT_SM, want_sms ? (int)want_sms : AUTO_DEFAULT_SMS, 0, nv,
                       want_gbs ? (int)want_gbs : AUTO_DEFAULT_MEM_GBS};
    if (want_sms || want_gbs) {
      /* (another device: the H200's shipped table is not its, so gather skips it) */
      int n = snprintf(gpu, len, "GPU of %d SMs and DRAM %d GB/s (WEFT_AUTO_SMS, WEFT_AUTO_DRAM_GBS)", d->sms,
                       d->mem_gbs);
      if (n < 0 || (size_t)n >= len) {
        util_set_err(err, errlen, "weft: the device description does not fit in %zu bytes", len);
        return WEFT_ERR_INVALID;
      }
      d->gpu = gpu;
      util_buf_printf(notes, "; no GPU here (%s): the database is skipped and the choice is for a %s", why, gpu);
    } else
      util_buf_printf(notes, "; no GPU here (%s): the database is skipped and the device is taken to be the shipped "
                      "table's (%s, sm_%d, %d SMs, DRAM %d GB/s; WEFT_AUTO_SMS and WEFT_AUTO_DRAM_GBS choose for "
                      "another)", why, AUTO_DEFAULT_GPU, AUTO_DEFAULT_SM, AUTO_DEFAULT_SMS, AUTO_DEFAULT_MEM_GBS);
    return WEFT_OK;
  }
  if (drv->cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) != CUDA_SUCCESS ||
      drv->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) != CUDA_SUCCESS)
    clock_khz = bus_bits = 0;
  int mem_gbs = auto_mem_gbs(clock_khz, bus_bits);
  if (mem_gbs)
    util_buf_printf(notes, "; DRAM %d GB/s (memory clock x bus width, for the GEMM rule)", mem_gbs);
  else
    util_buf_printf(notes, "; the driver gave no DRAM rate: the GEMM rule takes the H200's %d GB/s", AUTO_DEFAULT_MEM_GBS);
  if (want_sms || want_gbs)
    util_buf_printf(notes, "; WEFT_AUTO_SMS / WEFT_AUTO_DRAM_GBS are for choosing without a GPU: this one's own are used");
  *d = (auto_device){1, gpu, sm, sms, driver, nv, mem_gbs};
  return WEFT_OK;
}

weft_status auto_choose_with_device(weft_ctx *c, const char *chunk, const char *text, const char *const *ov, int n_ov,
                                    const char *shape, int ranks, int n_cand, const char *db_path,
                                    const auto_device *dev, weft_auto **out) {
  if (!c) return WEFT_ERR_INVALID;
  char *err = api_ctx_err(c);
  if (!text)   /* (weft_auto_choose passes the file's text: only the string form gets here without one) */
    return api_refuse(err, "weft_auto_choose_string: the config text is NULL");
  if (!shape || !out) return api_refuse(err, "weft_auto_choose: %s is NULL", !shape ? "shape" : "out");
  *out = NULL;
  if (ranks < 1) return api_refuse(err, "weft_auto_choose: ranks = %d: the world's size, 1 or more", ranks);
  if (n_cand < 0) return api_refuse(err, "weft_auto_choose: n_candidates = %d: 0 or more", n_cand);
  if (bridge_overrides_check("weft_auto_choose", ov, n_ov, err, API_ERRLEN) != 0) return WEFT_ERR_INVALID;
  bridge *b = api_bridge(c);
  if (!chunk) chunk = "(config string)";
  if (bridge_check_env(b, err, API_ERRLEN) != 0) return WEFT_ERR_INVALID;
  lua_State *L = bridge_lua(b);
  int top = lua_gettop(L);
  weft_auto *a = calloc(1, sizeof *a);
  known_set k = {0};
  util_buf notes = {0};
  weft_status st = WEFT_ERR_NOMEM;
  if (!a) goto done;
  a->ranks = ranks;
  a->time_us = -1;
  if (!(a->chunk = util_strdup(chunk)) || !(a->text = util_strdup(text)) || !(a->ov = calloc((size_t)n_ov + 1, sizeof *a->ov)))
    goto done;
  for (; a->n_ov < n_ov; a->n_ov++)
    if (!(a->ov[a->n_ov] = util_strdup(ov[a->n_ov]))) goto done;
  call_in in = {.fn = "prepare", .chunk = chunk, .text = text, .ov = ov, .n_ov = n_ov, .ranks = ranks, .n_cand = n_cand};
  if ((st = call_auto(b, &in, err, API_ERRLEN))) goto done;
  int t = lua_gettop(L);
  a->family = str_field(L, t, "family");
  a->dtype = str_field(L, t, "dtype");
  int n_sizes = 0, bad = 0;
  char **sizes = list_field(L, t, "sizes", &n_sizes, &bad);
  lua_settop(L, top);
  char canon[512], why[512];
  if (bad || !a->family || !a->dtype || n_sizes < 1) {
    free_list(sizes, n_sizes);
    util_set_err(err, API_ERRLEN, "%s: family %s declares no sizes (F.sizes), so it has no shape to choose for",
                 chunk, a->family ? a->family : "?");
    st = WEFT_ERR_CONFIG;
    goto done;
  }
  int shape_bad = autotable_shape(shape, (const char *const *)sizes, n_sizes, canon, sizeof canon, why, sizeof why);
  free_list(sizes, n_sizes);
  if (shape_bad) {
    util_set_err(err, API_ERRLEN, "%s: %s", chunk, why);
    st = WEFT_ERR_CONFIG;
    goto done;
  }
  st = WEFT_ERR_NOMEM;
  if (!(a->shape = util_strdup(canon))) goto done;
  auto_device here;
  char gpu[256], nv[32];
  if (!dev) {
    if ((st = this_device(c, &here, gpu, sizeof gpu, nv, sizeof nv, &notes, err, API_ERRLEN))) goto done;
    st = WEFT_ERR_NOMEM;
    dev = &here;
  } else if (!dev->have_gpu) {
    util_buf_printf(&notes, "; no GPU given: the database is skipped");
  }
  if (gather(c, dev, ranks, a->family, a->dtype, db_path, &k, &notes)) goto done;
  in = (call_in){.fn = "choose", .chunk = chunk, .text = text, .shape = canon, .ov = ov, .n_ov = n_ov, .n_cand = n_cand,
                 .dev = dev, .ranks = ranks, .known = k.v, .n_known = k.n};
  if ((st = call_auto(b, &in, err, API_ERRLEN))) goto done;
  if ((st = take_result(L, a, err, API_ERRLEN))) goto done;
  if (notes.len) {
    char *d = util_strprintf("%s%s", a->detail, notes.p);
    if (!d) { st = WEFT_ERR_NOMEM; goto done; }
    free(a->detail);
    a->detail = d;
  }
  *out = a;
  a = NULL;
done:
  if (st == WEFT_ERR_NOMEM) util_set_err(err, API_ERRLEN, "out of memory choosing a config for %s", chunk);
  lua_settop(L, top);
  known_free(&k);
  util_buf_free(&notes);
  weft_auto_free(a);
  return st;
}

weft_status auto_prepare(weft_ctx *c, const char *path, const char *const *ov, int n_ov, char *family, size_t flen,
                         char sizes[][64], int max_sizes, int *n_sizes) {
  char *err = api_ctx_err(c), *text;
  size_t n;
  *n_sizes = 0;
  if (bridge_overrides_check(path, ov, n_ov, err, API_ERRLEN) != 0) return WEFT_ERR_INVALID;
  int read_rc = util_read_file(path, &text, &n, err, API_ERRLEN);
  if (read_rc != 0) return api_read_status(read_rc);
  bridge *b = api_bridge(c);
  lua_State *L = bridge_lua(b);
  int top = lua_gettop(L);
  weft_status st = bridge_check_env(b, err, API_ERRLEN) ? WEFT_ERR_INVALID : WEFT_OK;
  call_in in = {.fn = "prepare", .chunk = path, .text = text, .ov = ov, .n_ov = n_ov};
  if (!st && !(st = call_auto(b, &in, err, API_ERRLEN))) {
    int t = lua_gettop(L), bad = 0, ns = 0;
    char *fam = str_field(L, t, "family");
    char **v = list_field(L, t, "sizes", &ns, &bad);
    snprintf(family, flen, "%s", fam ? fam : "?");
    for (int i = 0; i < ns && i < max_sizes; i++) snprintf(sizes[(*n_sizes)++], 64, "%s", v[i]);
    if (bad || !fam || ns < 1 || ns > max_sizes) {
      util_set_err(err, API_ERRLEN, "%s: family %s declares no sizes (F.sizes) that --auto can choose for", path, family);
      st = WEFT_ERR_CONFIG;
    }
    free(fam);
    free_list(v, ns);
  }
  lua_settop(L, top);
  free(text);
  return st;
}

weft_status weft_auto_choose_string(weft_ctx *c, const char *chunk, const char *text, const char *const *ov, int n_ov,
                                    const char *shape, int ranks, int n_cand, const char *db_path, weft_auto **out) {
  return auto_choose_with_device(c, chunk, text, ov, n_ov, shape, ranks, n_cand, db_path, NULL, out);
}

weft_status weft_auto_choose(weft_ctx *c, const char *path, const char *const *ov, int n_ov, const char *shape,
                             int ranks, int n_cand, const char *db_path, weft_auto **out) {
  if (!c) return WEFT_ERR_INVALID;
  if (!path || !out) return api_refuse(api_ctx_err(c), "weft_auto_choose: %s is NULL", !path ? "path" : "out");
  *out = NULL;
  char *text, *err = api_ctx_err(c);
  size_t n;
  int read_rc = util_read_file(path, &text, &n, err, API_ERRLEN);
  if (read_rc != 0) return api_read_status(read_rc);
  const char *nul = memchr(text, 0, n);
  if (nul) {
    util_set_err(err, API_ERRLEN, "%s: holds a NUL byte at offset %zu: a config must be Lua source text", path,
                 (size_t)(nul - text));
    free(text);
    return WEFT_ERR_CONFIG;
  }
  weft_status st = weft_auto_choose_string(c, path, text, ov, n_ov, shape, ranks, n_cand, db_path, out);
  free(text);
  return st;
}

/* ---- reading a choice -------------------------------------------------------------------- */

const char *weft_auto_source(const weft_auto *a) { return a ? a->source : NULL; }
const char *weft_auto_detail(const weft_auto *a) { return a ? a->detail : NULL; }
double weft_auto_time_us(const weft_auto *a) { return a && a->time_us > 0 ? a->time_us : -1; }
int weft_auto_count(const weft_auto *a) { return a ? a->n : 0; }
const char *weft_auto_config(const weft_auto *a, int i) { return a && i >= 0 && i < a->n ? a->ch[i].text : NULL; }
const char *weft_auto_name(const weft_auto *a, int i) { return a && i >= 0 && i < a->n ? a->ch[i].name : NULL; }
const char *auto_family(const weft_auto *a) { return a ? a->family : NULL; }
const char *auto_dtype(const weft_auto *a) { return a ? a->dtype : NULL; }
const char *auto_shape(const weft_auto *a) { return a ? a->shape : NULL; }
const char *const *auto_sets(const weft_auto *a, int i, int *n) {
  *n = a && i >= 0 && i < a->n ? a->ch[i].n_sets : 0;
  return a && i >= 0 && i < a->n ? (const char *const *)a->ch[i].sets : NULL;
}

weft_status weft_auto_compile(weft_ctx *c, const weft_auto *a, int i, weft_kernel **out) {
  if (!c) return WEFT_ERR_INVALID;
  if (!a || !out) return api_refuse(api_ctx_err(c), "weft_auto_compile: %s is NULL", !a ? "the choice" : "out");
  *out = NULL;
  if (i < 0 || i >= a->n)
    return api_refuse(api_ctx_err(c), "weft_auto_compile: candidate %d: the choice has %d (0..%d)", i, a->n, a->n - 1);
  int n = a->n_ov + a->ch[i].n_sets;
  const char **all = calloc((size_t)n + 1, sizeof *all);
  if (!all) return WEFT_ERR_NOMEM;
  for (int j = 0; j < a->n_ov; j++) all[j] = a->ov[j];
  for (int j = 0; j < a->ch[i].n_sets; j++) all[a->n_ov + j] = a->ch[i].sets[j];
  weft_status st = weft_compile_string(c, a->chunk, a->text, all, n, out);
  free(all);
  return st;
}

static int by_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

weft_status weft_auto_record(weft_ctx *c, const weft_auto *a, int i, double time_us, const char *db_path) {
  if (!c) return WEFT_ERR_INVALID;
  if (!a) return api_refuse(api_ctx_err(c), "weft_auto_record: the choice is NULL");
  char *err = api_ctx_err(c), gpu[256], nv[32], e[2048];
  if (i < 0 || i >= a->n || !isfinite(time_us) || time_us <= 0) {   /* said: the context's last message was another's */
    if (i < 0 || i >= a->n)
      util_set_err(err, API_ERRLEN, "weft_auto_record: candidate %d: the choice has %d (0..%d)", i, a->n, a->n - 1);
    else
      util_set_err(err, API_ERRLEN, "weft_auto_record: time_us = %g: a positive number of microseconds", time_us);
    return WEFT_ERR_INVALID;
  }
  int sm = 0, driver = 0;
  weft_status st = api_device_info(c, gpu, sizeof gpu, &sm, &driver);
  if (st) return st;
  jit_nvrtc_version(nv, sizeof nv);
  /* the sets and the key fields, sorted, one per line: the same choice always makes the same row
   * (tunedb's key), and choices that differ only in a key field (op = sum / max at one shape,
   * which the tune key does not tell apart) make different rows */
  const auto_choice *ch = &a->ch[i];
  int n = ch->n_sets + ch->n_keys;
  char **sorted = calloc((size_t)n + 1, sizeof *sorted);
  if (!sorted) return WEFT_ERR_NOMEM;
  if (ch->n_sets) memcpy(sorted, ch->sets, (size_t)ch->n_sets * sizeof *sorted);
  if (ch->n_keys) memcpy(sorted + ch->n_sets, ch->keys, (size_t)ch->n_keys * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, by_str);
  util_buf cfg = {0};
  util_buf_printf(&cfg, "%s", "");
  for (int j = 0; j < n; j++) util_buf_printf(&cfg, "%s%s", j ? "\n" : "", sorted[j]);
  free(sorted);
  if (cfg.oom) { util_buf_free(&cfg); return WEFT_ERR_NOMEM; }
  tune_key key = {gpu, sm, driver, nv, a->ranks, a->family, a->dtype, a->shape};
  tune_row row = {.config = cfg.p, .base = ch->text, .kernel = ch->name, .time_us = time_us, .metric = NAN,
                  .metric_name = "", .sweep = "auto"};
  tunedb *db = NULL;
  st = WEFT_OK;
  if (tunedb_open(&db, db_path, e, sizeof e) || tunedb_put(db, &key, &row, 1, e, sizeof e)) {
    util_set_err(err, API_ERRLEN, "weft_auto_record: %s", e);
    st = WEFT_ERR_IO;
  }
  tunedb_close(db);
  util_buf_free(&cfg);
  return st;
}

weft_status weft_compile_auto(weft_ctx *c, const char *path, const char *const *ov, int n_ov, const char *shape,
                              int ranks, weft_kernel **out) {
  if (!c) return WEFT_ERR_INVALID;
  if (!out) return api_refuse(api_ctx_err(c), "weft_compile_auto: out is NULL");
  *out = NULL;
  weft_auto *a = NULL;
  weft_status st = weft_auto_choose(c, path, ov, n_ov, shape, ranks, 0, NULL, &a);
  if (st) return st;
  st = weft_auto_compile(c, a, 0, out);
  if (!st)
    util_set_err(api_ctx_err(c), API_ERRLEN, "%s %s %s: %s %s: %s", a->family, a->dtype, a->shape, a->source,
                 a->ch[0].name, a->detail);
  weft_auto_free(a);
  return st;
}
