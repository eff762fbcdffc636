/* cache.c: the on-disk kernel cache (behaviour documented in cache.h).
 *
 * One entry is one file, <dir>/<64-hex key>.bin; integers are little-endian u64:
 *
 *   offset  size  field
 *        0     8  magic "WEFTKC01" ("WEFTKC" + format version 01)
 *        8    32  the key the entry was built for
 *       40     8  ptx_size    (counts the PTX's terminating NUL)
 *       48     8  cubin_size
 *       56     8  log_size    (counts the log's terminating NUL)
 *       64    32  SHA-256 of bytes [0, 64) followed by the payload
 *       96     -  payload: ptx, cubin, log, back to back
 *
 * The file is exactly 96 + ptx_size + cubin_size + log_size bytes.  A file that is short, long,
 * has another magic, carries another key (copied or renamed), fails the checksum, holds no cubin
 * or one that is not an ELF image, or cannot be read by us (a mode changed by hand) is corrupt:
 * it is rebuilt and replaced.  The checksum covers the header too, so a flipped size is caught
 * even when the size arithmetic happens to still add up.
 */
#include "cache.h"

#include "util.h"

#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC "WEFTKC01"
#define MAGIC_LEN 8
#define OFF_KEY 8
#define OFF_SIZES 40
#define OFF_SUM 64
#define HEADER_LEN 96
#define TMP_ATTEMPTS 16 /* O_EXCL collisions of 64 random bits: more than enough */
/* No kernel's PTX + cubin comes near this; a bigger file (a sparse one, say) is corrupt and
 * rebuilt instead of read into memory. */
#define MAX_ENTRY_BYTES ((off_t)512 << 20)
#define LOCK_NOTICE_MS 1000      /* waiting longer than this for a builder's lock says so */
#define LOCK_DEFAULT_S 60        /* WEFT_CACHE_LOCK_SECONDS unset */

struct cache {
  char *dir; /* <root>/<subdir>, for messages */
  int dirfd; /* that folder, opened after it passed the checks: entries are opened relative to
                it, so replacing the path afterwards cannot redirect us elsewhere */
};

/* Names of the files that belong to one key. */
typedef struct key_names {
  char hex[65];
  char *bin;  /* "<hex>.bin", relative to dirfd */
  char *lock; /* "<hex>.lock" */
  char *path; /* "<dir>/<hex>.bin", for messages */
} key_names;

typedef enum lookup { LOOK_HIT, LOOK_MISS, LOOK_CORRUPT, LOOK_ERROR } lookup;

/* ---- small helpers ------------------------------------------------------------------------ */



/* a with its trailing slashes removed ("/" stays "/"): a trailing slash would make lstat follow
 * a symbolic link, and would double up when the subfolder is appended. */
static char *trim_slashes(const char *a) {
  size_t n = strlen(a);
  while (n > 1 && a[n - 1] == '/') n--;
  return util_strprintf("%.*s", (int)n, a);
}

/* a + "/" + b without doubling the slash when a is "/". */
static char *path_join(const char *a, const char *b) {
  char *t = trim_slashes(a);
  if (!t) return NULL;
  char *s = strcmp(t, "/") == 0 ? util_strprintf("/%s", b) : util_strprintf("%s/%s", t, b);
  free(t);
  return s;
}

static void put_u64le(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64le(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Reads up to n bytes, retrying short reads: returns the count (less than n only at end of
 * file) or -1 with errno. */
static ssize_t read_full(int fd, void *buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = read(fd, (char *)buf + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

/* 64 bits for temporary names.  Uniqueness comes from O_EXCL; randomness only keeps collisions
 * (and retries) rare, so a clock-based fallback is good enough if getrandom is unavailable. */
static uint64_t random_u64(void) {
  uint64_t v;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v) return v;
  static uint64_t counter;
  struct timespec ts = {0, 0};
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) ts.tv_nsec = 0; /* the counter still varies */
  return ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (++counter * 0x9e3779b97f4a7c15u);
}

/* ---- opening the cache folder ------------------------------------------------------------- */

/* The default root (see cache.h), malloc'd; NULL with err. */
static char *default_root(char *err, size_t errlen) {
  return util_weft_cache_path("WEFT_CACHE_DIR", NULL, "no cache folder", err, errlen);
}


/* Refuses a folder that someone else could fill or swap: it must be a real folder (lstat: no
 * symbolic link), owned by us, and not writable by group or others.  Fills *st. */
static int check_folder(const char *full, struct stat *st, char *err, size_t errlen) {
  char sh[UTIL_SHOWN];
  const char *path = util_shown(full, sh, sizeof sh);   /* (as messages show it) */
  if (lstat(full, st) != 0) {
    util_set_err(err, errlen, "cannot inspect cache folder %s: %s", path, strerror(errno));
    return -1;
  }
  if (S_ISLNK(st->st_mode)) {
    util_set_err(err, errlen,
            "cache folder %s is a symbolic link: refusing to use it; set WEFT_CACHE_DIR to a "
            "folder of your own (not a link)", path);
    return -1;
  }
  if (!S_ISDIR(st->st_mode)) {
    util_set_err(err, errlen,
            "cache folder %s exists but is not a folder: refusing to use it; set WEFT_CACHE_DIR "
            "to a folder of your own", path);
    return -1;
  }
  if (st->st_uid != geteuid()) {
    util_set_err(err, errlen,
            "cache folder %s is owned by uid %ld, not by you (uid %ld): refusing to use it; set "
            "WEFT_CACHE_DIR to a folder of your own", path, (long)st->st_uid, (long)geteuid());
    return -1;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    util_set_err(err, errlen,
            "cache folder %s is writable by group or others (mode %04o): refusing to use it; "
            "run chmod go-w %s, or set WEFT_CACHE_DIR to a folder of your own", path,
            (unsigned)(st->st_mode & 07777), path);
    return -1;
  }
  return 0;
}

/* A subfolder must be one plain name: the checks cover <root> and <root>/<subdir> only, so
 * extra levels in between would go unchecked. */
static int valid_subdir(const char *s) {
  return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int cache_gone(const cache *c) {
  if (!c) return 0;
  /* Removed: the handle's folder has no link left (ext4, tmpfs), or cannot be asked (NFS: ESTALE),
   * or the path no longer leads to it (overlayfs keeps the link count of a removed lower-layer
   * folder; a folder made again at the path is another inode).  cache_open checks whatever is there. */
  struct stat held, at;
  if (fstat(c->dirfd, &held) != 0 || held.st_nlink == 0) return 1;
  return lstat(c->dir, &at) != 0 || at.st_dev != held.st_dev || at.st_ino != held.st_ino;
}

int cache_open(cache **out, const char *root, const char *subdir, char *err, size_t errlen) {
  char *r = NULL, *dir = NULL;
  cache *c = NULL;
  int fd = -1, rc = -1;
  struct stat st, fst;
  char dsh[UTIL_SHOWN];   /* (the subfolder's path as messages show it) */

  if (!out) {
    util_set_err(err, errlen, "cache_open: out is NULL");
    return -1;
  }
  *out = NULL;
  if (!valid_subdir(subdir)) {
    util_set_err(err, errlen, "cache_open: subfolder \"%s\" must be a single folder name",
            subdir ? subdir : "(null)");
    return -1;
  }
  if (root && !*root) {
    util_set_err(err, errlen, "cache_open: the cache folder is an empty string");
    return -1;
  }
  if (root) {
    if (!(r = trim_slashes(root))) {
      util_set_err(err, errlen, "out of memory opening the cache");
      goto cleanup;
    }
  } else {
    char *d = default_root(err, errlen);
    if (!d) goto cleanup;
    r = trim_slashes(d);
    free(d);
    if (!r) {
      util_set_err(err, errlen, "out of memory opening the cache");
      goto cleanup;
    }
  }

  /* The root is checked before the subfolder is created, so nothing is written into a refused
   * folder.  One that exists is only checked (check_folder names what is wrong: a file, a link);
   * a missing one is created first, and a failure names it as the cache folder. */
  if (lstat(r, &st) != 0) {
    char mkerr[1024];
    if (util_mkdirs(r, 0700, mkerr, sizeof mkerr) != 0) {
      char sh[UTIL_SHOWN];
      util_set_err(err, errlen, "cache folder %s: %s; set WEFT_CACHE_DIR to a folder of your own",
                   util_shown(r, sh, sizeof sh), mkerr);
      goto cleanup;
    }
  }
  if (check_folder(r, &st, err, errlen) != 0) goto cleanup;

  if (!(dir = path_join(r, subdir))) {
    util_set_err(err, errlen, "out of memory opening the cache");
    goto cleanup;
  }
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    util_set_err(err, errlen, "cannot create cache folder %s: %s", util_shown(dir, dsh, sizeof dsh), strerror(errno));
    goto cleanup;
  }
  if (check_folder(dir, &st, err, errlen) != 0) goto cleanup;

  /* Pin the folder that was checked: O_NOFOLLOW refuses a link put there since, and the inode
   * comparison catches any other swap between the lstat and the open. */
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    util_set_err(err, errlen, "cannot open cache folder %s: %s", util_shown(dir, dsh, sizeof dsh), strerror(errno));
    goto cleanup;
  }
  if (fstat(fd, &fst) != 0) {
    util_set_err(err, errlen, "cannot inspect cache folder %s: %s", util_shown(dir, dsh, sizeof dsh), strerror(errno));
    goto cleanup;
  }
  if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
    util_set_err(err, errlen,
            "cache folder %s was replaced while it was being checked: refusing to use it; set "
            "WEFT_CACHE_DIR to a folder of your own", util_shown(dir, dsh, sizeof dsh));
    goto cleanup;
  }

  if (!(c = malloc(sizeof *c))) {
    util_set_err(err, errlen, "out of memory opening the cache");
    goto cleanup;
  }
  c->dir = dir;
  c->dirfd = fd;
  dir = NULL; /* now owned by c */
  fd = -1;
  *out = c;
  rc = 0;

cleanup:
  if (fd >= 0) close(fd); /* read-only folder handle: nothing to lose if close fails */
  free(dir);
  free(r);
  return rc;
}

void cache_close(cache *c) {
  if (!c) return;
  close(c->dirfd); /* read-only folder handle: nothing to lose if close fails */
  free(c->dir);
  free(c);
}

const char *cache_dir(const cache *c) { return c ? c->dir : NULL; }

void cache_entry_free(cache_entry *e) {
  if (!e) return;
  free(e->ptx);
  free(e->cubin);
  free(e->log);
  memset(e, 0, sizeof *e);
}

/* ---- entries ------------------------------------------------------------------------------ */

static void names_free(key_names *n) {
  free(n->bin);
  free(n->lock);
  free(n->path);
}

static int names_init(key_names *n, const cache *c, const unsigned char key[32]) {
  memset(n, 0, sizeof *n);
  hash_hex(key, n->hex);
  n->bin = util_strprintf("%s.bin", n->hex);
  n->lock = util_strprintf("%s.lock", n->hex);
  n->path = path_join(c->dir, n->bin ? n->bin : "");
  if (n->bin && n->lock && n->path) return 0;
  names_free(n);
  return -1;
}

/* Header bytes [0, 64) and the checksum at 64 for entry e under key. */
static int fill_header(unsigned char hdr[HEADER_LEN], const unsigned char key[32],
                       const cache_entry *e) {
  memcpy(hdr, ENTRY_MAGIC, MAGIC_LEN);
  memcpy(hdr + OFF_KEY, key, 32);
  put_u64le(hdr + OFF_SIZES, e->ptx_size);
  put_u64le(hdr + OFF_SIZES + 8, e->cubin_size);
  put_u64le(hdr + OFF_SIZES + 16, e->log_size);
  hash_ctx *h = hash_begin();
  if (!h) return -1; /* hash_end(NULL) would give zeros: a checksum no read would ever match */
  hash_add(h, hdr, OFF_SUM);
  hash_add(h, e->ptx, e->ptx_size);
  hash_add(h, e->cubin, e->cubin_size);
  hash_add(h, e->log, e->log_size);
  hash_end(h, hdr + OFF_SUM);
  return 0;
}

/* A cubin is an ELF image: at least its 4-byte magic. */
static int is_elf(const void *cubin, size_t size) {
  return cubin && size >= 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0;
}

/* Reads and verifies the entry for key: LOOK_HIT fills *out; LOOK_MISS / LOOK_CORRUPT leave it
 * empty; LOOK_ERROR (the file exists but cannot be read) sets err. */
static lookup read_entry(const cache *c, const key_names *n, const unsigned char key[32],
                         cache_entry *out, char *err, size_t errlen) {
  cache_entry e = {0};
  unsigned char hdr[HEADER_LEN], sum[HEADER_LEN];
  struct stat st;
  lookup res = LOOK_CORRUPT;

  /* O_NONBLOCK: opening a FIFO put where an entry belongs must not wait for a writer (it is
   * refused as not a regular file below; for a regular file the flag changes nothing) */
  int fd = openat(c->dirfd, n->bin, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return LOOK_MISS;
    if (errno == ELOOP) return LOOK_CORRUPT; /* a link where an entry belongs: not ours */
    /* an entry we may not read (chmod 000 by hand): the folder is ours (0700, checked), so the
     * rebuilt entry replaces it by rename, as for any corrupt one, instead of failing forever */
    if (errno == EACCES) return LOOK_CORRUPT;
    util_set_err(err, errlen, "cannot open cache entry %s: %s", n->path, strerror(errno));
    return LOOK_ERROR;
  }
  if (fstat(fd, &st) != 0) {
    util_set_err(err, errlen, "cannot inspect cache entry %s: %s", n->path, strerror(errno));
    res = LOOK_ERROR;
    goto cleanup;
  }
  if (!S_ISREG(st.st_mode) || st.st_size < HEADER_LEN || st.st_size > MAX_ENTRY_BYTES) goto cleanup;

  ssize_t got = read_full(fd, hdr, HEADER_LEN);
  if (got < 0) goto read_error;
  if (got < HEADER_LEN) goto cleanup;
  if (memcmp(hdr, ENTRY_MAGIC, MAGIC_LEN) != 0 || memcmp(hdr + OFF_KEY, key, 32) != 0)
    goto cleanup;

  /* Each size is bounded by what is left before the next is subtracted, so nothing overflows,
   * and a corrupt size can never make us allocate more than the file holds. */
  uint64_t room = (uint64_t)st.st_size - HEADER_LEN;
  uint64_t ptx = get_u64le(hdr + OFF_SIZES), cubin = get_u64le(hdr + OFF_SIZES + 8),
           log = get_u64le(hdr + OFF_SIZES + 16);
  if (ptx > room || cubin > room - ptx || log != room - ptx - cubin) goto cleanup;
  if (ptx == 0 || log == 0 || room > SIZE_MAX) goto cleanup; /* both carry a NUL */

  e.ptx_size = (size_t)ptx;
  e.cubin_size = (size_t)cubin;
  e.log_size = (size_t)log;
  e.ptx = malloc(e.ptx_size);
  e.cubin = e.cubin_size ? malloc(e.cubin_size) : NULL;
  e.log = malloc(e.log_size);
  if (!e.ptx || (e.cubin_size && !e.cubin) || !e.log) {
    util_set_err(err, errlen, "out of memory reading cache entry %s", n->path);
    res = LOOK_ERROR;
    goto cleanup;
  }
  void *bufs[3] = {e.ptx, e.cubin, e.log};
  size_t lens[3] = {e.ptx_size, e.cubin_size, e.log_size};
  for (int i = 0; i < 3; i++) {
    got = read_full(fd, bufs[i], lens[i]);
    if (got < 0) goto read_error;
    if ((size_t)got < lens[i]) goto cleanup; /* shrank under us: treat as truncated */
  }
  if (e.ptx[e.ptx_size - 1] != '\0' || e.log[e.log_size - 1] != '\0') goto cleanup;
  if (!is_elf(e.cubin, e.cubin_size)) goto cleanup; /* weft build would write it as the .cubin */

  if (fill_header(sum, key, &e) != 0) {
    util_set_err(err, errlen, "out of memory checking cache entry %s", n->path);
    res = LOOK_ERROR;
    goto cleanup;
  }
  if (memcmp(sum + OFF_SUM, hdr + OFF_SUM, 32) != 0) goto cleanup;

  *out = e;
  memset(&e, 0, sizeof e); /* moved to *out */
  res = LOOK_HIT;
  goto cleanup;

read_error:
  util_set_err(err, errlen, "cannot read cache entry %s: %s", n->path, strerror(errno));
  res = LOOK_ERROR;
cleanup:
  cache_entry_free(&e);
  close(fd); /* read-only: a failing close loses nothing */
  return res;
}

/* Writes e to a fresh temporary file, flushes it, and renames it over <hex>.bin, so a reader
 * sees the old entry or the whole new one, never part of one.  Leaves nothing behind on
 * failure. */
static int write_entry(const cache *c, const key_names *n, const unsigned char key[32],
                       const cache_entry *e, char *err, size_t errlen) {
  unsigned char hdr[HEADER_LEN];
  char *tmp = NULL;
  int fd = -1, rc = -1, created = 0;

  if (fill_header(hdr, key, e) != 0) {
    util_set_err(err, errlen, "out of memory storing cache entry %s", n->path);
    return -1;
  }
  for (int i = 0; i < TMP_ATTEMPTS && fd < 0; i++) {
    free(tmp);
    tmp = util_strprintf("%s.bin.tmp.%ld.%016llx", n->hex, (long)getpid(),
                     (unsigned long long)random_u64());
    if (!tmp) {
      util_set_err(err, errlen, "out of memory storing cache entry %s", n->path);
      goto cleanup;
    }
    fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      util_set_err(err, errlen, "cannot create %s/%s: %s", c->dir, tmp, strerror(errno));
      goto cleanup;
    }
  }
  if (fd < 0) {
    util_set_err(err, errlen, "cannot create a temporary file in %s: every name tried exists",
            c->dir);
    goto cleanup;
  }
  created = 1;

  const void *bufs[4] = {hdr, e->ptx, e->cubin, e->log};
  size_t lens[4] = {HEADER_LEN, e->ptx_size, e->cubin_size, e->log_size};
  for (int i = 0; i < 4; i++) {
    if (lens[i] && util_write_all(fd, bufs[i], lens[i]) != 0) {
      util_set_err(err, errlen, "cannot write %s/%s: %s", c->dir, tmp, strerror(errno));
      goto cleanup;
    }
  }
  /* Data must be on disk before the rename makes it visible, or a crash could leave a complete
   * name over incomplete contents. */
  if (fsync(fd) != 0) {
    util_set_err(err, errlen, "cannot flush %s/%s: %s", c->dir, tmp, strerror(errno));
    goto cleanup;
  }
  int closed = close(fd); /* some filesystems report write errors only here */
  fd = -1;
  if (closed != 0) {
    util_set_err(err, errlen, "cannot write %s/%s: %s", c->dir, tmp, strerror(errno));
    goto cleanup;
  }
  if (renameat(c->dirfd, tmp, c->dirfd, n->bin) != 0) {
    util_set_err(err, errlen, "cannot move %s/%s to %s: %s", c->dir, tmp, n->path, strerror(errno));
    goto cleanup;
  }
  created = 0; /* renamed: the temporary name is gone */
  /* Persist the rename.  If this fails the entry is still complete and in place; the worst a
   * crash can then do is lose it, which costs a rebuild, so it is not worth failing for. */
  (void)fsync(c->dirfd);
  rc = 0;

cleanup:
  if (fd >= 0) close(fd); /* already failing: the error reported is the first one */
  /* Remove our temporary file; if even that fails there is nothing more to do, and err already
   * holds the first cause. */
  if (created) (void)unlinkat(c->dirfd, tmp, 0);
  free(tmp);
  return rc;
}

/* How long to wait for another builder's lock: WEFT_CACHE_LOCK_SECONDS, else 60 s.  -1 with
 * err when the variable is set to something else. */
static long lock_seconds(char *err, size_t errlen) {
  long s;
  if (util_env_long("WEFT_CACHE_LOCK_SECONDS", 0, 86400, LOCK_DEFAULT_S, "seconds",
                    "how long to wait for another weft process building the same kernel", &s, err, errlen))
    return -1;
  return s;
}

/* Takes the per-key builder lock; *fd holds it until closed.  Another process building the
 * same kernel holds it while it compiles: after LOCK_NOTICE_MS that is said on stderr (a
 * silent wait looks like a hang), and after WEFT_CACHE_LOCK_SECONDS it is an error. */
static int lock_key(const cache *c, const key_names *n, int *fd, char *err, size_t errlen) {
  long limit_s = lock_seconds(err, errlen);
  if (limit_s < 0) { *fd = -1; return -1; }
  *fd = openat(c->dirfd, n->lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (*fd < 0 && (errno == ELOOP || errno == EISDIR)) {   /* planted, or left by hand: say what to do */
    util_set_err(err, errlen, "lock file %s/%s is %s, not a regular file: remove it (the cache recreates it)",
                 c->dir, n->lock, errno == ELOOP ? "a symbolic link" : "a folder");
    return -1;
  }
  if (*fd < 0) {
    util_set_err(err, errlen, "cannot open lock file %s/%s: %s", c->dir, n->lock, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    util_set_err(err, errlen, "lock file %s/%s is not a regular file: remove it (the cache recreates it)", c->dir,
                 n->lock);
    close(*fd);
    *fd = -1;
    return -1;
  }
  double start = util_now_ms();
  int told = 0;
  while (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      util_set_err(err, errlen, "cannot lock %s/%s: %s", c->dir, n->lock, strerror(errno));
      close(*fd);
      *fd = -1;
      return -1;
    }
    double waited = util_now_ms() - start;
    if (waited >= 1000.0 * (double)limit_s) {
      util_set_err(err, errlen, "gave up after %ld s waiting for the cache lock on %s/%s, held by another weft "
                   "process (building the same kernel, or hung): WEFT_CACHE_LOCK_SECONDS sets how long to wait",
                   limit_s, c->dir, n->lock);
      close(*fd);
      *fd = -1;
      return -1;
    }
    if (!told && waited >= LOCK_NOTICE_MS) {
      util_warn("weft: waiting for the cache lock on %s/%s held by another weft process (at most %ld s: "
              "WEFT_CACHE_LOCK_SECONDS)\n", c->dir, n->lock, limit_s);
      told = 1;
    }
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  return 0;
}

/* A built entry must have the shape cache.h promises, or every later hit would be rejected as
 * corrupt.  An empty log may come back as NULL: it is stored as "" so a hit returns the same as
 * the build did. */
static int check_built(cache_entry *e, const char *name, char *err, size_t errlen) {
  if (!e->ptx || e->ptx_size == 0 || e->ptx[e->ptx_size - 1] != '\0') {
    util_set_err(err, errlen,
            "the build of kernel %s returned PTX without its terminating NUL (ptx_size must "
            "count it): this is a bug in weft, please report it", name);
    return -1;
  }
  if (!is_elf(e->cubin, e->cubin_size)) {   /* stored, every later read would call it corrupt */
    util_set_err(err, errlen,
            "the build of kernel %s returned %s (cubin_size %zu): a cubin is an ELF image; this is "
            "a bug in weft, please report it", name, e->cubin ? "a cubin that is not an ELF image" : "no cubin",
            e->cubin_size);
    return -1;
  }
  if (!e->log || e->log_size == 0) {
    free(e->log);
    if (!(e->log = malloc(1))) {
      util_set_err(err, errlen, "out of memory storing kernel %s", name);
      return -1;
    }
    e->log[0] = '\0';
    e->log_size = 1;
  } else if (e->log[e->log_size - 1] != '\0') {
    util_set_err(err, errlen,
            "the build of kernel %s returned a log without its terminating NUL (log_size must "
            "count it): this is a bug in weft, please report it", name);
    return -1;
  }
  return 0;
}

int cache_get(cache *c, const unsigned char key[32], const char *name, cache_build_fn build,
              void *ud, cache_entry *out, cache_result *result, char *err, size_t errlen) {
  key_names n;
  cache_entry built = {0};
  char local_err[512];
  int lock_fd = -1, rc = -1;

  if (out) memset(out, 0, sizeof *out);
  if (!c || !key || !build || !out || !result) {
    util_set_err(err, errlen, "cache_get: invalid argument (NULL cache, key, build, out or result)");
    return -1;
  }
  if (!name) name = "(unnamed)";
  int no_compile;
  if (util_env_bool("WEFT_NO_COMPILE", "never run NVRTC: a kernel not in the cache is an error", &no_compile, err,
                    errlen))
    return CACHE_FAIL_ENV;
  if (lock_seconds(err, errlen) < 0) return CACHE_FAIL_ENV;   /* read where it is used, a miss; said on a hit too */
  if (names_init(&n, c, key) != 0) {
    util_set_err(err, errlen, "out of memory looking up kernel %s", name);
    return -1;
  }

  /* The common case, a hit, takes no lock. */
  lookup l = read_entry(c, &n, key, out, err, errlen);
  if (l == LOOK_HIT) {
    *result = CACHE_HIT;
    rc = 0;
    goto cleanup;
  }
  if (l == LOOK_ERROR || lock_key(c, &n, &lock_fd, err, errlen) != 0) goto cleanup;

  /* Another process may have built it while we waited for the lock; only the answer under the
   * lock decides between a hit, a build and a rebuild. */
  l = read_entry(c, &n, key, out, err, errlen);
  if (l == LOOK_HIT) {
    *result = CACHE_HIT;
    rc = 0;
    goto cleanup;
  }
  if (l == LOOK_ERROR) goto cleanup;

  if (no_compile) {
    util_set_err(err, errlen,
            "WEFT_NO_COMPILE is set and kernel %s is not in the cache (%s%s): run once without "
            "WEFT_NO_COMPILE to fill it, or unset it", name, n.path,
            l == LOOK_CORRUPT ? ", which is corrupt" : "");
    rc = CACHE_FAIL_NO_COMPILE;
    goto cleanup;
  }

  /* The callback writes its message straight into err (nothing is prepended); give it a buffer
   * even when the caller passed none, and notice when it leaves it empty. */
  char *berr = err && errlen ? err : local_err;
  size_t berrlen = err && errlen ? errlen : sizeof local_err;
  berr[0] = '\0';
  /* On failure the callback owns whatever it put in `built` (the usual out-parameter rule), so
   * it is not freed here: that would double-free buffers the callback released itself. */
  if (build(ud, &built, berr, berrlen) != 0) {
    memset(&built, 0, sizeof built);
    if (!berr[0]) util_set_err(err, errlen, "the build of kernel %s failed (no message)", name);
    rc = CACHE_FAIL_BUILD;
    goto cleanup;
  }
  if (check_built(&built, name, err, errlen) != 0) {
    rc = CACHE_FAIL_BUILD;
    goto cleanup;
  }
  if (write_entry(c, &n, key, &built, err, errlen) != 0) {
    /* (its message names a temporary file: say what failed, and where, first) */
    if (err && errlen) {
      char why[768];
      snprintf(why, sizeof why, "%s", err);
      util_set_err(err, errlen, "kernel %s was compiled, but the kernel cache cannot store it (%s); free space "
                   "there, or point WEFT_CACHE_DIR at another folder", name, why);
    }
    goto cleanup;
  }

  *out = built;
  memset(&built, 0, sizeof built); /* moved to *out */
  *result = l == LOOK_CORRUPT ? CACHE_REBUILT : CACHE_BUILT;
  rc = 0;

cleanup:
  if (lock_fd >= 0) close(lock_fd); /* releases the flock; the lock file may stay */
  cache_entry_free(&built);
  names_free(&n);
  return rc;
}
