/* auto.h: what weft_auto_choose (auto.c) decides with, for tests that fake the device. */
#ifndef WEFT_AUTO_H
#define WEFT_AUTO_H
#include "weft.h"

/* The device a choice is for.  have_gpu 0: none here; the database is skipped and the device is
 * taken to be the shipped table's (AUTO_DEFAULT_GPU). */
typedef struct auto_device {
  int have_gpu;
  const char *gpu;     /* "NVIDIA H200" */
  int sm, sms, driver;
  const char *nvrtc;   /* "13.0" */
  int mem_gbs;         /* DRAM GB/s (memory clock x bus width); 0: not known, the rule takes an H200's */
} auto_device;

#define AUTO_DEFAULT_GPU "NVIDIA H200"
#define AUTO_DEFAULT_SM 90
#define AUTO_DEFAULT_SMS 132
#define AUTO_DEFAULT_MEM_GBS 4800

/* Peak DRAM GB/s from the driver's memory clock (kHz) and bus width (bits): an H100's 2619000 and
 * 5120 give 3352; 0 for values out of range. */
int auto_mem_gbs(long long clock_khz, long long bus_bits);

/* weft_auto_choose_string with the device given (dev NULL: this machine's, as the API does). */
weft_status auto_choose_with_device(weft_ctx *ctx, const char *chunkname, const char *text,
                                    const char *const *overrides, int n_overrides, const char *shape, int ranks,
                                    int n_candidates, const char *db_path, const auto_device *dev, weft_auto **out);
/* The chosen config's family, dtype and canonical shape ("cols=50257 rows=4096"). */
const char *auto_family(const weft_auto *a);
const char *auto_dtype(const weft_auto *a);
const char *auto_shape(const weft_auto *a);
/* Choice i's sets (the open fields it chose: "key=value"), *n of them. */
const char *const *auto_sets(const weft_auto *a, int i, int *n);

/* auto.prepare's family and size names for a config file (what `weft run --auto` needs to read
 * its size flags when the config itself cannot be generated: it holds fields set to "auto"). */
weft_status auto_prepare(weft_ctx *ctx, const char *path, const char *const *overrides, int n_overrides, char *family,
                         size_t flen, char sizes[][64], int max_sizes, int *n_sizes);

#endif
