-- gen/families/allreduce_norm.lua: allreduce + residual + RMS norm in one launch, the op every
-- tensor-parallel decoder layer runs after its row-parallel linears.  Each rank holds a partial
-- x[rows][cols]; every rank ends with
--   s = sum over ranks of x (rank-order fold in f32, rounded once),  h = s + r (written back to r),
--   y = h * rsqrt(mean(h^2) + eps) * w,
-- the same bits on every rank.  Device side: templates/weft/allreduce_norm.cuh (the protocol and
-- the data path), the norm of weft/rmsnorm.cuh, the signals of weft/signal.cuh.  The layout
-- (rows per CTA, a cluster per row, vectors per thread) is the rmsnorm family's (gen/core/norm.lua).
local common = require("gen.core.common")
local norm = require("gen.core.norm")

local F = {
  name = "allreduce_norm",
  template = "templates/allreduce_norm.cu",
  doc = "y = rmsnorm(sum over ranks of x + r) * w, h = sum + r written back to r; launched with weft_comm_launch",
}

-- What the switch reduces (multimem.ld_reduce): add on every type
local SWITCH_ADD = 0

F.fields = {
  common.dtype(),
  { name = "algo", kind = "enum", values = { "one_shot", "two_shot", "one_shot_ll" }, default = "one_shot", tag = "",
    doc = "one_shot: every rank reads every rank's rows and normalises all of them; two_shot: each rank reduces and "
      .. "normalises 1/P of the rows, then gathers the others' y and h; one_shot_ll: small messages, each word sent "
      .. "with its epoch, no signal round" },
  { name = "comm", kind = "enum", values = { "threadload", "multimem" }, default = "threadload", tag = "",
    doc = "threadload: 16-byte loads from peers' memory; multimem: multimem.ld_reduce + multimem.st (two_shot)" },
  { name = "fallback", kind = "enum", values = { "none", "emulate" }, default = "none", tag = "fb",
    doc = "comm = multimem where multicast is unavailable: none (fail) or emulate (unicast fan-out twin)" },
  { name = "residual", kind = "bool", default = true, tag = "res",
    doc = "h = s + r, written back to r, is what gets normalised (a kernel argument r, the same on every rank)" },
  { name = "quant", kind = "enum", values = { "none", "fp8_e4m3" }, default = "none", tag = "q",
    doc = "y's format: none (dtype) or fp8_e4m3, E4M3 codes with a scale per token in the argument scale "
      .. "(y = q * scale; scale = max(max |y| over the row, 1/512) / 448); one_shot and one_shot_ll" },
  norm.eps(),
  norm.max_cols(),
  common.cluster(1),
  common.nonportable(),
  common.threads(512),
  norm.rows_per_cta(),
  common.min_blocks(),
  common.exchange(),
  common.ranks(),
  { name = "pdl", kind = "bool", default = false, tag = "pdl",
    doc = "programmatic dependent launch: scheduled while the previous kernel in the stream finishes; it waits for "
      .. "it before touching memory (as the allreduce family)" },
}

-- Registers the kernel needs beside the row's vectors: the norm's, the fold's loads in flight (8
-- ranks' 16-byte vectors, or one_shot_ll's 2 slots x 8 ranks of 8 bytes) and the peers' addresses.
-- From ptxas (sm_90a, bf16, 4096 columns, 2 rows of 2 vectors per thread, residual: 24 registers
-- of row data):
--   ranks = "any" (room for 8 ranks, and the one-rank path beside the exchange), 512 threads, so
--     128 registers: one_shot and two_shot fit with no spill; one_shot_ll spills 40 bytes;
--   ranks known, min_blocks = 2 (64 registers): one_shot and two_shot fit at 1, 4 and 8 ranks with
--     no spill (ptxas issues fewer of the fold's loads at once) and two_shot at 2 ranks spills 12
--     bytes; one_shot_ll spills 32 to 848 bytes.
-- So 96 for one_shot_ll and for any world size, 40 (rmsnorm's) for the others at a known one.
F.OVERHEAD_REGS = 96
F.OVERHEAD_REGS_KNOWN = 40
local function overhead(algo, ranks)
  if algo ~= "one_shot_ll" and ranks ~= nil and ranks ~= "any" then return F.OVERHEAD_REGS_KNOWN end
  return F.OVERHEAD_REGS
end

function F.check(cfg, errs)
  common.check_multimem(cfg, errs, "row")
  if cfg.quant ~= "none" and cfg.algo == "two_shot" then
    errs.add("quant", cfg.quant, 'is built for algo = "one_shot" and "one_shot_ll" (two_shot gathers the other ranks\' '
      .. 'rows of y in dtype): use one of those, or quant = "none"')
  end
  norm.check(cfg, errs, cfg.residual and 3 or 2, overhead(cfg.algo, cfg.ranks),
             cfg.residual and "the row, w, and r while h is formed" or "the row and w")
end

-- The symmetric buffer's bytes per element of a data half: one_shot, x's copy; two_shot, x's
-- copy and the owner's y (and h); one_shot_ll, an 8-byte slot per element from each of 8 ranks
-- (a 16-bit row of odd length takes a slot per element, so that is the most it needs).
local function elem_bytes(cfg)
  local es = common.ESIZE[cfg.dtype]
  if cfg.algo == "one_shot_ll" then return 8 * 8 end
  if cfg.algo == "two_shot" then return es * (cfg.residual and 3 or 2) end
  return es
end

function F.derive(cfg)
  local L = norm.layout(cfg)
  local fp8 = cfg.quant == "fp8_e4m3"
  local args = {   -- y, x and r: 16-byte vectors (y: their codes, 16 / esize bytes), rows at the buffer's offsets
    { name = "y", type = "ptr", dtype = fp8 and "fp8_e4m3" or cfg.dtype, role = "out",
      align = fp8 and 16 // common.ESIZE[cfg.dtype] or 16 },
  }
  if fp8 then args[#args + 1] = { name = "scale", type = "ptr", dtype = "f32", role = "out" } end
  args[#args + 1] = { name = "x", type = "ptr", dtype = cfg.dtype, role = "in", align = 16 }
  args[#args + 1] = { name = "w", type = "ptr", dtype = cfg.dtype, role = "in" }
  if cfg.residual then
    args[#args + 1] = { name = "r", type = "ptr", dtype = cfg.dtype, role = "inout", align = 16 }
  end
  if cfg.eps.value == "arg" then args[#args + 1] = { name = "eps", type = "f32", role = "scalar" } end
  args[#args + 1] = { name = "rows", type = "i32", role = "size" }
  args[#args + 1] = { name = "cols", type = "i32", role = "size" }
  local mm = cfg.comm == "multimem"
  return {
    values = { ctype = common.CTYPE[cfg.dtype], cluster = cfg.cluster, threads = cfg.threads, rows_per_cta = L.rows,
               pt = L.pt, residual = cfg.residual, push = cfg.exchange == "push", min_blocks = cfg.min_blocks,
               algo = ({ one_shot = 1, two_shot = 2, one_shot_ll = 3 })[cfg.algo], multimem = mm,
               mop = mm and SWITCH_ADD or -1, pdl = cfg.pdl, ranks = common.ranks_value(cfg),
               residual_text = cfg.residual and " + r" or "",
               r = cfg.residual and "r" or "nullptr",
               eps = cfg.eps.value == "arg" and "eps" or (cfg.eps.value .. "f"),
               fp8 = fp8, rms_y = fp8 and "nullptr" or "y", fp8_y = fp8 and "y" or "nullptr",
               fp8_scale = fp8 and "scale" or "nullptr" },
    block = { cfg.threads, 1, 1 },
    cluster = { cfg.cluster, 1, 1 },
    smem = 0,
    pdl = cfg.pdl,
    -- the warps' partial sums (two sets; fp8: two more for the maxima) and the cluster exchange's
    -- slots (fp8: two values each), as rmsnorm's
    static_smem = 4 * (fp8 and 4 or 2) * (cfg.threads // 32) + 4 * (2 * cfg.cluster + 2) * 2 * (fp8 and 2 or 1) + 16 + 16,
    args = args,
    -- a row group (or a cluster per row) per block, two_shot: of one rank's share; capped so that
    -- every block of every rank is resident at once (they wait on each other).  A kernel for one
    -- rank waits on nobody: its grid is every row group, as rmsnorm's.
    grid = { { arg = "rows", per = L.rows, times = cfg.cluster, cap = cfg.ranks ~= 1 and "coresident" or nil,
               split = cfg.algo == "two_shot" and "ranks" or nil },
             { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = { { arg = "rows", min = 1, max = common.INT_MAX // cfg.cluster },
               { arg = "cols", min = 1, max = L.cols_max } },
    comm = { signals = { "ready", "reduced", "data" }, halves = 2, elem_bytes = elem_bytes(cfg),
             elems = { "rows", "cols" }, multimem = mm, emulate = cfg.fallback == "emulate",
             ranks = common.ranks_value(cfg) },
  }
end

F.sizes = { "rows", "cols" }
F.key = { "dtype", "residual", "eps" }
F.same_speed = { "eps" }   -- gen/core/auto.lua: a row measured with another eps times this one too

-- a config measured at another shape: max_cols follows the row length, a kernel generated for a
-- world size takes this one's
function F.fit(cfg, shape, raw, dev)
  cfg = norm.fit(cfg, shape)
  if cfg.ranks ~= nil and cfg.ranks ~= "any" and dev and dev.ranks then cfg.ranks = dev.ranks end
  return cfg
end

-- The rule: the algorithm by the bytes one rank sends and the rank count, the layout by the row
-- (gen/core/norm.lua, as rmsnorm's).  From bench/RESULTS.md ("Allreduce + residual + RMS norm", bf16,
-- hidden 4096 and 8192, 1..8 ranks under MPS):
--   one_shot_ll is never the choice: it was the slowest algorithm at every size measured (9.4 us at
--     one token on one rank against one_shot's 5.8; its polls wait a round trip per pair of slots);
--   on several ranks the kernel is generated for their count (ranks = P) with two blocks per SM
--     (min_blocks = 2, one_shot and two_shot): the co-resident grid the waits need doubles, and
--     under MPS at hidden 4096 that took the fused kernel from 1.09-1.30 of the unfused sequence
--     to 0.60-0.96 at 1024 and 8192 tokens;
--   two_shot from 4 ranks and 4 MB (with both of the above: P = 4, 1 MB 16.1 us against one_shot's
--     21.9 the other way, 8 MB 72.2 against 85.5; P = 8, 1 MB 33.2 one_shot / 38.2, 8 MB 136.2
--     two_shot / 205.6); on 2 ranks one_shot at every size measured (8 MB: 37.6 against 40.4).
F.TWO_SHOT = { { ranks = 4, bytes = 4 << 20 } }
F.MIN_BLOCKS_KNOWN = 2
function F.auto(shape, fixed, dev)
  local dtype = fixed.dtype or "f32"
  local bytes = shape.rows * shape.cols * (common.ESIZE[dtype] or 4)
  local ranks = math.max(1, dev and dev.ranks or 1)
  local sets = fixed.residual == false and 2 or 3
  -- the world size, where it is known to be several ranks (a caller that passed no count gets
  -- 1, and a kernel for one rank refuses a larger world): the folds keep only its vectors, and
  -- the layout is the measured one that makes the co-resident grid large: CTAs of 512 threads,
  -- two per SM, as many rows per CTA as fit (rmsnorm's rule of 128-thread CTAs with up to 8
  -- vectors a thread would leave a handful of threads per SM: the waits cap the grid)
  local np = fixed.ranks == nil and ranks > 1 and ranks <= common.MAX_RANKS and ranks or nil
  local lfixed, overhead = fixed, F.OVERHEAD_REGS
  if np or (fixed.ranks ~= nil and fixed.ranks ~= "any" and fixed.ranks > 1) then
    lfixed = {}
    for k, v in pairs(fixed) do lfixed[k] = v end
    lfixed.threads = fixed.threads or 512
    lfixed.min_blocks = fixed.min_blocks or (lfixed.threads * F.MIN_BLOCKS_KNOWN <= 1024 and F.MIN_BLOCKS_KNOWN or 1)
    if fixed.rows_per_cta == nil and fixed.cluster == nil then lfixed.rows_per_cta = "auto" end
    overhead = F.OVERHEAD_REGS_KNOWN
  end
  local layouts = norm.choose(shape, lfixed, dev, sets, overhead)
  if #layouts == 0 then
    return nil, string.format("cols = %d: no layout holds a %s row this long in registers beside the fold (at most a " ..
      "cluster of 16 CTAs of 1024 threads, with the fields this config fixes)", shape.cols, dtype)
  end
  local fp8 = fixed.quant ~= nil and fixed.quant ~= "none"
  local algo, why
  if fixed.comm == "multimem" then
    algo, why = "two_shot", "comm = multimem reduces on the switch: two_shot"
  elseif fp8 then
    algo, why = "one_shot", "quant = " .. tostring(fixed.quant) .. ": one_shot (two_shot gathers y in dtype)"
  else
    algo, why = "one_shot", string.format("%d ranks, %d bytes: one_shot (one signal round fewer than two_shot)", ranks, bytes)
    for _, t in ipairs(F.TWO_SHOT) do
      if ranks >= t.ranks and bytes >= t.bytes then
        algo = "two_shot"
        why = string.format("%d ranks, %d bytes: two_shot (each rank normalises 1/P of the rows; from %d ranks and %d bytes)",
                            ranks, bytes, t.ranks, t.bytes)
        break
      end
    end
  end
  local list, seen = {}, {}
  local function add(layout, t)
    local c = { ranks = np }
    for k, v in pairs(layout) do if k ~= "persistent" then c[k] = v end end   -- the grid is always co-resident
    for k, v in pairs(t) do c[k] = v end
    for k, v in pairs(lfixed) do if fixed[k] == nil and c[k] == nil then c[k] = v end end
    -- one_shot_ll's slots do not fit beside two blocks per SM
    if c.algo == "one_shot_ll" and fixed.min_blocks == nil then c.min_blocks = 1 end
    c.why = (layout.why and layout.why .. "; " or "") .. t.why
    local key = table.concat({ c.algo, c.cluster, c.threads, c.min_blocks or 1, tostring(c.exchange),
                               tostring(c.rows_per_cta), c.max_cols }, "/")
    if not seen[key] then
      seen[key] = true
      list[#list + 1] = c
    end
  end
  add(layouts[1], { algo = algo, why = why })
  for _, other in ipairs({ "one_shot", "two_shot", "one_shot_ll" }) do
    if other ~= algo and fixed.comm ~= "multimem" and not (fp8 and other == "two_shot") then
      add(layouts[1], { algo = other, why = "the neighbour algorithm " .. other })
    end
  end
  for i = 2, #layouts do add(layouts[i], { algo = algo, why = "another layout" }) end
  -- last: one_shot takes every size the layout takes (multimem needs two_shot)
  local last = { algo = fixed.comm == "multimem" and "two_shot" or "one_shot", why = "takes every size" }
  for k, v in pairs(layouts[#layouts]) do if k ~= "persistent" and k ~= "why" then last[k] = v end end
  last.ranks = np
  list[#list + 1] = last
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): token counts at the row length the
-- config was built for (1 .. 16384 tokens timed, odd counts checked).
function F.run(cfg)
  local cols = cfg.max_cols
  local check, time = {}, {}
  for _, rows in ipairs({ 1, 3, 17, 128, 1000 }) do check[#check + 1] = { rows = rows, cols = cols } end
  for _, rows in ipairs({ 1, 16, 128, 1024, 8192 }) do time[#time + 1] = { rows = rows, cols = cols } end
  return { sizes = F.sizes, check = check, time = time, metric = "latency", baseline = "none", ranks = true, key = F.key,
           check_cap = { rows = 128 } }
end

return F
