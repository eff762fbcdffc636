/* jit.h: compiling generated CUDA C with NVRTC (sm_90a): PTX, cubin and the compiler log. */
#ifndef WEFT_JIT_H
#define WEFT_JIT_H
#include "cache.h"

/* Compiles source. On success fills out (malloc'd ptx, cubin, log). On failure returns -1 and
 * writes the compiler log into err, after saving the source to a file it names. */
int jit_compile(const char *name, const char *source, const char *const *opts, int nopts,
                  cache_entry *out, char *err, size_t errlen);
/* Keeps source as <folder>/<name>.cu for the user to read, in a folder only we can enter
 * ($TMPDIR/weft-failed-<uid> if it is ours and private, else a fresh mkdtemp one); path gets
 * the file's path, or "" if it could not be kept. */
void jit_save_failed(const char *name, const char *source, char *path, size_t len);
/* "13.0" */
void jit_nvrtc_version(char *buf, size_t len);

#endif
