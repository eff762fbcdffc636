/* cache.h: the on-disk kernel cache.
 *
 * Layout: <root>/<subdir>/<64-hex key>.bin, <root> = $WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft,
 * else $HOME/.cache/weft; <subdir> names weft's cache format, the NVRTC version and the arch
 * (e.g. "v1-nvrtc13.0-sm_90a"), so foreign entries never collide.
 * - Folders are created mode 0700; a folder owned by another user, or writable by group or
 *   others, is refused with a message that says how to fix it.
 * - Entries are written to a temporary file and renamed into place (atomic).
 * - A per-key lock (flock on <key>.lock) serialises builders; after taking it the entry is
 *   looked up again, since another process may have built it while we waited.
 * - Every entry carries the key and a SHA-256 of its payload: a corrupt, truncated or foreign
 *   entry, one whose cubin is missing or not an ELF image, and one we may not read (a mode
 *   changed by hand) is detected, reported through `rebuilt`, and rebuilt.
 * - With WEFT_NO_COMPILE set (to anything but "" or "0"), a miss is an error, not a build.
 */
#ifndef WEFT_CACHE_H
#define WEFT_CACHE_H
#include <stddef.h>

typedef struct cache cache;

typedef struct cache_entry {
  char *ptx;            /* NUL-terminated PTX text; ptx_size counts the NUL */
  size_t ptx_size;
  void *cubin;          /* an ELF image ("\x7fELF..."), never empty */
  size_t cubin_size;
  char *log;            /* NUL-terminated compiler log (may be ""); log_size counts the NUL */
  size_t log_size;
} cache_entry;

/* Builds the entry on a miss; fills *out with malloc'd buffers. Returns 0 or non-zero with err. */
typedef int (*cache_build_fn)(void *ud, cache_entry *out, char *err, size_t errlen);

typedef enum cache_result {
  CACHE_HIT = 0,       /* served from disk */
  CACHE_BUILT = 1,     /* missed, built, stored */
  CACHE_REBUILT = 2    /* a corrupt entry was found, rebuilt and replaced */
} cache_result;

/* root: NULL for the default above. subdir: e.g. "v1-nvrtc13.0-sm_90a".
 * Returns 0, or -1 with a message in err (folder refused or cannot be created). */
int cache_open(cache **out, const char *root, const char *subdir, char *err, size_t errlen);
void cache_close(cache *c);
const char *cache_dir(const cache *c);   /* <root>/<subdir> */
/* 1 if the folder cache_open opened has been removed since (rm -rf of the cache while a context
 * lives), or its path leads elsewhere now: nothing can be written there any more; the caller,
 * after a failure, opens the cache again (with cache_open's checks of whatever is there). */
int cache_gone(const cache *c);

/* cache_get's failures, each with err: the caller tells them apart by the value, not the text */
enum {
  CACHE_FAIL = -1,             /* the folder, a file or the lock failed */
  CACHE_FAIL_ENV = -2,         /* WEFT_NO_COMPILE or WEFT_CACHE_LOCK_SECONDS holds a value it cannot take */
  CACHE_FAIL_NO_COMPILE = -3,  /* a miss (or a corrupt entry) with WEFT_NO_COMPILE set */
  CACHE_FAIL_BUILD = -4        /* the build callback failed, or built no usable entry */
};
/* Look up key; on a miss build it (unless WEFT_NO_COMPILE) and store it. name is used only in
 * messages (the kernel name). Returns 0 and fills *out and *result, or a CACHE_FAIL* with err. */
int cache_get(cache *c, const unsigned char key[32], const char *name, cache_build_fn build,
              void *ud, cache_entry *out, cache_result *result, char *err, size_t errlen);

void cache_entry_free(cache_entry *e);

#endif
