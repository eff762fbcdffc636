/* ranks.h: the few collective decisions a multi-rank `weft tune` needs, over MPI when the
 * process was started by mpirun, and trivially (one rank) otherwise -- weft never starts MPI
 * on its own, so a plain `weft tune` needs no MPI runtime. */
#ifndef WEFT_RANKS_H
#define WEFT_RANKS_H

int ranks_init(int *argc, char ***argv);   /* returns the number of ranks */
void ranks_finalize(void);
int ranks_rank(void);
int ranks_size(void);
double ranks_max(double v);                /* largest v over all ranks */
int ranks_all(int flag);                   /* 1 if flag is non-zero on every rank */
int ranks_any(int flag);                   /* 1 if flag is non-zero on some rank */
int ranks_bcast_int(int v);                /* rank 0's v, on every rank */
int ranks_same(unsigned long long v);      /* 1 if every rank passed the same v */

#endif
