/* bridge.h: the embedded Lua generator.  Every call into Lua goes through lua_pcall, so a Lua
 * error never longjmps across the C API; it comes back as a status and a message. */
#ifndef WEFT_BRIDGE_H
#define WEFT_BRIDGE_H
#include "weft.h"

typedef struct bridge bridge;

/* source_dir: read gen/ and templates/ from this tree (development), or NULL for the copies
 * embedded at build time.  with_io: also open io and os (the Lua test runner only). */
int bridge_open(bridge **out, const char *source_dir, int with_io, char *err, size_t errlen);
void bridge_close(bridge *b);

/* An override list as the API takes it: n in 0..BRIDGE_MAX_OVERRIDES and, where n > 0, an array
 * of n strings, none NULL.  0, or -1 with err naming what is wrong (the caller's call in `fn`). */
#define BRIDGE_MAX_OVERRIDES 4096   /* gen/core/config.lua's MAX_OVERRIDES */
int bridge_overrides_check(const char *fn, const char *const *overrides, int n, char *err, size_t errlen);

/* Render a config. WEFT_ERR_CONFIG for bad configs, WEFT_ERR_INTERNAL for generator bugs,
 * WEFT_ERR_INVALID for a bad override list (bridge_overrides_check). */
weft_status bridge_generate(bridge *b, const char *chunkname, const char *text,
                            const char *const *overrides, int n_overrides, weft_manifest **out,
                            char *err, size_t errlen);

/* A manifest from a Lua chunk that returns a manifest table (what gen.core.weft.generate returns:
 * tests use it to hand-write manifests), converted and checked as bridge_generate does.  The
 * chunk runs unsandboxed: trusted text only. */
weft_status bridge_manifest_eval(bridge *b, const char *chunkname, const char *text, weft_manifest **out,
                                 char *err, size_t errlen);

/* A custom operator's host reference (op.ref, a Lua function) stays in the generator's Lua state
 * (gen/core/weft.lua's M.refs) under a key its manifest carries: two configs that differ only in
 * op.ref make one kernel name, so the key, not the name, says whose it is.  The keys of one bridge
 * are held by a bridge_refs, shared by the bridge and the manifests that hold a key, and freed
 * by the last of them.  Freeing a manifest only queues its key (from any thread: Python frees
 * manifests without the context's lock); the bridge drops the queued ones at its next call. */
typedef struct bridge_refs bridge_refs;
bridge_refs *bridge_refs_of(bridge *b);
/* A manifest now holds key (bridge_convert): one more user of r. */
void bridge_refs_hold(bridge_refs *r);
/* A manifest that held key is freed. */
void bridge_refs_release(bridge_refs *r, long key);

/* Fold x[0..n) in order with the Lua reference function (op.ref) of m's custom operator:
 * acc = x[0]; acc = ref(acc, x[i]).  b must be the bridge that generated m (it holds the ref).
 * -1 with err if there is none, m is another bridge's, or the ref fails. */
int bridge_fold(bridge *b, const weft_manifest *m, const double *x, size_t n, double *out, char *err, size_t errlen);

/* Run a Lua script with arg = {argv...} (tests). Returns its exit status: 0 ok, 1 error. */
int bridge_run_script(bridge *b, const char *path, int argc, char **argv, char *err, size_t errlen);

/* -1 with the message when the environment makes generating impossible (WEFT_SOURCE_DIR that is
 * no source tree, a sandbox cap that is no number): the user's to fix, named as such. */
int bridge_check_env(bridge *b, char *err, size_t errlen);
/* The message and status for a lua_pcall into the generator that failed with status: out of
 * memory is reported as such, anything else as weft's bug (what: "weft's sweep expander"). */
weft_status bridge_failure(bridge *b, int status, const char *what, const char *msg, char *err, size_t errlen);

/* Lifts the config sandbox's memory cap after a call into Lua that may have left it on. */
void bridge_sandbox_reset(bridge *b);

/* The Lua state (for modules that convert generator output, e.g. sweep.c). */
struct lua_State *bridge_lua(bridge *b);

/* Read a file of the generator's tree (embedded or source_dir): "templates/weft/types.cuh". */
int bridge_read(bridge *b, const char *path, const char **data, size_t *size);

/* bridge_manifest.c: the manifest table at the top of L's stack (with its parts) as a
 * weft_manifest; WEFT_ERR_INTERNAL and why when the generator returned something the runtime
 * cannot launch. */
weft_status bridge_convert(struct lua_State *L, const char *chunkname, weft_manifest **out, char *err, size_t errlen);

#endif
