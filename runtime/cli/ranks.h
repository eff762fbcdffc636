/* ranks.h: the few collective decisions a multi-rank `weft tune` or `weft run` needs, over
 * MPI_COMM_WORLD whenever MPI is running (started by ranks_init under mpirun, or by
 * ranks_ensure), and trivially (one rank) otherwise. */
#ifndef WEFT_RANKS_H
#define WEFT_RANKS_H

int ranks_init(int *argc, char ***argv);   /* returns the number of ranks */
void ranks_finalize(void);
void ranks_ensure(void);                   /* MPI running from here on (a plain process: a world of
                                            * one), finalized at exit; for the multi-rank runners */
int ranks_rank(void);
int ranks_size(void);
/* The job's size: ranks_size() once MPI runs, else what mpirun told this process, else 1. */
int ranks_world_size(void);
double ranks_max(double v);                /* largest v over all ranks */
int ranks_all(int flag);                   /* 1 if flag is non-zero on every rank */
int ranks_any(int flag);                   /* 1 if flag is non-zero on some rank */
int ranks_bcast_int(int v);                /* rank 0's v, on every rank */
int ranks_same(unsigned long long v);      /* 1 if every rank passed the same v */
/* 1 if every rank holds the same bytes (SHA-256 compared); `who` lists the ranks whose bytes
 * differ from rank 0's.  0 on every rank if any rank could not tell. */
int ranks_same_bytes(const void *p, unsigned long bytes, char *who, unsigned long len);
/* A point every rank reaches: rc 0 where this rank can go on, else its exit code and why (its
 * message, already printed).  Returns 0 on every rank if all can go on; else every rank gets
 * the first failing rank's exit code, and the others print "weft CMD: rank R: stopped, because
 * rank F: WHY" -- the same error everywhere, no rank left waiting in a collective. */
int ranks_agree(int rc, const char *why, const char *cmd);
/* ranks_all(ok), and where some rank failed, the lowest such rank's `why` copied to every rank */
int ranks_first_why(int ok, char *why, int len);

#endif
