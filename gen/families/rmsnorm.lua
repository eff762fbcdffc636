-- gen/families/rmsnorm.lua: y = x * rsqrt(mean(x^2) + eps) * w along each row of x[rows][cols];
-- with residual = true, h = x + r is written back to r first and y = rmsnorm(h) * w.  f32 math,
-- one rounding of each output.  Each row's slice stays in registers (read once, written once):
-- short rows take a group of warps each, many rows per CTA; long rows take a cluster of CTAs,
-- combined through seed 000's cluster_allreduce so every CTA of the row scales by the same bits.
local common = require("gen.core.common")
local norm = require("gen.core.norm")

local F = {
  name = "rmsnorm",
  template = "templates/rmsnorm.cu",
  doc = "RMS norm of each row of x[rows][cols] scaled by w[cols] into y (same dtype); optional residual add",
}

F.fields = {
  common.dtype(),
  { name = "residual", kind = "bool", default = false, tag = "res",
    doc = "h = x + r, written back to r, is what gets normalised (a kernel argument r)" },
  norm.eps(),
  norm.max_cols(),
  common.cluster(1),
  common.nonportable(),
  common.threads(256),
  norm.rows_per_cta(),
  common.min_blocks(),
  common.persistent(),
  common.exchange(),
  { name = "cta_rstd", kind = "bool", default = false, tag = "cr",
    doc = "test aid: every CTA writes the rstd it used to rstd[row * cluster + rank], so a run can check that the CTAs of a cluster agree to the bit" },
}

function F.check(cfg, errs)
  -- sets of vectors live at once: the row and w; with the residual ptxas keeps a third (x and
  -- r while h is formed, beside what it hoists), measured as spills at 8 registers per vector
  norm.check(cfg, errs, cfg.residual and 3 or 2, nil, cfg.residual and "the row and w, and r while h is formed" or "the row and w")
end

function F.derive(cfg)
  local L = norm.layout(cfg)
  local rows, pt, cols_max = L.rows, L.pt, L.cols_max
  local args = {
    { name = "y", type = "ptr", dtype = cfg.dtype, role = "out", congruent = "x" },
    { name = "x", type = "ptr", dtype = cfg.dtype, role = "in" },
    { name = "w", type = "ptr", dtype = cfg.dtype, role = "in" },
  }
  if cfg.residual then
    args[#args + 1] = { name = "r", type = "ptr", dtype = cfg.dtype, role = "inout", congruent = "x" }
  end
  if cfg.cta_rstd then args[#args + 1] = { name = "rstd", type = "ptr", dtype = "f32", role = "out" } end
  if cfg.eps.value == "arg" then args[#args + 1] = { name = "eps", type = "f32", role = "scalar" } end
  args[#args + 1] = { name = "rows", type = "i32", role = "size" }
  args[#args + 1] = { name = "cols", type = "i32", role = "size" }
  return {
    values = { ctype = common.CTYPE[cfg.dtype], cluster = cfg.cluster, threads = cfg.threads, rows_per_cta = rows,
               pt = pt, residual = cfg.residual, cta_rstd = cfg.cta_rstd, push = cfg.exchange == "push",
               min_blocks = cfg.min_blocks,
               r = cfg.residual and "r" or "nullptr", rstd = cfg.cta_rstd and "rstd" or "nullptr",
               eps = cfg.eps.value == "arg" and "eps" or (cfg.eps.value .. "f") },
    block = { cfg.threads, 1, 1 },
    cluster = { cfg.cluster, 1, 1 },
    smem = 0,
    -- the warps' partial sums (two sets) and the cluster exchange's slots
    static_smem = 4 * 2 * (cfg.threads // 32) + 4 * (2 * cfg.cluster + 2) * 2 + 16,
    args = args,
    grid = { { arg = "rows", per = rows, times = cfg.cluster, cap = cfg.persistent and "coresident" or nil },
             { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = { { arg = "rows", min = 1, max = common.INT_MAX // cfg.cluster },
               { arg = "cols", min = 1, max = cols_max } },
  }
end

F.sizes = { "rows", "cols" }
F.key = { "dtype", "residual", "eps" }
F.same_speed = { "eps" }   -- gen/core/auto.lua: a row measured with another eps times this one too

F.fit = norm.fit   -- a config measured at another shape, for this one: max_cols follows the row length

-- The rule (gen/core/auto.lua, gen/core/rows.lua): each row's slice in registers beside w's (and
-- r's); a row per CTA, or per cluster of CTAs for long rows; rows under 4 KB pack several per CTA
-- (rows_per_cta = "auto").  Rows too long for a cluster of 16 are outside the family: the message
-- says so.
function F.auto(shape, fixed, dev)
  local sets = fixed.residual == true and 3 or 2
  local list = norm.choose(shape, fixed, dev, sets)
  if #list == 0 then
    return nil, string.format("cols = %d: no layout holds a %s row this long in registers%s (the family keeps each " ..
      "row on chip; at most a cluster of 16 CTAs of 1024 threads, with the fields this config fixes)", shape.cols,
      fixed.dtype or "f32", sets == 3 and " with the residual" or "")
  end
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): rows as long as the config was built for.
function F.run(cfg)
  local shape = { rows = 1024, cols = cfg.max_cols }
  return { sizes = F.sizes, check = { shape }, time = { shape }, metric = "bytes", baseline = "copy",
           check_cap = { rows = 16 }, key = F.key }
end

return F
