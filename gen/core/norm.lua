-- gen/core/norm.lua: the RMS norm's layout, shared by the families that normalise rows in
-- registers (rmsnorm, allreduce_norm): the eps and rows_per_cta fields, how many 16-byte vectors
-- of a row each thread holds, and whether they fit in its registers.  The device side is
-- templates/weft/rmsnorm.cuh.
local common = require("gen.core.common")
local rowsm = require("gen.core.rows")

local M = {}

M.MAX_DATA_REGS = 128   -- registers of row data per thread before spills become likely
M.OVERHEAD_REGS = 40    -- what the rest of the kernel needs beside the row data (ptxas on sm_90a)
M.ROWS_PER_CTA = { 1, 2, 4, 8, 16, 32 }
M.AUTO_VECTORS = 4      -- rows_per_cta = "auto": the most rows per CTA that keep <= this many vectors per thread

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
  for _, a in ipairs(M.ROWS_PER_CTA) do if a == iv then return iv end end
  return nil, 'must be one of 1, 2, 4, 8, 16, 32 or "auto" (rows each CTA normalises; each row gets threads / rows_per_cta threads)'
end

function M.eps()
  return { name = "eps", kind = "custom", check = eps_check, default = 1e-6, tag = "e",
           doc = 'added to mean(x^2): a number (in the kernel) or "arg" (an f32 argument eps)' }
end

function M.max_cols()
  return { name = "max_cols", kind = "int", min = 0, max = 1 << 24, default = 0, tag = "mc",
           doc = "the longest row (hidden size) the kernel takes: sets the registers per thread" }
end

function M.rows_per_cta()
  return { name = "rows_per_cta", kind = "custom", check = rows_check, default = "auto", tag = "rpc",
           doc = 'rows per CTA, each on threads / rows_per_cta threads (1 with cluster > 1); "auto": the most that keep ' ..
                 M.AUTO_VECTORS .. " vectors per thread or fewer" }
end

-- 16-byte vectors per thread for a row of max_cols over cluster CTAs of `group` threads
function M.per_thread(cfg, group)
  local v = 16 // common.ESIZE[cfg.dtype]
  local per = cfg.cluster * group * v
  return math.max(1, (cfg.max_cols + per - 1) // per), v
end

-- most: the vectors per thread that fit in registers (auto never picks more)
function M.resolve_rows(cfg, most)
  if cfg.rows_per_cta ~= "auto" then return cfg.rows_per_cta end
  if cfg.cluster > 1 then return 1 end
  local best, limit = 1, math.min(M.AUTO_VECTORS, most or M.AUTO_VECTORS)
  for _, r in ipairs(M.ROWS_PER_CTA) do
    if cfg.threads // r >= 32 and M.per_thread(cfg, cfg.threads // r) <= limit then best = r end
  end
  return best
end

-- registers for row data a thread may hold: the register file (64K per SM) shared by
-- min_blocks CTAs caps it, and so does the spill margin
function M.data_budget(threads, min_blocks, overhead)
  return rowsm.data_budget(threads, min_blocks, overhead or M.OVERHEAD_REGS, M.MAX_DATA_REGS)
end

-- The rules across the layout's fields; resolves rows_per_cta = "auto" in cfg.  sets: the
-- vectors of each slot a thread keeps live at once (the row and w: 2; with the residual 3).
-- overhead: the registers the kernel needs beside them.  what: the vectors' names, for the message.
function M.check(cfg, errs, sets, overhead, what)
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
  if not errs.ok() then return end
  local budget = M.data_budget(cfg.threads, cfg.min_blocks, overhead)
  local rows = M.resolve_rows(cfg, budget // (4 * sets))
  local pt = M.per_thread(cfg, cfg.threads // rows)
  if budget < 4 * sets then
    -- the field that caps the registers: min_blocks if the user raised it, else threads
    local f = cfg.min_blocks > 1 and "min_blocks" or "threads"
    errs.add(f, cfg[f], string.format(
      "leaves no registers for the row with threads = %d (%d per thread, %d for the kernel itself): lower min_blocks or threads",
      cfg.threads, 65536 // (cfg.threads * cfg.min_blocks), overhead or M.OVERHEAD_REGS))
  elseif pt * 4 * sets > budget then
    local fit = budget // (4 * sets)
    errs.add("max_cols", cfg.max_cols, string.format(
      "needs %d 16-byte vectors per thread (%d registers: %s) with cluster = %d, threads = %d, " ..
      "rows_per_cta = %d%s; at most %d fit (max_cols <= %d): raise cluster or threads, or lower rows_per_cta",
      pt, pt * 4 * sets, what, cfg.cluster, cfg.threads, rows,
      cfg.min_blocks > 1 and ", min_blocks = " .. cfg.min_blocks or "", fit,
      fit * cfg.cluster * (cfg.threads // rows) * (16 // common.ESIZE[cfg.dtype])))
  end
  cfg.rows_per_cta = rows   -- the kernel (and its name) has what auto chose
end

-- The layout's values for the template, and the longest row it takes.
function M.layout(cfg)
  local rows = cfg.rows_per_cta
  local group = cfg.threads // rows
  local pt, v = M.per_thread(cfg, group)
  return { rows = rows, group = group, pt = pt, cols_max = math.min(pt * v * group * cfg.cluster, common.INT_MAX) }
end

-- The kernel's capacity for rows of cols on this layout: whole vectors per thread, so every
-- hidden size up to it shares the kernel.
function M.capacity(dtype, cols, cluster, group)
  local v = 16 // common.ESIZE[dtype]
  local per = cluster * group * v
  return rowsm.cdiv(cols, per) * per, rowsm.cdiv(cols, per)
end

-- A config measured at another shape, for this one: max_cols follows the row length.
function M.fit(cfg, shape)
  local rpc = cfg.rows_per_cta
  local group = (cfg.threads or 256) // ((rpc == nil or rpc == "auto") and 1 or rpc)
  cfg.max_cols = math.min(M.capacity(cfg.dtype or "f32", shape.cols, cfg.cluster or 1, group), 1 << 24)
  return cfg
end

-- The rule's candidates for rows of shape.cols (gen/core/rows.lua's choice of cluster and
-- threads), or nil and why.  sets, overhead: as for M.check; rpc_fixed: the user's rows_per_cta.
function M.choose(shape, fixed, dev, sets, overhead)
  local dtype = fixed.dtype or "f32"
  local e = common.ESIZE[dtype] or 4
  local rpc = fixed.rows_per_cta
  if rpc == nil then rpc = shape.cols * e < 4096 and "auto" or 1 end
  return rowsm.choose(shape, dev, fixed, {
    bytes_row = shape.cols * e, min_slice = 16384,
    fits = function(c, t, m)
      local r = rpc == "auto" and 1 or rpc
      if math.type(r) ~= "integer" or (r > 1 and c > 1) or t // r < 32 then return nil end
      local mb = m or fixed.min_blocks or 1
      local max_cols, pt = M.capacity(dtype, fixed.max_cols or shape.cols, c, t // r)
      if t * mb > 2048 or max_cols > (1 << 24) then return nil end
      if pt * 4 * sets > M.data_budget(t, mb, overhead) then return nil end
      return pt
    end,
    fields = function(c, t)
      local r = rpc == "auto" and 1 or rpc
      return { max_cols = fixed.max_cols or math.min(M.capacity(dtype, shape.cols, c, t // r), 1 << 24),
               rows_per_cta = c > 1 and 1 or rpc }
    end })
end

return M
