/* workspace.h: the scratch the runtime keeps for kernels whose manifest asks for a workspace
 * (stream-K's partial tiles, weft/gemm_streamk.cuh), per context and per CUDA stream.
 *
 * Launches on one stream run one after another, so they may share a workspace; launches on two
 * streams may overlap, so each stream has its own, keyed by the driver's stream id (unique for
 * the process: a handle can be reused once a stream is destroyed, and CU_STREAM_PER_THREAD is one
 * handle for every thread's stream).  A launch captured into a CUDA graph gets one of its
 * capture's own: the graph may be replayed on any stream, beside eager launches and other graphs.
 * A workspace that grows is replaced, and the old one is kept until the table is freed, as are
 * those of streams and graphs that are gone (a launch still queued, or a graph, may use them).
 *
 * A workspace starts with WEFT_WORKSPACE_HEADER bytes, u64 words: [0] the device address of the
 * table's error page (host memory a kernel writes before it traps), [1] the waits' timeout in ns
 * ($WEFT_SIGNAL_TIMEOUT_MS; 0: the kernel's own), [2] a muted block + 1 (tests' fault injection,
 * WEFT_FAULT=streamk_mute:<block>; 0: none), [3] zero (a kernel's claim on the error page: the
 * first wait to time out writes it); then the manifest's flags, zeroed when it is made and left
 * at zero by every launch. */
#ifndef WEFT_WORKSPACE_H
#define WEFT_WORKSPACE_H
#include <stddef.h>

#include "driver.h"
#include "weft.h"

typedef struct ws_table ws_table;

ws_table *ws_table_new(void);   /* NULL out of memory */
/* Frees every workspace (the context current: cuMemFree waits for the kernels using them). */
void ws_table_free(ws_table *t, const drv_table *d);
/* The workspace of `stream` (or of the capture it is in) with at least `bytes`, its first
 * flag_bytes (header and flags) set up.  A new one is made with this thread's stream capture
 * mode relaxed (a first launch may come while the caller captures a graph in global mode) and
 * set up on the table's own non-blocking stream, waited for: never an operation on the caller's
 * stream.  WEFT_OK, or an error in err naming the driver call. */
weft_status ws_table_get(ws_table *t, const drv_table *d, CUstream stream, size_t bytes, size_t flag_bytes,
                         CUdeviceptr *out, char *err, size_t errlen);
/* 1, with the message in err, when a kernel wrote the error page (a wait that timed out and
 * trapped: which block waited for which, and the tile); else 0. */
int ws_table_fault(const ws_table *t, char *err, size_t errlen);

#endif
