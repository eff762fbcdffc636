/* world.c: a single-rank world through the caller's all-gather (weft_world_create_with), the
 * bootstrap that needs no MPI.  weft_world_create must refuse here: MPI is not initialised (or
 * weft was built without it).  Linked with the README's static line by tests/install/*.sh. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

static int gather(const void *send, void *recv, size_t bytes, void *user) {
  ++*(int *)user;
  memcpy(recv, send, bytes);   /* one rank: recv + 0 * bytes */
  return 0;
}

int main(void) {
  weft_world *w = NULL;
  weft_status st = weft_world_create(NULL, &w);
  if (st != WEFT_ERR_INVALID || w) {
    fprintf(stderr, "weft_world_create without MPI_Init: %s, expected WEFT_ERR_INVALID\n", weft_status_name(st));
    return 1;
  }
  int calls = 0;
  weft_world_bootstrap b = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .allgather = gather, .user = &calls};
  char err[512] = "";
  if ((st = weft_world_create_with(&b, &w, err, sizeof err))) {
    fprintf(stderr, "weft_world_create_with: %s: %s\n", weft_status_name(st), err);
    return 1;
  }
  int ok = weft_world_rank(w) == 0 && weft_world_size(w) == 1 && weft_world_local_size(w) == 1 && calls > 0;
  printf("world: rank %d of %d, %d all-gather calls: %s\n", weft_world_rank(w), weft_world_size(w), calls,
         ok ? "ok" : "FAILED");
  weft_world_destroy(w);
  return ok ? 0 : 1;
}
