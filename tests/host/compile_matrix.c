/* compile_matrix.c: renders and NVRTC-compiles every example and a spread of parameter
 * combinations for sm_90a, and asserts on the PTX that each feature is really there (and that
 * degenerate configurations leave it out).  Runs without a GPU; this is what CI sees.
 * usage: compile_matrix SOURCE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

typedef struct entry {
  const char *config;            /* example file under examples/ */
  const char *sets[6];           /* --set overrides */
  const char *must[8];           /* PTX must contain each */
  const char *never[4];          /* PTX must not contain any */
} entry;

/* what every cluster combine compiles to */
#define CLUSTER_PTX "barrier.cluster.arrive.release", "barrier.cluster.wait.acquire", \
                    "mapa.shared::cluster", "ld.shared::cluster.f32"
#define STREAM_LOAD "ld.global.nc.L1::no_allocate.v4.u32"
/* what every signal between ranks compiles to: release stores, acquire polls, a bounded wait;
 * and the communicator parameter has the size runtime/comm.c fills (weft::Comm, 136 bytes) */
#define SIGNAL_PTX "st.release.sys.global.u64", "ld.acquire.sys.global.u64", "%globaltimer", "_param_3[136]"
#define MM_F32 "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "multimem.st.relaxed.sys.global.v4.f32"

static const entry matrix[] = {
  /* the examples as shipped */
  {"row_reduce.lua", {0}, {CLUSTER_PTX, STREAM_LOAD}, {0}},
  {"row_softmax.lua", {0}, {CLUSTER_PTX, STREAM_LOAD, "ex2.approx.ftz.f32", "st.global.cs.v4.u32"}, {0}},
  {"row_softmax_stream.lua", {0}, {CLUSTER_PTX, "ld.global.nc.v4.u32", STREAM_LOAD, "st.global.cs.v4.u32"}, {0}},
  {"cluster_reduce.lua", {0}, {CLUSTER_PTX, "max.f32"}, {0}},
  {"custom_op.lua", {0}, {CLUSTER_PTX, "abs.f32", "max.f32"}, {0}},
  /* cluster size 1 degenerates to a block broadcast: no cluster instructions at all */
  {"row_reduce.lua", {"cluster=1"}, {STREAM_LOAD, "bar.sync"}, {"mapa", "barrier.cluster", "ld.shared::cluster"}},
  {"row_softmax.lua", {"cluster=1", "max_cols=8192"}, {STREAM_LOAD}, {"mapa", "barrier.cluster"}},
  {"cluster_reduce.lua", {"cluster=1"}, {"bar.sync"}, {"mapa", "barrier.cluster"}},
  /* every dtype: the 16-bit formats convert with cvt */
  {"row_reduce.lua", {"dtype=f16"}, {CLUSTER_PTX, STREAM_LOAD, "cvt.f32.f16"}, {0}},
  {"row_reduce.lua", {"dtype=bf16"}, {CLUSTER_PTX, STREAM_LOAD}, {0}},
  {"row_softmax.lua", {"dtype=bf16", "max_cols=65536"}, {CLUSTER_PTX, "cvt.rn.bf16x2.f32", "max.bf16x2", "st.global.cs.v4.u32"}, {0}},
  {"row_softmax.lua", {"dtype=f16", "max_cols=65536"}, {CLUSTER_PTX, "cvt.rn.f16x2.f32", "max.f16x2", "cvt.f32.f16"}, {0}},
  {"row_softmax_stream.lua", {"dtype=bf16"}, {CLUSTER_PTX, "cvt.rn.bf16x2.f32"}, {0}},
  /* mode tma: the bulk copy engine feeding shared memory, counted on mbarriers */
  {"row_softmax.lua", {"mode=tma", "max_cols=262144", "cluster=16", "nonportable=true"},
   {CLUSTER_PTX, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "fence.mbarrier_init"}, {0}},
  {"row_softmax.lua", {"mode=tma", "dtype=bf16", "max_cols=32768", "cluster=1", "persistent=true"},
   {"cp.async.bulk.shared::cluster.global", "ld.shared.v4.u32"}, {"mapa", "barrier.cluster"}},
  /* the push exchange inside the row loops */
  {"row_softmax.lua", {"exchange=push", "cluster=8", "max_cols=65536", "persistent=true"},
   {"st.async.shared::cluster.mbarrier::complete_tx::bytes.f32", "mbarrier.try_wait.parity", STREAM_LOAD}, {"ld.shared::cluster"}},
  {"row_reduce.lua", {"exchange=push", "dtype=bf16"}, {"st.async.shared::cluster", STREAM_LOAD}, {"ld.shared::cluster"}},
  /* every operator */
  {"row_reduce.lua", {"op=max"}, {CLUSTER_PTX, "max.f32"}, {0}},
  {"row_reduce.lua", {"op=min"}, {CLUSTER_PTX, "min.f32"}, {0}},
  {"row_reduce.lua", {"op=prod"}, {CLUSTER_PTX, "mul.f32"}, {0}},
  {"row_reduce.lua", {"op=sum", "unroll=8"}, {CLUSTER_PTX, "add.f32"}, {0}},
  /* cluster sizes up to 16 (non-portable) */
  {"row_reduce.lua", {"cluster=2"}, {CLUSTER_PTX}, {0}},
  {"row_reduce.lua", {"cluster=8", "threads=1024"}, {CLUSTER_PTX}, {0}},
  {"row_reduce.lua", {"cluster=16", "nonportable=true"}, {CLUSTER_PTX}, {0}},
  {"row_softmax.lua", {"cluster=16", "nonportable=true", "threads=1024", "max_cols=262144"}, {CLUSTER_PTX, "ex2.approx"}, {0}},
  {"row_softmax.lua", {"cluster=8", "threads=1024", "max_cols=262144"}, {CLUSTER_PTX}, {0}},
  /* the primitive: widths, both slot disciplines */
  {"cluster_reduce.lua", {"need_tail_sync=true", "width=1"}, {CLUSTER_PTX}, {0}},
  {"cluster_reduce.lua", {"need_tail_sync=false", "width=8", "op=sum"}, {CLUSTER_PTX, "add.f32"}, {0}},
  {"cluster_reduce.lua", {"cluster=16", "nonportable=true", "op=prod"}, {CLUSTER_PTX, "mul.f32"}, {0}},
  {"cluster_reduce.lua", {"threads=1024", "op=min", "iters=64"}, {CLUSTER_PTX, "min.f32"}, {0}},
  /* the push exchange: st.async into peers, completion on mbarriers; no ld.shared::cluster */
  {"cluster_reduce.lua", {"exchange=push", "cluster=8"},
   {"st.async.shared::cluster.mbarrier::complete_tx::bytes.f32", "mapa.shared::cluster", "mbarrier.try_wait.parity",
    "mbarrier.arrive.expect_tx"}, {"ld.shared::cluster"}},
  {"cluster_reduce.lua", {"exchange=push", "cluster=1"}, {"bar.sync"}, {"st.async", "mapa", "barrier.cluster"}},
  /* allreduce: dtype x op x algo x comm.  threadload never emits multimem; multimem kernels
   * carry the real instructions (and the unicast twin beside them) */
  {"allreduce.lua", {0}, {SIGNAL_PTX, "add.f32", "ld.global.v4.u32"}, {"multimem"}},
  {"allreduce.lua", {"algo=two_shot"}, {SIGNAL_PTX, "add.f32"}, {"multimem"}},
  {"allreduce.lua", {"dtype=bf16", "op=max"}, {SIGNAL_PTX, "max.f32", "cvt.rn.bf16x2.f32"}, {"multimem"}},
  {"allreduce.lua", {"dtype=f16", "op=min", "algo=two_shot"}, {SIGNAL_PTX, "min.f32", "cvt.f32.f16"}, {"multimem"}},
  {"allreduce.lua", {"op=prod", "threads=128"}, {SIGNAL_PTX, "mul.f32"}, {"multimem"}},
  {"../tests/configs/allreduce_custom.lua", {0}, {SIGNAL_PTX, "abs.f32"}, {"multimem"}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem"}, {SIGNAL_PTX, MM_F32}, {0}},
  /* one_shot_ll: each word travels with its epoch in one 8-byte relaxed sys-scope store */
  {"allreduce.lua", {"algo=one_shot_ll"}, {"st.relaxed.sys.global.u64", "ld.relaxed.sys.global.u64", "%globaltimer", "_param_3[136]"}, {"multimem"}},
  {"allreduce.lua", {"algo=one_shot_ll", "dtype=bf16", "op=max"}, {"st.relaxed.sys.global.u64", "cvt.rn.bf16x2.f32"}, {"multimem"}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "fallback=emulate", "dtype=bf16"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2", "multimem.st.relaxed.sys.global.v4.bf16x2"}, {0}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "dtype=f16", "op=max"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.max.v4.f16x2", "multimem.st.relaxed.sys.global.v4.f16x2"}, {0}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "dtype=bf16", "op=min", "fallback=emulate"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.min.v4.bf16x2"}, {0}},
};

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: compile_matrix SOURCE_DIR\n"); return 2; }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) { fprintf(stderr, "cannot create context\n"); return 1; }
  int passed = 0, failed = 0;
  double slowest = 0;
  char slowest_name[256] = "";
  for (size_t i = 0; i < sizeof matrix / sizeof *matrix; i++) {
    const entry *e = &matrix[i];
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", argv[1], e->config);
    int n = 0;
    while (n < 6 && e->sets[n]) n++;
    weft_kernel *k = NULL;
    weft_status st = weft_compile_file(ctx, path, e->sets, n, &k);
    if (st) {
      printf("FAIL %s", e->config);
      for (int j = 0; j < n; j++) printf(" --set %s", e->sets[j]);
      printf(": %s\n", weft_ctx_error(ctx));
      failed++;
      continue;
    }
    const char *ptx = weft_kernel_ptx(k, NULL);
    const char *name = weft_kernel_manifest(k)->name;
    int ok = 1;
    for (int j = 0; j < 8 && e->must[j]; j++)
      if (!contains(ptx, e->must[j])) { printf("FAIL %s: PTX lacks '%s'\n", name, e->must[j]); ok = 0; }
    for (int j = 0; j < 4 && e->never[j]; j++)
      if (contains(ptx, e->never[j])) { printf("FAIL %s: PTX has '%s', which this config must not emit\n", name, e->never[j]); ok = 0; }
    if (!contains(ptx, ".target sm_90a")) { printf("FAIL %s: PTX is not for sm_90a\n", name); ok = 0; }
    /* ptxas's report (NVRTC log): no kernel of the matrix may spill registers */
    const char *sp = strstr(weft_kernel_log(k), "bytes spill stores");
    if (sp && !strstr(weft_kernel_log(k), " 0 bytes spill stores")) { printf("FAIL %s: spills registers\n", name); ok = 0; }
    double ms = weft_kernel_compile_ms(k);
    if (!weft_kernel_cache_hit(k) && ms > slowest) { slowest = ms; snprintf(slowest_name, sizeof slowest_name, "%s", name); }
    if (ok) { printf("ok   %s (%.0f ms%s)\n", name, ms, weft_kernel_cache_hit(k) ? ", cached" : ""); passed++; }
    else failed++;
    weft_kernel_destroy(k);
  }
  weft_ctx_destroy(ctx);
  printf("slowest cold compile: %.0f ms (%s)\n", slowest, slowest_name);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
