/* app.c: a user's program, as the README's "Using weft from C" builds it.  It generates a
 * kernel from a config file (argv[1]) and from a string, prints each manifest's entry and
 * arguments, and exits 0 only when all of that worked and the header matches the library.
 * No GPU needed.  Linked against libweft.a and libweft.so by tests/install/*.sh, and built by
 * tests/downstream and tests/subproject with CMake. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

static int show(const weft_manifest *m) {
  printf("%s: entry %s, block %u, smem %u, args", m->name, m->entry, m->block[0], m->smem);
  for (int i = 0; i < m->n_args; i++) printf(" %s:%s", m->args[i].name, m->args[i].type);
  printf("\n");
  return m->entry && m->entry[0] && m->n_args > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CONFIG.lua\n", argv[0]);
    return 2;
  }
  if (strcmp(weft_version(), WEFT_VERSION)) {
    fprintf(stderr, "weft.h says %s, the library %s\n", WEFT_VERSION, weft_version());
    return 1;
  }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) {
    fprintf(stderr, "weft_ctx_create failed\n");
    return 1;
  }
  int bad = 0;
  weft_manifest *m = NULL;
  const char *set[] = {"cluster=4"};
  if (weft_generate_file(ctx, argv[1], set, 1, &m)) {
    fprintf(stderr, "%s\n", weft_ctx_error(ctx));
    bad = 1;
  } else {
    bad |= show(m);
    weft_manifest_free(m);
  }
  static const char cfg[] = "return { family = 'row_reduce', dtype = 'f32', op = 'max', threads = 128 }";
  if (weft_generate_string(ctx, "app.lua", cfg, NULL, 0, &m)) {
    fprintf(stderr, "%s\n", weft_ctx_error(ctx));
    bad = 1;
  } else {
    bad |= show(m);
    weft_manifest_free(m);
  }
  weft_ctx_destroy(ctx);
  printf("weft %s: %s\n", weft_version(), bad ? "FAILED" : "ok");
  return bad;
}
