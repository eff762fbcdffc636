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

/* Render a config. WEFT_ERR_CONFIG for bad configs, WEFT_ERR_INTERNAL for generator bugs. */
weft_status bridge_generate(bridge *b, const char *chunkname, const char *text,
                            const char *const *overrides, int n_overrides, weft_manifest **out,
                            char *err, size_t errlen);

/* A manifest from a Lua chunk that returns a manifest table (what gen.core.weft.generate returns:
 * tests use it to hand-write manifests), converted and checked as bridge_generate does.  The
 * chunk runs unsandboxed: trusted text only. */
weft_status bridge_manifest_eval(bridge *b, const char *chunkname, const char *text, weft_manifest **out,
                                 char *err, size_t errlen);

/* Fold x[0..n) in order with the Lua reference function (op.ref) of the custom operator of
 * kernel `name`: acc = x[0]; acc = ref(acc, x[i]).  -1 with err if there is none or it fails. */
int bridge_fold(bridge *b, const char *name, const double *x, size_t n, double *out, char *err, size_t errlen);

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
