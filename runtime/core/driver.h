/* driver.h: the CUDA driver, reached through a table of versioned function pointers.
 *
 * libcuda.so.1 is opened at run time (by soname; never the unversioned development symlink,
 * and never linked), and cuGetProcAddress fills the table with the ABI version each PFN_
 * typedef names.  So every weft binary starts, generates and compiles on a machine without a
 * driver; only launching needs one.  WEFT_DRIVER_LIB overrides the library path (tests use it
 * to simulate a machine without a driver). */
#ifndef WEFT_DRIVER_H
#define WEFT_DRIVER_H
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stddef.h>

/* X(name, abi version) -- every entry is required */
#define WEFT_DRIVER_FUNCS(X)                                                                   \
  X(cuGetErrorString, 6000) X(cuGetErrorName, 6000) X(cuInit, 2000)                            \
  X(cuDriverGetVersion, 2020) X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000)                   \
  X(cuDeviceGetName, 2000) X(cuDeviceGetAttribute, 2000) X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuDevicePrimaryCtxRelease, 11000) X(cuCtxSetCurrent, 4000) X(cuCtxGetCurrent, 4000)        \
  X(cuCtxSynchronize, 2000) X(cuLibraryLoadData, 12000) X(cuLibraryUnload, 12000)              \
  X(cuLibraryGetKernel, 12000) X(cuKernelGetFunction, 12000) X(cuFuncSetAttribute, 9000)       \
  X(cuFuncGetAttribute, 2020) X(cuLaunchKernelEx, 11060) X(cuOccupancyMaxActiveClusters, 11070)\
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)                                         \
  X(cuMemAlloc, 3020) X(cuMemFree, 3020) X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020)           \
  X(cuMemcpyDtoDAsync, 3020) X(cuMemsetD8, 3020) X(cuMemsetD8Async, 3020)                      \
  X(cuStreamCreate, 2000) X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000)                \
  X(cuEventCreate, 2000) X(cuEventRecord, 2000) X(cuEventSynchronize, 2000)                    \
  X(cuEventElapsedTime, 2000) X(cuEventDestroy, 4000) X(cuMemGetInfo, 3020)                   \
  X(cuStreamQuery, 2000) X(cuDeviceGetPCIBusId, 4010)                                           \
  X(cuMemHostAlloc, 2020) X(cuMemFreeHost, 2000) X(cuMemHostGetDevicePointer, 3020)             \
  X(cuMemCreate, 10020) X(cuMemRelease, 10020) X(cuMemExportToShareableHandle, 10020)           \
  X(cuMemImportFromShareableHandle, 10020) X(cuMemAddressReserve, 10020)                        \
  X(cuMemAddressFree, 10020) X(cuMemMap, 10020) X(cuMemUnmap, 10020) X(cuMemSetAccess, 10020)  \
  X(cuMemGetAllocationGranularity, 10020) X(cuTensorMapEncodeTiled, 12000)                      \
  X(cuStreamBeginCapture, 10010) X(cuStreamEndCapture, 10000)                                   \
  X(cuGraphInstantiateWithFlags, 11040) X(cuGraphLaunch, 10000) X(cuGraphExecDestroy, 10000)    \
  X(cuGraphDestroy, 10000) X(cuThreadExchangeStreamCaptureMode, 10010) \
  X(cuMemcpyHtoDAsync, 3020) X(cuStreamGetId, 12000) X(cuStreamGetCaptureInfo, 10010)

typedef struct drv_table {
#define WEFT_DRV_FIELD(name, ver) PFN_##name##_v##ver name;
  WEFT_DRIVER_FUNCS(WEFT_DRV_FIELD)
#undef WEFT_DRV_FIELD
  int driver_version;
} drv_table;

/* Loads the driver once per process and calls cuInit. Returns the table, or NULL with a
 * message in err saying plainly why (no libcuda.so.1, symbol missing, cuInit failed). */
const drv_table *drv_get(char *err, size_t errlen);

/* "cuLaunchKernelEx failed: CUDA_ERROR_INVALID_VALUE (invalid argument)" */
void drv_describe(const drv_table *d, CUresult r, const char *call, char *buf, size_t len);

#endif
