/* mpitest.h: what the tests run under mpirun share: a CHECK that counts and names the rank,
 * and a test that every rank holds the same text (the "same message everywhere" property). */
#ifndef WEFT_MPITEST_H
#define WEFT_MPITEST_H
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"

static int passed, failed, rank_;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (cond) passed++;                                                      \
    else {                                                                   \
      failed++;                                                              \
      fprintf(stderr, "rank %d: FAIL %s:%d: ", rank_, __FILE__, __LINE__);   \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
    }                                                                        \
  } while (0)

/* 1 if every rank holds the same text */
static inline int same_everywhere(const char *s) {
  unsigned char d[32], lo[32], hi[32];
  hash_sha256(s, strlen(s), d);
  MPI_Allreduce(d, lo, 32, MPI_UNSIGNED_CHAR, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(d, hi, 32, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD);
  return !memcmp(lo, hi, 32);
}

#endif
