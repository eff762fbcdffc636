-- gen/families/cluster_reduce.lua: seed 000's cluster_allreduce as a kernel of its own, so the
-- primitive is tested and measured directly: every CTA of every cluster block-reduces its
-- inputs, combines across the cluster, and writes what it got back.
local common = require("gen.core.common")

local F = {
  name = "cluster_reduce",
  template = "templates/cluster_reduce.cu",
  doc = "the cluster allreduce primitive as a kernel: out[cluster][cta][iter][w]",
}

F.fields = {
  common.dtype({ "f32" }),
  common.op(),
  { name = "width", kind = "int", min = 1, max = 8, default = 1, tag = "w",
    doc = "W: values combined per call (the slot holds 2*W)" },
  common.cluster(2),
  common.nonportable(),
  common.threads(128),
  { name = "need_tail_sync", kind = "bool", default = true, tag = "ts",
    doc = "true: a trailing cluster barrier retires the slot; false: alternate two slots" },
  { name = "iters", kind = "int", min = 1, max = 64, default = 1, tag = "i",
    doc = "combines per kernel (exercises slot reuse)" },
  common.exchange(),
}

function F.check(cfg, errs)
  common.check_cluster(cfg, errs)
  if cfg.exchange == "push" and cfg.need_tail_sync then
    errs.add("need_tail_sync", true, 'must be false with exchange = "push" (push alternates two receive arrays)')
  end
end

function F.derive(cfg)
  return {
    values = { op_identity = cfg.op.identity, op_combine = cfg.op.combine, threads = cfg.threads,
               cluster = cfg.cluster, width = cfg.width, iters = cfg.iters,
               need_tail_sync = cfg.need_tail_sync, push = cfg.exchange == "push" },
    block = { cfg.threads, 1, 1 },
    cluster = { cfg.cluster, 1, 1 },
    smem = 0,
    static_smem = 4 * (cfg.threads // 32 * cfg.width + 4 * cfg.width),
    args = {
      { name = "out", type = "ptr", dtype = "f32", role = "out" },
      { name = "in", type = "ptr", dtype = "f32", role = "in" },
      { name = "clusters", type = "i32", role = "size" },
    },
    grid = common.grid_per_cluster("clusters", cfg.cluster),
    limits = { { arg = "clusters", min = 1, max = common.INT_MAX // cfg.cluster } },
  }
end

F.sizes = { "clusters" }
-- cluster and threads are key fields too: the input is [clusters][cluster][iters][threads][width]
-- and each cluster combines its own CTAs, so they change what is computed, not only how fast
F.key = { "dtype", "op", "width", "iters", "cluster", "threads" }

-- The rule (gen/core/auto.lua): exchange = "push" (st.async into every peer, no cluster barrier
-- per combine) was 17-28 % faster per combine than pull at every cluster size and width
-- (bench/RESULTS.md, "The cluster combine: pull vs push"); push alternates two receive arrays,
-- so need_tail_sync = false.  nonportable as the cluster size needs (above 8).  Last: pull with
-- the tail barrier, the family's defaults.
function F.auto(shape, fixed, dev)
  local np = (type(fixed.cluster) == "number" and fixed.cluster or 2) > common.PORTABLE_CLUSTER
  return {
    { exchange = "push", need_tail_sync = false, nonportable = np,
      why = "push: 17-28 % faster per combine than pull (bench/cluster.sh)" },
    { exchange = "pull", need_tail_sync = false, nonportable = np, why = "pull, two slots alternating" },
    { exchange = "pull", need_tail_sync = true, nonportable = np, why = "pull with the tail barrier: the defaults" },
  }
end

-- What the tools need (gen/core/weft.lua's run_spec): the primitive is latency-bound, so it is
-- timed per combine over back-to-back launches, with no baseline.
function F.run(cfg)
  local shape = { clusters = 264 }
  return { sizes = F.sizes, check = { shape }, time = { shape }, metric = "latency", baseline = "none",
           check_cap = { clusters = 64 }, key = F.key }
end

return F
