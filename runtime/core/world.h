/* world.h: the collectives symm.c, comm.c and fdx.c use on a world, whatever carries them: MPI
 * for an MPI world, the caller's all-gather callback for a callback world (weft.h).  No file but
 * world.c makes MPI calls on a world's ranks.
 *
 * Every operation is collective over its scope and returns 0, or -1 on every rank of the world
 * (a callback world: some rank's callback failed; world_transport_error() then says which, the
 * same text on every rank that learned it in this operation).  An MPI world never returns -1
 * (MPI's error handler aborts).  After a failure a callback world stays failed: later operations
 * still call the callback the same number of times on every rank, and fail. */
#ifndef WEFT_WORLD_INTERNAL_H
#define WEFT_WORLD_INTERNAL_H
#include <stddef.h>

#include "weft.h"

typedef enum { WORLD_ALL = 0, WORLD_NODE = 1 } world_scope;   /* every rank, or this node's */
typedef enum { WORLD_MIN = 0, WORLD_MAX = 1 } world_op;

int world_scope_rank(const weft_world *w, world_scope s);
int world_scope_size(const weft_world *w, world_scope s);
const char *world_transport_error(const weft_world *w);
/* Whether the world's transport has failed (a callback world whose allgather failed somewhere,
 * learned in an operation that returned -1): a setup step that then fails reports WEFT_ERR_IO,
 * as weft.h promises, whatever else went wrong on this rank. */
int world_failed(const weft_world *w);

/* recv: world_scope_size * bytes, rank i's bytes at recv + i * bytes (i counted in the scope).
 * bytes must be the same on every rank. */
int world_allgather(weft_world *w, world_scope s, const void *send, void *recv, size_t bytes);
int world_reduce_i64(weft_world *w, world_scope s, long long *v, world_op op);   /* in place */
int world_reduce_u64(weft_world *w, world_scope s, unsigned long long *v, world_op op);
int world_bcast(weft_world *w, world_scope s, void *buf, size_t bytes, int root);   /* root in the scope */
int world_barrier(weft_world *w);

/* Collective over s: the lowest rank (of s) with failed != 0, or -1 if none.  When some rank
 * failed, msg (len bytes) then holds that rank's message on every rank.  -2: the world's
 * transport failed; msg holds why. */
int world_first_failure(weft_world *w, world_scope s, int failed, char *msg, size_t len);

/* Collective: did every rank succeed?  ok is this rank's verdict, msg its message when not.
 * Returns 1 on every rank if all were ok; otherwise 0 on every rank, and out (len bytes)
 * holds the same text everywhere: the lowest failing rank's message, prefixed with its rank
 * (or why the transport failed).  This is how a multi-step collective setup fails together
 * instead of leaving a peer waiting in the next step. */
int world_all_ok(weft_world *w, int ok, const char *msg, char *out, size_t len);

#endif
