-- gen/families/rmsnorm.lua: y = x * rsqrt(mean(x^2) + eps) * w along each row of x[rows][cols];
-- with residual = true, h = x + r is written back to r first and y = rmsnorm(h) * w.  f32 math,
-- one rounding of each output.  Each row's slice stays in registers (read once, written once):
-- short rows take a group of warps each, many rows per CTA; long rows take a cluster of CTAs,
-- combined through seed 000's cluster_allreduce so every CTA of the row scales by the same bits.
local common = require("gen.core.common")
local rowsm = require("gen.core.rows")

local F = {
  name = "rmsnorm",
  template = "templates/rmsnorm.cu",
  doc = "RMS norm of each row of x[rows][cols] scaled by w[cols] into y (same dtype); optional residual add",
}

local MAX_DATA_REGS = 128   -- registers of row data per thread before spills become likely
local OVERHEAD_REGS = 40    -- what the rest of the kernel needs beside the row data (ptxas on sm_90a)
local ROWS_PER_CTA = { 1, 2, 4, 8, 16, 32 }
local AUTO_VECTORS = 4      -- rows_per_cta = "auto": the most rows per CTA that keep <= this many vectors per thread

-- The shortest decimal that gives the same f32 as v, so that equal kernels get equal names.
local function f32_text(v)
  local v32 = string.unpack("<f", string.pack("<f", v))
  for digits = 1, 9 do
    local s = string.format("%." .. digits .. "g", v32)
    if string.unpack("<f", string.pack("<f", tonumber(s))) == v32 then return s end
  end
  return string.format("%.9g", v32)
end

-- eps: a number, baked into the kernel, or "arg", a kernel argument.  Normalised to a table:
-- tag (the name token: "1e-06" -> "1em06", identifier-safe) and value (the text the runner and
-- the template read).
local function eps_check(v)
  local allowed = 'must be a number in 0..1 (added to mean(x^2) before the rsqrt), or "arg" (an f32 kernel argument)'
  if v == "arg" then return { tag = "arg", value = "arg" } end
  if type(v) ~= "number" or v ~= v or v < 0 or v > 1 then return nil, allowed end
  local s = f32_text(v)
  return { tag = (s:gsub("%.", "p"):gsub("%-", "m"):gsub("%+", "")), value = s }
end

local function rows_check(v)
  if v == "auto" then return v end
  local iv = type(v) == "number" and math.tointeger(v) or nil
  for _, a in ipairs(ROWS_PER_CTA) do if a == iv then return iv end end
  return nil, 'must be one of 1, 2, 4, 8, 16, 32 or "auto" (rows each CTA normalises; each row gets threads / rows_per_cta threads)'
end

F.fields = {
  common.dtype(),
  { name = "residual", kind = "bool", default = false, tag = "res",
    doc = "h = x + r, written back to r, is what gets normalised (a kernel argument r)" },
  { name = "eps", kind = "custom", check = eps_check, default = 1e-6, tag = "e",
    doc = 'added to mean(x^2): a number (in the kernel) or "arg" (an f32 argument eps)' },
  { name = "max_cols", kind = "int", min = 0, max = 1 << 24, default = 0, tag = "mc",
    doc = "the longest row (hidden size) the kernel takes: sets the registers per thread" },
  common.cluster(1),
  common.nonportable(),
  common.threads(256),
  { name = "rows_per_cta", kind = "custom", check = rows_check, default = "auto", tag = "rpc",
    doc = 'rows per CTA, each on threads / rows_per_cta threads (1 with cluster > 1); "auto": the most that keep ' ..
          AUTO_VECTORS .. " vectors per thread or fewer" },
  common.min_blocks(),
  common.persistent(),
  common.exchange(),
  { name = "cta_rstd", kind = "bool", default = false, tag = "cr",
    doc = "test aid: every CTA writes the rstd it used to rstd[row * cluster + rank], so a run can check that the CTAs of a cluster agree to the bit" },
}

-- 16-byte vectors per thread for a row of max_cols over cluster CTAs of `group` threads
local function per_thread(cfg, group)
  local v = 16 // common.ESIZE[cfg.dtype]
  local per = cfg.cluster * group * v
  return math.max(1, (cfg.max_cols + per - 1) // per), v
end

local function resolve_rows(cfg)
  if cfg.rows_per_cta ~= "auto" then return cfg.rows_per_cta end
  if cfg.cluster > 1 then return 1 end
  local best = 1
  for _, r in ipairs(ROWS_PER_CTA) do
    if cfg.threads // r >= 32 and per_thread(cfg, cfg.threads // r) <= AUTO_VECTORS then best = r end
  end
  return best
end

-- registers for row data a thread may hold: the register file (64K per SM) shared by
-- min_blocks CTAs caps it, and so does the spill margin
local function data_budget(cfg)
  return rowsm.data_budget(cfg.threads, cfg.min_blocks, OVERHEAD_REGS, MAX_DATA_REGS)
end

function F.check(cfg, errs)
  common.check_cluster(cfg, errs)
  common.check_min_blocks(cfg, errs)
  if cfg.max_cols == 0 then
    errs.add("max_cols", 0, "needs the longest row the kernel takes: max_cols = <hidden size>")
  end
  local r = cfg.rows_per_cta
  if r ~= "auto" and r > 1 and cfg.cluster > 1 then
    errs.add("rows_per_cta", r, string.format(
      "must be 1 (or \"auto\") with cluster = %d: a row split across a cluster takes its CTAs whole", cfg.cluster))
  elseif r ~= "auto" and cfg.threads // r < 32 then
    errs.add("rows_per_cta", r, string.format(
      "at most %d with threads = %d: every row needs a warp or more", cfg.threads // 32, cfg.threads))
  end
  if errs.ok() then
    local rows = resolve_rows(cfg)
    local pt = per_thread(cfg, cfg.threads // rows)
    local budget = data_budget(cfg)
    -- sets of vectors live at once: the row and w; with the residual ptxas keeps a third (x and
    -- r while h is formed, beside what it hoists), measured as spills at 8 registers per vector
    local sets = cfg.residual and 3 or 2
    if budget < 4 * sets then
      errs.add("min_blocks", cfg.min_blocks, string.format(
        "leaves no registers for the row with threads = %d (%d per thread, %d for the kernel itself): lower min_blocks or threads",
        cfg.threads, 65536 // (cfg.threads * cfg.min_blocks), OVERHEAD_REGS))
    elseif pt * 4 * sets > budget then
      local fit = budget // (4 * sets)
      errs.add("max_cols", cfg.max_cols, string.format(
        "needs %d 16-byte vectors per thread (%d registers: the row and w%s) with cluster = %d, threads = %d, " ..
        "rows_per_cta = %d%s; at most %d fit (max_cols <= %d): raise cluster or threads, or lower rows_per_cta",
        pt, pt * 4 * sets, cfg.residual and ", and r while h is formed" or "", cfg.cluster, cfg.threads, rows,
        cfg.min_blocks > 1 and ", min_blocks = " .. cfg.min_blocks or "", fit,
        fit * cfg.cluster * (cfg.threads // rows) * (16 // common.ESIZE[cfg.dtype])))
    end
    cfg.rows_per_cta = rows   -- the kernel (and its name) has what auto chose
  end
end

function F.derive(cfg)
  local rows = cfg.rows_per_cta
  local group = cfg.threads // rows
  local pt, v = per_thread(cfg, group)
  local cols_max = math.min(pt * v * group * cfg.cluster, common.INT_MAX)
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

-- The kernel's capacity for rows of cols on this layout: whole vectors per thread, so every
-- hidden size up to it shares the kernel.
local function capacity(dtype, cols, cluster, group)
  local v = 16 // common.ESIZE[dtype]
  local per = cluster * group * v
  return rowsm.cdiv(cols, per) * per, rowsm.cdiv(cols, per)
end

-- A config measured at another shape, for this one: max_cols follows the row length.
function F.fit(cfg, shape)
  local rpc = cfg.rows_per_cta
  local group = (cfg.threads or 256) // ((rpc == nil or rpc == "auto") and 1 or rpc)
  cfg.max_cols = math.min(capacity(cfg.dtype or "f32", shape.cols, cfg.cluster or 1, group), 1 << 24)
  return cfg
end

-- The rule (gen/core/auto.lua, gen/core/rows.lua): each row's slice in registers beside w's (and
-- r's); a row per CTA, or per cluster of CTAs for long rows; rows under 4 KB pack several per CTA
-- (rows_per_cta = "auto").  Rows too long for a cluster of 16 are outside the family: the message
-- says so.
function F.auto(shape, fixed, dev)
  local dtype = fixed.dtype or "f32"
  local e = common.ESIZE[dtype] or 4
  local v = 16 // e
  local sets = fixed.residual == true and 3 or 2
  local rpc = fixed.rows_per_cta
  if rpc == nil then rpc = shape.cols * e < 4096 and "auto" or 1 end
  local list = rowsm.choose(shape, dev, fixed, {
    bytes_row = shape.cols * e, min_slice = 16384,
    fits = function(c, t, m)
      local r = rpc == "auto" and 1 or rpc
      if math.type(r) ~= "integer" or (r > 1 and c > 1) or t // r < 32 then return nil end
      local mb = m or fixed.min_blocks or 1
      local max_cols, pt = capacity(dtype, fixed.max_cols or shape.cols, c, t // r)
      if t * mb > 2048 or max_cols > (1 << 24) then return nil end
      if pt * 4 * sets > rowsm.data_budget(t, mb, OVERHEAD_REGS, MAX_DATA_REGS) then return nil end
      return pt
    end,
    fields = function(c, t)
      local r = rpc == "auto" and 1 or rpc
      return { max_cols = fixed.max_cols or math.min(capacity(dtype, shape.cols, c, t // r), 1 << 24),
               rows_per_cta = c > 1 and 1 or rpc }
    end })
  if #list == 0 then
    return nil, string.format("cols = %d: no layout holds a %s row this long in registers%s (the family keeps each " ..
      "row on chip; at most a cluster of 16 CTAs of 1024 threads, with the fields this config fixes)", shape.cols, dtype,
      sets == 3 and " with the residual" or "")
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
