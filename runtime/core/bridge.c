/* bridge.c: the Lua state behind the generator (see bridge.h). */
#include "bridge.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>

#include "manifest.h"
#include "util.h"

struct weft_embedded { const char *path; const char *data; size_t size; };
extern const struct weft_embedded weft_embedded_files[];

/* The sandbox's caps (gen/core/config.lua enforces them; README's environment table). */
#define DEFAULT_MEMORY_MB 256

struct bridge {
  lua_State *L;
  char *source_dir;
  char *bad_env;          /* why the environment makes generation impossible, or NULL */
  size_t used, limit;     /* bytes the Lua state holds; the cap while a sandbox runs (0: none) */
  int cap_hit;            /* an allocation was refused by the cap since the sandbox was entered */
  int sandboxes;          /* sandboxed calls in progress (nested: a sweep's where inside a load) */
  long memory_mb, seconds;
  double fold_left, fold_deadline_ms;   /* bridge_fold's budget for op.ref */
  bridge_refs *refs;      /* the op.ref keys its manifests hold (bridge.h) */
};

struct bridge_refs {
  pthread_mutex_t mu;
  bridge *b;              /* NULL once the bridge is closed */
  int users;              /* the open bridge, and each manifest holding a key */
  long *dropped;          /* keys released since the bridge last dropped them from M.refs */
  int n, cap;
};

/* One user less; the last frees r.  Called with r->mu held; unlocks it. */
static void refs_unuse(bridge_refs *r) {
  int last = --r->users == 0;
  pthread_mutex_unlock(&r->mu);
  if (last) {
    pthread_mutex_destroy(&r->mu);
    free(r->dropped);
    free(r);
  }
}

void bridge_refs_hold(bridge_refs *r) {
  pthread_mutex_lock(&r->mu);
  r->users++;
  pthread_mutex_unlock(&r->mu);
}

void bridge_refs_release(bridge_refs *r, long key) {
  pthread_mutex_lock(&r->mu);
  if (r->b && key > 0) {
    if (r->n == r->cap) {
      int cap = r->cap ? 2 * r->cap : 16;
      long *d = realloc(r->dropped, (size_t)cap * sizeof *d);
      if (d) r->dropped = d, r->cap = cap;   /* (out of memory: the one function stays, nothing breaks) */
    }
    if (r->n < r->cap) r->dropped[r->n++] = key;
  }
  refs_unuse(r);
}

/* Pushes gen.core.weft's `field` if the module is loaded (nil otherwise, or under it); its type.
 * The caller restores the stack (lua_settop). */
static int weft_module_field(lua_State *L, const char *field) {
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "gen.core.weft") != LUA_TTABLE) return LUA_TNIL;
  return lua_getfield(L, -1, field);
}

/* M.refs[key] = nil for each key in [from, to] and each released one; the module loaded. */
static void refs_drop(bridge *b, long from, long to) {
  lua_State *L = b->L;
  pthread_mutex_lock(&b->refs->mu);
  long *keys = b->refs->dropped;
  int n = b->refs->n;
  b->refs->dropped = NULL;
  b->refs->n = b->refs->cap = 0;
  pthread_mutex_unlock(&b->refs->mu);
  int top = lua_gettop(L);
  if (weft_module_field(L, "refs") == LUA_TTABLE) {
    for (int i = 0; i < n; i++) { lua_pushnil(L); lua_rawseti(L, -2, keys[i]); }
    for (long k = from; k > 0 && k <= to; k++) { lua_pushnil(L); lua_rawseti(L, -2, k); }
  }
  lua_settop(L, top);
  free(keys);
}

/* The last key the generator gave (M.last_ref; 0 before the module is loaded). */
static long refs_last(lua_State *L) {
  int top = lua_gettop(L);
  long last = 0;
  if (weft_module_field(L, "last_ref") == LUA_TNUMBER) last = (long)lua_tointeger(L, -1);
  lua_settop(L, top);
  return last;
}

bridge_refs *bridge_refs_of(bridge *b) { return b->refs; }

/* ---- the allocator: the config sandbox's memory cap ------------------------------------ */

/* Counts every byte the Lua state holds, and refuses growth past the cap while a config runs:
 * Lua then raises "not enough memory" inside the config, which config.lua reports with the
 * cap.  The generator's own allocations outside a sandbox are never refused. */
static void *bridge_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  struct bridge *b = ud;
  size_t old = ptr ? osize : 0;   /* with ptr NULL, osize is a type tag, not a size */
  if (nsize == 0) {
    free(ptr);
    b->used -= old;
    return NULL;
  }
  if (b->limit && nsize > old && b->used - old + nsize > b->limit) {
    b->cap_hit = 1;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (!p) return NULL;
  b->used = b->used - old + nsize;
  return p;
}

/* ---- the generator's files: embedded, or a source tree ---------------------------------- */

/* Pushes the file's text, or returns 0 with nothing pushed. */
static int push_file(lua_State *L, bridge *b, const char *path) {
  if (b->source_dir) {
    char full[4096], e[512];
    snprintf(full, sizeof full, "%s/%s", b->source_dir, path);
    char *text; size_t n;
    if (util_read_file(full, &text, &n, e, sizeof e) != 0) return 0;
    lua_pushlstring(L, text, n);
    free(text);
    return 1;
  }
  for (const struct weft_embedded *f = weft_embedded_files; f->path; f++)
    if (strcmp(f->path, path) == 0) { lua_pushlstring(L, f->data, f->size); return 1; }
  return 0;
}

int bridge_read(bridge *b, const char *path, const char **data, size_t *size) {
  lua_State *L = b->L;
  if (!push_file(L, b, path)) return -1;
  /* keep it alive in the registry under its path */
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, path);
  *data = lua_tolstring(L, -1, size);
  lua_pop(L, 1);
  return 0;
}

static int l_read(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  const char *path = luaL_checkstring(L, 1);
  if (push_file(L, b, path)) return 1;
  lua_pushnil(L);
  lua_pushfstring(L, "%s: not found in %s", path, b->source_dir ? b->source_dir : "the embedded generator files");
  return 2;
}

/* weft_families(): the names of the family modules, gen/families/<name>.lua, sorted -- so a new
 * family is a new file, with no list to edit. */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int l_families(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  enum { MAX_FAMILIES = 256 };
  char *names[MAX_FAMILIES];
  int n = 0;
  const char *pre = "gen/families/";
  if (b->source_dir) {
    char dir[4096];
    int w = snprintf(dir, sizeof dir, "%s/%s", b->source_dir, pre);
    DIR *d = w > 0 && (size_t)w < sizeof dir ? opendir(dir) : NULL;
    if (!d) return luaL_error(L, "WEFT_SOURCE_DIR: cannot read the family modules in %s", dir);
    for (struct dirent *e; (e = readdir(d)) && n < MAX_FAMILIES;) {
      size_t len = strlen(e->d_name);
      if (len > 4 && !strcmp(e->d_name + len - 4, ".lua") && (names[n] = strndup(e->d_name, len - 4))) n++;
    }
    closedir(d);
  } else {
    for (const struct weft_embedded *f = weft_embedded_files; f->path && n < MAX_FAMILIES; f++) {
      size_t len = strlen(f->path), pl = strlen(pre);
      if (len > pl + 4 && !strncmp(f->path, pre, pl) && !strchr(f->path + pl, '/') && !strcmp(f->path + len - 4, ".lua") &&
          (names[n] = strndup(f->path + pl, len - pl - 4)))
        n++;
    }
  }
  qsort(names, (size_t)n, sizeof *names, by_name);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
    free(names[i]);
  }
  return 1;
}

/* package.searchers entry: "gen.a.b" -> gen/a/b.lua */
static int l_searcher(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  const char *name = luaL_checkstring(L, 1);
  if (strncmp(name, "gen.", 4) != 0) {
    lua_pushfstring(L, "\n\tweft loads only gen.* modules, not '%s'", name);
    return 1;
  }
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  for (const char *p = name; *p; p++) luaL_addchar(&buf, *p == '.' ? '/' : *p);
  luaL_addstring(&buf, ".lua");
  luaL_pushresult(&buf);
  const char *path = lua_tostring(L, -1);
  if (!push_file(L, b, path)) {
    lua_pushfstring(L, "\n\tno file '%s'", path);
    return 1;
  }
  size_t n;
  const char *text = lua_tolstring(L, -1, &n);
  char chunk[512];
  snprintf(chunk, sizeof chunk, "@%s", path);
  if (luaL_loadbufferx(L, text, n, chunk, "t") != LUA_OK) return lua_error(L);
  lua_pushstring(L, path);
  return 2;
}

/* ---- the sandbox's caps, for gen/core/config.lua ----------------------------------------- */

/* weft_clock(): seconds on a monotonic clock, for the wall-clock cap */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* weft_sandbox_caps() -> memory_mb, seconds */
static int l_sandbox_caps(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, b->memory_mb);
  lua_pushinteger(L, b->seconds);
  return 2;
}

/* weft_sandbox_enter() -> token: from now on the state may grow by at most the cap (nested
 * sandboxes keep the tighter one).  weft_sandbox_leave(token) -> whether the cap refused an
 * allocation meanwhile.  The token is the previous limit and cap_hit. */
static int l_sandbox_enter(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  size_t cap = (size_t)b->memory_mb << 20, limit = b->used > SIZE_MAX - cap ? SIZE_MAX : b->used + cap;
  lua_pushinteger(L, (lua_Integer)b->limit);
  lua_pushboolean(L, b->cap_hit);
  if (!b->limit || limit < b->limit) b->limit = limit;
  b->cap_hit = 0;
  b->sandboxes++;
  return 2;
}

static int l_sandbox_leave(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  int hit = b->cap_hit;
  b->limit = (size_t)luaL_checkinteger(L, 1);
  b->cap_hit = lua_toboolean(L, 2) || hit;
  if (b->sandboxes > 0) b->sandboxes--;
  lua_pushboolean(L, hit);
  return 1;
}

/* weft_sandbox_active(): whether a config's code may be running (the string library's guards
 * apply only then: the generator's own template work is trusted and may be large) */
static int l_sandbox_active(lua_State *L) {
  bridge *b = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushboolean(L, b->sandboxes > 0);
  return 1;
}

/* After every call into the generator: a sandbox that an error skipped past must not leave its
 * cap on the generator. */
void bridge_sandbox_reset(bridge *b) {
  b->limit = 0;
  b->cap_hit = 0;
  b->sandboxes = 0;
}

static int l_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
  return 1;
}

int bridge_open(bridge **out, const char *source_dir, int with_io, char *err, size_t errlen) {
  bridge *b = calloc(1, sizeof *b);
  if (!b) { snprintf(err, errlen, "out of memory"); return -1; }
  if (source_dir && *source_dir && !(b->source_dir = util_strdup(source_dir))) {
    free(b);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* The environment's mistakes are the user's: they are kept and reported by every call that
   * generates, naming the variable, instead of failing later as "a bug in weft". */
  char why_env[512];
  long max_mb;
  if (util_env_long("WEFT_CONFIG_MEMORY_MB", 1, 1L << 20, DEFAULT_MEMORY_MB, "megabytes",
                    "the config sandbox's memory cap", &b->memory_mb, why_env, sizeof why_env) ||
      util_config_seconds(&b->seconds, why_env, sizeof why_env) ||
      util_config_max_mb(&max_mb, why_env, sizeof why_env)) {   /* (the generator's own files are read so too) */
    if (!(b->bad_env = util_strdup(why_env))) {
      free(b->source_dir); free(b); snprintf(err, errlen, "out of memory"); return -1;
    }
  } else if (b->source_dir) {
    char probe[4096];
    struct stat st;
    int w = snprintf(probe, sizeof probe, "%s/gen/core/weft.lua", b->source_dir);
    const char *why = w < 0 || (size_t)w >= sizeof probe ? "is too long a path"
                      : stat(probe, &st) != 0 ? (errno == ENOENT || errno == ENOTDIR ? "does not exist" : strerror(errno))
                      : !S_ISREG(st.st_mode) ? "is not a file" : NULL;
    /* named as the user gave it: the variable, or the context's option (weft_ctx_options, Python's
     * Context(source_dir=...)) */
    const char *ev = getenv("WEFT_SOURCE_DIR");
    int from_env = ev && !strcmp(ev, b->source_dir);
    if (why)
      b->bad_env = util_strprintf("%s = \"%s\": not a weft source tree (%s/gen/core/weft.lua %s): point it at a "
                                  "checkout of weft, or %s to use the generator built in",
                                  from_env ? "WEFT_SOURCE_DIR" : "source_dir", b->source_dir, b->source_dir, why,
                                  from_env ? "unset it" : "leave it out");
    if (why && !b->bad_env) { free(b->source_dir); free(b); snprintf(err, errlen, "out of memory"); return -1; }
  }
  if (!(b->refs = calloc(1, sizeof *b->refs)) || pthread_mutex_init(&b->refs->mu, NULL) != 0) {
    free(b->refs); free(b->source_dir); free(b->bad_env); free(b);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  b->refs->b = b;
  b->refs->users = 1;
  lua_State *L = b->L = lua_newstate(bridge_alloc, b);
  if (!L) {
    pthread_mutex_destroy(&b->refs->mu);
    free(b->refs); free(b->source_dir); free(b->bad_env); free(b);
    snprintf(err, errlen, "cannot create a Lua state");
    return -1;
  }
  *(bridge **)lua_getextraspace(L) = b;   /* for hooks, which get no upvalue */
  static const luaL_Reg libs[] = {
    {LUA_GNAME, luaopen_base}, {LUA_LOADLIBNAME, luaopen_package}, {LUA_COLIBNAME, luaopen_coroutine},
    {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
    {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_DBLIBNAME, luaopen_debug}, {NULL, NULL}};
  for (const luaL_Reg *l = libs; l->func; l++) { luaL_requiref(L, l->name, l->func, 1); lua_pop(L, 1); }
  if (with_io) {
    luaL_requiref(L, LUA_IOLIBNAME, luaopen_io, 1); lua_pop(L, 1);
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 1); lua_pop(L, 1);
  } else {
    /* the generator itself touches no files: all I/O is the C side's */
    lua_pushnil(L); lua_setglobal(L, "dofile");
    lua_pushnil(L); lua_setglobal(L, "loadfile");
  }
  /* package.searchers = { preload, weft's } ; package.path/cpath unused */
  lua_getglobal(L, "package");
  lua_newtable(L);
  lua_getfield(L, -2, "searchers");
  lua_rawgeti(L, -1, 1);          /* the preload searcher */
  lua_rawseti(L, -3, 1);
  lua_pop(L, 1);
  lua_pushlightuserdata(L, b);
  lua_pushcclosure(L, l_searcher, 1);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "searchers");
  lua_pop(L, 1);
  /* weft_read(path): the generator's access to templates/ */
  lua_pushlightuserdata(L, b);
  lua_pushcclosure(L, l_read, 1);
  lua_setglobal(L, "weft_read");
  lua_pushlightuserdata(L, b);
  lua_pushcclosure(L, l_families, 1);
  lua_setglobal(L, "weft_families");
  static const luaL_Reg sandbox_fns[] = {{"weft_sandbox_caps", l_sandbox_caps}, {"weft_sandbox_enter", l_sandbox_enter},
                                         {"weft_sandbox_leave", l_sandbox_leave}, {"weft_sandbox_active", l_sandbox_active},
                                         {NULL, NULL}};
  for (const luaL_Reg *f = sandbox_fns; f->name; f++) {
    lua_pushlightuserdata(L, b);
    lua_pushcclosure(L, f->func, 1);
    lua_setglobal(L, f->name);
  }
  lua_pushcfunction(L, l_clock);
  lua_setglobal(L, "weft_clock");
  /* string.dump turns a function back into bytecode, which no config needs and the sandbox must
   * not hand out: every string is a way to the string library (("").dump), so it goes from the
   * library itself */
  lua_getglobal(L, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  *out = b;
  return 0;
}

lua_State *bridge_lua(bridge *b) { return b->L; }

void bridge_close(bridge *b) {
  if (!b) return;
  pthread_mutex_lock(&b->refs->mu);   /* manifests may outlive it: their keys go with the state */
  b->refs->b = NULL;
  refs_unuse(b->refs);
  lua_close(b->L);
  free(b->source_dir);
  free(b->bad_env);
  free(b);
}

weft_status bridge_manifest_eval(bridge *b, const char *chunkname, const char *text, weft_manifest **out,
                                 char *err, size_t errlen) {
  lua_State *L = b->L;
  int top = lua_gettop(L);
  weft_status st = WEFT_ERR_INTERNAL;
  *out = NULL;
  lua_pushcfunction(L, l_traceback);
  int h = lua_gettop(L);
  if (luaL_loadbufferx(L, text, strlen(text), chunkname, "t") != LUA_OK || lua_pcall(L, 0, 1, h) != LUA_OK)
    snprintf(err, errlen, "%s", lua_tostring(L, -1));
  else if (!lua_istable(L, -1))
    snprintf(err, errlen, "%s: returned a %s, not a manifest table", chunkname, luaL_typename(L, -1));
  else
    st = bridge_convert(L, chunkname, out, err, errlen);
  lua_settop(L, top);
  return st;
}

int bridge_check_env(bridge *b, char *err, size_t errlen) {
  if (!b->bad_env) return 0;
  util_set_msg(err, errlen, "", b->bad_env);
  return -1;
}

weft_status bridge_failure(bridge *b, int status, const char *what, const char *msg, char *err, size_t errlen) {
  bridge_sandbox_reset(b);
  if (status == LUA_ERRMEM) {
    util_set_err(err, errlen, "out of memory in %s (the machine's memory, not the config sandbox's cap)", what);
    return WEFT_ERR_NOMEM;
  }
  char prefix[512];
  if (b->source_dir) {   /* a tree the user pointed weft at: its gen/ files, not weft's own */
    snprintf(prefix, sizeof prefix, "%s failed (the generator read from %.200s, WEFT_SOURCE_DIR or the context's "
             "source_dir: that tree's gen/ files, not those built into weft):\n", what, b->source_dir);
    util_set_msg(err, errlen, prefix, msg);
    return WEFT_ERR_INVALID;
  }
  snprintf(prefix, sizeof prefix, "%s failed (a bug in weft, please report it):\n", what);
  util_set_msg(err, errlen, prefix, msg);
  return WEFT_ERR_INTERNAL;
}

int bridge_overrides_check(const char *fn, const char *const *ov, int n, char *err, size_t errlen) {
  if (n < 0 || n > BRIDGE_MAX_OVERRIDES) {
    snprintf(err, errlen, "%s: n_overrides = %d: 0..%d (\"key=value\" strings)", fn, n, BRIDGE_MAX_OVERRIDES);
    return -1;
  }
  if (n > 0 && !ov) {
    snprintf(err, errlen, "%s: overrides is NULL with n_overrides = %d", fn, n);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (!ov[i]) {
      snprintf(err, errlen, "%s: overrides[%d] is NULL (n_overrides = %d: each a \"key=value\" string)", fn, i, n);
      return -1;
    }
  return 0;
}

weft_status bridge_generate(bridge *b, const char *chunkname, const char *text,
                            const char *const *overrides, int n_overrides, weft_manifest **out,
                            char *err, size_t errlen) {
  lua_State *L = b->L;
  int top = lua_gettop(L);
  weft_status st = WEFT_OK;
  *out = NULL;
  if (bridge_overrides_check("generate", overrides, n_overrides, err, errlen) != 0) return WEFT_ERR_INVALID;
  if (bridge_check_env(b, err, errlen) != 0) return WEFT_ERR_INVALID;
  lua_pushcfunction(L, l_traceback);
  int h = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "gen.core.weft");
  int rc = lua_pcall(L, 1, 1, h);
  if (rc != LUA_OK) {
    st = bridge_failure(b, rc, "loading weft's generator", lua_tostring(L, -1), err, errlen);
    goto done;
  }
  refs_drop(b, 0, 0);   /* the keys of manifests freed since the last call */
  long before = refs_last(L);
  lua_getfield(L, -1, "generate");
  lua_pushstring(L, text);
  lua_pushstring(L, chunkname);
  lua_createtable(L, n_overrides, 0);
  for (int i = 0; i < n_overrides; i++) { lua_pushstring(L, overrides[i]); lua_rawseti(L, -2, i + 1); }
  lua_getglobal(L, "weft_read");
  rc = lua_pcall(L, 4, 2, h);
  bridge_sandbox_reset(b);
  if (rc != LUA_OK) {
    st = bridge_failure(b, rc, "weft's generator", lua_tostring(L, -1), err, errlen);
    refs_drop(b, before + 1, refs_last(L));
    goto done;
  }
  if (lua_isnil(L, -2)) {
    util_set_msg(err, errlen, "", lua_isstring(L, -1) ? lua_tostring(L, -1) : "invalid config");
    st = WEFT_ERR_CONFIG;
    refs_drop(b, before + 1, refs_last(L));
    goto done;
  }
  lua_pop(L, 1);   /* the manifest on top */
  st = bridge_convert(L, chunkname, out, err, errlen);
  /* a failure leaves no manifest to hold the keys this call gave */
  if (st) refs_drop(b, before + 1, refs_last(L));
done:
  lua_settop(L, top);
  return st;
}

/* A config's functions run outside its sandbox's instruction limit: bound them here too, by
 * instructions and by the wall clock (checked every FOLD_STEP instructions). */
#define FOLD_STEP 1000
static void fold_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  bridge *b = *(bridge **)lua_getextraspace(L);
  b->fold_left -= FOLD_STEP;
  if (b->fold_left <= 0)
    luaL_error(L, "the custom operator's ref function ran too long (past its instruction budget): does it loop forever?");
  if (util_now_ms() > b->fold_deadline_ms)
    luaL_error(L, "the custom operator's ref function ran too long (more than %d s, WEFT_CONFIG_SECONDS): does it loop "
               "forever?", (int)b->seconds);
}

int bridge_fold(bridge *b, const weft_manifest *m, const double *x, size_t n, double *out, char *err, size_t errlen) {
  const char *name = m->name;
  bridge_refs *r;
  long key = manifest_ref(m, &r);
  if (!key) {
    snprintf(err, errlen, "%s: its operator has no host reference (give the custom op ref = function(a, b) ... end)", name);
    return -1;
  }
  if (r != b->refs) {   /* (its Lua state is another context's, which may be in use on another thread) */
    snprintf(err, errlen, "%s: its manifest was generated by another context, which holds its op.ref: generate and "
             "compile the config in the context that folds", name);
    return -1;
  }
  lua_State *L = b->L;
  int top = lua_gettop(L), rc = -1;
  if (bridge_check_env(b, err, errlen) != 0) return -1;
  refs_drop(b, 0, 0);
  lua_getglobal(L, "require");
  lua_pushstring(L, "gen.core.weft");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { util_set_msg(err, errlen, "", lua_tostring(L, -1)); goto done; }
  lua_getfield(L, -1, "refs");
  lua_rawgeti(L, -1, key);
  if (!lua_isfunction(L, -1)) {
    snprintf(err, errlen, "%s: its operator's host reference is gone (a bug in weft: key %ld)", name, key);
    goto done;
  }
  int fn = lua_gettop(L);
  double acc = n ? x[0] : 0;
  b->fold_left = 1000.0 * (double)n + 1e6;   /* instructions: generous for any sane a op b */
  b->fold_deadline_ms = util_now_ms() + 1000.0 * (double)b->seconds;
  /* the config's own function: the sandbox's memory cap and string guards hold here too */
  b->limit = b->used + ((size_t)b->memory_mb << 20);
  b->cap_hit = 0;
  b->sandboxes = 1;
  lua_sethook(L, fold_hook, LUA_MASKCOUNT, FOLD_STEP);
  for (size_t i = 1; i < n; i++) {
    lua_pushvalue(L, fn);
    lua_pushnumber(L, acc);
    lua_pushnumber(L, x[i]);
    int st = lua_pcall(L, 2, 1, 0);
    if (st != LUA_OK) {
      if (b->cap_hit)
        snprintf(err, errlen, "%s: op.ref used more than %ld MB of memory (the config sandbox's cap, "
                 "WEFT_CONFIG_MEMORY_MB)", name, b->memory_mb);
      else
        snprintf(err, errlen, "%s: op.ref failed: %s", name,
                 lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1)
                 : "it raised an error that is not a message (a table or nil given to error())");
      goto unhook;
    }
    /* a number, not a string that reads as one (lua_tonumberx converts "12") */
    int isnum = lua_type(L, -1) == LUA_TNUMBER;
    const char *got = luaL_typename(L, -1);
    acc = isnum ? lua_tonumber(L, -1) : 0;
    lua_pop(L, 1);
    if (!isnum) {
      snprintf(err, errlen, "%s: op.ref returned a %s, not a number", name, got);
      goto unhook;
    }
  }
  *out = acc;
  rc = 0;
unhook:
  lua_sethook(L, NULL, 0, 0);
  bridge_sandbox_reset(b);
done:
  lua_settop(L, top);
  return rc;
}

int bridge_run_script(bridge *b, const char *path, int argc, char **argv, char *err, size_t errlen) {
  lua_State *L = b->L;
  lua_pushcfunction(L, l_traceback);
  int h = lua_gettop(L);
  lua_createtable(L, argc, 0);
  for (int i = 0; i < argc; i++) { lua_pushstring(L, argv[i]); lua_rawseti(L, -2, i + 1); }
  lua_setglobal(L, "arg");
  if (luaL_loadfilex(L, path, "t") != LUA_OK || lua_pcall(L, 0, 0, h) != LUA_OK) {
    snprintf(err, errlen, "%s", lua_tostring(L, -1));
    lua_settop(L, h - 1);
    return 1;
  }
  lua_settop(L, h - 1);
  return 0;
}
