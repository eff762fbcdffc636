-- gen/families/row_softmax.lua: y = softmax(x) along each row, numerically stable (online max
-- and sum), one row per cluster.  mode = "onchip" keeps each CTA's slice of the row in
-- registers (read once, write once) up to max_cols; mode = "stream" takes any length and reads
-- the row twice.
local common = require("gen.core.common")
local rows = require("gen.core.rows")

local F = {
  name = "row_softmax",
  template = "templates/row_softmax.cu",
  doc = "softmax of each row of x[rows][cols] into y (same dtype; y may be x)",
}

local MIN_SLICE = 8192   -- bytes of the row a CTA keeps at least when few rows spread over a cluster
local MAX_DATA_REGS = 128   -- registers of row data per thread before spills become likely
local OVERHEAD_REGS = 24    -- what the rest of the onchip kernel needs beside the row data

F.fields = {
  common.dtype(),
  { name = "mode", kind = "enum", values = { "onchip", "tma", "stream" }, default = "onchip", tag = "",
    doc = "onchip: slice in registers; tma: slice in shared memory, next row prefetched by the bulk copy engine (both cols <= max_cols); stream: any cols, two reads" },
  { name = "max_cols", kind = "int", min = 0, max = common.INT_MAX, default = 0, tag = "mc",
    doc = "onchip: the longest row the kernel takes (sets registers per thread); stream: leave 0" },
  common.cluster(1),
  common.nonportable(),
  common.threads(256),
  common.min_blocks(),
  common.persistent(),
  common.exchange(),
  { name = "prefetch", kind = "bool", default = false, tag = "pf",
    doc = "onchip: load the next row into a second register set during this row's combine and output" },
  { name = "unroll", kind = "int", values = { 1, 2, 4, 8 }, default = 4, tag = "u",
    doc = "stream: 16-byte loads in flight per thread (onchip: leave 4)" },
}

local function per_thread(cfg)
  local v = 16 // common.ESIZE[cfg.dtype]
  local per_cta = cfg.cluster * cfg.threads * v
  return (cfg.max_cols + per_cta - 1) // per_cta, v
end

function F.check(cfg, errs)
  common.check_cluster(cfg, errs)
  common.check_min_blocks(cfg, errs)
  if cfg.mode == "tma" then
    if cfg.max_cols == 0 then
      errs.add("max_cols", 0, 'mode = "tma" needs the longest row: max_cols = <cols>, or use mode = "stream"')
    end
    if cfg.unroll ~= 4 then errs.add("unroll", cfg.unroll, 'applies to mode = "stream" only; leave it 4') end
    if cfg.prefetch then errs.add("prefetch", true, 'applies to mode = "onchip" only (tma always prefetches)') end
  elseif cfg.mode == "onchip" then
    if cfg.threads * cfg.min_blocks > 2048 then
      -- min_blocks is already refused; a register budget computed from it would be meaningless
    elseif cfg.max_cols == 0 then
      errs.add("max_cols", 0, 'mode = "onchip" needs the longest row: max_cols = <cols>, or use mode = "stream"')
    else
      local pt, v = per_thread(cfg)
      local sets = cfg.prefetch and 2 or 1
      -- the register file (64K per SM) shared by min_blocks CTAs caps what each thread may hold
      local budget = rows.data_budget(cfg.threads, cfg.min_blocks, OVERHEAD_REGS, MAX_DATA_REGS)
      if pt * 4 * sets > budget then
        errs.add("max_cols", cfg.max_cols, string.format(
          "needs %d 16-byte vectors (%d registers%s) per thread with cluster = %d, threads = %d; at most %d fit " ..
          "(max_cols <= %d): raise cluster or threads, or use mode = \"stream\"",
          pt, pt * 4 * sets, cfg.prefetch and ", twice for prefetch" or "", cfg.cluster, cfg.threads,
          budget // 4 // sets, budget // 4 // sets * cfg.cluster * cfg.threads * v))
      end
    end
    if cfg.unroll ~= 4 then errs.add("unroll", cfg.unroll, 'applies to mode = "stream" only; leave it 4') end
  elseif cfg.max_cols ~= 0 or cfg.prefetch then
    if cfg.prefetch then errs.add("prefetch", true, 'applies to mode = "onchip" only') end
  end
  if cfg.mode == "stream" and cfg.max_cols ~= 0 then
    errs.add("max_cols", cfg.max_cols, 'applies to modes "onchip" and "tma" only; leave it 0 with mode = "stream"')
  end
end

function F.derive(cfg)
  local depth, cols_max, smem = cfg.unroll, common.INT_MAX, 0
  if cfg.mode == "onchip" then
    local pt, v = per_thread(cfg)
    depth, cols_max = pt, pt * cfg.cluster * cfg.threads * v
  elseif cfg.mode == "tma" then
    local v = 16 // common.ESIZE[cfg.dtype]
    local chunk = ((cfg.max_cols + v - 1) // v + cfg.cluster - 1) // cfg.cluster   -- vectors per CTA
    depth, cols_max, smem = chunk, chunk * cfg.cluster * v, 2 * chunk * 16
  end
  if cols_max > common.INT_MAX then cols_max = common.INT_MAX end
  return {
    values = { threads = cfg.threads, cluster = cfg.cluster, mode = cfg.mode, depth = depth,
               push = cfg.exchange == "push",
               prefetch = cfg.prefetch,
               min_blocks = cfg.min_blocks, ctype = common.CTYPE[cfg.dtype] },
    block = { cfg.threads, 1, 1 },
    cluster = { cfg.cluster, 1, 1 },
    smem = smem,
    smem_field = "max_cols",
    smem_hint = "two stages of each CTA's slice of the row (2 * max_cols / cluster elements): raise cluster or lower max_cols",
    static_smem = 4 * (cfg.threads // 32 * 2 + 8) + 16,
    args = {
      { name = "y", type = "ptr", dtype = cfg.dtype, role = "out", congruent = "x" },
      { name = "x", type = "ptr", dtype = cfg.dtype, role = "in" },
      { name = "rows", type = "i32", role = "size" },
      { name = "cols", type = "i32", role = "size" },
    },
    grid = common.grid_per_cluster("rows", cfg.cluster, cfg.persistent),
    limits = { { arg = "rows", min = 1, max = common.INT_MAX // cfg.cluster },
               { arg = "cols", min = 1, max = cols_max } },
  }
end

F.sizes = { "rows", "cols" }
F.key = { "dtype" }

-- The onchip kernel's capacity for a row of cols: a whole number of 16-byte vectors per thread,
-- so every row length up to it shares the kernel (one compile per capacity, not per length).
local function onchip_cols(dtype, cols, cluster, threads)
  local v = 16 // common.ESIZE[dtype]
  local per_cta = cluster * threads * v
  return rows.cdiv(cols, per_cta) * per_cta, rows.cdiv(cols, per_cta)
end

-- A config measured at another shape, for this one: an onchip or tma kernel takes the row's
-- length rounded up to its capacity; a stream kernel takes any.
function F.fit(cfg, shape)
  local mode = cfg.mode or "onchip"
  if mode == "stream" then return cfg end
  cfg.max_cols = onchip_cols(cfg.dtype or "f32", shape.cols, cfg.cluster or 1, cfg.threads or 256)
  return cfg
end

-- The rule (gen/core/auto.lua, gen/core/rows.lua): onchip while the row fits the registers of a
-- cluster of 16 (one read, one write); longer rows stream (two reads) on clusters of 16.  The last
-- candidate, a stream kernel on one CTA per row, takes every shape the family takes.
function F.auto(shape, fixed, dev)
  local dtype = fixed.dtype or "f32"
  local e = common.ESIZE[dtype] or 4
  local v = 16 // e
  local sets = fixed.prefetch and 2 or 1
  local mode = fixed.mode
  local list = {}
  if mode == nil or mode == "onchip" then
    list = rows.choose(shape, dev, fixed, {
      bytes_row = shape.cols * e, min_slice = MIN_SLICE,
      fits = function(c, t, m)
        local mb = m or fixed.min_blocks or 1
        local pt = rows.cdiv(fixed.max_cols or shape.cols, c * t * v)
        if t * mb > 2048 or pt * 4 * sets > rows.data_budget(t, mb, OVERHEAD_REGS, MAX_DATA_REGS) then return nil end
        return pt
      end,
      fields = function(c, t)
        return { mode = "onchip", max_cols = fixed.max_cols or onchip_cols(dtype, shape.cols, c, t) }
      end })
  end
  if (mode == nil and #list == 0) or mode == "stream" then
    -- a stream kernel keeps min_blocks 1 (measured: 32 x 1048576 f32 at 512 threads took 1.5x as
    -- long with 2): its loop holds unroll vectors twice over, and a cap on registers spills them
    local sfixed = {}
    for k, x in pairs(fixed) do sfixed[k] = x end
    if sfixed.min_blocks == nil then sfixed.min_blocks = 1 end
    list = rows.choose(shape, dev, sfixed, {
      bytes_row = shape.cols * e, min_slice = 8192, stream = true,
      fields = function(c, t)
        local vpt = rows.cdiv(rows.cdiv(shape.cols, v), c * t)
        return { mode = "stream", max_cols = 0, unroll = fixed.unroll or (vpt >= 16 and 8 or vpt >= 4 and 4 or 2) }
      end })
    -- a long streamed row wants every CTA of a cluster of 16 (measured: 32 x 1048576 f32)
    if mode == nil and fixed.cluster == nil and #list > 0 and list[1].cluster < 16 then
      local c16 = rows.choose(shape, dev, { cluster = 16, nonportable = true, min_blocks = 1 }, {
        bytes_row = shape.cols * e, min_slice = 0, stream = true,
        fields = function(c, t) return { mode = "stream", max_cols = 0, unroll = 8 } end })
      if c16[1] then table.insert(list, 1, c16[1]) end
    end
  end
  list[#list + 1] = { mode = "stream", max_cols = 0, cluster = 1, threads = 256, min_blocks = 1, unroll = 4,
                      persistent = false, why = "stream on one CTA per row: takes every row length" }
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): a row as long as the config was built for.
function F.run(cfg)
  local shape = { rows = 1024, cols = cfg.max_cols > 0 and cfg.max_cols or 65536 }
  return { sizes = F.sizes, check = { shape }, time = { shape }, metric = "bytes", baseline = "copy",
           check_cap = { rows = 16 }, key = F.key }
end

return F
