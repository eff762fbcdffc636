/* weft.h: the public C API.
 *
 * A context owns a generator (an embedded Lua state), a kernel cache and, once something is
 * launched, a CUDA device.  Compiling needs no GPU and no driver; launching does.
 * Contexts are not thread-safe: use one per thread.  Errors are status codes; the context
 * (or kernel) keeps a last-error string that names the thing, the value and the fix.  It quotes
 * what the caller passed (paths, config text, Lua messages) byte for byte, control bytes
 * included: a caller that prints it to a terminal or a log of one line per entry should escape
 * them first, as the weft CLI and the Python package do (`\x1b` for ESC).
 *
 *   weft_ctx *ctx;  weft_kernel *k;
 *   if (weft_ctx_create(&ctx, NULL)) { ... }
 *   const char *set[] = {"cluster=4"};
 *   if (weft_compile_file(ctx, "examples/row_softmax.lua", set, 1, &k))
 *       fprintf(stderr, "%s\n", weft_ctx_error(ctx));
 *   int rows = 4096, cols = 8192;
 *   void *args[] = {&d_out, &d_in, &rows, &cols};       // order = manifest->args
 *   if (weft_launch(k, args, stream)) fprintf(stderr, "%s\n", weft_kernel_error(k));
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>

/* The version of this header; weft_version() returns the library's (the same string when they
 * match).  project(VERSION) in CMakeLists.txt is the source of both: test lib.version_macros. */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum weft_status {
  WEFT_OK = 0,
  WEFT_ERR_CONFIG = 1,    /* the config is invalid: message names file, field, value, allowed */
  WEFT_ERR_COMPILE = 2,   /* NVRTC rejected the generated source (log + saved source in message) */
  WEFT_ERR_CACHE = 3,     /* cache folder refused, an entry or its lock unusable (a folder where its file
                           * belongs, the lock's wait out), or WEFT_NO_COMPILE set and the kernel not cached */
  WEFT_ERR_NO_DRIVER = 4, /* libcuda.so.1 cannot be loaded: no NVIDIA driver on this machine */
  WEFT_ERR_NO_DEVICE = 5, /* driver present but no usable GPU (or not sm_90) */
  WEFT_ERR_CUDA = 6,      /* a driver call failed; the message names the call */
  WEFT_ERR_LAUNCH = 7,    /* the arguments do not fit the kernel (sizes over its limits, ...) */
  WEFT_ERR_IO = 8,        /* a file could not be read or written */
  WEFT_ERR_NOMEM = 9,
  WEFT_ERR_INVALID = 10,  /* API misuse (NULL handle, wrong argument count, ...), or a WEFT_* setting out of its range */
  WEFT_ERR_INTERNAL = 11, /* a bug in weft: please report the message */
  WEFT_ERR_MISMATCH = 12, /* ranks disagree (sizes, kernel): the same message on every rank */
  WEFT_ERR_MULTICAST = 13,/* a multimem config where multicast is unavailable or switched off */
  WEFT_ERR_TIMEOUT = 14   /* a device-side wait for another rank (or block) timed out (message names who) */
} weft_status;

const char *weft_status_name(weft_status s);

typedef struct weft_ctx weft_ctx;
typedef struct weft_kernel weft_kernel;

typedef struct weft_ctx_options {
  int device;            /* CUDA device ordinal used when launching (default 0) */
  const char *cache_dir; /* NULL or "": $WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft, else ~/.cache/weft */
  const char *source_dir;/* NULL or "": $WEFT_SOURCE_DIR, else the gen/ and templates/ embedded at build */
} weft_ctx_options;

weft_status weft_ctx_create(weft_ctx **out, const weft_ctx_options *opts);
/* Kernels may outlive their context: they can still be destroyed (and their manifests read),
 * while a launch, or a custom operator's reference fold, returns WEFT_ERR_INVALID saying the
 * context was destroyed.  weft_kernel_destroy may run on any thread, also while its context is
 * in use or destroyed on another. */
void weft_ctx_destroy(weft_ctx *ctx);
const char *weft_ctx_error(const weft_ctx *ctx);

/* ---- the manifest: the only contract between gen/ and runtime/ -------------------------- */
typedef struct weft_arg {
  const char *name;
  const char *type;   /* "ptr", "i32", "i64", "f32" */
  const char *dtype;  /* element type behind a pointer ("f32", "f16", "bf16"), else NULL */
  const char *role;   /* "in", "out", "inout" (read, then written: rmsnorm's r), "size", "scalar" */
  const char *congruent; /* another pointer argument this one must equal modulo 16, or NULL */
  int align;             /* bytes the pointer must be aligned to (0: its element size) */
} weft_arg;

/* grid dimension = times * ceil(value of argument `arg` / per) [* ceil(value of `by` / by_per)];
 * arg == NULL: grid = times.  by: a second size whose items multiply the first's (a GEMM's work
 * units: row tiles x column tiles), NULL: none.  cap = "coresident": the items are capped at the
 * number of clusters (blocks when the cluster is 1) the device holds at once, from the driver's
 * occupancy calculator. */
typedef struct weft_grid_dim {
  const char *arg;
  long per;
  long times;
  const char *by;
  long by_per;
  const char *cap;
  const char *split; /* "ranks": the items are shared out over the ranks (ceil(items / ranks)) */
  const char *shards; /* "ranks": `arg` is cut into one shard per rank, each tiled on its own:
                        ranks * ceil(ceil(arg / ranks) / per) (the fused all-gather + GEMM's rows) */
  long max;          /* at most this many (0: no limit) */
} weft_grid_dim;

/* What a kernel that talks to other ranks needs from weft_comm (NULL signals: nothing). */
typedef struct weft_comm_spec {
  int n_signals;
  const char **signals; /* names, by signal index: what a timeout message says */
  int halves;           /* the data area is this many halves, used by alternate epochs */
  int elem_bytes;
  int per_rank;         /* a data half holds a chunk per rank: world size x max_elems elements */
  int scatter;          /* a data half holds one rank's share: max_elems / world size elements
                           (gemm_rs's reduce = "atomic": the sum of this rank's rows, not P partials) */
  int multimem;         /* comm = multimem: wants a multicast address */
  int emulate;          /* fallback = emulate: without multicast, run the unicast twin */
  /* What max_elems bounds: the product of these size arguments (n_elems 0: each size
   * argument on its own). */
  int n_elems;
  const char **elems;
  const char *divide;   /* a size argument that must be a multiple of the world size, or NULL */
  int ranks;            /* the world size the kernel was generated for (its config's `ranks`), 0: any */
  int flag_div;         /* > 0: a region of u64 flags between the pads and the data, max_elems / flag_div
                           + 4096 bytes, never rewritten by data (gemm_rs fold = "tiles": flags per tile) */
} weft_comm_spec;

/* A workspace's header: its first 8 bytes hold the device address of the context's error page
 * (host memory a kernel writes before it traps; the next launch reports it). */
#define WEFT_WORKSPACE_HEADER 256

typedef struct weft_limit {
  const char *arg; /* a size argument */
  long min, max;   /* allowed range, inclusive */
  long multiple;   /* the value must be a multiple of this (0: any) */
  const char *hint; /* which other config takes a value outside, or NULL */
} weft_limit;

/* A TMA tensor map (CUtensorMap) the runtime encodes at every launch from the argument
 * values.  The kernel takes one per entry, by value (const __grid_constant__ CUtensorMap),
 * after the manifest args and before a communicator's parameter; callers never pass them.
 * dims, innermost first, each one of:
 *   "k"        a size argument;
 *   "m/ranks"  that argument over the world size (it must divide exactly);
 *   "ranks"    the world size;   "halves"  the communicator's data halves (comm.halves).
 * source:
 *   a pointer argument: a dense row-major tensor there (stride of dim i = dims 0..i-1 x
 *     element size);
 *   "comm.shards": rank s's shard, at region s of rank s's data area; dims are exactly
 *     { K, rows, "ranks", "halves" }, element (k, row, s, h) at peers[s] + data_offset +
 *     h * half_bytes + ((s * rows + row) * K + k) * element size;
 *   "comm.local": this rank's own data area, dense, but "halves" strides by half_bytes.
 * Out-of-bounds boxes read zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE). */
#define WEFT_TMAP_MAX_DIMS 5
typedef struct weft_tmap {
  const char *name;     /* the kernel parameter's name, for messages */
  const char *source;
  const char *dtype;    /* "f32", "f16", "bf16" */
  int n_dims;           /* 1..WEFT_TMAP_MAX_DIMS */
  const char *dims[WEFT_TMAP_MAX_DIMS];
  unsigned box[WEFT_TMAP_MAX_DIMS];   /* elements per dim moved at once: 1..256 */
  int swizzle;          /* shared-memory swizzle span in bytes: 0 (none), 32, 64, 128 */
  int l2_promotion;     /* bytes L2 fetches around each box row: 0 (none), 64, 128, 256 (absent: 256) */
} weft_tmap;

typedef struct weft_param { /* the validated config, flattened: "tile.m" = "128" */
  const char *key;
  const char *value;
} weft_param;

/* What the tools that check and time a family need (its Lua module's F.run): the size arguments
 * in order, the shapes `weft run` checks and times by default, the metric and the baseline. */
#define WEFT_MAX_SIZES 4
typedef struct weft_shape { long long v[WEFT_MAX_SIZES]; } weft_shape;   /* in the order of sizes */
typedef struct weft_run_spec {
  int n_sizes;                              /* 0: the family declares none (no runner needs it) */
  const char *sizes[WEFT_MAX_SIZES];        /* size argument names: weft run --<name> N */
  const char *aliases[WEFT_MAX_SIZES];      /* another flag name for size i ("" if none) */
  long long check_cap[WEFT_MAX_SIZES];      /* weft tune checks at most this much of size i (0: all) */
  int n_check, n_time;
  const weft_shape *check, *time;
  const char *metric;                       /* "bytes", "flops", "latency", "busbw" */
  const char *baseline;                     /* "copy", "cublaslt", "nccl", "none" */
  int ranks;                                /* 1: runs on every rank of an MPI job */
  int n_key;                                /* the fields a tuned config must share with the */
  const char *const *key;                   /* user's (the result's, not the speed's); 0: all */
} weft_run_spec;
/* The index of size `name` (or its alias) in spec->sizes, or -1. */
int weft_run_size_index(const weft_run_spec *spec, const char *name);

typedef struct weft_manifest {
  const char *family;
  const char *name;     /* encodes every parameter: identity and part of the cache key */
  const char *entry;    /* extern "C" symbol in the cubin */
  const char *source;   /* generated CUDA C, self-contained */
  const char *json;     /* the whole manifest as JSON (what `weft gen` writes) */
  char hash[65];        /* sha-256 of source + options (hex) */
  unsigned block[3];
  unsigned cluster[3];
  unsigned smem;        /* dynamic shared memory, bytes */
  int nonportable_cluster;
  int pdl;              /* programmatic dependent launch: may start before the previous kernel ends */
  int n_options;
  const char **options; /* NVRTC options */
  int n_args;
  const weft_arg *args;
  int n_tmaps;
  const weft_tmap *tmaps;  /* kernel parameters after args, built by the runtime */
  weft_grid_dim grid[3];
  /* A scratch area the runtime keeps per (context, stream) and passes after the tensor maps
   * (stream-K's partial tiles): workspace_flags u32 flags that start at zero and that every
   * launch leaves at zero, then workspace_per_cta bytes per block of the grid.  0 and 0: none. */
  long workspace_flags, workspace_per_cta;   /* (after a header of WEFT_WORKSPACE_HEADER bytes, the runtime's) */
  int n_limits;
  const weft_limit *limits;
  int n_params;
  const weft_param *params;
  weft_comm_spec comm;
  weft_run_spec run;
  /* A config may launch several kernels, one after another (a multi-launch variant:
   * ag_gemm's gather_then_gemm gathers A, then runs the GEMM on it).  The generator returns
   * them all, in launch order, each a whole manifest with its own name, source, args, grid:
   * this one is kernel `part` (0-based) of n_parts (1 for most configs).  The first owns
   * the others: weft_manifest_part, and weft_manifest_free frees them all (given a part, it
   * does nothing: the first still holds it). */
  int part, n_parts;
} weft_manifest;

const char *weft_manifest_param(const weft_manifest *m, const char *key); /* NULL if absent */
/* Kernel i (0 .. n_parts-1) of the config whose first kernel is m; 0 is m itself.  NULL when
 * i is out of range or m is not a first kernel. */
const weft_manifest *weft_manifest_part(const weft_manifest *m, int i);
/* The one check of a size against the kernel's limits (weft_launch makes it too): 0 if
 * `name` = v is allowed, else -1 and why (naming the kernel, the size, the range or multiple).
 * A name that is none of the kernel's size arguments, limits or config's run sizes (an alias,
 * such as allreduce's elems, checks as the size it names) is refused, the message listing its
 * sizes. */
int weft_manifest_check_size(const weft_manifest *m, const char *name, long long v, char *why, size_t len);

/* ---- generate (no compile) ------------------------------------------------------------- */
/* overrides are "key=value" strings, nested keys with dots ("tile.m=128"). */
weft_status weft_generate_file(weft_ctx *ctx, const char *path, const char *const *overrides,
                               int n_overrides, weft_manifest **out);
weft_status weft_generate_string(weft_ctx *ctx, const char *chunkname, const char *text,
                                 const char *const *overrides, int n_overrides,
                                 weft_manifest **out);
void weft_manifest_free(weft_manifest *m);

/* ---- compile (generate + NVRTC through the cache; no GPU needed) ----------------------- */
weft_status weft_compile_file(weft_ctx *ctx, const char *path, const char *const *overrides,
                              int n_overrides, weft_kernel **out);
weft_status weft_compile_string(weft_ctx *ctx, const char *chunkname, const char *text,
                                const char *const *overrides, int n_overrides, weft_kernel **out);
/* compile an already generated manifest.  It takes m in every case: the kernel owns it, and on
 * any failure m is freed (never free it after this call).  A part (kernel 1 and later of a
 * config, weft_manifest_part) is refused with WEFT_ERR_INVALID and left to its first kernel. */
weft_status weft_compile_manifest(weft_ctx *ctx, weft_manifest *m, weft_kernel **out);

/* The tuned config: the fastest one `weft tune` stored for this GPU (device, driver, NVRTC),
 * the config's family and dtype, and `shape` ("cols=32768 rows=8192", "clusters=264": the
 * size arguments, sorted, as a sweep names its shapes) on `ranks` ranks (the world size: a
 * result tuned on one rank says nothing of eight).  Without one, the config as given.
 * *tuned is 1 or 0 accordingly; weft_ctx_error() then holds a one-line notice saying which and
 * why.  db_path NULL: $WEFT_TUNE_DB, else ~/.cache/weft/tune.db.  Needs the GPU (the key names
 * it). */
weft_status weft_compile_tuned(weft_ctx *ctx, const char *path, const char *const *overrides, int n_overrides,
                               const char *shape, int ranks, const char *db_path, weft_kernel **out, int *tuned);

/* ---- auto: the config chosen from the shape ---------------------------------------------- */
/* A config's open fields (left out, or set to "auto"; the family's key fields never are) chosen
 * for a shape, from the first of: the tuning database (this GPU, driver and NVRTC, exact shape:
 * source "database"); its nearest shape on this GPU, sm, rank count, family and dtype (every
 * size within a factor of 4: "database-nearest"); the table shipped in the repo (tune/h200.tsv,
 * embedded; $WEFT_AUTO_TABLE = a path replaces it, = none switches it off), exact shape or
 * nearest ("table", "table-nearest"); the family's rule ("rule").  A corrupt table or database
 * is skipped with a warning (stderr, once per process, and in the detail); the rule answers. */
typedef struct weft_auto weft_auto;
/* Chooses the config for `shape` in the order database, nearest database shape, shipped table, rule.
 * path: a config file.  shape: "rows=4096 cols=50257" (spaces or commas, any order) or positional
 * "4096x50257" in the family's size order.  ranks: the world size the kernel will run on (1 for
 * single-process families).  n_candidates: rule candidates to keep beside the choice (for first-use
 * tuning).  Needs no GPU: without one, the database is skipped and the device is taken to be the
 * shipped table's (NVIDIA H200, 132 SMs); the detail says so.  db_path NULL: as weft_compile_tuned.
 * WEFT_ERR_CONFIG for a bad config or a shape outside the kernel's limits (the message names the
 * size and the limit). */
weft_status weft_auto_choose(weft_ctx *ctx, const char *path, const char *const *overrides, int n_overrides,
                             const char *shape, int ranks, int n_candidates, const char *db_path, weft_auto **out);
weft_status weft_auto_choose_string(weft_ctx *ctx, const char *chunkname, const char *text,
                                    const char *const *overrides, int n_overrides, const char *shape, int ranks,
                                    int n_candidates, const char *db_path, weft_auto **out);
const char *weft_auto_source(const weft_auto *a);   /* "database", "database-nearest", "table", "table-nearest", "rule" */
const char *weft_auto_detail(const weft_auto *a);   /* one line: where from, and any warning */
double weft_auto_time_us(const weft_auto *a);       /* measured time of a database / table hit, else -1 */
int weft_auto_count(const weft_auto *a);            /* 1 + candidates */
const char *weft_auto_config(const weft_auto *a, int i);  /* choice i's whole config (Lua text); 0 = the choice */
const char *weft_auto_name(const weft_auto *a, int i);    /* its kernel name */
/* Compiles choice i: the config's own text, its overrides, then the choice's (so a custom
 * operator's Lua functions stay as written). */
weft_status weft_auto_compile(weft_ctx *ctx, const weft_auto *a, int i, weft_kernel **out);
/* First-use tuning's store: choice i measured time_us (median) for this shape: a row in the tuning DB
 * (sweep "auto"), so the next weft_auto_choose for this shape answers "database". Needs the GPU. */
weft_status weft_auto_record(weft_ctx *ctx, const weft_auto *a, int i, double time_us, const char *db_path);
void weft_auto_free(weft_auto *a);
/* choose + compile the choice; weft_ctx_error() then holds a one-line notice: source and detail. */
weft_status weft_compile_auto(weft_ctx *ctx, const char *path, const char *const *overrides, int n_overrides,
                              const char *shape, int ranks, weft_kernel **out);

const weft_manifest *weft_kernel_manifest(const weft_kernel *k);
/* A config's kernels: compiling one compiles every kernel it launches (manifest n_parts, each
 * through the cache like any kernel).  weft_kernel_count says how many (1 for most configs);
 * weft_kernel_part(k, i) is kernel i in launch order, 0 being k itself, NULL when i is out of
 * range or k is not the first.  The parts belong to k: weft_kernel_destroy(k) frees them, and
 * on a part it does nothing.  Launch each in order with its own args (its manifest's):
 * gather_then_gemm's gather with weft_comm_launch, then its GEMM with weft_launch. */
int weft_kernel_count(const weft_kernel *k);
weft_kernel *weft_kernel_part(weft_kernel *k, int i);
const char *weft_kernel_ptx(const weft_kernel *k, size_t *size);
const void *weft_kernel_cubin(const weft_kernel *k, size_t *size);
int weft_kernel_cache_hit(const weft_kernel *k);  /* 1 if the last compile came from the cache */
double weft_kernel_compile_ms(const weft_kernel *k);
const char *weft_kernel_error(const weft_kernel *k);
const char *weft_kernel_log(const weft_kernel *k);   /* NVRTC log (ptxas resource lines) */
const char *weft_version(void);
void weft_kernel_destroy(weft_kernel *k);

/* The host reference of a custom reduction operator given in Lua (op.ref = function(a, b)):
 * folds x[0..n) in order, with the ref of the config this kernel was generated from (two configs
 * that differ only in ref make one kernel name; each kernel keeps its own).  The function lives
 * in the context that generated the manifest: WEFT_ERR_INVALID if the kernel was compiled in
 * another, its context was destroyed, or its operator has none. */
weft_status weft_reference_fold(weft_kernel *k, const double *x, size_t n, double *out);

/* Resources of the compiled kernel, read from the cubin by the driver (needs a GPU). */
typedef struct weft_resources {
  int registers, local_bytes, static_smem, max_threads;
} weft_resources;
weft_status weft_kernel_resources(weft_kernel *k, weft_resources *out);

/* ---- launch ---------------------------------------------------------------------------- */
/* args: one pointer per manifest argument, in manifest order (as for cuLaunchKernel).
 * The grid is derived from the size arguments as the manifest says, and the manifest's
 * tensor maps are built from them (never passed by the caller).
 * stream: a CUstream (NULL = the default stream). */
weft_status weft_launch(weft_kernel *k, void **args, void *stream);

/* WEFT_ERR_TIMEOUT, with weft_ctx_error() saying which block waited for which, when a kernel
 * launched from this context stopped on a wait that timed out (stream-K's hand-over: the kernel
 * traps, so the CUDA context is unusable after it; the next launch from the context says the
 * same); else WEFT_OK.  Call it when a CUDA call fails after weft's launches. */
weft_status weft_ctx_check(weft_ctx *ctx);

/* The CUDA context weft launches into (the device's primary context), as a CUcontext. */
weft_status weft_ctx_cuda(weft_ctx *ctx, void **cucontext);

/* ---- several ranks (MPI, or the caller's all-gather) ------------------------------------ */
/* A world: the ranks of an MPI communicator, and which of them share this node.  The caller
 * initialises MPI; weft never calls MPI_Init.  mpi_comm points at an MPI_Comm (NULL:
 * MPI_COMM_WORLD); weft keeps its own duplicate, so its collectives never mix with the
 * caller's.  Creating a world is collective: every rank must call it. */
typedef struct weft_world weft_world;
/* A weft built without MPI (WEFT_WITH_MPI=OFF) returns WEFT_ERR_INVALID here: use
 * weft_world_create_with.  The calls that need MPI are this one only (and libmpi, then). */
weft_status weft_world_create(const void *mpi_comm, weft_world **out);

/* A world without MPI (torchrun, a torch.distributed process group, ...): the caller's rank
 * numbers and an all-gather.  allgather(send, recv, bytes, user) must copy every rank's `bytes`
 * from its send into recv + r * bytes (r: the sender's rank, 0 <= r < size; recv holds size *
 * bytes; size is the number of ranks the callback gathers from, as a smaller one would overrun
 * recv), and return 0, or non-zero on failure.  It must be collective: every rank calls it the
 * same number of times with the same bytes, and a call that fails on one rank must still return
 * (or time out) on the others.  weft keeps its side of that: every weft operation makes the same
 * calls on every rank on every path, and after a call failed anywhere every rank learns it in the
 * same operation (an extra small gather of everyone's result), which then fails on every rank
 * (WEFT_ERR_IO, the message naming the rank and the value returned); the world stays failed.
 * (One failing rank at a time is assumed.  If only that extra gather fails on a rank, its data
 * was good and the others saw no failure, so the failure fails the next operation instead.)
 * The node: the ranks that share this machine (and may share GPU memory) are consecutive, from
 * the node's first rank rank - local_rank, local_size of them, all passing that local_size.
 * Creating one is collective; the ranks gather their numbers and check them all, so a bad or
 * inconsistent value (size, rank, local_rank, local_size) fails every rank with the same
 * message (WEFT_ERR_INVALID) naming the rank, the field and the value.  Only a rank that cannot
 * call the callback (b or allgather NULL, size not in 1..2^20, out of memory) returns at once,
 * without calling it: its peers then wait in their allgather, which is their transport's to
 * time out.  err (errlen bytes, may be NULL) gets the message when creation fails. */
typedef int (*weft_allgather_fn)(const void *send, void *recv, size_t bytes, void *user);
typedef struct weft_world_bootstrap {
  int rank, size, local_rank, local_size;
  weft_allgather_fn allgather;
  void *user;   /* passed to every allgather call */
} weft_world_bootstrap;
weft_status weft_world_create_with(const weft_world_bootstrap *b, weft_world **out, char *err, size_t errlen);
void weft_world_destroy(weft_world *w);
int weft_world_rank(const weft_world *w);
int weft_world_size(const weft_world *w);
int weft_world_local_rank(const weft_world *w);   /* among the ranks on this node */
int weft_world_local_size(const weft_world *w);
const char *weft_world_error(const weft_world *w);

/* Rendezvous (collective): every rank passes a one-line description of what it is about to
 * do, e.g. "bytes=4194304 kernel=<manifest hash>".  If all ranks passed the same text,
 * WEFT_OK; otherwise WEFT_ERR_MISMATCH on every rank, with the same message on every rank
 * naming which ranks said what.  Never a hang: it is one fixed pair of collectives.  In a
 * callback world whose allgather failed, WEFT_ERR_IO on every rank (weft_world_error says why). */
weft_status weft_world_agree(weft_world *w, const char *what, const char *desc);

/* May weft create a multicast object (comm = multimem)?  Only where the device reports
 * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (device_supports) and none of NCCL_NVLS_ENABLE=0,
 * TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, WEFT_MULTICAST=0 is set.
 * Returns 1 or 0; with 0, why says which. */
int weft_multicast_allowed(int device_supports, char *why, size_t len);

/* ---- symmetric memory ------------------------------------------------------------------ */
/* One buffer of `bytes` per rank, on the rank's device, with every rank's buffer mapped into
 * every rank (ranks of one node, at most WEFT_SYMM_MAX_RANKS).  Collective: every rank calls
 * it.  First the ranks agree that they asked for the same bytes and tag (any text, e.g. a
 * kernel hash; NULL for none): a disagreement is WEFT_ERR_MISMATCH on every rank, with the
 * same message, before anything is allocated.  Any later failure (a CUDA call, the fd
 * exchange) also fails every rank, with the failing rank's message.  The buffers start
 * zeroed.  Errors: weft_ctx_error(ctx). */
#define WEFT_SYMM_MAX_RANKS 8
#define WEFT_SYMM_MAX_BYTES (1ull << 40)   /* per rank: more than any GPU holds */
typedef struct weft_symm weft_symm;
weft_status weft_symm_alloc(weft_ctx *ctx, weft_world *w, size_t bytes, const char *tag, weft_symm **out);
void weft_symm_free(weft_symm *s);                        /* collective */
unsigned long long weft_symm_ptr(const weft_symm *s, int rank); /* rank's buffer, mapped here */
unsigned long long weft_symm_table(const weft_symm *s);   /* device array: every rank's pointer */
size_t weft_symm_bytes(const weft_symm *s);               /* per rank, rounded to the granularity */
int weft_symm_gpu_share(const weft_symm *s);              /* most ranks that drive one GPU */
const char *weft_symm_method(const weft_symm *s);         /* how fds travelled: "pidfd", "socket" */

/* ---- communicators: launching kernels that talk to other ranks --------------------------- */
/* A communicator binds a compiled kernel whose manifest has a comm section (allreduce, ...)
 * to a world: a symmetric buffer sized for max_elems elements (signal pads, then data), the
 * rank's epoch counter in device memory, and a host-mapped error record.  Collective: the
 * ranks first agree on the kernel (its hash) and max_elems.
 * Signals time out after $WEFT_SIGNAL_TIMEOUT_MS milliseconds (default 5000) or what
 * weft_comm_set_timeout says: the kernel then stops and weft_comm_check (or the next launch)
 * returns WEFT_ERR_TIMEOUT with a message naming this rank, the peer, the signal and the
 * epochs.  After a timeout the communicator refuses every launch: destroy it.
 * Use one stream at a time per communicator (launches are ordered by their epochs). */
typedef struct weft_comm weft_comm;
weft_status weft_comm_create(weft_kernel *k, weft_world *w, long long max_elems, weft_comm **out);
/* args: as for weft_launch (manifest order); the communicator appends its own parameter.
 * WEFT_ERR_LAUNCH when the sizes exceed max_elems (each size argument, or the product of
 * those comm.elems names) or comm.divide's size is not a multiple of the world size. */
weft_status weft_comm_launch(weft_comm *c, void **args, void *stream);
/* After the stream is synchronised: WEFT_OK, or WEFT_ERR_TIMEOUT and weft_comm_error(). */
weft_status weft_comm_check(weft_comm *c);
/* The epoch of the last launch that finished on this rank (launches so far, each adding one), read
 * from the device (synchronous: call after the stream is synchronised); -1 on a failed read. */
long long weft_comm_epoch(weft_comm *c);
/* seconds > 0, at most a day (longer is a day); NaN or <= 0 leaves the timeout as it was */
void weft_comm_set_timeout(weft_comm *c, double seconds);
const char *weft_comm_error(const weft_comm *c);
int weft_comm_multicast(const weft_comm *c);   /* 1: real multimem; 0: unicast (twin or threadload) */
const weft_symm *weft_comm_symm(const weft_comm *c);
void weft_comm_destroy(weft_comm *c);          /* collective */

#ifdef __cplusplus
}
#endif
#endif
