/* jit.c: NVRTC compilation.  The source is self-contained (gen/ inlines weft headers), so no
 * include paths or header strings are passed; #line directives in it point NVRTC's messages
 * at templates/. */
#include "jit.h"

#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

void jit_nvrtc_version(char *buf, size_t len) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  snprintf(buf, len, "%d.%d", major, minor);
}

/* A folder of ours for failed sources, opened: $TMPDIR/weft-failed-<uid> when it is a real
 * folder that we own and no one else can enter, else a fresh one from mkdtemp (the name is
 * predictable, so another user may have made it first, or planted links in it).  -1 if none. */
static int failed_dir(char *dir, size_t len) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  int w = snprintf(dir, len, "%s/weft-failed-%ld", tmp, (long)geteuid());
  if (w < 0 || (size_t)w >= len) return -1;
  (void)mkdir(dir, 0700);   /* EEXIST is fine: what is there is checked next */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077))
    return fd;
  if (fd >= 0) close(fd);
  w = snprintf(dir, len, "%s/weft-failed-%ld-XXXXXX", tmp, (long)geteuid());
  if (w < 0 || (size_t)w >= len || !mkdtemp(dir)) return -1;
  return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Keeps a source NVRTC refused for the user to read, as <folder>/<name>.cu: written to a new
 * file (O_EXCL | O_NOFOLLOW, so no planted link redirects it) and renamed over the name, which
 * replaces a link rather than following it.  path is "" when it could not be kept. */
void jit_save_failed(const char *name, const char *source, char *path, size_t len) {
  char dir[4096], tmp[512];
  path[0] = 0;
  if (!name[0] || strchr(name, '/') || name[0] == '.') return;   /* kernel names are [A-Za-z0-9_] */
  int dfd = failed_dir(dir, sizeof dir);
  if (dfd < 0) return;
  /* unique per process and per call: weft tune's compile threads may fail the same kernel */
  static unsigned long serial;
  unsigned long mine = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
  int w = snprintf(tmp, sizeof tmp, ".%s.cu.%ld.%lu.tmp", name, (long)getpid(), mine);
  int fd = w > 0 && (size_t)w < sizeof tmp
               ? openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
  if (fd < 0 && errno == EEXIST && unlinkat(dfd, tmp, 0) == 0)   /* a leftover of a killed run */
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) { close(dfd); return; }
  size_t left = strlen(source);
  const char *p = source;
  int ok = 1;
  while (ok && left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = 0;
    else { p += n; left -= (size_t)n; }
  }
  if (close(fd) != 0) ok = 0;
  char final[300];
  w = snprintf(final, sizeof final, "%s.cu", name);
  if (!ok || w < 0 || (size_t)w >= sizeof final || renameat(dfd, tmp, dfd, final) != 0) {
    (void)unlinkat(dfd, tmp, 0);
    close(dfd);
    return;
  }
  close(dfd);
  w = snprintf(path, len, "%s/%s", dir, final);
  if (w < 0 || (size_t)w >= len) path[0] = 0;
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
    char saved[4400];
    jit_save_failed(name, source, saved, sizeof saved);
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
