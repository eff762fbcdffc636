/* jit.c: NVRTC compilation.  The source is self-contained (gen/ inlines weft headers), so no
 * include paths or header strings are passed; #line directives in it point NVRTC's messages
 * at templates/. */
#include "jit.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void jit_nvrtc_version(char *buf, size_t len) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  snprintf(buf, len, "%d.%d", major, minor);
}

/* Where a failed source is kept for the user to read: $TMPDIR/weft-failed/<name>.cu */
static void save_failed(const char *name, const char *source, char *path, size_t len) {
  const char *tmp = getenv("TMPDIR");
  char dir[512], e[256];
  snprintf(dir, sizeof dir, "%s/weft-failed-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
  path[0] = 0;
  if (util_mkdirs(dir, 0700, e, sizeof e) != 0) return;
  snprintf(path, len, "%s/%s.cu", dir, name);
  if (util_write_atomic(path, source, strlen(source), e, sizeof e) != 0) path[0] = 0;
}

int jit_compile(const char *name, const char *source, const char *const *opts, int nopts,
                  cache_entry *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  nvrtcProgram prog;
  char file[300];
  snprintf(file, sizeof file, "%s.cu", name);
  nvrtcResult r = nvrtcCreateProgram(&prog, source, file, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    snprintf(err, errlen, "nvrtcCreateProgram(%s): %s", name, nvrtcGetErrorString(r));
    return -1;
  }
  r = nvrtcCompileProgram(prog, nopts, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  char *log = malloc(log_size + 1);
  if (!log) { nvrtcDestroyProgram(&prog); snprintf(err, errlen, "out of memory"); return -1; }
  log[0] = 0;
  if (log_size) nvrtcGetProgramLog(prog, log);
  log[log_size] = 0;
  if (r != NVRTC_SUCCESS) {
    char saved[600];
    save_failed(name, source, saved, sizeof saved);
    snprintf(err, errlen, "NVRTC could not compile %s (%s).\n%s%s%s\nCompiler log:\n%s", name,
             nvrtcGetErrorString(r), saved[0] ? "The generated source is saved at " : "",
             saved[0] ? saved : "", saved[0] ? "; line numbers above point into templates/." : "", log);
    free(log);
    nvrtcDestroyProgram(&prog);
    return -1;
  }
  size_t ptx_size = 0, cubin_size = 0;
  nvrtcGetPTXSize(prog, &ptx_size);
  nvrtcGetCUBINSize(prog, &cubin_size);
  out->ptx = malloc(ptx_size ? ptx_size : 1);
  out->cubin = malloc(cubin_size ? cubin_size : 1);
  if (!out->ptx || !out->cubin) {
    free(out->ptx); free(out->cubin); free(log); nvrtcDestroyProgram(&prog);
    memset(out, 0, sizeof *out);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  nvrtcGetPTX(prog, out->ptx);
  nvrtcGetCUBIN(prog, out->cubin);
  out->ptx_size = ptx_size;
  out->cubin_size = cubin_size;
  out->log = log;
  out->log_size = log_size + 1;
  nvrtcDestroyProgram(&prog);
  return 0;
}
