/* world.h: what symm.c and comm.c need from a world beyond weft.h. */
#ifndef WEFT_WORLD_INTERNAL_H
#define WEFT_WORLD_INTERNAL_H
#include <mpi.h>
#include <stddef.h>

#include "weft.h"

MPI_Comm world_comm(const weft_world *w);
MPI_Comm world_node(const weft_world *w);

/* Collective: did every rank succeed?  ok is this rank's verdict, msg its message when not.
 * Returns 1 on every rank if all were ok; otherwise 0 on every rank, and out (len bytes)
 * holds the same text everywhere: the lowest failing rank's message, prefixed with its rank.
 * This is how a multi-step collective setup fails together instead of leaving a peer
 * waiting in the next step. */
/* Collective over c: the lowest rank (of c) with failed != 0, or -1 if none.  When some rank
 * failed, msg (len bytes) then holds that rank's message on every rank. */
int world_first_failure(MPI_Comm c, int failed, char *msg, size_t len);

int world_all_ok(const weft_world *w, int ok, const char *msg, char *out, size_t len);

#endif
