/* driver.c: loading libcuda.so.1 and filling the versioned function table (see driver.h). */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static drv_table drv;
static int drv_state;          /* 0 untried, 1 loaded, -1 failed */
static char drv_error[512];

static int drv_load(void) {
  const char *lib = getenv("WEFT_DRIVER_LIB");
  if (!lib || !*lib) lib = "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(drv_error, sizeof drv_error,
             "no NVIDIA driver: cannot load %s (%s); generating and compiling work without one, "
             "launching needs a machine with an NVIDIA GPU and its driver", lib, dlerror());
    return -1;
  }
  PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
  if (!gpa) {   /* no cuInit either: not a CUDA driver at all (WEFT_DRIVER_LIB pointing elsewhere) */
    if (!dlsym(h, "cuInit"))
      snprintf(drv_error, sizeof drv_error, "%s is not an NVIDIA driver (it has no cuInit)%s", lib,
               getenv("WEFT_DRIVER_LIB") && *getenv("WEFT_DRIVER_LIB") ? ": check WEFT_DRIVER_LIB" : "");
    else
      snprintf(drv_error, sizeof drv_error,
               "the NVIDIA driver in %s is too old: it lacks cuGetProcAddress_v2 (CUDA 12.0 or newer needed)", lib);
    return -1;
  }
  CUdriverProcAddressQueryResult found;
#define WEFT_DRV_GET(name, ver)                                                              \
  if (gpa(#name, (void **)&drv.name, ver, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || \
      !drv.name) {                                                                            \
    snprintf(drv_error, sizeof drv_error,                                                     \
             "the NVIDIA driver in %s lacks %s (ABI %d): update the driver", lib, #name, ver);  \
    return -1;                                                                                \
  }
  WEFT_DRIVER_FUNCS(WEFT_DRV_GET)
#undef WEFT_DRV_GET
  CUresult r = drv.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *s = NULL;
    drv.cuGetErrorString(r, &s);
    snprintf(drv_error, sizeof drv_error, "the NVIDIA driver is present but cuInit failed: %s (%d)%s",
             s ? s : "unknown error", (int)r,
             r == CUDA_ERROR_NO_DEVICE ? ": no GPU is visible to this process" : "");
    return -1;
  }
  drv.cuDriverGetVersion(&drv.driver_version);
  return 0;
}

const drv_table *drv_get(char *err, size_t errlen) {
  pthread_mutex_lock(&drv_lock);
  if (drv_state == 0) drv_state = drv_load() == 0 ? 1 : -1;
  int st = drv_state;
  pthread_mutex_unlock(&drv_lock);
  if (st == 1) return &drv;
  if (err && errlen) snprintf(err, errlen, "%s", drv_error);
  return NULL;
}

void drv_describe(const drv_table *d, CUresult r, const char *call, char *buf, size_t len) {
  const char *name = NULL, *desc = NULL;
  if (d) { d->cuGetErrorName(r, &name); d->cuGetErrorString(r, &desc); }
  snprintf(buf, len, "%s failed: %s (%s)", call, name ? name : "CUDA error", desc ? desc : "no description");
}
