/* internal.h: what the CLI needs from the library beyond weft.h. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H
#include "bridge.h"
#include "weft.h"

bridge *api_bridge(weft_ctx *c);
/* The device weft launches on (initialises it): name, sm (e.g. 90), driver version. */
weft_status api_device_info(weft_ctx *c, char *name, size_t len, int *sm, int *driver);

/* For symm.c and comm.c: the device (initialised), and kernels. */
#include "driver.h"
weft_status api_device(weft_ctx *c, const drv_table **d, CUdevice *dev);
char *api_ctx_err(weft_ctx *c);             /* the context's error buffer (16 KB) */
weft_status api_kernel_load(weft_kernel *k, long *coresident);
/* A grid dimension's items before the co-resident cap: ceil(v / per) (shards: ranks *
 * ceil(ceil(v / ranks) / per)) [* ceil(w / by_per)], shared over the ranks (split), at most max;
 * saturates at INT_MAX. */
long api_grid_items(const weft_grid_dim *g, long v, long w, int ranks);
weft_ctx *api_kernel_ctx(weft_kernel *k);
char *api_kernel_err(weft_kernel *k);       /* the kernel's error buffer (16 KB) */
/* WEFT_ERR_INVALID, with the message (the call, the argument, what it takes) in err, an error
 * buffer of API_ERRLEN bytes, where there is one (NULL: none, as for a NULL context). */
weft_status api_refuse(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* util_read_file's result as the API's status: a bad WEFT_CONFIG_* setting is INVALID, out of
 * memory NOMEM, any other failure IO */
weft_status api_read_status(int read_rc);

/* What a launch's tensor maps refer to besides the args: the world and the communicator's
 * symmetric buffer (weft_launch: one rank and no buffer). */
typedef struct api_tmap_env {
  int ranks, rank;
  int halves;                        /* the data area's halves (comm.halves) */
  const CUdeviceptr *peers;          /* every rank's buffer, mapped here; NULL without a communicator */
  unsigned long long symm_stride;    /* peers[r] = peers[0] + r * symm_stride (symm.c maps them so) */
  long long data_offset, half_bytes; /* as in weft::Comm */
} api_tmap_env;

/* One tensor map, worked out from the argument values: what cuTensorMapEncodeTiled gets. */
typedef struct api_tmap_plan {
  CUtensorMapDataType dtype;
  unsigned n_dims;
  CUdeviceptr base;
  cuuint64_t dims[WEFT_TMAP_MAX_DIMS];
  cuuint64_t strides[WEFT_TMAP_MAX_DIMS - 1];   /* bytes, of dims 1.. */
  cuuint32_t box[WEFT_TMAP_MAX_DIMS];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
} api_tmap_plan;

/* Tensor map i of m for these args (no driver needed): WEFT_OK, or WEFT_ERR_LAUNCH with a
 * message naming the kernel, the map, the argument and its value when TMA cannot take it
 * (a dim that does not divide by the ranks, a stride that is not a multiple of 16, ...). */
weft_status api_tmap_plan_make(const weft_manifest *m, int i, void **args, const api_tmap_env *env,
                               api_tmap_plan *out, char *err, size_t errlen);
/* cuTensorMapEncodeTiled on a plan; WEFT_ERR_CUDA naming the map if the driver refuses it. */
weft_status api_tmap_encode(const drv_table *d, const weft_manifest *m, int i, const api_tmap_plan *p,
                            CUtensorMap *out, char *err, size_t errlen);

/* Launch with the manifest's args checked, the grid derived from them (split over
 * env->ranks, the co-resident cap divided by `share` processes on the GPU), and the kernel's
 * parameters: args, then one tensor map per manifest tmap (built from args and env), then
 * `tail` if not NULL (a communicator's weft::Comm). */
/* coresident: the co-resident capacity to divide among the `share` processes on a GPU (0: this
 * process's own count; a communicator passes the lowest over its ranks, so every rank's grid is
 * the same size) */
weft_status api_launch(weft_kernel *k, void **args, const api_tmap_env *env, void *tail, int share, long coresident,
                       void *stream);
#define API_ERRLEN 16384

#endif
