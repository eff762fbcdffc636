-- gen/families/row_reduce.lua: out[r] = op(x[r][0], ..., x[r][cols-1]) in f32, one row per
-- cluster, combined across the cluster with seed 000's cluster_allreduce.
local common = require("gen.core.common")
local rows = require("gen.core.rows")

local F = {
  name = "row_reduce",
  template = "templates/row_reduce.cu",
  doc = "reduce each row of x[rows][cols] to out[rows] (f32)",
}

F.fields = {
  common.dtype(),
  common.op(),
  common.cluster(1),
  common.nonportable(),
  common.threads(256),
  common.min_blocks(),
  common.persistent(),
  common.exchange(),
  { name = "unroll", kind = "int", values = { 1, 2, 4, 8 }, default = 4, tag = "u",
    doc = "16-byte loads in flight per thread" },
}

function F.check(cfg, errs)
  common.check_cluster(cfg, errs)
  common.check_min_blocks(cfg, errs)
end

function F.derive(cfg)
  return {
    values = { op_identity = cfg.op.identity, op_combine = cfg.op.combine, threads = cfg.threads,
               min_blocks = cfg.min_blocks, push = cfg.exchange == "push",
               cluster = cfg.cluster, unroll = cfg.unroll, ctype = common.CTYPE[cfg.dtype] },
    block = { cfg.threads, 1, 1 },
    cluster = { cfg.cluster, 1, 1 },
    smem = 0,
    static_smem = 4 * (cfg.threads // 32 + 2),
    args = {
      { name = "out", type = "ptr", dtype = "f32", role = "out" },
      { name = "x", type = "ptr", dtype = cfg.dtype, role = "in" },
      { name = "rows", type = "i32", role = "size" },
      { name = "cols", type = "i32", role = "size" },
    },
    grid = common.grid_per_cluster("rows", cfg.cluster, cfg.persistent),
    limits = { { arg = "rows", min = 1, max = common.INT_MAX // cfg.cluster },
               { arg = "cols", min = 1, max = common.INT_MAX } },
  }
end

F.sizes = { "rows", "cols" }
F.key = { "dtype", "op" }

-- The rule (gen/core/auto.lua, gen/core/rows.lua): every CTA streams its slice of the row; few
-- rows spread over clusters, threads and unroll follow the slice, about 1024 threads per SM.
-- Every candidate takes every row length; the last one is the family's defaults.
function F.auto(shape, fixed, dev)
  local e = common.ESIZE[fixed.dtype or "f32"] or 4
  local v = 16 // e
  local list = rows.choose(shape, dev, fixed, {
    bytes_row = shape.cols * e, min_slice = 8192, stream = true,
    fields = function(c, t)
      local vpt = rows.cdiv(rows.cdiv(shape.cols, v), c * t)
      return { unroll = fixed.unroll or (vpt >= 16 and 8 or vpt >= 4 and 4 or 2) }
    end })
  list[#list + 1] = { cluster = 1, threads = 256, min_blocks = 1, unroll = 4, persistent = false,
                      why = "one CTA per row: takes every shape" }
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): the sizes, the shapes `weft run` checks
-- and times by default, the metric and the baseline it is measured against.
function F.run(cfg)
  local shape = { rows = 1024, cols = 65536 }
  return { sizes = F.sizes, check = { shape }, time = { shape }, metric = "bytes", baseline = "copy",
           check_cap = { rows = 16 }, key = F.key }
end

return F
