/* manifest.h: building and freeing weft_manifest (see weft.h), filled from the generator. */
#ifndef WEFT_MANIFEST_H
#define WEFT_MANIFEST_H
#include "bridge.h"
#include "weft.h"

weft_manifest *manifest_new(void);
/* Frees m with its parts; unlike weft_manifest_free, also a part on its own (one being built). */
void manifest_free(weft_manifest *m);
/* m's custom operator's host reference is key in r's bridge (bridge.h): m holds r until freed. */
void manifest_set_ref(weft_manifest *m, bridge_refs *r, long key);
/* m's key (0: it has none) and its holder in *r. */
long manifest_ref(const weft_manifest *m, bridge_refs **r);
/* A copy of s owned by m (NULL for NULL); NULL on allocation failure. */
const char *manifest_str(weft_manifest *m, const char *s);
void *manifest_alloc(weft_manifest *m, size_t size);  /* zeroed, owned by m */
/* Hands part (a manifest of its own) to head, the first kernel of its config, as the next kernel
 * launched after those head has; sets part/n_parts on all of them.  0, or -1 out of memory. */
int manifest_add_part(weft_manifest *head, weft_manifest *part);
/* hash = sha-256 over source and options */
void manifest_seal(weft_manifest *m);
/* index of the argument named name, or -1 */
int manifest_arg_index(const weft_manifest *m, const char *name);

/* What a kernel may take, so that launches can keep the parameters on the stack. */
#define MANIFEST_MAX_TMAPS 8
#define MANIFEST_MAX_PARAMS 64   /* args + tensor maps + a workspace + a communicator's parameter */
#define MANIFEST_MAX_WORKSPACE_FLAGS 65536
#define MANIFEST_MAX_WORKSPACE_PER_CTA (1L << 22)   /* 4 MiB: a 256 x 256 f32 tile is 256 KiB */

/* A tensor map dim (see weft_tmap): "k", "m/ranks", "ranks", "halves". */
typedef enum manifest_dim { DIM_BAD = -1, DIM_ARG, DIM_ARG_PER_RANK, DIM_RANKS, DIM_HALVES } manifest_dim;
/* Its kind, and in *arg the integer argument it names (-1 for ranks and halves); DIM_BAD
 * when it names no integer argument. */
manifest_dim manifest_tmap_dim(const weft_manifest *m, const char *dim, int *arg);
/* bytes of an element of dtype f32, f16 or bf16; 0 for any other (or none) */
int manifest_dtype_bytes(const char *dt);
/* the value of an integer argument (i32 or i64) as the launch's args[] slot p holds it */
long manifest_arg_long(const weft_arg *a, const void *p);

/* What the runtime relies on beyond the fields being there: limits, comm.elems/divide and
 * tensor maps name integer arguments, tensor maps are ones TMA can encode, "comm.*" sources
 * only where there is a comm section.  0, or -1 with a message naming the kernel. */
int manifest_check(const weft_manifest *m, char *err, size_t errlen);

#endif
