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
weft_ctx *api_kernel_ctx(weft_kernel *k);
char *api_kernel_err(weft_kernel *k);       /* the kernel's error buffer (16 KB) */
/* Launch with the manifest's args checked, the grid derived from them (split over `ranks`,
 * the co-resident cap divided by `share` processes on the GPU), and `params` passed to the
 * kernel (args plus anything the runtime appends). */
weft_status api_launch(weft_kernel *k, void **args, void **params, int ranks, int share, void *stream);
#define API_ERRLEN 16384

#endif
