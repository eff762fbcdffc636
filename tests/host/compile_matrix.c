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
  const char *sets[10];          /* --set overrides */
  const char *must[20];          /* PTX must contain each */
  const char *never[10];         /* PTX must not contain any */
} entry;

/* A multi-launch config: its first kernel as an entry, and what its second's PTX must contain.
 * An entry of the matrix must compile to one kernel, one of multi[] to two. */
typedef struct entry2 {
  entry e;
  const char *must2[12];
} entry2;

/* what every cluster combine compiles to */
#define CLUSTER_PTX "barrier.cluster.arrive.release", "barrier.cluster.wait.acquire", \
                    "mapa.shared::cluster", "ld.shared::cluster.f32"
#define STREAM_LOAD "ld.global.nc.L1::no_allocate.v4.u32"
/* what every signal between ranks compiles to: release stores, acquire polls, a bounded wait;
 * and the communicator parameter has the size runtime/core/comm.c fills (weft::Comm, 136 bytes) */
#define SIGNAL_PTX "st.release.sys.global.u64", "ld.acquire.sys.global.u64", "%globaltimer", "_param_3[136]"
/* allreduce_norm: y, x, w, r (or eps), rows, cols, then the communicator */
#define ARN_SIGNAL_PTX "st.release.sys.global.u64", "ld.acquire.sys.global.u64", "%globaltimer", "_param_6[136]"
/* ... with quant = "fp8_e4m3" (y's scale is an argument more): E4M3 codes, saturated, and the IEEE
 * divisions of 448 / amax and amax / 448 */
#define ARN_FP8_PTX "st.release.sys.global.u64", "ld.acquire.sys.global.u64", "_param_7[136]", \
  "cvt.rn.satfinite.e4m3x2.f32", "div.rn.f32", "max.f32"
#define MM_F32 "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "multimem.st.relaxed.sys.global.v4.f32"
/* ag_gemm.  Its signals: release stores, relaxed polls closed by one fence.acq_rel.sys, a bounded
 * wait; weft::Comm (136 bytes) is the last parameter: _param_9 after c, a, b, m, n, k, ta, tb,
 * tsh (fused), _param_6 after c, a, b, m, n, k (scalar), _param_4 after ag, a, m, k (gather) */
#define AG_SIGNAL_PTX "st.release.sys.global.u64", "ld.relaxed.sys.global.u64", "fence.acq_rel.sys", "%globaltimer"
/* the warp-specialised WGMMA GEMM: TMA into the ring, mbarrier waits, the tensor maps, the
 * loading warp's issuing lane chosen by elect.sync, the warpgroup index broadcast from lane 0 (so
 * ptxas builds the WGMMA descriptors in uniform registers: 3-12 % of the main loop) */
#define GEMM_PTX "wgmma.mma_async.sync.aligned", "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", \
                 "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "prefetch.tensormap", "elect.sync", \
                 "shfl.sync.idx.b32"
/* the WGMMA's last immediate is B's transpose bit: 1 for B row-major (read MN-major), 0 for
 * B column-major (read K-major, like A) */
#define B_ROW_PTX "p, 1, 1, 0, 1;"
#define B_COL_PTX "p, 1, 1, 0, 0;"
#define MM_ST_BF16 "multimem.st.relaxed.sys.global.v4.bf16x2"
#define STREAMK_PTX "st.global.v4.f32", "st.release.gpu.global.u32", "ld.acquire.gpu.global.u32", \
                    "st.relaxed.gpu.global.u32", "ld.global.cg.v4.f32", "%globaltimer", "atom.global.cas.b64", "trap;"

static const entry matrix[] = {
  /* the examples as shipped */
  {"row_reduce.lua", {"cluster=4"}, {CLUSTER_PTX, STREAM_LOAD}, {0}},
  {"row_softmax.lua", {"cluster=2", "threads=512"}, {CLUSTER_PTX, STREAM_LOAD, "ex2.approx.ftz.f32", "st.global.cs.v4.u32"}, {0}},
  {"row_softmax_stream.lua", {"exchange=pull"}, {CLUSTER_PTX, "ld.global.nc.v4.u32", STREAM_LOAD, "st.global.cs.v4.u32"}, {0}},
  {"cluster_reduce.lua", {0}, {CLUSTER_PTX, "max.f32"}, {0}},
  {"custom_op.lua", {0}, {CLUSTER_PTX, "abs.f32", "max.f32"}, {0}},
  /* cluster size 1 degenerates to a block broadcast: no cluster instructions at all */
  {"row_reduce.lua", {"cluster=1"}, {STREAM_LOAD, "bar.sync"}, {"mapa", "barrier.cluster", "ld.shared::cluster"}},
  {"row_softmax.lua", {"cluster=1", "max_cols=8192"}, {STREAM_LOAD}, {"mapa", "barrier.cluster"}},
  {"cluster_reduce.lua", {"cluster=1"}, {"bar.sync"}, {"mapa", "barrier.cluster"}},
  /* every dtype: the 16-bit formats convert with cvt */
  {"row_reduce.lua", {"dtype=f16", "cluster=4"}, {CLUSTER_PTX, STREAM_LOAD, "cvt.f32.f16"}, {0}},
  {"row_reduce.lua", {"dtype=bf16", "cluster=4"}, {CLUSTER_PTX, STREAM_LOAD}, {0}},
  {"row_softmax.lua", {"dtype=bf16", "max_cols=65536", "cluster=2"}, {CLUSTER_PTX, "cvt.rn.bf16x2.f32", "max.bf16x2", "st.global.cs.v4.u32"}, {0}},
  {"row_softmax.lua", {"dtype=f16", "max_cols=65536", "cluster=2"}, {CLUSTER_PTX, "cvt.rn.f16x2.f32", "max.f16x2", "cvt.f32.f16"}, {0}},
  {"row_softmax_stream.lua", {"dtype=bf16", "exchange=pull"}, {CLUSTER_PTX, "cvt.rn.bf16x2.f32"}, {0}},
  /* mode tma: the bulk copy engine feeding shared memory, counted on mbarriers */
  {"row_softmax.lua", {"mode=tma", "max_cols=262144", "cluster=16", "nonportable=true"},
   {CLUSTER_PTX, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "fence.mbarrier_init"}, {0}},
  {"row_softmax.lua", {"mode=tma", "dtype=bf16", "max_cols=32768", "cluster=1", "persistent=true"},
   {"cp.async.bulk.shared::cluster.global", "ld.shared.v4.u32"}, {"mapa", "barrier.cluster"}},
  /* the push exchange inside the row loops */
  {"row_softmax.lua", {"exchange=push", "cluster=8", "max_cols=65536", "persistent=true"},
   {"st.async.shared::cluster.mbarrier::complete_tx::bytes.f32", "mbarrier.try_wait.parity", STREAM_LOAD}, {"ld.shared::cluster"}},
  {"row_reduce.lua", {"exchange=push", "dtype=bf16", "cluster=4"}, {"st.async.shared::cluster", STREAM_LOAD}, {"ld.shared::cluster"}},
  /* every operator */
  {"row_reduce.lua", {"op=max", "cluster=4"}, {CLUSTER_PTX, "max.f32"}, {0}},
  {"row_reduce.lua", {"op=min", "cluster=4"}, {CLUSTER_PTX, "min.f32"}, {0}},
  {"row_reduce.lua", {"op=prod", "cluster=4"}, {CLUSTER_PTX, "mul.f32"}, {0}},
  {"row_reduce.lua", {"op=sum", "unroll=8", "cluster=4"}, {CLUSTER_PTX, "add.f32"}, {0}},
  /* cluster sizes up to 16 (non-portable) */
  {"row_reduce.lua", {"cluster=2"}, {CLUSTER_PTX}, {0}},
  {"row_reduce.lua", {"cluster=8", "threads=1024", "min_blocks=1"}, {CLUSTER_PTX}, {0}},
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
  /* rmsnorm: the row in registers, 16-byte streaming loads and stores, w through L1, the sum
   * through xor shuffles, rsqrt.approx; a cluster combine only with cluster > 1 */
  {"rmsnorm.lua", {0},
   {STREAM_LOAD, "ld.global.nc.v4.u32", "st.global.cs.v4.u32", "shfl.sync.bfly.b32", "rsqrt.approx.f32",
    "cvt.rn.bf16x2.f32", "bar.sync"},
   {"mapa", "barrier.cluster", "ld.shared::cluster", "ld.global.L1::no_allocate", "ld.param.f32", "st.global.f32"}},
  {"rmsnorm.lua", {"dtype=f16", "max_cols=5120", "cluster=2", "threads=128", "rows_per_cta=1"},
   {CLUSTER_PTX, STREAM_LOAD, "cvt.rn.f16x2.f32", "cvt.f32.f16", "rsqrt.approx.f32", "st.global.cs.v4.u32"}, {"bf16"}},
  {"rmsnorm.lua", {"dtype=f32", "max_cols=16384", "cluster=4", "rows_per_cta=1"},
   {CLUSTER_PTX, STREAM_LOAD, "ld.global.nc.v4.u32", "st.global.cs.v4.u32", "rsqrt.approx.f32"},
   {"cvt.rn.bf16", "cvt.rn.f16", "cvt.f32.f16"}},
  {"rmsnorm.lua", {"cluster=8", "threads=1024", "max_cols=65536", "rows_per_cta=1", "min_blocks=1"}, {CLUSTER_PTX, STREAM_LOAD}, {0}},
  {"rmsnorm.lua", {"cluster=16", "nonportable=true", "max_cols=65536", "rows_per_cta=1", "dtype=f32"}, {CLUSTER_PTX}, {0}},
  /* the residual: r read through the coherent path (it is overwritten with h), h stored; r is
   * the fourth parameter, so there are six */
  {"rmsnorm.lua", {"residual=true", "dtype=f16", "max_cols=5120", "threads=128", "rows_per_cta=1"},
   {"ld.global.L1::no_allocate.v4.u32", STREAM_LOAD, "st.global.cs.v4.u32", "cvt.rn.f16x2.f32", "_param_5"},
   {"mapa", "barrier.cluster", "_param_6"}},
  {"rmsnorm.lua", {"residual=true", "cluster=4", "max_cols=16384", "rows_per_cta=1"},
   {CLUSTER_PTX, "ld.global.L1::no_allocate.v4.u32", "st.global.cs.v4.u32"}, {0}},
  /* eps as an argument (an f32 parameter), the per-CTA rstd (an f32 store), push exchange */
  {"rmsnorm.lua", {"eps=arg", "cta_rstd=true", "cluster=2", "rows_per_cta=1", "exchange=push"},
   {"ld.param.f32", "st.global.f32", "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32", "mbarrier.try_wait.parity"},
   {"ld.shared::cluster"}},
  /* short rows: one warp per row, eight rows per CTA: no block barrier at all; hidden 7 */
  {"rmsnorm.lua", {"max_cols=256", "threads=256", "rows_per_cta=8"}, {"shfl.sync.bfly.b32", STREAM_LOAD}, {"bar.sync", "mapa"}},
  {"rmsnorm.lua", {"max_cols=7", "rows_per_cta=auto", "persistent=true", "dtype=f32"}, {"shfl.sync.bfly.b32", "rsqrt.approx.f32"}, {"mapa"}},
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
  /* pdl: every algorithm waits for the previous launch and then lets the next be scheduled;
   * without it neither instruction appears (line 89's config has pdl = false) */
  {"allreduce.lua", {"pdl=true"}, {SIGNAL_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, {"multimem"}},
  {"allreduce.lua", {"pdl=true", "algo=two_shot", "dtype=bf16"}, {SIGNAL_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, {0}},
  {"allreduce.lua", {"pdl=true", "algo=one_shot_ll"}, {"st.relaxed.sys.global.u64", "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, {0}},
  {"allreduce.lua", {"pdl=false"}, {SIGNAL_PTX}, {"griddepcontrol"}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "fallback=emulate", "dtype=bf16"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2", "multimem.st.relaxed.sys.global.v4.bf16x2"}, {0}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "dtype=f16", "op=max"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.max.v4.f16x2", "multimem.st.relaxed.sys.global.v4.f16x2"}, {0}},
  {"allreduce.lua", {"algo=two_shot", "comm=multimem", "dtype=bf16", "op=min", "fallback=emulate"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.min.v4.bf16x2"}, {0}},
  /* reduce_scatter: release/acquire signals, the rank-order fold in f32 (16-byte loads from every
   * rank), element-wise ends for chunks off a 16-byte boundary; multimem: ld_reduce of the own chunk
   * and never a multimem.st (nothing is handed back) */
  {"reduce_scatter.lua", {0}, {SIGNAL_PTX, "add.f32", "ld.global.v4.u32", "ld.global.u32", "st.global.v4.u32"},
   {"multimem", "griddepcontrol"}},
  {"reduce_scatter.lua", {"dtype=bf16", "op=max"}, {SIGNAL_PTX, "max.f32", "cvt.rn.bf16x2.f32", "ld.global.u16"}, {"multimem"}},
  {"reduce_scatter.lua", {"dtype=f16", "op=min", "threads=128"}, {SIGNAL_PTX, "min.f32", "cvt.f32.f16"}, {"multimem"}},
  {"reduce_scatter.lua", {"op=prod", "blocks=4"}, {SIGNAL_PTX, "mul.f32"}, {"multimem"}},
  {"../tests/configs/reduce_scatter_custom.lua", {0}, {SIGNAL_PTX, "abs.f32"}, {"multimem"}},
  {"reduce_scatter.lua", {"comm=multimem"}, {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "add.f32"},
   {"multimem.st"}},
  {"reduce_scatter.lua", {"comm=multimem", "fallback=emulate", "dtype=bf16", "op=min"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.min.v4.bf16x2", "min.f32"}, {"multimem.st"}},
  {"reduce_scatter.lua", {"comm=multimem", "dtype=f16"}, {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2"},
   {"multimem.st"}},
  {"reduce_scatter.lua", {"pdl=true", "dtype=f16"}, {SIGNAL_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"},
   {"multimem"}},
  /* generated for the world size: the same instructions, P of each fold's loads */
  {"reduce_scatter.lua", {"ranks=4", "dtype=bf16"}, {SIGNAL_PTX, "add.f32", "ld.global.v4.u32", "cvt.rn.bf16x2.f32"},
   {"multimem"}},
  {"reduce_scatter.lua", {"ranks=8", "comm=multimem", "fallback=emulate"},
   {SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "add.f32"}, {"multimem.st"}},
  /* all_gather: a bit copy (no arithmetic, no conversion); multimem: multimem.st of the own chunk,
   * fenced (membar.sys) before the release signal, and never an ld_reduce */
  {"all_gather.lua", {0}, {SIGNAL_PTX, "ld.global.v4.u32", "st.global.v4.u32", "st.global.u32"},
   {"multimem", "griddepcontrol", "add.f32", "cvt.rn", "cvt.f32"}},
  {"all_gather.lua", {"dtype=f16", "threads=64"}, {SIGNAL_PTX, "ld.global.v4.u32", "ld.global.u16", "st.global.u16"},
   {"multimem", "cvt.rn", "cvt.f32"}},
  {"all_gather.lua", {"comm=multimem"}, {SIGNAL_PTX, "multimem.st.relaxed.sys.global.v4.f32", "membar.sys"},
   {"multimem.ld_reduce", "add.f32"}},
  {"all_gather.lua", {"comm=multimem", "fallback=emulate", "dtype=bf16"},
   {SIGNAL_PTX, "multimem.st.relaxed.sys.global.v4.bf16x2", "st.global.v4.u32"}, {"multimem.ld_reduce", "cvt.rn"}},
  {"all_gather.lua", {"pdl=true", "dtype=bf16"}, {SIGNAL_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"},
   {"multimem"}},
  {"all_gather.lua", {"ranks=2", "dtype=f16"}, {SIGNAL_PTX, "ld.global.v4.u32", "st.global.v4.u32"}, {"multimem", "cvt.rn"}},
  {"all_gather.lua", {"ranks=8", "comm=multimem", "fallback=emulate"},
   {SIGNAL_PTX, "multimem.st.relaxed.sys.global.v4.f32"}, {"multimem.ld_reduce", "add.f32"}},
  /* allreduce_norm: the allreduce's protocol around rmsnorm's norm; one_shot_ll sends its words with
   * their epochs (no release/acquire); the multimem twin and the cluster exchange where asked */
  {"allreduce_norm.lua", {0}, {ARN_SIGNAL_PTX, "rsqrt.approx.f32", "cvt.rn.bf16x2.f32", "ld.global.L1::no_allocate.v4.u32"},
   {"multimem", "griddepcontrol"}},
  {"allreduce_norm.lua", {"algo=two_shot", "dtype=f16"}, {ARN_SIGNAL_PTX, "rsqrt.approx.f32", "cvt.rn.f16x2.f32"}, {"multimem"}},
  {"allreduce_norm.lua", {"algo=one_shot_ll", "dtype=f32", "max_cols=1024"},
   {"st.relaxed.sys.global.u64", "ld.relaxed.sys.global.u64", "%globaltimer", "_param_6[136]", "rsqrt.approx.f32"},
   {"st.release.sys", "multimem"}},
  {"allreduce_norm.lua", {"algo=two_shot", "comm=multimem", "fallback=emulate"},
   {ARN_SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2", "multimem.st.relaxed.sys.global.v4.bf16x2"}, {0}},
  {"allreduce_norm.lua", {"cluster=4", "max_cols=8192", "rows_per_cta=1"}, {ARN_SIGNAL_PTX, CLUSTER_PTX}, {"multimem"}},
  {"allreduce_norm.lua", {"pdl=true", "residual=false", "eps=arg", "dtype=f32", "max_cols=2048"},
   {ARN_SIGNAL_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, {"multimem"}},
  /* generated for one rank: the norm of x alone, no signal, no poll, no timer (the epoch is still read
   * and published); for a known larger world, the protocol as for any */
  {"allreduce_norm.lua", {"ranks=1", "algo=two_shot"}, {"rsqrt.approx.f32", "_param_6[136]", "cvt.rn.bf16x2.f32"},
   {"st.release.sys", "ld.acquire.sys", "%globaltimer", "ld.relaxed.sys", "multimem"}},
  {"allreduce_norm.lua", {"ranks=4", "algo=two_shot", "min_blocks=2"}, {ARN_SIGNAL_PTX, ".minnctapersm 2", "rsqrt.approx.f32"},
   {"multimem"}},
  {"allreduce_norm.lua", {"quant=fp8_e4m3"}, {ARN_FP8_PTX, "st.global.u64"}, {"multimem"}},
  {"allreduce_norm.lua", {"quant=fp8_e4m3", "dtype=f32", "max_cols=1001", "cluster=4", "rows_per_cta=1"},
   {ARN_FP8_PTX, CLUSTER_PTX, "st.global.u32"}, {"multimem"}},
  {"allreduce_norm.lua", {"quant=fp8_e4m3", "algo=one_shot_ll", "dtype=f16", "ranks=4"},
   {"st.relaxed.sys.global.u64", "ld.relaxed.sys.global.u64", "_param_7[136]", "cvt.rn.satfinite.e4m3x2.f32"},
   {"st.release.sys", "multimem"}},
  /* gemm_rs: the GEMM whose epilogue stores f32 partial tiles (st.global.v2.f32) into the owners'
   * staging; DONE as a release store, the waits relaxed polls closed by fence.acq_rel.sys, their
   * stop OR-ed over the consumers (barrier.cta.red.or); the f32 fold of 16-byte loads, rounded once
   * (cvt.rn.bf16x2.f32).  weft::Comm is _param_8 after c, a, b, m, n, k, ta, tb.  No atomics on
   * the data (cp.reduce.async.bulk is reduce = "atomic"'s, below), no multimem */
  {"gemm_rs.lua", {0},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", B_ROW_PTX, "_param_8[136]", "setmaxnreg.inc"},
   {"multimem", "cp.reduce.async.bulk", "cp.async.bulk.tensor.4d", "red.global.add.f32", "atom.global.add.f32"}},
  {"gemm_rs.lua", {0},
   {AG_SIGNAL_PTX, "st.global.v2.f32", "add.f32", "ld.global.v4.u32", "cvt.rn.bf16x2.f32", "barrier.cta.red.or.pred"},
   {"multimem", "cp.reduce.async.bulk"}},
  /* generated for one rank: the plain GEMM's direct epilogue, no staging, no signal, no wait */
  {"gemm_rs.lua", {"ranks=1"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "_param_8[136]", "cvt.rn.bf16x2.f32"},
   {"st.release.sys", "%globaltimer", "st.global.v2.f32", "fence.acq_rel.sys", "multimem"}},
  {"gemm_rs.lua", {"ranks=4", "dtype=f16", "b_layout=col", "tile.n=128", "mma=pingpong"},
   {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX, AG_SIGNAL_PTX, "st.global.v2.f32",
    "cvt.rn.f16x2.f32", "bar.arrive"},
   {B_ROW_PTX, "bf16", "multimem"}},
  {"gemm_rs.lua", {"split_k=2", "tile.n=128"}, {GEMM_PTX, AG_SIGNAL_PTX, "st.global.v2.f32", "barrier.cluster", "mapa"},
   {"multimem"}},
  {"gemm_rs.lua", {"cluster.m=2", "tile.m=64", "consumers=1", "tile.n=128"},
   {GEMM_PTX, AG_SIGNAL_PTX, "st.global.v2.f32", "multicast::cluster"}, {"multimem"}},
  /* gemm_rs comm = "multimem": the partials stored home (st.global.v2.f32), DONE, then the owner's
   * multimem.ld_reduce of f32 vectors (the twin: 16-byte loads from every rank, rank order) */
  {"gemm_rs.lua", {"comm=multimem", "fallback=emulate"},
   {GEMM_PTX, AG_SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "st.global.v2.f32"},
   {"multimem.st", "cp.reduce.async.bulk", "cp.async.bulk.global"}},
  {"gemm_rs.lua", {"comm=multimem", "fallback=emulate", "ranks=8", "dtype=f16", "b_layout=col", "tile.n=128"},
   {GEMM_PTX, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "cvt.rn.f16x2.f32", "ld.global.v4.f32"},
   {"multimem.st", "bf16"}},
  /* gemm_rs comm = "tma" (ordered): atomic's slices and bulk path with plain bulk copies into the
   * owner's slot, completion and the proxy fence before DONE, then the rank-order fold */
  {"gemm_rs.lua", {"comm=tma"},
   {GEMM_PTX, "cp.async.bulk.global.shared::cta.bulk_group", "cp.async.bulk.wait_group 0", "fence.proxy.async.global",
    "cvt.rn.bf16x2.f32"},
   {"cp.reduce.async.bulk", "st.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"comm=tma"}, {AG_SIGNAL_PTX, "barrier.cta.red.or.pred", "ld.global.v4.u32"}, {"multimem"}},
  {"gemm_rs.lua", {"comm=tma", "ranks=8", "dtype=f16", "b_layout=col", "tile.n=128", "mma=pingpong"},
   {GEMM_PTX, "cp.async.bulk.global.shared::cta.bulk_group", "cvt.rn.f16x2.f32"}, {"cp.reduce.async.bulk", "multimem"}},
  /* gemm_rs fold = "tiles": the own tiles folded in the epilogue after a flag per tile (release
   * stores and relaxed polls + fence.acq_rel.sys, a named barrier per warpgroup), no DONE round;
   * the kernel-wide checks below hold it to no spills and no serialised WGMMAs */
  {"gemm_rs.lua", {"fold=tiles"},
   {GEMM_PTX, AG_SIGNAL_PTX, "st.global.v2.f32", "ld.global.v2.f32", "cvt.rn.bf16x2.f32"},
   {"multimem", "cp.reduce.async.bulk"}},
  {"gemm_rs.lua", {"fold=tiles", "ranks=8", "dtype=f16", "b_layout=col"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v2.f32", "cvt.rn.f16x2.f32", "barrier.cta.red.or.pred"}, {"multimem"}},
  {"gemm_rs.lua", {"fold=tiles", "mma=pingpong", "tile.n=128", "ranks=2"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v2.f32", "bar.arrive"}, {"multimem"}},
  {"gemm_rs.lua", {"fold=tiles", "split_k=2", "tile.n=128", "ranks=4"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v2.f32", "barrier.cluster", "mapa"}, {"multimem"}},
  /* reducer = "producer": the loading warpgroup's warps 1-3 (72 registers, the consumers 216) wait
   * for every rank's flag of each own tile and fold with 16-byte loads of the slots, storing 8-byte
   * vectors of c; the consumers send every tile and never fold (no fold_into's 8-byte loads) */
  {"gemm_rs.lua", {"fold=tiles", "reducer=producer"},
   {GEMM_PTX, "setmaxnreg.dec.sync.aligned.u32 72", "setmaxnreg.inc.sync.aligned.u32 216", "ld.global.v4.f32"},
   {"ld.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"fold=tiles", "reducer=producer"},
   {AG_SIGNAL_PTX, "st.global.v2.u32", "barrier.cta.red.or.pred", "cvt.rn.bf16x2.f32"}, {"ld.global.v2.f32"}},
  {"gemm_rs.lua", {"fold=tiles", "reducer=producer", "ranks=8", "dtype=f16", "b_layout=col"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v4.f32", "cvt.rn.f16x2.f32"}, {"ld.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"fold=tiles", "reducer=producer", "mma=pingpong", "tile.n=128", "ranks=3"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v4.f32", "bar.arrive"}, {"ld.global.v2.f32", "multimem"}},
  /* gemm_rs reduce = "atomic": the lanes stage a warp's 8 x 64 f32 slice in shared memory
   * (st.shared.v2.f32), fence.proxy.async.shared::cta before the async proxy reads it, and each
   * row goes by the 1-D TMA bulk reduce-add into the owner's staging (.add.f32, bulk_group); a
   * slice is rewritten after wait_group.read; before DONE's release the adds complete
   * (wait_group 0) and fence.proxy.async.global; the waits as ordered's; then the owner's
   * conversion (16-byte f32 loads, cvt.rn.bf16x2.f32) and its zeroing.  No thread stores of
   * partials, no per-element atomics, no multimem */
  {"gemm_rs.lua", {"reduce=atomic"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "_param_8[136]",
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32", "cp.async.bulk.commit_group", "st.shared.v2.f32",
    "fence.proxy.async.shared::cta"},
   {"st.global.v2.f32", "red.global.add.f32", "atom.global.add.f32", "multimem", "cp.async.bulk.tensor.4d"}},
  {"gemm_rs.lua", {"reduce=atomic"},
   {AG_SIGNAL_PTX, "cp.async.bulk.wait_group.read 0;", "cp.async.bulk.wait_group 0;", "fence.proxy.async.global",
    "ld.global.v4.f32", "cvt.rn.bf16x2.f32", "barrier.cta.red.or.pred"},
   {"st.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"reduce=atomic", "ranks=4", "dtype=f16", "b_layout=col", "tile.n=128", "mma=pingpong"},
   {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX, AG_SIGNAL_PTX,
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32", "fence.proxy.async.global", "cvt.rn.f16x2.f32",
    "bar.arrive"},
   {B_ROW_PTX, "bf16", "st.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"reduce=atomic", "split_k=2", "tile.n=128"},
   {GEMM_PTX, AG_SIGNAL_PTX, "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32", "barrier.cluster", "mapa"},
   {"st.global.v2.f32", "multimem"}},
  {"gemm_rs.lua", {"reduce=atomic", "cluster.m=2", "tile.m=64", "consumers=1", "tile.n=128"},
   {GEMM_PTX, AG_SIGNAL_PTX, "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32", "multicast::cluster"},
   {"st.global.v2.f32", "multimem"}},
  /* atomic for one rank: the plain GEMM's epilogue, as ordered's (no slices, no bulk adds, no signal) */
  {"gemm_rs.lua", {"reduce=atomic", "ranks=1"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "_param_8[136]", "cvt.rn.bf16x2.f32"},
   {"cp.reduce.async.bulk", "st.shared.v2.f32", "fence.proxy.async.global", "st.release.sys", "%globaltimer",
    "st.global.v2.f32", "fence.acq_rel.sys", "multimem"}},
  /* gemm_ar: gemm_rs's GEMM and DONE, then FOLDED (a second release) and the gather's 16-byte
   * loads; threadload has no multimem, multimem's twin has both switch instructions compiled
   * (ld_reduce of the f32 partials, st of the rounded rows) and the fence that orders them */
  {"gemm_ar.lua", {0},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "_param_8[136]", "st.global.v2.f32"},
   {"multimem", "cp.reduce.async.bulk", "red.global.add.f32", "atom.global.add.f32"}},
  {"gemm_ar.lua", {0},
   {AG_SIGNAL_PTX, "cvt.rn.bf16x2.f32", "barrier.cta.red.or.pred", "ld.global.v4.u32", "add.f32"},
   {"multimem", "cp.reduce.async.bulk"}},
  {"gemm_ar.lua", {"comm=multimem", "fallback=emulate"},
   {AG_SIGNAL_PTX, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "multimem.st.relaxed.sys.global.v4.bf16x2",
    "membar.sys", "st.global.v2.f32", "cvt.rn.bf16x2.f32"},
   {"cp.reduce.async.bulk", "red.global.add.f32"}},
  {"gemm_ar.lua", {"comm=multimem", "fallback=emulate", "ranks=8", "dtype=f16", "b_layout=col", "tile.n=128"},
   {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX, "multimem.st.relaxed.sys.global.v4.f16x2",
    "cvt.rn.f16x2.f32"},
   {B_ROW_PTX, "bf16"}},
  /* fold = "tiles": gemm_rs's per-tile fold, then FOLDED and the gather */
  {"gemm_ar.lua", {"fold=tiles"}, {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v2.f32", "barrier.cta.red.or.pred"}, {"multimem"}},
  {"gemm_ar.lua", {"fold=tiles", "ranks=8", "mma=pingpong", "tile.n=128", "dtype=f16"},
   {GEMM_PTX, AG_SIGNAL_PTX, "ld.global.v2.f32", "cvt.rn.f16x2.f32", "bar.arrive"}, {"multimem"}},
  /* one rank: gemm_rs's plain epilogue, no staging, no signal */
  {"gemm_ar.lua", {"ranks=1"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "_param_8[136]", "cvt.rn.bf16x2.f32"},
   {"st.release.sys", "%globaltimer", "st.global.v2.f32", "fence.acq_rel.sys", "multimem"}},
  /* family gemm: weft's GEMM alone.  No comm at all; two consumer warpgroups take
   * registers from the producer (setmaxnreg), one consumer keeps the launch-bound share */
  {"gemm.lua", {0},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", B_ROW_PTX, "setmaxnreg.inc.sync.aligned.u32",
    "setmaxnreg.dec.sync.aligned.u32", "wgmma.wait_group.sync.aligned"},
   {"st.release.sys", "cp.async.bulk.tensor.4d", "[136]", "multimem", B_COL_PTX, "%globaltimer", "multicast::cluster",
    "barrier.cluster", "mapa"}},
  {"gemm.lua", {"dtype=f16", "b_layout=col", "tile.n=128", "stages=6", "consumers=1", "tile.m=64"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX},
   {B_ROW_PTX, "setmaxnreg", "st.release.sys", "bf16"}},
  {"gemm.lua", {"dtype=f16"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", B_ROW_PTX}, {"bf16", "st.release.sys"}},
  {"gemm.lua", {"b_layout=col"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", B_COL_PTX}, {B_ROW_PTX}},
  /* tiles: 256 rows over two consumers (two m64 groups each), 128 x 128, 64 rows on one
   * consumer, n = 192, four m64 groups on one consumer, a deep ring of small stages */
  {"gemm.lua", {"tile.m=256", "tile.n=128", "consumers=2"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", B_ROW_PTX, "setmaxnreg.inc"}, {"st.release.sys"}},
  {"gemm.lua", {"tile.n=128", "stages=4"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"},
   {"bar.arrive"}},
  {"gemm.lua", {"tile.m=64", "consumers=1"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"}, {"setmaxnreg"}},
  /* 192-row tiles over three consumer warpgroups (512 threads): the producer gives up all but 32
   * registers and each consumer takes 160 (96 accumulators at 192 x 192, no spill: checked below);
   * B multicast to a cluster of two along M; at 192 x 128 (64 accumulators) nobody moves registers */
  {"gemm.lua", {"tile.m=192", "tile.n=192", "consumers=3", "stages=3", "cluster.m=2"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", B_ROW_PTX, "setmaxnreg.dec.sync.aligned.u32 32",
    "setmaxnreg.inc.sync.aligned.u32 160", "multicast::cluster", "barrier.cluster"},
   {"st.release.sys", "setmaxnreg.inc.sync.aligned.u32 232"}},
  {"gemm.lua", {"dtype=f16", "b_layout=col", "tile.m=192", "tile.n=192", "consumers=3", "stages=4", "epilogue=direct"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16", B_COL_PTX, "setmaxnreg.inc.sync.aligned.u32 160"},
   {B_ROW_PTX, "multicast::cluster", "bf16"}},
  /* ... at four stages, each consumer's C through one buffer (every chunk's store waits for the
   * last one's read: a bulk wait and a second barrier per chunk) */
  {"gemm.lua", {"tile.m=192", "tile.n=192", "consumers=3", "stages=4", "cluster.m=2", "epilogue=tma"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
    "cp.async.bulk.wait_group.read 0", "multicast::cluster"},
   {"st.release.sys"}},
  {"gemm.lua", {"tile.m=192", "tile.n=128", "consumers=3", "stages=4"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", B_ROW_PTX}, {"setmaxnreg"}},
  /* (row-major B takes N in multiples of 8 only: the direct stores are 32-bit pairs, never one
   * element) */
  {"gemm.lua", {"tile.n=192", "stages=5", "group=4", "epilogue=direct"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16",
   "st.global.u32"}, {"st.global.u16"}},
  /* any_n (column-major B, direct stores) takes any N: an odd N stores one element at a time (its
   * rows' pairs are off 4-byte lines), an even one in 32-bit pairs; no TMA store.  Without it (the
   * thin tile below) the same stores have no single-element path */
  {"gemm.lua", {"b_layout=col", "epilogue=direct", "any_n=true", "tile.n=192", "stages=4"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", "st.global.u32", "st.global.u16"},
   {"cp.async.bulk.tensor.2d.global.shared::cta"}},
  {"gemm.lua", {"tile.m=256", "tile.n=64", "consumers=1", "dtype=f16", "b_layout=col"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", B_COL_PTX}, {"setmaxnreg"}},
  {"gemm.lua", {"tile.m=64", "tile.n=64", "consumers=1", "stages=8", "group=1"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"}, {0}},
  /* the deepest ring a 64 x 64 tile holds (13 x 16 KB, 218 KB with the barriers and C's buffer),
   * as cuBLASLt runs it at M = 64-128 (gemm.MAX_STAGES_NARROW) */
  {"gemm.lua", {"tile.m=64", "tile.n=64", "consumers=1", "stages=13", "b_layout=col", "epilogue=tma", "pdl=true"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "_ZN7GemmCfg6STAGESE = 13;",
    "griddepcontrol.wait"}, {0}},
  {"gemm.lua", {"tile.n=128", "stages=7", "group=32", "epilogue=direct"}, {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16"}, {0}},
  /* fused, as shipped (comm auto: threadload): the comm warps pull every shard (bar_or) into
   * comm.local and signal PULLED; the TMA reads them through a 4-d map.  Cooperative consumers:
   * no named-barrier hand-off (bar.arrive).  The launch epoch: read (volatile) and published by
   * the last block to retire (atom.add, volatile store); at one rank only at retire
   * (launch_retire_unread: the order is a runtime branch, which mps.ag_fused_*.np1 runs) */
  {"ag_gemm.lua", {0},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", AG_SIGNAL_PTX,
    "fence.proxy.async.global", "_param_9[136]", "cp.async.bulk.tensor.2d", "setmaxnreg.inc",
    "barrier.cta.red.or.pred", "ld.global.v4.u32", "ld.volatile.global.u64", "atom.global.add.u32",
    "st.volatile.global.u64"},
   {"multimem", "bar.arrive", "multicast::cluster", "barrier.cluster"}},
  {"ag_gemm.lua", {"comm=threadload", "b_layout=col", "schedule=rank_order"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async", B_COL_PTX, AG_SIGNAL_PTX, "fence.proxy.async.global",
    "_param_9[136]", "barrier.cta.red.or.pred", "ld.global.v4.u32"},
   {"multimem", B_ROW_PTX}},
  /* fused, comm tma: the TMA reads peers' shards through a 4-d map, after the waits' acquire
   * and a proxy fence; no pull (no barrier.cta.red.or) and no multimem */
  {"ag_gemm.lua", {"comm=tma"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", AG_SIGNAL_PTX,
    "fence.proxy.async.global", "_param_9[136]", "cp.async.bulk.tensor.2d", "setmaxnreg.inc"},
   {"multimem", "barrier.cta.red.or.pred"}},
  /* fused, comm multimem: the owner's multimem.st (and the unicast twin beside it) */
  {"ag_gemm.lua", {"comm=multimem", "fallback=emulate"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async", AG_SIGNAL_PTX, "fence.proxy.async.global", "_param_9[136]", MM_ST_BF16},
   {"barrier.cta.red.or.pred"}},
  {"ag_gemm.lua", {"comm=multimem", "dtype=f16"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", AG_SIGNAL_PTX,
    "multimem.st.relaxed.sys.global.v4.f16x2"}, {"bf16"}},
  /* fused over the other axes: B column-major, f16, small tiles, rank order, one consumer */
  {"ag_gemm.lua", {"comm=tma", "b_layout=col", "dtype=f16", "tile.n=128", "stages=6", "schedule=rank_order"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX, AG_SIGNAL_PTX,
    "_param_9[136]"}, {B_ROW_PTX, "multimem"}},
  {"ag_gemm.lua", {"tile.m=64", "consumers=1", "comm=threadload", "group=8"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n256k16", AG_SIGNAL_PTX, "barrier.cta.red.or.pred"},
   {"setmaxnreg", "multimem"}},
  {"ag_gemm.lua", {"tile.m=256", "tile.n=128", "comm=tma"},
   {"cp.async.bulk.tensor.4d", "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", AG_SIGNAL_PTX, "setmaxnreg.inc"},
   {"multimem"}},
  /* mma pingpong: each consumer warpgroup owns whole tiles, taking turns; their main loops
   * hand over through named barriers (bar.sync / bar.arrive) */
  {"gemm.lua", {"tile.n=128", "mma=pingpong"},
   {GEMM_PTX, "bar.arrive", "wgmma.mma_async.sync.aligned.m64n128k16", B_ROW_PTX, "setmaxnreg.inc"},
   {"st.release.sys", "multimem", "st.shared.f32"}},
  /* family gemm's pingpong holds up to 192 accumulators per warpgroup (128 x 192, 128 x 176), no
   * spill (checked below); at five stages of 128 x 176 each warpgroup's C goes through one buffer
   * (every chunk's store waits for the last one's read), and a narrow last chunk of 48 columns */
  {"gemm.lua", {"tile.n=192", "mma=pingpong", "stages=4", "cluster.m=2"},
   {GEMM_PTX, "bar.arrive", "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", B_ROW_PTX,
    "setmaxnreg.inc.sync.aligned.u32 232", "multicast::cluster", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"},
   {"st.release.sys", "st.shared.f32"}},
  {"gemm.lua", {"tile.n=176", "mma=pingpong", "stages=5", "b_layout=col", "dtype=f16"},
   {GEMM_PTX, "bar.arrive", "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16", B_COL_PTX,
    "setmaxnreg.inc.sync.aligned.u32 232", "cp.async.bulk.wait_group.read 0"},
   {"multicast::cluster", "st.shared.f32"}},
  /* cooperative_n: the two consumers split each tile by columns, each all its rows by half its
   * width (three m64n96 WGMMAs per k-step at 192 x 192, no spill: checked below); each 64-row
   * group leaves in boxes of its own (a narrow one of 32 columns), through two buffers in turn;
   * row-major B: each consumer its own 64-column boxes (128 x 256: m64n128) */
  {"gemm.lua", {"tile.m=192", "tile.n=192", "mma=cooperative_n", "stages=4", "b_layout=col", "cluster.m=2", "epilogue=tma"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16", B_COL_PTX, "setmaxnreg.inc.sync.aligned.u32 232",
    "multicast::cluster", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "_ZN7GemmCfg6COOP_NE = 1;"},
   {"m64n192k16", "bar.arrive", "st.shared.f32"}},
  /* ... at three stages a buffer per chunk: each 64-row group's 64-column chunk (8 KB), then its
   * narrow one dense (64 rows x 64 bytes), so the groups' buffers start 12 KB apart from C's stage
   * at 148480: 160768, 173056 (whole 8 KB buffers would put group 1 at 164864) */
  {"gemm.lua", {"tile.m=192", "tile.n=192", "mma=cooperative_n", "stages=3", "b_layout=col", "cluster.m=2", "epilogue=tma"},
   {GEMM_PTX, "_ZN7GemmCfg8EPI_BUFSE = 6;", "_ZN7GemmCfg14SMEM_EPI_STAGEE = 36864;", ", 160768;", ", 173056;",
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"},
   {", 164864;", "st.shared.f32"}},
  /* ... and row-major B whose halves are 96 columns: 32-column boxes with the 64-byte swizzle */
  {"gemm.lua", {"tile.m=192", "tile.n=192", "mma=cooperative_n", "stages=4", "cluster.m=2", "epilogue=tma"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16", B_ROW_PTX, "_ZN7GemmCfg6B_SW64E = 1;",
    "multicast::cluster"},
   {"m64n192k16"}},
  /* ... at five stages of 128 x 192 each consumer's chunks go through one buffer: every chunk's
   * store waits for the last one's read */
  {"gemm.lua", {"tile.n=192", "mma=cooperative_n", "stages=5", "epilogue=tma"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16", "_ZN7GemmCfg6B_SW64E = 1;",
    "_ZN7GemmCfg8EPI_BUFSE = 1;", "cp.async.bulk.wait_group.read 0"},
   {"m64n192k16"}},
  {"gemm.lua", {"tile.n=256", "mma=cooperative_n", "stages=4", "epilogue=tma", "dtype=f16"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_ROW_PTX, "_ZN7GemmCfg6COOP_NE = 1;"},
   {"m64n256k16", "bar.arrive"}},
  /* ... 176 wide: halves of 88 columns, each 64-row group's narrow chunk 24 wide, whose odd last
   * 8-column group leaves by stmatrix .x2 */
  {"gemm.lua", {"tile.n=176", "mma=cooperative_n", "stages=4", "b_layout=col", "epilogue=tma"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n88k16.f32.bf16.bf16", B_COL_PTX, "stmatrix.sync.aligned.m8n8.x4.shared.b16",
    "stmatrix.sync.aligned.m8n8.x2.shared.b16", "_param_9"},
   {"st.shared.u32", "m64n176k16"}},
  {"gemm.lua", {"tile.m=256", "tile.n=160", "mma=cooperative_n", "stages=3", "b_layout=col", "epilogue=direct"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16", B_COL_PTX, "st.global.u32"},
   {"cp.async.bulk.tensor.2d.global.shared::cta"}},
  {"ag_gemm.lua", {"comm=threadload", "tile.n=128", "mma=pingpong"},
   {"bar.arrive", "wgmma.mma_async.sync.aligned.m64n128k16", "cp.async.bulk.tensor.4d", AG_SIGNAL_PTX,
    "_param_9[136]", "barrier.cta.red.or.pred"},
   {"multimem"}},
  /* clusters: the shared operand is loaded once per cluster and multicast (B along M, A along
   * N); consumers release a stage in every CTA (mapa + remote mbarrier arrive); the cluster
   * synchronises after barrier init and before exit */
  {"gemm.lua", {"cluster.m=2"},
   {GEMM_PTX, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.wait.acquire",
    B_ROW_PTX},
   {"st.release.sys", "cp.async.bulk.tensor.4d"}},
  {"gemm.lua", {"cluster.n=2", "b_layout=col", "tile.n=128", "mma=pingpong"},
   {GEMM_PTX, "multicast::cluster", "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.arrive.release", B_COL_PTX,
    "bar.arrive"},
   {"st.release.sys"}},
  {"ag_gemm.lua", {"cluster.n=2"},
   {"cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster", AG_SIGNAL_PTX,
    "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.wait.acquire", "barrier.cta.red.or.pred"},
   {"multimem"}},
  {"ag_gemm.lua", {"cluster.m=2", "comm=tma", "b_layout=col"},
   {"cp.async.bulk.tensor.4d", "multicast::cluster", AG_SIGNAL_PTX, "mbarrier.arrive.shared::cluster.b64", B_COL_PTX},
   {"multimem", "barrier.cta.red.or"}},
  /* split-K over a cluster of two: the second CTA's partial sums go into the first's shared
   * memory (st.shared::cluster), handed over on mbarriers at cluster scope; no multicast */
  {"gemm.lua", {"split_k=2", "tile.n=128"},
   {GEMM_PTX, "st.shared::cluster.v4.f32", "mbarrier.try_wait.parity.acquire.cluster", "mbarrier.arrive.release.cluster",
    "barrier.cluster.wait.acquire", "ld.shared.v4.f32"},
   {"multicast::cluster", "st.release.sys"}},
  /* split-K over clusters of 4 and 8 CTAs along K: the same hand-over in a fixed tree (each
   * receiver signals its sender's go barrier before reading, release at cluster scope) */
  {"gemm.lua", {"split_k=4", "tile.m=64", "tile.n=128", "consumers=1", "b_layout=col"},
   {GEMM_PTX, "st.shared::cluster.v4.f32", "mbarrier.try_wait.parity.acquire.cluster", "mbarrier.arrive.release.cluster",
    "mapa.shared::cluster", B_COL_PTX},
   {"multicast::cluster", "st.release.sys"}},
  /* the split tail: whole tiles for the full waves, the hand-over only for the last one's */
  {"gemm.lua", {"split_k=2", "split_k_tail=true", "tile.n=128", "stages=4"},
   {GEMM_PTX, "st.shared::cluster.v4.f32", "mbarrier.try_wait.parity.acquire.cluster", "mbarrier.arrive.release.cluster"},
   {"multicast::cluster"}},
  /* stream-K: the partial tiles through the workspace (the parameter after c, a, b, m, n, k, ta,
   * tb, tc): coalesced f32 stores, a release of the CTA's flag, the owner's acquire poll bounded
   * by %globaltimer, L2 loads of the partials, the trap; no cluster hand-over.  Swapped, thin and
   * 128 x 128 with the TMA epilogue */
  {"gemm.lua", {"stream_k=true", "tile.n=128", "stages=4"},
   {GEMM_PTX, STREAMK_PTX, "_param_9"}, {"st.shared::cluster", "multicast::cluster", "call"}},
  {"gemm.lua", {"stream_k=true", "swap_ab=true", "tile.m=200", "tile.n=64", "consumers=1", "stages=6", "b_layout=col",
                "epilogue=direct"},
   {GEMM_PTX, STREAMK_PTX, "_param_8", B_COL_PTX}, {"st.shared::cluster", "multicast::cluster", "call"}},
  {"gemm.lua", {"stream_k=true", "tile.m=16", "tile.n=128", "consumers=1", "stages=8", "b_layout=col", "dtype=f16",
                "pdl=true"},
   {GEMM_PTX, STREAMK_PTX, "griddepcontrol.wait"}, {"st.shared::cluster", "call"}},
  {"gemm.lua", {"split_k=8", "tile.n=128", "epilogue=direct", "dtype=f16"},
   {"st.shared::cluster.v4.f32", "mbarrier.try_wait.parity.acquire.cluster", "mbarrier.arrive.release.cluster"},
   {"multicast::cluster"}},
  {"ag_gemm.lua", {"split_k=2", "tile.n=128", "comm=multimem", "fallback=emulate"},
   {"st.shared::cluster.v4.f32", "mbarrier.try_wait.parity.acquire.cluster", "cp.async.bulk.tensor.4d", AG_SIGNAL_PTX,
    MM_ST_BF16},
   {"multicast::cluster"}},
  /* programmatic dependent launch: every thread waits for the previous grid, then lets the next
   * one be scheduled; without pdl neither instruction appears */
  {"gemm.lua", {"pdl=true"}, {GEMM_PTX, "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, {0}},
  {"gemm.lua", {"pdl=false"}, {GEMM_PTX}, {"griddepcontrol"}},
  /* the TMA-store epilogue: C swizzled into shared memory, a proxy fence, TMA stores (2-d over C;
   * 3-d per shard in the fused kernel), the stage rewritten only after the stores read it, and
   * no wait for the writes themselves (they complete with the grid) */
  /* (the stage is written through 32-bit shared addresses, never generic stores: those cost 2 %
   * of a 8192^3 GEMM; four column pairs of a lane per stmatrix, not one per st.shared.u32) */
  {"gemm.lua", {"epilogue=tma", "stages=3"},
   {GEMM_PTX, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
    "cp.async.bulk.wait_group.read", "fence.proxy.async.shared::cta", "stmatrix.sync.aligned.m8n8.x4.shared.b16"},
   {"st.global.u32", "cp.async.bulk.tensor.3d", "cp.async.bulk.wait_group 0", "\tst.u32", "st.shared.u32", "stmatrix.sync.aligned.m8n8.x2"}},
  /* 128 x 256 with four stages: C leaves in 64-column chunks through two buffers per warpgroup, so
   * the ring and the staging fit 227 KB together (with the B multicast of a cluster of two) */
  {"gemm.lua", {"epilogue=tma", "stages=4", "cluster.m=2"},
   {GEMM_PTX, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read",
    "fence.proxy.async.shared::cta", "stmatrix.sync.aligned.m8n8.x4.shared.b16", "multicast::cluster", "m64n256k16"},
   {"st.global.u32", "cp.async.bulk.tensor.3d", "st.shared.u32"}},
  /* a tile 176 wide (column-major B): m64n176k16, B's 176-row box (88 per CTA of a cluster along
   * M), and C's last 48 columns through a second, unswizzled map (the kernel's tenth parameter, after c, a, b, m, n, k, ta, tb, tc) */
  {"gemm.lua", {"epilogue=tma", "b_layout=col", "tile.n=176", "stages=5", "cluster.m=2"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16",
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "multicast::cluster", "_param_9"},
   {"st.global.u32", "_param_10"}},
  /* 256 x 160 over two consumers (column-major B): 160 f32 accumulators per thread, held in the
   * registers the loading warpgroup gives up (setmaxnreg), with no spill (checked below); A
   * multicast along N; C's last 32 columns through the second map */
  {"gemm.lua", {"epilogue=tma", "b_layout=col", "tile.m=256", "tile.n=160", "consumers=2", "stages=3", "cluster.n=2"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32 232",
    "setmaxnreg.dec.sync.aligned.u32 40", "multicast::cluster", "_param_9"},
   {"st.global.u32", "_param_10"}},
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "tile.m=256", "tile.n=160", "consumers=2", "stages=4", "dtype=f16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16", "setmaxnreg.inc.sync.aligned.u32 232"},
   {"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"}},
  /* swap_ab (decode): B's rows are the WGMMA's 64-row side and A's 8 rows its n (m64n8k16), C
   * stored transposed from the accumulators one 16-bit element at a time (no TMA store) */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=8", "tile.n=64", "consumers=1", "stages=16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", "st.global.u16"},
   {"st.global.u32", "cp.async.bulk.tensor.2d.global.shared::cta", "m64n64k16"}},
  /* ... in f16 with split-K: 16 rows of A as n, the partials through distributed shared memory */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=16", "tile.n=128", "consumers=1", "stages=12",
                "split_k=2", "dtype=f16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "st.shared::cluster.v4.f32", "st.global.u16"},
   {"st.global.u32", "m64n128k16"}},
  /* ... 128 rows of A as n over two consumers, each with two 64-row groups of B: the consumers
   * take the producer's registers (128 accumulators each) */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=128", "tile.n=256", "consumers=2", "stages=3"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32", "st.global.u16"},
   {"m64n256k16"}},
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=40", "tile.n=256", "consumers=2", "stages=4"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n40k16.f32.bf16.bf16"}, {"m64n256k16"}},
  /* ... a cluster of 4 along N sharing A's 72-row box (m64n72k16): the CTAs take turns multicasting
   * it, one k-block each, and release every stage in all four; B is each CTA's own (no split-K) */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=72", "tile.n=64", "consumers=1", "stages=12",
                "cluster.n=4"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.wait.acquire", "st.global.u16"},
   {"st.shared::cluster.v4.f32", "st.global.u32"}},
  /* ... clusters along M (B's box in 16-row slices, multicast to the row blocks) and along both
   * (4 x 2: B along M, A's 40 rows by k-block turns along N): every CTA of the cluster releases
   * every stage */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=40", "tile.n=64", "consumers=1", "stages=16",
                "cluster.m=4"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n40k16.f32.bf16.bf16",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.wait.acquire", "st.global.u16"},
   {"st.shared::cluster.v4.f32", "st.global.u32"}},
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "swap_ab=true", "tile.m=40", "tile.n=64", "consumers=1", "stages=16",
                "cluster.m=4", "cluster.n=2", "dtype=f16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n40k16.f32.f16.f16",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
    "mbarrier.arrive.shared::cluster.b64", "barrier.cluster.wait.acquire"},
   {"st.shared::cluster.v4.f32", "st.global.u32"}},
  /* mma kturns: two consumer warpgroups take turns along K on every tile (each the stages of
   * its parity), each holding the whole tile; one hands its sums over through shared memory
   * (st.shared.f32 / ld.shared.f32, one per accumulator) and a named barrier both wait on
   * (bar.sync, every GEMM's; never bar.arrive, whose order compute-sanitizer's racecheck does not see) to the
   * one storing the tile.  Swapped 56 x 64 (28 accumulators: no register shift), 64 x 192 over
   * row-major B by the TMA epilogue (96: the consumers take the producer's registers), a thin
   * 16 x 128 (its WGMMAs' 64 rows summed), 128 x 64 in a multicast cluster along M */
  {"gemm.lua", {"mma=kturns", "consumers=2", "b_layout=col", "swap_ab=true", "tile.m=56", "tile.n=64", "stages=14",
                "epilogue=direct", "pdl=true"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n56k16.f32.bf16.bf16", "st.shared.f32",
    "ld.shared.f32", "st.global.u16", "griddepcontrol.wait"},
   {"setmaxnreg", "multicast::cluster", "st.shared::cluster", "bar.arrive"}},
  {"gemm.lua", {"mma=kturns", "consumers=2", "b_layout=row", "tile.m=64", "tile.n=192", "stages=4", "epilogue=tma"},
   {GEMM_PTX, B_ROW_PTX, "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16", "st.shared.f32",
    "ld.shared.f32", "setmaxnreg.inc.sync.aligned.u32 232", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"},
   {"multicast::cluster", "st.shared::cluster", "bar.arrive"}},
  {"gemm.lua", {"mma=kturns", "consumers=2", "b_layout=col", "tile.m=16", "tile.n=128", "stages=8", "epilogue=direct",
                "dtype=f16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "STAGE_BYTESE = 18432;",
    "st.shared.f32", "ld.shared.f32", "st.global.u32"},
   {"setmaxnreg", "multicast::cluster", "st.shared::cluster", "bar.arrive"}},
  {"gemm.lua", {"mma=kturns", "consumers=2", "b_layout=row", "tile.m=128", "tile.n=64", "stages=6", "cluster.m=2",
                "epilogue=tma"},
   {GEMM_PTX, B_ROW_PTX, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "st.shared.f32",
    "ld.shared.f32", "multicast::cluster", "mbarrier.arrive.shared::cluster.b64"},
   {"setmaxnreg", "st.shared::cluster", "bar.arrive"}},
  /* thin tiles (decode, unswapped, tile.m < 64): A's box is tile.m rows, so full[s] expects
   * (tile.m + tile.n) x 128 bytes, while the m64 WGMMA reads 64 rows from the stage's start (a
   * stage of at least 64 rows): 16 x 80 stores C from the accumulators (32-bit pairs, not
   * swapped); 8 x 32 with split-K and the TMA epilogue expects 5120 bytes in an 8192-byte stage;
   * 24 x 128 over row-major B with the split tail */
  {"gemm.lua", {"epilogue=direct", "b_layout=col", "tile.m=16", "tile.n=80", "consumers=1", "stages=16", "dtype=f16"},
   {GEMM_PTX, B_COL_PTX, "wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16", "STAGE_BYTESE = 12288;", "st.global.u32"},
   {"multicast::cluster", "setmaxnreg", "st.global.u16", "st.shared::cluster"}},
  {"gemm.lua", {"epilogue=tma", "b_layout=col", "tile.m=8", "tile.n=32", "consumers=1", "stages=16", "split_k=2"},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16", "STAGE_BYTESE = 5120;", "SMEM_STAGEE = 8192;",
    "st.shared::cluster.v4.f32", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "_param_9"},
   {"st.global.u32", "multicast::cluster"}},
  {"gemm.lua", {"epilogue=tma", "b_layout=row", "tile.m=24", "tile.n=128", "consumers=1", "stages=9", "split_k=2",
                "split_k_tail=true", "pdl=true"},
   {GEMM_PTX, B_ROW_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "STAGE_BYTESE = 19456;",
    "st.shared::cluster.v4.f32", "griddepcontrol.wait", "st.shared.u32"},
   {"st.global.u32", "multicast::cluster", "_param_9", "stmatrix"}},
  {"gemm.lua", {"epilogue=tma", "b_layout=col", "tile.n=192", "stages=4"},
   {GEMM_PTX, "m64n192k16", "_param_8"}, {"_param_9"}},
  {"ag_gemm.lua", {"epilogue=tma", "tile.n=128", "mma=pingpong", "cluster.m=2"},
   {"cp.async.bulk.tensor.3d.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read", "multicast::cluster",
    AG_SIGNAL_PTX, "stmatrix.sync.aligned.m8n8.x4.shared.b16"},
   {"cp.async.bulk.tensor.2d.global.shared::cta", "\tst.u32", "st.shared.u32"}},
  /* the seed's scalar kernels (256 threads, CUDA cores): no tensor cores, no TMA */
  {"ag_gemm.lua", {"variant=naive_remote", "comm=auto", "tile=auto"},
   {AG_SIGNAL_PTX, "_param_6[136]", "fma.rn.f32", "bar.red.or.pred"},
   {"wgmma.mma_async", "cp.async.bulk", "multimem", "ld.shared.f32"}},
  {"ag_gemm.lua", {"variant=naive_remote", "comm=auto", "tile.m=64", "tile.n=64", "tile.k=32", "b_layout=col", "dtype=f16"},
   {AG_SIGNAL_PTX, "_param_6[136]", "fma.rn.f32"}, {"wgmma.mma_async", "cp.async.bulk", "multimem"}},
  {"ag_gemm.lua", {"variant=threadload_gather", "comm=auto", "tile=auto"},
   {AG_SIGNAL_PTX, "_param_6[136]", "ld.global.v4.u32", "ld.shared.f32", "st.shared.f32", "fma.rn.f32"},
   {"wgmma.mma_async", "cp.async.bulk", "multimem"}},
  {"ag_gemm.lua", {"variant=threadload_gather", "comm=auto", "tile.m=16", "tile.n=64", "tile.k=8", "schedule=rank_order"},
   {AG_SIGNAL_PTX, "_param_6[136]", "ld.shared.f32"}, {"wgmma.mma_async", "multimem"}},
  {"ag_gemm.lua", {"variant=multimem_gather", "comm=auto", "tile=auto", "fallback=emulate"},
   {AG_SIGNAL_PTX, "_param_6[136]", MM_ST_BF16, "ld.shared.f32", "fma.rn.f32"}, {"wgmma.mma_async", "cp.async.bulk"}},
  {"ag_gemm.lua", {"variant=multimem_gather", "comm=auto", "tile.m=64", "tile.n=32", "tile.k=32", "dtype=f16", "b_layout=col"},
   {AG_SIGNAL_PTX, "_param_6[136]", "multimem.st.relaxed.sys.global.v4.f16x2"}, {"wgmma.mma_async", "cp.async.bulk", "bf16"}},
};

static const entry2 multi[] = {
  /* gather_then_gemm: its first kernel only all-gathers; the second is the GEMM of its tile,
   * dtype and layout (family gemm), compiled with it */
  {{"ag_gemm.lua", {"variant=gather_then_gemm", "comm=threadload"},
    {AG_SIGNAL_PTX, "_param_4[136]", "ld.global.v4.u32", "st.global.v4.u32"},
    {"wgmma.mma_async", "cp.async.bulk", "multimem", "fma.rn.f32"}},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", B_ROW_PTX}},
  {{"ag_gemm.lua", {"variant=gather_then_gemm", "comm=multimem", "fallback=emulate"},
    {AG_SIGNAL_PTX, "_param_4[136]", MM_ST_BF16, "ld.global.v4.u32"}, {"wgmma.mma_async", "cp.async.bulk", "fma.rn.f32"}},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"}},
  {{"ag_gemm.lua", {"variant=gather_then_gemm", "comm=multimem", "dtype=f16", "schedule=rank_order", "b_layout=col",
                    "tile.n=128", "epilogue=tma"},
    {AG_SIGNAL_PTX, "_param_4[136]", "multimem.st.relaxed.sys.global.v4.f16x2"}, {"wgmma.mma_async", "bf16"}},
   {GEMM_PTX, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", B_COL_PTX,
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"}},
};

#define N_OF(a) ((int)(sizeof(a) / sizeof *(a)))

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

#define MAX_PARAMS 64
#define COMM_BYTES 136   /* weft::Comm, as runtime/core/comm.c fills it */

/* What the runtime passes (api_launch), in bytes per parameter: the args (pointers and i64 8,
 * i32 and f32 4), a 128-byte CUtensorMap per tensor map, a workspace's pointer, the communicator last. */
static int manifest_sizes(const weft_manifest *m, int *sizes) {
  int n = 0;
  for (int i = 0; i < m->n_args && n < MAX_PARAMS; i++)
    sizes[n++] = !strcmp(m->args[i].type, "ptr") || !strcmp(m->args[i].type, "i64") ? 8 : 4;
  for (int i = 0; i < m->n_tmaps && n < MAX_PARAMS; i++) sizes[n++] = 128;
  if (m->workspace_per_cta > 0 && n < MAX_PARAMS) sizes[n++] = 8;   /* the stream's workspace (a pointer) */
  if (m->comm.signals && n < MAX_PARAMS) sizes[n++] = COMM_BYTES;
  return n;
}

/* What the kernel takes: the sizes of the PTX .entry's parameters, in order; -1 if the entry is
 * missing.  A by-value struct is ".param .align A .b8 NAME[BYTES]", a scalar ".param .TYPE". */
static int ptx_sizes(const char *ptx, const char *entry, int *sizes) {
  char head[512];
  if (snprintf(head, sizeof head, ".entry %s(", entry) >= (int)sizeof head) return -1;
  const char *p = strstr(ptx, head);
  if (!p) return -1;
  p += strlen(head);
  int n = 0;
  for (const char *line = strchr(p, '\n'); line && n < MAX_PARAMS; line = strchr(line + 1, '\n')) {
    const char *l = line + 1;
    while (*l == ' ' || *l == '\t') l++;
    if (*l == ')') break;
    if (strncmp(l, ".param", 6) != 0) continue;
    const char *end = strchr(l, '\n'), *br = strchr(l, '[');
    if (br && (!end || br < end)) { sizes[n++] = atoi(br + 1); continue; }
    static const struct { const char *type; int bytes; } scalars[] = {
      {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4},
      {".u16", 2}, {".s16", 2}, {".b16", 2}, {".u8", 1}, {".s8", 1}, {".b8", 1}};
    int bytes = 0;
    for (size_t i = 0; !bytes && i < sizeof scalars / sizeof *scalars; i++) {
      const char *t = strstr(l, scalars[i].type);
      if (t && (!end || t < end)) bytes = scalars[i].bytes;
    }
    sizes[n++] = bytes;
  }
  return n;
}

static void show_sizes(const char *what, const int *s, int n) {
  printf("  %s:", what);
  for (int i = 0; i < n; i++) printf(" %d", s[i]);
  printf("\n");
}

/* The signature is rendered from the manifest (gen/core/weft.lua): the kernel must take exactly
 * what the runtime passes, so a template that wrote a list of its own fails here. */
static int check_params(weft_kernel *k) {
  const weft_manifest *m = weft_kernel_manifest(k);
  int want[MAX_PARAMS], got[MAX_PARAMS];
  int nw = manifest_sizes(m, want), ng = ptx_sizes(weft_kernel_ptx(k, NULL), m->entry, got);
  if (ng < 0) { printf("FAIL %s: no .entry %s( in the PTX\n", m->name, m->entry); return 0; }
  int same = nw == ng;
  for (int i = 0; same && i < nw; i++) same = want[i] == got[i];
  if (same) return 1;
  printf("FAIL %s: its PTX .entry takes %d parameters that are not the %d the runtime passes (%d args, %d tensor "
         "maps%s); bytes each:\n", m->name, ng, nw, m->n_args, m->n_tmaps, m->comm.signals ? ", the communicator" : "");
  show_sizes("PTX .entry", got, ng);
  show_sizes("manifest  ", want, nw);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: compile_matrix SOURCE_DIR\n"); return 2; }
  weft_ctx *ctx;
  if (weft_ctx_create(&ctx, NULL)) { fprintf(stderr, "cannot create context\n"); return 1; }
  int passed = 0, failed = 0;
  double slowest = 0;
  char slowest_name[256] = "";
  for (int i = 0; i < N_OF(matrix) + N_OF(multi); i++) {
    const entry *e = i < N_OF(matrix) ? &matrix[i] : &multi[i - N_OF(matrix)].e;
    const char *const *must2 = i < N_OF(matrix) ? NULL : multi[i - N_OF(matrix)].must2;
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", argv[1], e->config);
    int n = 0;
    while (n < N_OF(e->sets) && e->sets[n]) n++;
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
    /* every kernel of the config: its parameters are the manifest's; a second one only where
     * the entry expects it, with the features it lists */
    int want_parts = must2 ? 2 : 1;
    if (weft_kernel_count(k) != want_parts) {
      printf("FAIL %s: compiles to %d kernel(s), this entry expects %d\n", name, weft_kernel_count(k), want_parts);
      ok = 0;
    }
    for (int p = 0; p < weft_kernel_count(k); p++) ok &= check_params(weft_kernel_part(k, p));
    if (want_parts == 2 && weft_kernel_count(k) == 2) {
      weft_kernel *k2 = weft_kernel_part(k, 1);
      for (int j = 0; j < N_OF(multi[0].must2) && must2[j]; j++)
        if (!contains(weft_kernel_ptx(k2, NULL), must2[j])) {
          printf("FAIL %s: its second kernel's PTX (%s) lacks '%s'\n", name, weft_kernel_manifest(k2)->name, must2[j]);
          ok = 0;
        }
      if (strstr(weft_kernel_log(k2), "Potential Performance Loss") ||
          (strstr(weft_kernel_log(k2), "bytes spill stores") && !strstr(weft_kernel_log(k2), " 0 bytes spill stores"))) {
        printf("FAIL %s: its second kernel (%s) spills or has its WGMMAs serialised\n", name, weft_kernel_manifest(k2)->name);
        ok = 0;
      }
      if (contains(weft_kernel_ptx(k2, NULL), "st.release.sys")) {
        printf("FAIL %s: its second kernel (%s) signals other ranks; it is a plain GEMM\n", name,
               weft_kernel_manifest(k2)->name);
        ok = 0;
      }
    }
    for (int j = 0; j < N_OF(e->must) && e->must[j]; j++)
      if (!contains(ptx, e->must[j])) { printf("FAIL %s: PTX lacks '%s'\n", name, e->must[j]); ok = 0; }
    for (int j = 0; j < N_OF(e->never) && e->never[j]; j++)
      if (contains(ptx, e->never[j])) { printf("FAIL %s: PTX has '%s', which this config must not emit\n", name, e->never[j]); ok = 0; }
    if (!contains(ptx, ".target sm_90a")) { printf("FAIL %s: PTX is not for sm_90a\n", name); ok = 0; }
    /* ptxas's report (NVRTC log): no kernel of the matrix may spill registers */
    const char *sp = strstr(weft_kernel_log(k), "bytes spill stores");
    if (sp && !strstr(weft_kernel_log(k), " 0 bytes spill stores")) { printf("FAIL %s: spills registers\n", name); ok = 0; }
    /* ... nor have its WGMMAs serialised by ptxas (C7520: correct, but 1.1-1.4x slower on the GPU) */
    if (strstr(weft_kernel_log(k), "Potential Performance Loss")) {
      printf("FAIL %s: ptxas serialises its WGMMAs (%s)\n", name, strstr(weft_kernel_log(k), "Potential Performance Loss"));
      ok = 0;
    }
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
