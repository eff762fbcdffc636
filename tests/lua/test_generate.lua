-- tests/lua/test_generate.lua: gen/core/weft.lua end to end: examples, determinism, kernel names that
-- encode every parameter, rendered sources and manifests consistent with their configs.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local weft = require("gen.core.weft")
local json = require("gen.core.json")
local common = require("gen.core.common")
local gemm = require("gen.core.gemm")

local INT_MAX = 2147483647
local SRC = T.source_dir()

local function gen(cfg_text, file, overrides)
  return weft.generate(cfg_text, file or "cfg.lua", overrides or {}, weft_read)
end

-- A Lua table -> config text (keys sorted; strings, numbers, booleans, nested tables).
local function lua_text(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = string.format("[%q] = %s", k, lua_text(v[k])) end
  return "{ " .. table.concat(parts, ", ") .. " }"
end
local function cfg_text(cfg) return "return " .. lua_text(cfg) .. "\n" end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
  return c
end

-- ---- manifest and source checks ------------------------------------------------------------

local function token(f, v)
  if f.kind == "custom" then
    local nv = assert(f.check(v))
    if type(nv) == "table" then return nv.tag end
    v = nv
  end
  if type(v) == "boolean" then return v and "1" or "0" end
  return (tostring(v):gsub("_", ""))
end

-- ---- ag_gemm and gemm: what "auto" resolves to and the launch it derives, written down here
-- from the families' documentation (not computed by gen/), to check their manifests ----------
-- (family gemm is checked as the variant "gemm" it once was of ag_gemm: no comm, wgmma)

local AG_COMPUTE = { gemm = "wgmma", fused = "wgmma", gather_then_gemm = "wgmma", naive_remote = "scalar",
                     threadload_gather = "scalar", multimem_gather = "scalar" }
local AG_COMM = { gemm = "none", naive_remote = "threadload", threadload_gather = "threadload",
                  multimem_gather = "multimem", gather_then_gemm = "threadload", fused = "threadload" }

-- the config with comm, compute and tile resolved (a copy; every field already set)
local function ag_resolve(cfg)
  local c = copy(cfg)
  if c.family == "gemm" then c.variant, c.comm, c.compute = "gemm", "none", "wgmma" end
  if c.comm == "auto" then c.comm = AG_COMM[c.variant] end
  if c.compute == "auto" then c.compute = AG_COMPUTE[c.variant] end
  if c.tile == "auto" then
    c.tile = c.compute == "scalar" and { m = 32, n = 32, k = 16 } or { m = 128, n = 256, k = 64 }
  end
  return c
end

-- the name token of a tile: 128x256x64
local function tile_tag(t) return string.format("%dx%dx%d", t.m, t.n, t.k) end

-- shared memory of the WGMMA ring: stages x (A + B tiles of 128-byte rows), a full and an
-- empty mbarrier per stage, 1024 bytes of slack for the alignment of the swizzled stages
local function ag_smem(cfg)
  if cfg.compute ~= "wgmma" or cfg.variant == "gather_then_gemm" then return 0 end   -- (its GEMM is the second launch)
  -- split-K adds the f32 partial tile the second CTA writes into the first, and its two barriers;
  -- kturns the same bytes: one warpgroup's sums for the other (the barriers' 16 bytes unused)
  -- (a thin tile's WGMMAs, and so its sums, have 64 rows)
  local mrows = (not cfg.swap_ab and cfg.tile.m < 64) and 64 or cfg.tile.m
  local split = ((cfg.split_k or 1) > 1 or cfg.mma == "kturns") and 16 + mrows * cfg.tile.n * 4 or 0
  local used = cfg.stages * (cfg.tile.m + cfg.tile.n) * 128 + 16 * cfg.stages + split
  -- the TMA-store epilogue stages C after all that, 1024-byte aligned: each consumer warpgroup
  -- its rows (the tile's share, or the whole tile with pingpong and kturns) in at most two 64-column
  -- chunks; cooperative_n's half of the columns in chunks of 64 rows each
  if cfg.epilogue == "tma" then
    local coop_n = cfg.mma == "cooperative_n"
    local rows = coop_n and 64 or (cfg.mma == "pingpong" or cfg.mma == "kturns") and cfg.tile.m
      or cfg.tile.m // cfg.consumers
    local width = coop_n and cfg.tile.n // 2 or cfg.tile.n   -- (a tile's columns per consumer; 16-bit C)
    local groups, nch = coop_n and cfg.tile.m // 64 or 1, (width + 63) // 64
    local chunks = groups * nch   -- a buffer per chunk if they fit (a narrow last one dense), else two
    used = (used + 1023) // 1024 * 1024
    local whole = used + cfg.consumers * groups * rows * (128 * (nch - 1) + (width % 64 > 0 and 2 * (width % 64) or 128))
    local two = used + cfg.consumers * rows * 128 * math.min(2, chunks)
    -- (cooperative_n, like three consumers and wide pingpong tiles: one buffer where two do not fit)
    local one = used + cfg.consumers * rows * 128
    used = whole + 1024 <= common.SMEM_LIMIT and whole or (two + 1024 <= common.SMEM_LIMIT or not coop_n) and two or one
  end
  return used + 1024
end

local check_json_source   -- below check_manifest

-- cfg: resolved (ag_resolve), m: its manifest
local function check_ag_gemm(m, cfg, where)
  local gather = cfg.variant == "gather_then_gemm"
  local t, wg = cfg.tile, cfg.compute == "wgmma" and not gather
  local cl = cfg.cluster or { m = 1, n = 1 }
  local csize = wg and cl.m * cl.n * (cfg.split_k or 1) or 1   -- (gather_then_gemm's cluster is its GEMM's)
  -- launch: one producer warpgroup plus the consumers, or the scalar kernels' 16 x 16 threads
  local threads = wg and 128 * (1 + cfg.consumers) or 256
  T.deq(m.block, { threads, 1, 1 }, where .. " block")
  T.deq(m.cluster, { csize, 1, 1 }, where .. " cluster")
  T.eq(m.nonportable_cluster, false, where .. " nonportable_cluster")
  T.eq(m.pdl, cfg.pdl == true, where .. " pdl")
  T.eq(m.smem, ag_smem(cfg), where .. " smem")
  T.ok(m.smem <= common.SMEM_LIMIT, where .. " smem fits")
  -- persistent: at most the co-resident clusters, each looping over tiles; the WGMMA kernel's
  -- grid counts its work units (cluster.m x cluster.n tiles), the scalar and gather kernels' M
  local gx = wg and { arg = "m", per = t.m * cl.m, by = { arg = "n", per = t.n * cl.n }, times = csize, cap = "coresident",
                      shards = cfg.family == "ag_gemm" and "ranks" or nil }
    or { arg = "m", per = 1, times = csize, cap = "coresident" }
  -- stream-K: every co-resident CTA, at most as many as the workspace has flags
  if cfg.stream_k then
    gx = { arg = "m", per = 1, by = { arg = "n", per = 1 }, times = 1, cap = "coresident", max = gemm.STREAMK_MAX_CTAS }
  end
  T.deq(m.workspace, cfg.stream_k and { header = 256, flags = gemm.STREAMK_MAX_CTAS, per_cta = gemm.streamk_slot(cfg) }
    or nil,
    where .. " workspace")
  T.deq(m.grid, { gx, { per = 1, times = 1 }, { per = 1, times = 1 } }, where .. " grid")

  -- args: c = a . b (or ag = allgather(a)), 16-byte aligned pointers of the dtype, i64 sizes
  local want = gather and { { "ag", "out" }, { "a", "in" }, { "m" }, { "k" } }
    or { { "c", "out" }, { "a", "in" }, { "b", "in" }, { "m" }, { "n" }, { "k" } }
  T.eq(#m.args, #want, where .. " number of args")
  for i, w in ipairs(want) do
    local a = m.args[i] or {}
    T.eq(a.name, w[1], where .. " arg " .. i)
    if w[2] then
      T.eq(a.type, "ptr", where .. " arg " .. w[1] .. " type")
      T.eq(a.role, w[2], where .. " arg " .. w[1] .. " role")
      T.eq(a.dtype, cfg.dtype, where .. " arg " .. w[1] .. " dtype")
      T.eq(a.align, 16, where .. " arg " .. w[1] .. " align")
    else
      T.eq(a.type, "i64", where .. " arg " .. w[1] .. " type")
      T.eq(a.role, "size", where .. " arg " .. w[1] .. " role")
    end
  end
  -- limits: every size bounded; k (and n) in whole 16-byte rows for TMA and the 16-byte copies
  local lim = {}
  for _, l in ipairs(m.limits) do
    T.ok(not lim[l.arg], where .. " one limit per arg")
    lim[l.arg] = l
    T.ok(math.type(l.min) == "integer" and math.type(l.max) == "integer", where .. " limit integers " .. l.arg)
    T.ok(l.min >= 1 and l.max >= INT_MAX and l.max <= 1 << 31, where .. " limit range " .. l.arg)
  end
  T.eq(lim.m and lim.m.min, 1, where .. " m min")
  T.eq(lim.k and lim.k.min, 8, where .. " k min")
  T.eq(lim.k and lim.k.multiple, 8, where .. " k multiple")
  if gather then
    T.eq(lim.n, nil, where .. " gather has no n")
  elseif cfg.any_n then
    -- (any_n: column-major B and direct stores, N only a count)
    T.eq(lim.n and lim.n.min, 1, where .. " n min (any_n)")
    T.eq(lim.n and lim.n.multiple, nil, where .. " n multiple (any_n)")
  else
    T.eq(lim.n and lim.n.min, 8, where .. " n min")
    T.eq(lim.n and lim.n.multiple, 8, where .. " n multiple")
  end
  T.eq(#m.limits, gather and 2 or 3, where .. " number of limits")

  -- tensor maps: A (rows of this rank's shard, or all of A), B in its layout, the peer shards
  if wg then
    local rows = cfg.variant == "gemm" and "m" or "m/ranks"
    local tm = {
      -- a cluster splits the shared tile's box: A over cluster.n, column-major B over cluster.m
      { name = "ta", source = "a", dtype = cfg.dtype, dims = { "k", rows }, box = { 64, t.m // cl.n }, swizzle = 128,
        l2_promotion = cfg.l2_promotion },
      -- (cooperative_n's row-major halves of 96 columns: 32-column boxes, the 64-byte swizzle)
      cfg.b_layout == "row" and cfg.mma == "cooperative_n" and (t.n // 2) % 64 ~= 0
        and { name = "tb", source = "b", dtype = cfg.dtype, dims = { "n", "k" }, box = { 32, 64 }, swizzle = 64,
              l2_promotion = cfg.l2_promotion }
      or cfg.b_layout == "row"
        and { name = "tb", source = "b", dtype = cfg.dtype, dims = { "n", "k" }, box = { 64, 64 }, swizzle = 128,
              l2_promotion = cfg.l2_promotion }
        or { name = "tb", source = "b", dtype = cfg.dtype, dims = { "k", "n" }, box = { 64, t.n // cl.m }, swizzle = 128,
             l2_promotion = cfg.l2_promotion },
    }
    if cfg.variant == "fused" then
      tm[3] = { name = "tsh", source = cfg.comm == "tma" and "comm.shards" or "comm.local", dtype = cfg.dtype,
                dims = { "k", "m/ranks", "ranks", "halves" }, box = { 64, t.m // cl.n, 1, 1 }, swizzle = 128 }
    end
    if cfg.epilogue == "tma" then   -- C by consumer warpgroup rows x 64 columns; per shard in the fused kernel
      local rows = cfg.mma == "cooperative_n" and 64 or (cfg.mma == "pingpong" or cfg.mma == "kturns") and t.m
        or t.m // cfg.consumers
      tm[#tm + 1] = cfg.variant == "gemm"
        and { name = "tc", source = "c", dtype = cfg.dtype, dims = { "n", "m" }, box = { 64, rows }, swizzle = 128 }
        or { name = "tc", source = "c", dtype = cfg.dtype, dims = { "n", "m/ranks", "ranks" }, box = { 64, rows, 1 },
             swizzle = 128 }
      -- (a consumer's columns ending in a chunk narrower than 64: its own map, dense rows)
      local w = (cfg.mma == "cooperative_n" and t.n // 2 or t.n) % 64
      if cfg.variant == "gemm" and w > 0 then
        tm[#tm + 1] = { name = "tct", source = "c", dtype = cfg.dtype, dims = { "n", "m" }, box = { w, rows }, swizzle = 0 }
      end
    end
    T.deq(m.tmaps, tm, where .. " tmaps")
  else
    T.eq(m.tmaps, nil, where .. " no tmaps without wgmma")
  end

  -- the comm section: every variant but gemm talks to the other ranks
  if cfg.variant == "gemm" then
    T.eq(m.comm, nil, where .. " gemm has no comm")
  else
    T.deq(m.comm, { signals = { "ready", "pulled" }, halves = 2, elem_bytes = common.ESIZE[cfg.dtype],
                    elems = { "m", "k" }, divide = "m", multimem = cfg.comm == "multimem",
                    emulate = cfg.fallback == "emulate" }, where .. " comm")
  end

  -- params: sorted, the family and every field; the tile flattened to tile.m, tile.n, tile.k and
  -- the cluster to cluster.m, cluster.n
  local params, n = {}, 0
  for i, p in ipairs(m.params) do
    if i > 1 then T.ok(m.params[i - 1].key < p.key, where .. " params sorted") end
    params[p.key] = p.value
    n = n + 1
  end
  local fam = weft.family_module(cfg.family)
  T.eq(n, #fam.fields + 4, where .. " number of params")
  T.eq(params.family, cfg.family, where .. " params.family")
  for _, f in ipairs(fam.fields) do
    if f.name == "tile" then
      T.eq(params.tile, nil, where .. " no params.tile")
      for _, key in ipairs({ "m", "n", "k" }) do
        T.eq(params["tile." .. key], tostring(t[key]), where .. " params.tile." .. key)
      end
    elseif f.name == "cluster" then
      T.eq(params.cluster, nil, where .. " no params.cluster")
      T.eq(params["cluster.m"], tostring(cl.m), where .. " params.cluster.m")
      T.eq(params["cluster.n"], tostring(cl.n), where .. " params.cluster.n")
    else
      T.eq(params[f.name], tostring(cfg[f.name]), where .. " params." .. f.name)
    end
  end

  -- source: the WGMMA instruction of this tile's n and dtype, B's transpose bit (1: B row-major
  -- is read MN-major), launch bounds, and every parameter in the kernel's template arguments
  local s, dt = m.source, cfg.dtype
  T.contains(s, "__launch_bounds__(" .. threads .. ", 1)", where .. " launch bounds")
  local ring = tostring(cfg.schedule == "ring")
  local comm_id = "weft::COMM_" .. cfg.comm:upper()
  if wg then
    -- (swapped: A's rows are the WGMMA's n; cooperative_n: each consumer's half of the columns)
    local wn = cfg.swap_ab and t.m or cfg.mma == "cooperative_n" and t.n // 2 or t.n
    T.contains(s, "wgmma.mma_async.sync.aligned.m64n" .. wn .. "k16.f32." .. dt .. "." .. dt, where .. " wgmma shape")
    T.contains(s, "p, 1, 1, 0, " .. (cfg.b_layout == "row" and 1 or 0) .. ";", where .. " wgmma transpose bit")
    T.contains(s, "float (&d)[" .. wn // 2 .. "]", where .. " n/2 accumulators per m64 group")
    T.contains(s, "static constexpr bool SWAP = " .. tostring(cfg.swap_ab == true) .. ";", where .. " cfg swap")
    -- the config struct: every GEMM parameter, and the layout's offsets as the manifest exports them
    local b = tostring
    T.contains(s, "  using T = weft::" .. dt .. ";", where .. " cfg T")
    T.contains(s, string.format("  static constexpr int BM = %d, BN = %d, STAGES = %d, CONSUMERS = %d;", t.m, t.n,
      cfg.stages, cfg.consumers), where .. " cfg tile")
    T.contains(s, "  static constexpr bool PINGPONG = " .. b(cfg.mma == "pingpong") .. ";", where .. " cfg mma")
    T.contains(s, "  static constexpr bool KTURNS = " .. b(cfg.mma == "kturns") .. ";", where .. " cfg mma kturns")
    T.contains(s, string.format("  static constexpr int CM = %d, CN = %d, SPLITK = %d;", cl.m, cl.n, cfg.split_k or 1),
      where .. " cfg cluster")
    T.contains(s, string.format("  static constexpr bool EPI_TMA = %s, B_ROW = %s;", b(cfg.epilogue == "tma"),
      b(cfg.b_layout == "row")), where .. " cfg epilogue")
    T.contains(s, string.format("  static constexpr int GROUP = %d;", cfg.group), where .. " cfg group")
    T.contains(s, "  static constexpr bool PDL = " .. b(cfg.pdl == true) .. ";", where .. " cfg pdl")
    local L = m.smem_layout
    T.ok(L, where .. " smem_layout exported")
    T.eq(L.smem, m.smem, where .. " smem is the layout's")
    T.contains(s, string.format("SMEM_B = %d, SMEM_STAGE = %d, SMEM_FULL = %d, SMEM_EMPTY = %d;", L.b, L.stage, L.full,
      L.empty), where .. " cfg layout (ring)")
    T.contains(s, string.format("SMEM_RED_BAR = %d, SMEM_RED = %d, SMEM_EPI = %d, SMEM_EPI_STAGE = %d;", L.red_bar, L.red,
      L.epi, L.epi_stage), where .. " cfg layout (split-K, epilogue)")
    local tc = cfg.epilogue == "tma" and "&tc" or "nullptr"
    local tct = cfg.epilogue == "tma" and wn % 64 ~= 0 and "&tct" or "nullptr"
    if cfg.variant == "gemm" then
      T.contains(s, "weft::gemm_wgmma<GemmCfg>(c, (long)m, (long)n, (long)k, ta, tb, " .. tc .. ", " .. tct
        .. (cfg.stream_k and ", ws" or "") .. ");", where .. " kernel")
      T.contains(s, "  static constexpr bool STREAM_K = " .. b(cfg.stream_k == true) .. ";", where .. " cfg stream_k")
    else
      T.contains(s, "  static constexpr int COMM = " .. comm_id .. ";", where .. " cfg comm")
      T.contains(s, "  static constexpr bool RING = " .. ring .. ";", where .. " cfg ring")
      T.contains(s, "weft::ag_gemm_wgmma<AgGemmCfg>(c, a, (long)m, (long)n, (long)k, ta, tb, tsh, " .. tc .. ", comm);",
        where .. " kernel")
    end
  else
    T.not_contains(s, "wgmma.mma_async", where .. " no wgmma")
    T.not_contains(s, "ag_gemm_wgmma<", where .. " no wgmma kernel")
  end
  if cfg.compute == "scalar" then
    T.contains(s, string.format("weft::ag_gemm_scalar<weft::%s, %d, %d, %d, %s, %s, %s, %s>", dt, t.m, t.n, t.k,
      comm_id, cfg.variant == "naive_remote" and "weft::SCALAR_NAIVE" or "weft::SCALAR_GATHERED",
      tostring(cfg.b_layout == "row"), ring), where .. " kernel")
  end
  if gather then
    T.contains(s, string.format("weft::ag_gather<weft::%s, %s, %s>(ag, a, (long)m, (long)k, comm)", dt, comm_id, ring),
      where .. " kernel")
  end
  T.eq(select(2, s:gsub("const __grid_constant__ weft::Comm comm", "")), cfg.variant == "gemm" and 0 or 1,
    where .. " a Comm parameter unless gemm")
end

-- ---- rmsnorm: what rows_per_cta = "auto" resolves to and the launch it derives, written down
-- here from the family's documentation (not computed by gen/families/rmsnorm.lua) ----------

local function rms_vectors(cfg, rows)   -- 16-byte vectors per thread for max_cols
  local per = cfg.cluster * (cfg.threads // rows) * (16 // common.ESIZE[cfg.dtype])
  return math.max(1, (cfg.max_cols + per - 1) // per)
end

-- "auto": the most rows per CTA (1, 2, 4, ... 32, a warp or more each) that keep `most` (4 unless
-- given) vectors per thread or fewer; 1 with cluster > 1
local function rms_resolve(cfg, most)
  local c = copy(cfg)
  if c.rows_per_cta == "auto" then
    c.rows_per_cta = 1
    if c.cluster == 1 then
      for _, r in ipairs({ 1, 2, 4, 8, 16, 32 }) do
        if c.threads // r >= 32 and rms_vectors(c, r) <= (most or 4) then c.rows_per_cta = r end
      end
    end
  end
  return c
end

-- allreduce_norm: the same "auto", but never more vectors per thread than fit beside the fold:
-- registers min(255, 65536 / (threads * min_blocks)) less 96, at most 128, in whole 4s, for 3 sets
-- of vectors (2 without the residual) of 4 registers each
-- (40 for one_shot and two_shot generated for a known world size)
local function arn_resolve(cfg)
  local known = cfg.ranks ~= nil and cfg.ranks ~= "any" and cfg.algo ~= "one_shot_ll"
  local cap = math.min(255, 65536 // (cfg.threads * cfg.min_blocks)) - (known and 40 or 96)
  local budget = math.max(0, math.min(128, cap - cap % 4))
  return rms_resolve(cfg, math.min(4, budget // (4 * (cfg.residual and 3 or 2))))
end

local function check_rmsnorm(m, cfg, where)
  local rows = cfg.rows_per_cta
  T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
  T.deq(m.cluster, { cfg.cluster, 1, 1 }, where .. " cluster")
  T.eq(m.nonportable_cluster, cfg.nonportable == true, where .. " nonportable_cluster")
  T.eq(m.smem, 0, where .. " no dynamic shared memory")
  -- args: y, x, w, then r (residual), rstd (cta_rstd), eps (eps = "arg"), then the sizes
  local want = { "y", "x", "w" }
  if cfg.residual then want[#want + 1] = "r" end
  if cfg.cta_rstd then want[#want + 1] = "rstd" end
  if cfg.eps == "arg" then want[#want + 1] = "eps" end
  want[#want + 1] = "rows"; want[#want + 1] = "cols"
  local names = {}
  for i, a in ipairs(m.args) do names[i] = a.name end
  T.deq(names, want, where .. " args")
  for _, a in ipairs(m.args) do
    if a.name == "rstd" then T.ok(a.type == "ptr" and a.dtype == "f32" and a.role == "out", where .. " rstd")
    elseif a.name == "eps" then T.ok(a.type == "f32" and a.role == "scalar", where .. " eps arg")
    elseif a.name == "rows" or a.name == "cols" then T.ok(a.type == "i32" and a.role == "size", where .. " " .. a.name)
    else
      T.ok(a.type == "ptr" and a.dtype == cfg.dtype, where .. " " .. a.name .. " a " .. cfg.dtype .. " pointer")
      T.eq(a.role, ({ y = "out", x = "in", w = "in", r = "inout" })[a.name], where .. " " .. a.name .. " role")
      if a.name == "y" or a.name == "r" then T.eq(a.congruent, "x", where .. " " .. a.name .. " congruent to x") end
    end
  end
  -- grid: rows_per_cta rows per cluster of CTAs
  T.eq(m.grid[1].arg, "rows", where .. " grid from rows")
  T.eq(m.grid[1].per, rows, where .. " grid per rows_per_cta")
  T.eq(m.grid[1].times, cfg.cluster, where .. " grid times cluster")
  T.eq(m.grid[1].cap, cfg.persistent and "coresident" or nil, where .. " grid cap (persistent)")
  local lim = {}
  for _, l in ipairs(m.limits) do lim[l.arg] = l end
  T.eq(lim.rows.max, INT_MAX // cfg.cluster, where .. " rows max")
  local group, v = cfg.threads // rows, 16 // common.ESIZE[cfg.dtype]
  T.ok(lim.cols.max >= cfg.max_cols, where .. " cols max >= max_cols")
  T.eq(lim.cols.max % (cfg.cluster * group * v), 0, where .. " cols max: whole vectors per thread")
  T.ok(lim.cols.max - cfg.max_cols < cfg.cluster * group * v, where .. " cols max: rounded up once")
  local params = {}
  for _, p in ipairs(m.params) do params[p.key] = p.value end
  T.eq(params.rows_per_cta, tostring(rows), where .. " params.rows_per_cta")
  T.eq(params.residual, tostring(cfg.residual), where .. " params.residual")
  local eps = assert(weft.family_module("rmsnorm").fields[3].check(cfg.eps))
  T.eq(params["eps.value"], eps.value, where .. " params eps.value")
  if cfg.eps == "arg" then T.contains(m.source, "float eps", where .. " eps parameter")
  else T.contains(m.source, "a.eps = " .. eps.value .. "f;", where .. " eps literal") end
end

-- cfg: the config as given (all fields set explicitly), m: its manifest
local function check_manifest(m, cfg, file, where)
  local fam = weft.family_module(cfg.family)
  where = where or m.name
  if cfg.family == "ag_gemm" or cfg.family == "gemm" then cfg = ag_resolve(cfg) end   -- the name has what auto chose
  if cfg.family == "rmsnorm" then cfg = rms_resolve(cfg) end
  if cfg.family == "allreduce_norm" then cfg = arn_resolve(cfg) end
  if (cfg.family == "gemm_rs" or cfg.family == "gemm_ar") and cfg.tile == "auto" then
    cfg = copy(cfg)
    cfg.tile = { m = 128, n = 256, k = 64 }
  end
  if cfg.family == "gemm_rs" and (cfg.comm == nil or cfg.comm == "auto") then   -- auto: tma for atomic
    cfg = copy(cfg)
    cfg.comm = cfg.reduce == "atomic" and "tma" or "threadload"
  end
  if cfg.family == "gemm" and (cfg.l2_promotion == nil or cfg.l2_promotion == "auto") then   -- auto: 128 swapped
    cfg = copy(cfg)
    cfg.l2_promotion = cfg.swap_ab and 128 or 256
  end
  -- name: weft_<family>_<tag><value>_... in schema order
  T.eq(m.family, fam.name, where .. " family")
  T.eq(m.entry, m.name, where .. " entry")
  local prefix = "weft_" .. fam.name .. "_"
  T.eq(m.name:sub(1, #prefix), prefix, where .. " name prefix")
  T.ok(m.name:match("^[%a_][%w_]*$"), where .. " name is a C identifier")
  local toks = {}
  for t in m.name:sub(#prefix + 1):gmatch("[^_]+") do toks[#toks + 1] = t end
  T.eq(#toks, #fam.fields, where .. " one name token per field")
  for i, f in ipairs(fam.fields) do
    T.eq(toks[i], f.tag .. token(f, cfg[f.name]), where .. " name token for " .. f.name)
  end
  T.eq(m.arch, weft.ARCH, where .. " arch")
  T.eq(m.weft_version, weft.VERSION, where .. " version")
  T.eq(m.config_file, file, where .. " config_file")
  local has_arch = false
  for _, o in ipairs(m.options) do has_arch = has_arch or o == "--gpu-architecture=" .. weft.ARCH end
  T.ok(has_arch, where .. " options name the arch")

  if cfg.family == "ag_gemm" or cfg.family == "gemm" then
    check_ag_gemm(m, cfg, where)
    check_json_source(m, cfg, fam, where)
    return
  end
  -- the GEMM's launch shape, C tiled per shard; gemm_rs: one signal, f32 staging; gemm_ar: a second
  -- signal, and the rounded sum after the partials
  if cfg.family == "gemm_rs" or cfg.family == "gemm_ar" then
    local t, cl = cfg.tile, cfg.cluster or { m = 1, n = 1 }
    local csize = (cl.m or 1) * (cl.n or 1) * (cfg.split_k or 1)
    T.deq(m.block, { 128 * (1 + (cfg.consumers or 2)), 1, 1 }, where .. " block")
    T.deq(m.cluster, { csize, 1, 1 }, where .. " cluster")
    T.deq(m.grid[1], { arg = "m", per = t.m * (cl.m or 1), by = { arg = "n", per = t.n * (cl.n or 1) }, times = csize,
                       cap = "coresident", shards = "ranks" }, where .. " grid")
    local ar, tiles = cfg.family == "gemm_ar", cfg.fold == "tiles"
    T.deq(m.comm.signals, { tiles and "tile" or "done", ar and "folded" or nil }, where .. " comm signals")
    local eb = ar and 4 + 2 or 4   -- (bf16 and f16: 2 bytes)
    T.eq(m.comm.flag_div, tiles and 2 or nil, where .. " comm: a flag region for fold = tiles")
    T.ok(m.comm.halves == 2 and m.comm.elem_bytes == eb and m.comm.divide == "m", where .. " comm: f32 halves, M divided")
    T.eq(m.comm.multimem == true, cfg.comm == "multimem", where .. " comm: multimem")
    local names = {}
    for _, a in ipairs(m.args) do names[#names + 1] = a.name end
    T.deq(names, { "c", "a", "b", "m", "n", "k" }, where .. " args")
    T.contains(m.source, "const __grid_constant__ weft::Comm comm", where .. " a Comm parameter")
    -- atomic: one f32 sum per half (comm.c sizes it m * n / P), the warps' slices in shared
    -- memory past everything the GEMM uses (none on one rank: the plain epilogue)
    -- (comm = "tma" with ordered: the same slices, bulk copies into the P slots)
    local atomic, several, bulk = cfg.reduce == "atomic", cfg.ranks ~= 1, cfg.family == "gemm_rs" and cfg.comm == "tma"
    T.eq(m.comm.scatter, atomic or nil, where .. " comm.scatter only for atomic")
    T.eq(m.smem_layout.rs ~= nil, bulk and several, where .. " smem_layout.rs only for TMA bulk stores on several ranks")
    if m.smem_layout.rs then
      local L = m.smem_layout
      T.ok(L.rs % 128 == 0 and L.rs >= L.red_bar + 16 and L.rs_warp == 8 * 72 * 4, where .. " rs: aligned, past the ring")
      T.eq(L.bytes, L.rs + 4 * (cfg.consumers or 2) * L.rs_warp, where .. " rs: a slice per consumer warp")
      T.eq(m.smem, L.bytes + 1024, where .. " smem covers the slices")
      T.contains(m.source, "static constexpr unsigned SMEM_RS = " .. L.rs .. ";", where .. " SMEM_RS rendered")
    end
    if cfg.family == "gemm_rs" then
      T.contains(m.source, bulk and "weft::gemm_rs_bulk_wgmma<GemmRsCfg>" or "weft::gemm_rs_wgmma<GemmRsCfg>",
                 where .. " the comm's kernel body")
    end
    check_json_source(m, cfg, fam, where)
    return
  end
  if cfg.family == "rmsnorm" then
    check_rmsnorm(m, cfg, where)
    check_json_source(m, cfg, fam, where)
    return
  end
  if cfg.family == "allreduce_norm" then
    -- rmsnorm's layout, a comm section, a co-resident grid of row groups (two_shot: of a rank's share)
    T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
    T.deq(m.cluster, { cfg.cluster, 1, 1 }, where .. " cluster")
    T.deq(m.comm.signals, { "ready", "reduced", "data" }, where .. " signals")
    T.eq(m.comm.halves, 2, where .. " two halves")
    T.deq(m.comm.elems, { "rows", "cols" }, where .. " the buffer holds rows x cols")
    T.eq(m.grid[1].arg, "rows", where .. " grid from rows")
    T.eq(m.grid[1].per, cfg.rows_per_cta, where .. " grid per rows_per_cta")
    T.eq(m.grid[1].times, cfg.cluster, where .. " grid times cluster")
    -- every block resident, as they wait on each other; a kernel for one rank waits on nobody
    T.eq(m.grid[1].cap, cfg.ranks ~= 1 and "coresident" or nil, where .. " every block resident")
    T.eq(m.comm.ranks, (cfg.ranks == nil or cfg.ranks == "any") and 0 or cfg.ranks, where .. " the world size it is generated for")
    T.eq(m.grid[1].split, cfg.algo == "two_shot" and "ranks" or nil, where .. " two_shot splits the rows")
    -- fp8: y holds E4M3 codes (aligned as x's vectors' codes), its scales beside it
    local fp8 = cfg.quant == "fp8_e4m3"
    local want = { "y", "x", "w" }
    if fp8 then want = { "y", "scale", "x", "w" } end
    if cfg.residual then want[#want + 1] = "r" end
    if cfg.eps == "arg" then want[#want + 1] = "eps" end
    want[#want + 1] = "rows"; want[#want + 1] = "cols"
    local names = {}
    for i, a in ipairs(m.args) do names[i] = a.name end
    T.deq(names, want, where .. " args")
    for _, a in ipairs(m.args) do
      if a.name == "x" or a.name == "r" or (a.name == "y" and not fp8) then
        T.eq(a.align, 16, where .. " " .. a.name .. " 16-byte aligned")
      end
      if a.name == "y" and fp8 then
        T.eq(a.dtype, "fp8_e4m3", where .. " y's codes")
        T.eq(a.align, 16 // common.ESIZE[cfg.dtype], where .. " y's codes of a vector aligned")
      end
      if a.name == "scale" then T.ok(a.dtype == "f32" and a.role == "out", where .. " scale: f32, out") end
    end
    T.contains(m.source, "const __grid_constant__ weft::Comm comm", where .. " a Comm parameter")
    check_json_source(m, cfg, fam, where)
    return
  end

  -- families that talk to other ranks: one block shape, a grid split by the runtime, a comm section
  if m.comm then
    T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
    T.deq(m.cluster, { 1, 1, 1 }, where .. " cluster")
    T.ok(#m.comm.signals >= 1 and m.comm.halves == 2, where .. " comm: signals, two halves")
    T.eq(m.grid[1].arg, "n", where .. " grid from n")
    T.eq(m.grid[1].cap, "coresident", where .. " every block resident")
    for _, a in ipairs(m.args) do
      T.ok(a.type == "ptr" and a.dtype == cfg.dtype or a.type == "i64" and a.role == "size", where .. " arg " .. a.name)
    end
    return
  end
  -- launch shape
  T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
  T.deq(m.cluster, { cfg.cluster, 1, 1 }, where .. " cluster")
  T.eq(m.nonportable_cluster, cfg.nonportable == true, where .. " nonportable_cluster")
  T.eq(math.type(m.smem), "integer", where .. " smem")
  T.ok(m.smem >= 0 and m.smem <= common.SMEM_LIMIT, where .. " smem in range")

  -- args
  local args = {}
  for i, a in ipairs(m.args) do
    T.ok(type(a.name) == "string" and a.name:match("^[%a_][%w_]*$"), where .. " arg " .. i .. " name")
    T.ok(not args[a.name], where .. " arg " .. a.name .. " unique")
    args[a.name] = a
    T.ok(a.type == "ptr" or a.type == "i32", where .. " arg " .. a.name .. " type " .. tostring(a.type))
    if a.type == "ptr" then
      T.ok(common.ESIZE[a.dtype], where .. " arg " .. a.name .. " dtype " .. tostring(a.dtype))
      T.ok(a.role == "in" or a.role == "out", where .. " arg " .. a.name .. " role")
    else
      T.eq(a.role, "size", where .. " arg " .. a.name .. " role")
    end
    if a.congruent then T.ok(args[a.congruent] or true, where .. " congruent") end
  end
  for _, a in ipairs(m.args) do
    if a.congruent then
      T.ok(args[a.congruent] and args[a.congruent].type == "ptr", where .. " " .. a.name .. " congruent to a pointer")
    end
  end
  local n_out = 0
  for _, a in ipairs(m.args) do if a.role == "out" then n_out = n_out + 1 end end
  T.ok(n_out >= 1, where .. " has an output")
  if args.x then T.eq(args.x.dtype, cfg.dtype, where .. " x dtype") end

  -- grid: x = items * cluster, y = z = 1
  T.eq(#m.grid, 3, where .. " grid dims")
  local gx = m.grid[1]
  T.ok(args[gx.arg] and args[gx.arg].role == "size", where .. " grid.x arg is a size")
  T.eq(gx.per, 1, where .. " grid.x per")
  T.eq(gx.times, cfg.cluster, where .. " grid.x times == cluster")
  T.eq(gx.cap, cfg.persistent and "coresident" or nil, where .. " grid.x cap (persistent)")
  for k in pairs(gx) do
    T.ok(k == "arg" or k == "per" or k == "times" or k == "cap", where .. " grid.x key " .. tostring(k))
  end
  for d = 2, 3 do
    T.eq(m.grid[d].arg, nil, where .. " grid " .. d .. " arg")
    T.eq(m.grid[d].per, 1, where .. " grid " .. d .. " per")
    T.eq(m.grid[d].times, 1, where .. " grid " .. d .. " times")
  end

  -- limits: every size arg bounded, grid.x cannot overflow
  local lim = {}
  for _, l in ipairs(m.limits) do
    T.ok(args[l.arg] and args[l.arg].role == "size", where .. " limit on a size arg " .. tostring(l.arg))
    T.ok(not lim[l.arg], where .. " one limit per arg")
    lim[l.arg] = l
    T.ok(math.type(l.min) == "integer" and math.type(l.max) == "integer", where .. " limit integers")
    T.ok(l.min >= 1 and l.max >= l.min and l.max <= INT_MAX, where .. " limit range " .. l.arg)
  end
  for _, a in ipairs(m.args) do
    if a.role == "size" then T.ok(lim[a.name], where .. " size arg " .. a.name .. " has a limit") end
  end
  T.ok(lim[gx.arg].max * gx.times <= INT_MAX, where .. " grid.x fits an int")
  T.eq(lim[gx.arg].max, INT_MAX // cfg.cluster, where .. " grid arg max")
  if cfg.family == "row_softmax" then
    local v = 16 // common.ESIZE[cfg.dtype]
    if cfg.mode == "stream" then
      T.eq(lim.cols.max, INT_MAX, where .. " stream cols max")
    else   -- the modes that hold a row slice on chip take rows up to max_cols (rounded up)
      T.ok(lim.cols.max >= cfg.max_cols, where .. " " .. cfg.mode .. " cols max >= max_cols")
      T.eq(lim.cols.max % (cfg.cluster * v), 0, where .. " cols max: whole vectors per CTA")
      T.ok(lim.cols.max - cfg.max_cols < cfg.cluster * cfg.threads * v, where .. " cols max: rounded up once")
      if cfg.mode == "onchip" then
        T.eq(lim.cols.max % (cfg.cluster * cfg.threads * v), 0, where .. " onchip cols max: whole vectors per thread")
      end
    end
    if cfg.mode == "tma" then   -- two stages of each CTA's slice in dynamic shared memory
      local slice = (cfg.max_cols + cfg.cluster - 1) // cfg.cluster * common.ESIZE[cfg.dtype]
      T.ok(m.smem >= 2 * slice, where .. " tma smem holds two slices")
    end
  end

  -- params: sorted, family plus every field
  local params = {}
  for i, p in ipairs(m.params) do
    if i > 1 then T.ok(m.params[i - 1].key < p.key, where .. " params sorted") end
    params[p.key] = p.value
  end
  T.eq(params.family, fam.name, where .. " params.family")
  for _, f in ipairs(fam.fields) do
    local v = cfg[f.name]
    if f.kind == "custom" then
      local op = assert(f.check(v))
      T.eq(params[f.name], op.name, where .. " params." .. f.name)
      T.eq(params[f.name .. ".combine"], op.combine, where .. " params." .. f.name .. ".combine")
      T.eq(params[f.name .. ".identity"], op.identity, where .. " params." .. f.name .. ".identity")
    else
      T.eq(params[f.name], tostring(v), where .. " params." .. f.name)
    end
  end

  check_json_source(m, cfg, fam, where)
end

-- The kernel's parameter list as the runtime passes it (api_launch): args in order (C types from
-- type, dtype and role), a tensor map per tmap, the communicator last -- written out here, not
-- taken from gen/core/weft.lua.
local function signature(m)
  local ptr = { f32 = "float", f16 = "weft::f16", bf16 = "weft::bf16", fp8_e4m3 = "weft::fp8e4m3" }
  local scalar = { i32 = "int", i64 = "long long", f32 = "float" }
  local out = {}
  for _, a in ipairs(m.args) do
    out[#out + 1] = a.type == "ptr" and (a.role == "in" and "const " or "") .. ptr[a.dtype] .. " *" .. a.name
      or scalar[a.type] .. " " .. a.name
  end
  for _, t in ipairs(m.tmaps or {}) do out[#out + 1] = "const __grid_constant__ weft::TensorMap " .. t.name end
  if m.workspace then out[#out + 1] = "void *ws" end
  if m.comm then out[#out + 1] = "const __grid_constant__ weft::Comm comm" end
  return table.concat(out, ", ")
end

-- the manifest's json (the table minus source and json) and the rendered source's shape
check_json_source = function(m, cfg, fam, where)
  local ok, j = pcall(T.json_decode, m.json)
  T.ok(ok, where .. " json decodes: " .. tostring(j))
  T.eq(j.source, nil, where .. " json has no source")
  T.eq(j.json, nil, where .. " json has no json")
  -- (parts: the kernels launched after this one, manifests with json files of their own; ref_key:
  -- a custom operator's key in the generator's state, which differs from run to run)
  for k, v in pairs(m) do
    if k ~= "source" and k ~= "json" and k ~= "parts" and k ~= "ref_key" then T.deq(j[k], v, where .. " json." .. k) end
  end
  T.eq(j.ref_key, nil, where .. " json has no ref_key")
  local listed = false
  for _, name in ipairs(j.kernels) do listed = listed or name == m.name end
  T.ok(listed, where .. " json.kernels names this kernel")
  for k in pairs(j) do T.ok(m[k] ~= nil, where .. " json key " .. k .. " in the manifest") end
  T.eq(json.encode(j), m.json, where .. " json round trip")

  -- source
  local s = m.source
  T.eq(s:sub(1, #('#line 1 "' .. fam.template .. '"')), '#line 1 "' .. fam.template .. '"', where .. " source starts")
  T.eq(s:sub(1, 19), '#line 1 "templates/', where .. " source starts with #line 1 \"templates/")
  T.not_contains(s, "${", where .. " source")
  T.not_contains(s, '#include "weft/', where .. " source (headers inlined)")
  T.eq(s:sub(-1), "\n", where .. " source ends with a newline")
  for l in s:gmatch("[^\n]*") do
    if l:match("^#line") then
      T.ok(l:match('^#line %d+ "templates/[%w_/]+%.cuh?"$'), where .. " #line shape: " .. l)
    end
  end
  T.ok(s:find('extern "C" __global__', 1, true), where .. " has an extern C kernel")
  T.ok(s:find(" " .. m.name .. "(", 1, true), where .. " defines " .. m.name)
  T.contains(s, " " .. m.name .. "(" .. signature(m) .. ") {", where .. " signature from the manifest")
  local op = cfg.op and assert(weft.family_module(cfg.family).fields and require("gen.core.ops").check(cfg.op))
  if op then
    T.contains(s, op.combine, where .. " combine in source")
    T.contains(s, op.identity, where .. " identity in source")
  end
end

-- ---- examples ----------------------------------------------------------------------------

local function list_examples()
  local p = io.popen('ls "' .. SRC .. '/examples"')
  local out = {}
  for l in p:lines() do if l:match("%.lua$") then out[#out + 1] = l end end
  p:close()
  table.sort(out)
  return out
end

-- complete a config with every field's value (the generator's view) for checks
local function complete(cfg)
  local fam = weft.family_module(cfg.family)
  local c = copy(cfg)
  for _, f in ipairs(fam.fields) do if c[f.name] == nil then c[f.name] = f.default end end
  return c
end

T.test("every family's examples generate, consistent with their configs", function()
  local files = list_examples()
  T.ok(#files >= #weft.families(), "examples found in " .. SRC .. "/examples")
  local covered = {}
  for _, f in ipairs(files) do
    local path = "examples/" .. f
    local text = assert(weft_read(path))
    local m, err = gen(text, path)
    T.ok(m, path .. ": " .. tostring(err))
    local cfg = assert(load(text, "@" .. path, "t", { math = math, string = string, table = table }))()
    check_manifest(m, complete(cfg), path, path)
    covered[m.family] = true
  end
  for _, fam in ipairs(weft.families()) do T.ok(covered[fam], "an example of " .. fam) end
end)

T.test("determinism: the same config twice gives byte-identical source and json", function()
  for _, f in ipairs(list_examples()) do
    local path = "examples/" .. f
    local text = assert(weft_read(path))
    local a = assert(gen(text, path))
    local b = assert(gen(text, path))
    T.eq(a.source, b.source, path .. " source")
    T.eq(a.json, b.json, path .. " json")
    T.eq(a.name, b.name, path .. " name")
  end
end)

T.test("determinism: key order, comments and equal --set overrides change nothing", function()
  local a = assert(gen('return { family = "row_reduce", op = "max", threads = 128, cluster = 4 }'))
  local b = assert(gen('-- a comment\nlocal t = 64 * 2\nreturn { cluster = 2 * 2, threads = t, op = "max", family = "row_reduce" }'))
  local c = assert(gen('return { family = "row_reduce", op = "sum", threads = 256, cluster = 1 }', nil,
    { "op=max", "threads=128", "cluster=4" }))
  T.eq(b.source, a.source); T.eq(b.json, a.json)
  T.eq(c.source, a.source); T.eq(c.json, a.json)
end)

T.test("the config file's path is recorded, and only in the manifest", function()
  local text = 'return { family = "row_reduce", op = "sum" }'
  local a = assert(gen(text, "a/one.lua"))
  local b = assert(gen(text, "b/two.lua"))
  T.eq(a.source, b.source, "source does not depend on the path")
  T.contains(a.json, '"config_file": "a/one.lua"')
end)

-- ---- gemm_rs fold = "tiles": the flag region holds every tile ------------------------------
-- runtime/core/comm.c gives it max_elems / flag_div + 4096 bytes (rounded up to 256); the kernel
-- (templates/weft/gemm_rs.cuh RsTiles::flag) cuts it into P equal parts, one per source, each
-- holding a u64 per (tile, part) of this rank's shard: Ms x n with Ms = m / P, m * n <= max_elems.
T.test("gemm_rs fold = tiles: every source's flags fit its part of the region", function()
  local m = gen(cfg_text({ family = "gemm_rs", fold = "tiles" }), "t.lua")
  local div = m.comm.flag_div
  T.ok(div and div > 0, "fold = tiles has a flag region")
  local worst = 0
  for P = 1, 8 do
    for _, ms in ipairs({ 1, 2, 63, 64, 65, 127, 129, 255, 1000, 8191 }) do
      for _, n in ipairs({ 8, 16, 64, 72, 200, 520, 4096, 8200, 49152, 1 << 20 }) do
        local E = P * ms * n
        local R = (E // div + 4096 + 255) // 256 * 256   -- (a rank's max_elems may be larger: more room)
        local per = R // 8 // P
        for _, tp in ipairs({ { 64, 1 }, { 128, 1 }, { 128, 2 }, { 256, 1 }, { 256, 2 } }) do
          for _, bn in ipairs({ 64, 128, 192, 256 }) do
            local need = ((ms + tp[1] - 1) // tp[1]) * ((n + bn - 1) // bn) * tp[2]
            worst = math.max(worst, need / per)
            T.ok(need <= per, string.format("P=%d Ms=%d n=%d tile %dx%d parts %d: %d flags, %d slots", P, ms, n, tp[1],
                                            bn, tp[2], need, per))
          end
        end
      end
    end
  end
  T.ok(worst < 0.75, "room to spare: at most " .. worst .. " of a part used")
end)

-- ---- every parameter is in the name ------------------------------------------------------

local BASE = {
  row_reduce = { dtype = "f32", op = "sum", cluster = 2, nonportable = false, threads = 256, unroll = 4,
                 min_blocks = 1 },
  row_softmax = { dtype = "f32", mode = "onchip", max_cols = 4096, cluster = 2, nonportable = false,
                  threads = 256, unroll = 4, min_blocks = 1 },
  cluster_reduce = { dtype = "f32", op = "sum", width = 1, cluster = 2, nonportable = false, threads = 128,
                     need_tail_sync = true, iters = 1 },
  rmsnorm = { dtype = "bf16", residual = false, eps = 1e-6, max_cols = 1024, cluster = 1, nonportable = false,
              threads = 256, rows_per_cta = 2, min_blocks = 1, cta_rstd = false },
  allreduce_norm = { dtype = "bf16", algo = "one_shot", comm = "threadload", fallback = "none", residual = true,
                     eps = 1e-6, max_cols = 1024, cluster = 1, nonportable = false, threads = 256, rows_per_cta = 2,
                     min_blocks = 1, exchange = "pull", ranks = "any", pdl = false },
  -- every auto spelled out, so that a varied field never resolves to the base by accident
  ag_gemm = { dtype = "bf16", variant = "fused", comm = "tma", fallback = "none", compute = "wgmma", b_layout = "row",
              tile = { m = 128, n = 256, k = 64 }, stages = 4, consumers = 2, mma = "cooperative", group = 16,
              schedule = "ring" },
  gemm = { dtype = "bf16", b_layout = "row", tile = { m = 128, n = 256, k = 64 }, stages = 4, consumers = 2,
           mma = "cooperative", group = 16, pdl = false },
  gemm_rs = { comm = "threadload", tile = { m = 128, n = 256, k = 64 } },   -- (the rest: the defaults)
}

-- ag_gemm tiles to try besides the base's 128 x 256 x 64: every WGMMA m and n, the accumulator
-- limit from both sides, and shapes only the scalar kernels (or nothing) take
local AG_TILES = { "auto", { m = 64, n = 256, k = 64 }, { m = 256, n = 128, k = 64 }, { m = 128, n = 128, k = 64 },
                   { m = 128, n = 192, k = 64 }, { m = 128, n = 64, k = 64 }, { m = 64, n = 64, k = 64 },
                   { m = 256, n = 64, k = 64 }, { m = 256, n = 256, k = 64 }, { m = 128, n = 96, k = 64 },
                   { m = 96, n = 256, k = 64 }, { m = 128, n = 256, k = 32 }, { m = 32, n = 32, k = 16 } }

local CUSTOM_OPS = {
  { combine = "fmaxf(fabsf(a), fabsf(b))", identity = "0.0f" },
  { combine = "a + b", identity = "0.0f" },   -- the same text as sum, still a different kernel
  { combine = "a + b", identity = "-0.0f" },
}

local function base_config(fam)
  local cfg = { family = fam.name }
  for _, f in ipairs(fam.fields) do
    local v = (BASE[fam.name] or {})[f.name]
    if v == nil then v = f.default end   -- fields added since these tests were written
    cfg[f.name] = v
  end
  return cfg
end

local function candidates(f, base)
  local out, seen = {}, {}
  local function add(v)
    local key = type(v) == "table" and lua_text(v) or tostring(v) .. type(v)
    if v ~= base and not seen[key] then seen[key] = true; out[#out + 1] = v end
  end
  if f.kind == "bool" then add(not base)
  elseif f.kind == "enum" then for _, v in ipairs(f.values) do add(v) end
  elseif f.kind == "int" and f.values then for _, v in ipairs(f.values) do add(v) end
  elseif f.kind == "int" then
    if f.max - f.min <= 64 then
      for v = f.min, f.max do add(v) end
    else
      for _, v in ipairs({ f.min, f.min + 1, base - 1, base + 1, base // 2, base * 2, base * 3, f.max - 1, f.max }) do
        if v >= f.min and v <= f.max then add(v) end
      end
    end
  elseif f.kind == "custom" and f.name == "op" then
    for _, n in ipairs(require("gen.core.ops").names) do add(n) end
    for _, o in ipairs(CUSTOM_OPS) do add(o) end
  elseif f.kind == "custom" and f.name == "tile" then
    seen[lua_text(base)] = true
    for _, t in ipairs(AG_TILES) do add(t) end
  elseif f.kind == "custom" and f.name == "cluster" then   -- ag_gemm's { m, n }: two accepted, two refused
    seen[lua_text(base)] = true
    for _, c in ipairs({ { m = 2, n = 1 }, { m = 1, n = 2 }, { m = 2, n = 2 }, { m = 3, n = 1 } }) do add(c) end
  elseif f.kind == "custom" and f.name == "eps" then   -- rmsnorm (0 and 1 are the range's ends)
    for _, e in ipairs({ 1e-5, 0, 1, 0.5, "arg", -1e-6, 2, "config" }) do add(e) end
  elseif f.kind == "custom" and f.name == "ranks" then   -- 0, 9 and a string are refused
    for _, r in ipairs({ 1, 2, 3, 8, 0, 9, "two", 2.5 }) do add(r) end
  elseif f.kind == "custom" and f.name == "l2_promotion" then   -- (256 is what the base's auto resolves to)
    for _, v in ipairs({ 0, 64, 128, 32, 512 }) do add(v) end
  elseif f.kind == "custom" and f.name == "rows_per_cta" then   -- "auto": its own test
    for _, r in ipairs({ 1, 2, 4, 8, 16, 32, 3 }) do add(r) end
  elseif f.kind == "string" then add(base .. "x")
  end
  return out
end

local THREADS = { 64, 128, 256, 512, 1024 }

-- Set the companions a varied field needs (the families' cross-field rules).
local function fixup(cfg, field)
  if field == "cluster" and type(cfg.cluster) == "number" and cfg.cluster > common.PORTABLE_CLUSTER then
    cfg.nonportable = true
  end
  if cfg.min_blocks and cfg.threads * cfg.min_blocks > 2048 then
    if field == "min_blocks" then
      local t = 64
      for _, x in ipairs(THREADS) do if x * cfg.min_blocks <= 2048 then t = x end end
      cfg.threads = t
    else
      cfg.min_blocks = math.max(1, 2048 // cfg.threads)
    end
  end
  if cfg.family == "cluster_reduce" and cfg.exchange == "push" then cfg.need_tail_sync = false end
  if cfg.family == "allreduce" then   -- multimem is two_shot, and only it has a fallback
    if field == "comm" and cfg.comm == "multimem" then cfg.algo = "two_shot" end
    if field == "fallback" and cfg.fallback ~= "none" then cfg.comm = "multimem"; cfg.algo = "two_shot" end
  end
  if (cfg.family == "reduce_scatter" or cfg.family == "all_gather" or cfg.family == "gemm_ar" or cfg.family == "gemm_rs")
      and field == "fallback"
      and cfg.fallback ~= "none" then
    cfg.comm = "multimem"   -- only multimem has a fallback
  end
  if cfg.family == "ag_gemm" then
    -- a variant brings its own comm, compute and tile; a fallback needs multimem; one consumer
    -- warpgroup holds the accumulators of 64 x 256 at most (and a 64-row tile has one to give);
    -- pingpong gives each of the two a whole tile, so 128 x 128 at most
    if field == "variant" then cfg.comm, cfg.compute, cfg.tile = "auto", "auto", "auto" end
    if field == "fallback" and cfg.fallback ~= "none" then cfg.comm = "multimem" end
    if field == "consumers" and cfg.consumers == 1 then cfg.tile = { m = 64, n = 256, k = 64 } end
    if field == "mma" and cfg.mma == "pingpong" then cfg.tile = { m = 128, n = 128, k = 64 } end
    if field == "split_k" and cfg.split_k > 1 then cfg.tile = { m = 128, n = 128, k = 64 } end   -- the partial tile fits
    if field == "epilogue" and cfg.epilogue == "tma" then cfg.stages = 3 end   -- C's stage fits beside 3
    if field == "tile" and type(cfg.tile) == "table" and cfg.tile.m == 64 then cfg.consumers = 1 end
    -- auto spelled out, so that "auto" for the base's own value is the base again
    -- (variant = "gemm" stays as given: the one message it gets points to family gemm)
    local r = cfg.variant ~= "gemm" and ag_resolve(cfg) or cfg
    cfg.comm, cfg.tile, cfg.compute = r.comm, r.tile, r.compute
  end
  if cfg.family == "gemm_rs" then   -- atomic's bulk adds; auto spelled out (the base's own value is the base)
    if field == "reduce" and cfg.reduce == "atomic" then cfg.comm = "tma" end
    if field == "reducer" and cfg.reducer == "producer" then cfg.fold = "tiles" end   -- the producer folds tile by tile
    if cfg.comm == "auto" then cfg.comm = cfg.reduce == "atomic" and "tma" or "threadload" end
  end
  if cfg.family == "gemm" or cfg.family == "gemm_rs" or cfg.family == "gemm_ar" then   -- the same GEMM rules as ag_gemm's wgmma variants
    if field == "consumers" and cfg.consumers == 1 then cfg.tile = { m = 64, n = 256, k = 64 } end
    if field == "mma" and cfg.mma == "pingpong" then cfg.tile = { m = 128, n = 128, k = 64 } end
    -- kturns: each of the two warpgroups a whole tile (96 accumulators at most), an even ring
    if field == "mma" and cfg.mma == "kturns" then cfg.tile = { m = 64, n = 128, k = 64 } end
    if field == "split_k" and cfg.split_k > 1 then cfg.tile = { m = 128, n = 128, k = 64 } end
    if field == "split_k_tail" and cfg.split_k_tail then cfg.split_k = 2; cfg.tile = { m = 128, n = 128, k = 64 } end
    if field == "epilogue" and cfg.epilogue == "tma" then cfg.stages = 3 end
    if field == "tile" and type(cfg.tile) == "table" and cfg.tile.m == 64 then cfg.consumers = 1 end
    if cfg.tile == "auto" then cfg.tile = { m = 128, n = 256, k = 64 } end
    if field == "swap_ab" and cfg.swap_ab then   -- B column-major, C stored straight, a decode tile
      cfg.b_layout, cfg.epilogue, cfg.tile = "col", "direct", { m = 16, n = 128, k = 64 }
    end
    if field == "any_n" and cfg.any_n then cfg.b_layout, cfg.epilogue = "col", "direct" end   -- what stores any N
  end
  if cfg.family == "rmsnorm" then
    -- a row split across a cluster takes its CTAs whole; a CTA per SM that min_blocks asks for
    -- needs registers for the row beside the kernel's own
    if field == "cluster" and cfg.cluster > 1 then cfg.rows_per_cta = 1 end
    if field == "min_blocks" and cfg.min_blocks > 1 then
      for _, t in ipairs(THREADS) do if t * cfg.min_blocks <= 1024 and t >= 64 then cfg.threads = t end end
      if cfg.threads // cfg.rows_per_cta < 32 then cfg.rows_per_cta = 1 end
    end
  end
  if cfg.family == "allreduce_norm" then
    if field == "comm" and cfg.comm == "multimem" then cfg.algo = "two_shot" end
    if field == "fallback" and cfg.fallback == "emulate" then cfg.comm = "multimem"; cfg.algo = "two_shot" end
    if field == "cluster" and cfg.cluster > 1 then cfg.rows_per_cta = 1 end
    if field == "threads" and cfg.threads // cfg.rows_per_cta < 32 then cfg.rows_per_cta = 1 end
  end
  if cfg.family == "row_softmax" then
    if field == "mode" and cfg.mode == "stream" then cfg.max_cols = 0 end
    if field == "unroll" then cfg.mode = "stream"; cfg.max_cols = 0 end
    if field == "max_cols" and cfg.max_cols == 0 then cfg.mode = "stream" end
  end
  return cfg
end

T.test("the kernel name changes when any single parameter changes", function()
  local report = {}
  for _, fname in ipairs(weft.families()) do
    local fam = weft.family_module(fname)
    local base = base_config(fam)
    local bm, err = gen(cfg_text(base), "base.lua")
    T.ok(bm, fname .. " base config: " .. tostring(err))
    check_manifest(bm, base, "base.lua", fname .. " base")
    local names = { [bm.name] = "base" }
    local configs = { [lua_text(base)] = "base" }
    local accepted, rejected, fixed = 0, 0, 0
    for _, f in ipairs(fam.fields) do
      local cands = candidates(f, base[f.name])
      local ok_for_field = 0
      for _, v in ipairs(cands) do
        local cfg = copy(base)
        cfg[f.name] = v
        local before = lua_text(cfg)
        fixup(cfg, f.name)
        if lua_text(cfg) ~= before then fixed = fixed + 1 end
        local what = string.format("%s: %s = %s", fname, f.name, T.show(v))
        local m, e
        if configs[lua_text(cfg)] then
          -- the companions made it a config already tried (max_cols = 0 is mode = "stream")
          ok_for_field = ok_for_field + 1
        else
          configs[lua_text(cfg)] = what
          m, e = gen(cfg_text(cfg), "variant.lua")
        end
        if configs[lua_text(cfg)] ~= what then -- a duplicate, done above
        elseif m then
          accepted = accepted + 1
          ok_for_field = ok_for_field + 1
          T.ne(m.name, bm.name, what .. ": name differs from the base")
          T.ok(not names[m.name], what .. ": name " .. m.name .. " already used by " .. tostring(names[m.name]))
          names[m.name] = what
          T.ne(m.source, bm.source, what .. ": source differs from the base")
          check_manifest(m, cfg, "variant.lua", what)
        else
          -- only a deliberate rule on this very field may refuse a value
          rejected = rejected + 1
          if f.kind == "custom" and f.name == "tile" then
            -- a tile's rules name the tile (as its name token, 128x256x64) or one of its dimensions (tile.m = 96)
            T.ok(e:find('variant.lua: tile = "%d+x%d+x%d+": ') or e:find("variant.lua: tile%.[mnk] = %d+: "),
              what .. " rejected: " .. e)
          else
            T.contains(e, "variant.lua: " .. f.name .. " = " .. require("gen.core.schema").show(v) .. ": ", what .. " rejected")
          end
        end
      end
      if #cands > 0 then
        T.ok(ok_for_field > 0, fname .. "." .. f.name .. ": no accepted variant")
      else
        report[#report + 1] = fname .. "." .. f.name .. " has a single allowed value"
      end
    end
    report[#report + 1] = string.format("%s: %d variants, %d with companions set, %d refused by rules",
      fname, accepted, fixed, rejected)
  end
  for _, r in ipairs(report) do io.write("  ", r, "\n") end
end)

T.test("names across families and examples are all distinct", function()
  local names = {}
  for _, fname in ipairs(weft.families()) do
    local m = assert(gen(cfg_text(base_config(weft.family_module(fname)))))
    T.ok(not names[m.name], m.name); names[m.name] = true
  end
end)

-- ---- configs the generator completes -----------------------------------------------------

T.test("a config with only family (plus required companions) generates", function()
  local minimal = {
    row_reduce = 'return { family = "row_reduce" }',
    cluster_reduce = 'return { family = "cluster_reduce" }',
    row_softmax = 'return { family = "row_softmax", max_cols = 1024 }',
    rmsnorm = 'return { family = "rmsnorm", max_cols = 4096 }',
    allreduce_norm = 'return { family = "allreduce_norm", max_cols = 4096 }',
  }
  local bad = {}
  for _, fname in ipairs(weft.families()) do
    local text = minimal[fname] or ('return { family = "' .. fname .. '" }')
    local m, err = gen(text, "min.lua")
    if m then
      check_manifest(m, complete(assert(load(text, "=min", "t", {}))()), "min.lua", fname .. " minimal")
    else
      bad[#bad + 1] = fname .. ": " .. tostring(err)
    end
  end
  T.eq(#bad, 0, "minimal configs refused:\n    " .. table.concat(bad, "\n    "))
end)

T.test("a custom op's ref function is allowed and does not change the kernel", function()
  local a = assert(gen('return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "-1e30f" } }'))
  local b = assert(gen('return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "-1e30f", ' ..
    'ref = function(a, b) return math.max(a, b) end } }'))
  T.eq(a.name, b.name); T.eq(a.source, b.source)
  -- the manifest says a host reference exists (the runtime checks with it); nothing else differs
  T.ok(b.json:find('"op.ref"', 1, true) and not a.json:find('"op.ref"', 1, true), "op.ref param")
end)

T.test("--set through generate: applies, validates, names the file", function()
  local text = assert(weft_read("examples/row_reduce.lua"))
  local m = assert(gen(text, "examples/row_reduce.lua", { "threads=128", "op=max" }))
  T.deq(m.block, { 128, 1, 1 })
  T.contains(m.name, "_max_")
  local _, e = gen(text, "examples/row_reduce.lua", { "threads=100" })
  T.contains(e, "examples/row_reduce.lua: threads = 100: must be one of 64, 128, 256, 512, 1024")
  _, e = gen(text, "examples/row_reduce.lua", { "threads" })
  T.contains(e, "examples/row_reduce.lua")
  T.contains(e, "expected key=value")
  _, e = gen(text, "examples/row_reduce.lua", { "cluster=16" })
  T.contains(e, "examples/row_reduce.lua: cluster = 16: must be at most 8; up to 16 needs nonportable = true")
  m = assert(gen(text, "examples/row_reduce.lua", { "cluster=16", "nonportable=true" }))
  T.deq(m.cluster, { 16, 1, 1 })
  T.eq(m.nonportable_cluster, true)
end)

T.test("rmsnorm: rows_per_cta = auto, eps in the name, the rules' numbers", function()
  local function g(extra) return gen('return { family = "rmsnorm", dtype = "bf16", ' .. extra .. ' }', "r.lua") end
  -- auto: the most rows that keep 4 vectors per thread (4096 bf16 on 256 threads: 2 rows, 4
  -- vectors each); short rows get a warp each; a cluster takes whole CTAs
  local cases = { { "max_cols = 4096", 2 }, { "max_cols = 8192", 1 }, { "max_cols = 7", 8 },
                  { "max_cols = 7, threads = 1024", 32 }, { "max_cols = 1024, dtype = \"f32\"", 4 },
                  { "max_cols = 65536, cluster = 8, threads = 1024", 1 }, { "max_cols = 16384", 1 } }
  for _, c in ipairs(cases) do
    local m = assert(g(c[1] .. ', rows_per_cta = "auto"'))
    T.eq(m.grid[1].per, c[2], c[1] .. ": auto rows")
    local e = assert(g(c[1] .. ", rows_per_cta = " .. c[2]))
    T.eq(m.name, e.name, c[1] .. ": auto is the same kernel as its value")
    T.eq(m.source, e.source, c[1] .. ": same source")
  end
  -- eps: the f32 value names the kernel, and equal f32 values are one kernel
  local a, b = assert(g("max_cols = 64, eps = 1e-5")), assert(g("max_cols = 64, eps = 1.0000000001e-5"))
  T.contains(a.name, "_e1em05_", "eps token")
  T.eq(a.name, b.name, "same f32, same name")
  T.eq(a.source, b.source, "same f32, same source")
  T.ne(assert(g("max_cols = 64, eps = 2e-5")).name, a.name, "another eps, another kernel")
  T.contains(assert(g("max_cols = 64, eps = 0.25")).name, "_e0p25_", "a decimal point")
  T.contains(assert(g('max_cols = 64, eps = "arg"')).name, "_earg_", "eps as an argument")
  -- the register rule's numbers: 128 registers of row and w on 256 threads, 16 vectors of each
  T.ok(g("max_cols = 32768, rows_per_cta = 1"), "16 vectors on 256 threads")
  local _, e = g("max_cols = 32769, rows_per_cta = 1")
  T.contains(e, "r.lua: max_cols = 32769: needs 17 16-byte vectors per thread (136 registers: the row and w)")
  T.contains(e, "at most 16 fit (max_cols <= 32768)")
  -- min_blocks shares the register file: 4 CTAs of 256 threads leave 64 - 40 for data, 3 vectors
  _, e = g("max_cols = 8193, rows_per_cta = 1, min_blocks = 4")
  T.contains(e, "at most 3 fit (max_cols <= 6144)")
  -- the residual holds a third set: 5120 f16 on 512 threads, 8 rows, is 10 vectors of 12 registers
  _, e = g('dtype = "f16", residual = true, max_cols = 5120, threads = 512, rows_per_cta = 8')
  T.contains(e, "needs 10 16-byte vectors per thread (120 registers: the row and w, and r while h is formed)")
end)

T.test("family errors name the file, the value and the families", function()
  -- every module in gen/families/, sorted: a new family is a new file, with no list to edit
  local names = {}
  for _, f in ipairs(weft.families()) do names[#names + 1] = '"' .. f .. '"' end
  local all = table.concat(names, ", ")
  T.ok(all:find('"ag_gemm", "all_gather", "allreduce", "allreduce_norm", "cluster_reduce"', 1, true), "the families, sorted: " .. all)
  local _, e = gen('return { threads = 256 }', "x.lua")
  T.eq(e, "x.lua: family = nil: must be one of " .. all)
  _, e = gen('return { family = "row_reduc" }', "x.lua")
  T.eq(e, 'x.lua: family = "row_reduc": must be one of ' .. all)
  _, e = gen('return { family = 3 }', "x.lua")
  T.eq(e, "x.lua: family = 3: must be one of " .. all)
  _, e = gen('return { family = "config" }', "x.lua")
  T.eq(e, 'x.lua: family = "config": must be one of ' .. all)
end)

T.test("every config error message starts with the file", function()
  local cases = {
    'return { family = "row_reduce", thread = 256 }',
    'return { family = "row_reduce", threads = 100, op = "avg", cluster = 0 }',
    'return { family = "row_softmax" }',
    'return { family = "row_softmax", max_cols = 4000000, cluster = 1, threads = 256 }',
    'return { family = "row_softmax", mode = "stream", max_cols = 5 }',
    'return { family = "cluster_reduce", dtype = "f16" }',
    'return 5',
    'return {',
  }
  for _, text in ipairs(cases) do
    local m, e = gen(text, "dir/c.lua")
    T.eq(m, nil, text)
    for _, l in ipairs(T.lines(e)) do T.eq(l:sub(1, 10), "dir/c.lua:", text .. " -> " .. l) end
  end
end)

T.test("row_softmax: the register rule's message names the numbers and stream", function()
  local _, e = gen('return { family = "row_softmax", max_cols = 4000000, cluster = 1, threads = 256 }', "s.lua")
  T.contains(e, "s.lua: max_cols = 4000000: ")
  T.contains(e, "cluster = 1, threads = 256")
  T.contains(e, "(max_cols <= 32768)")
  T.contains(e, 'mode = "stream"')
  -- the bound it names is exact: 32768 is accepted, 32769 is not
  T.ok(gen('return { family = "row_softmax", max_cols = 32768, cluster = 1, threads = 256 }'), "32768 fits")
  T.eq(gen('return { family = "row_softmax", max_cols = 32769, cluster = 1, threads = 256 }'), nil, "32769")
end)

-- ---- ag_gemm ------------------------------------------------------------------------------

local function ag(fields, overrides)
  return gen("return { family = \"ag_gemm\", " .. (fields or "") .. " }", "ag.lua", overrides)
end
local function param(m, key)
  for _, p in ipairs(m.params) do if p.key == key then return p.value end end
  return nil
end
local function gm(fields, overrides)
  return gen("return { family = \"gemm\", " .. (fields or "") .. " }", "gemm.lua", overrides)
end
-- gm's message for fields a rule refuses, whole
local function gm_refused(fields, want)
  local _, e = gm(fields)
  T.eq(e, "gemm.lua: " .. want, fields)
end
-- gm's manifest against the one the test's own model of the family expects
local function gm_manifest(m, fields)
  check_manifest(m, complete(assert(load("return { family = \"gemm\", " .. fields .. " }", "=gm", "t", {}))()),
    "gemm.lua", fields)
end
local AG_PREFIX = "weft_ag_gemm_bf16_"
local AG_SUFFIX = "_s4_c2_cooperative_cl1x1_sk1_epdirect_g16_ring"

T.test("ag_gemm: auto resolves to the variant's own comm, compute and tile, named as such", function()
  local want = {
    { "", "fused_threadload_fbnone_wgmma_brow_128x256x64" },
    { 'variant = "fused"', "fused_threadload_fbnone_wgmma_brow_128x256x64" },
    { 'variant = "fused", comm = "tma"', "fused_tma_fbnone_wgmma_brow_128x256x64" },
    { 'variant = "naive_remote"', "naiveremote_threadload_fbnone_scalar_brow_32x32x16" },
    { 'variant = "threadload_gather"', "threadloadgather_threadload_fbnone_scalar_brow_32x32x16" },
    { 'variant = "multimem_gather"', "multimemgather_multimem_fbnone_scalar_brow_32x32x16" },
    { 'variant = "gather_then_gemm"', "gatherthengemm_threadload_fbnone_wgmma_brow_128x256x64" },
    { 'variant = "fused", comm = "threadload"', "fused_threadload_fbnone_wgmma_brow_128x256x64" },
    { 'variant = "gather_then_gemm", comm = "multimem", fallback = "emulate"',
      "gatherthengemm_multimem_fbemulate_wgmma_brow_128x256x64" },
  }
  for _, w in ipairs(want) do
    local m, e = ag(w[1])
    T.ok(m, w[1] .. ": " .. tostring(e))
    T.eq(m.name, AG_PREFIX .. w[2] .. AG_SUFFIX, w[1])
    check_manifest(m, complete(assert(load("return { family = \"ag_gemm\", " .. w[1] .. " }", "=ag", "t", {}))()),
      "ag.lua", w[1])
  end
  -- auto and the value it resolves to are one kernel: same name, source and manifest
  local same = {
    { 'variant = "naive_remote"', 'variant = "naive_remote", comm = "threadload", compute = "scalar", tile = { m = 32, n = 32, k = 16 }' },
    { 'variant = "multimem_gather"', 'variant = "multimem_gather", comm = "multimem", compute = "scalar"' },
    { "", 'variant = "fused", comm = "threadload", compute = "wgmma", tile = { k = 64, n = 256, m = 128 }' },
    { "", 'variant = "fused", mma = "cooperative"' },
    { 'variant = "gather_then_gemm"', 'variant = "gather_then_gemm", comm = "threadload", compute = "auto"' },
  }
  for _, p in ipairs(same) do
    local a, b = assert(ag(p[1])), assert(ag(p[2]))
    T.eq(b.name, a.name, p[2])
    T.eq(b.source, a.source, p[2] .. " source")
    T.eq(b.json, a.json, p[2] .. " json")
  end
  -- the name carries the tile (not the word auto), so explicit tiles of the scalar kernels differ
  T.eq(assert(ag('variant = "naive_remote", tile = { m = 64, n = 16, k = 8 }')).name,
    AG_PREFIX .. "naiveremote_threadload_fbnone_scalar_brow_64x16x8" .. AG_SUFFIX)
end)

T.test("gemm, ag_gemm: the tile is flattened to tile.m, tile.n, tile.k in params", function()
  local text = assert(weft_read("examples/gemm.lua"))
  local m = assert(gen(text, "examples/gemm.lua"))
  T.eq(param(m, "tile.m"), "128"); T.eq(param(m, "tile.n"), "256"); T.eq(param(m, "tile.k"), "64")
  T.eq(param(m, "tile"), nil, "no tile key"); T.eq(param(m, "tile.tag"), nil, "the name tag is not a param")
  T.eq(param(m, "family"), "gemm"); T.eq(param(m, "variant"), nil); T.eq(param(m, "comm"), nil)
  T.eq(assert(gm("")).name, "weft_gemm_bf16_brow_128x256x64_s4_c2_cooperative_cl1x1_sk1_skt0_epdirect_g16_pdl0_sw0_l2p256_stk0_an0",
    "auto tile")
  T.contains(m.json, '"key": "tile.m",\n      "value": "128"')
  m = assert(ag('variant = "naive_remote"'))
  T.eq(param(m, "tile.m"), "32"); T.eq(param(m, "tile.n"), "32"); T.eq(param(m, "tile.k"), "16")
  T.eq(param(m, "comm"), "threadload"); T.eq(param(m, "compute"), "scalar")
  m = assert(ag('variant = "gather_then_gemm"'))
  T.eq(param(m, "compute"), "wgmma"); T.eq(param(m, "tile.m"), "128")   -- its GEMM's
end)

T.test("ag_gemm: tensor maps for A, B in its layout, and the peer shards", function()
  local function tm(name, source, dims, box, l2)
    return { name = name, source = source, dtype = "bf16", dims = dims, box = box, swizzle = 128, l2_promotion = l2 }
  end
  -- family gemm sets A's and B's L2 promotion (auto: 256, or 128 with swap_ab); ag_gemm leaves
  -- it to the runtime's default (256)
  local m = assert(gm(""))
  T.deq(m.tmaps, { tm("ta", "a", { "k", "m" }, { 64, 128 }, 256), tm("tb", "b", { "n", "k" }, { 64, 64 }, 256) }, "gemm")
  m = assert(gm('b_layout = "col", tile = { m = 64, n = 128, k = 64 }, consumers = 1'))
  T.deq(m.tmaps, { tm("ta", "a", { "k", "m" }, { 64, 64 }, 256), tm("tb", "b", { "k", "n" }, { 64, 128 }, 256) },
    "gemm, B col")
  local swap = 'b_layout = "col", epilogue = "direct", swap_ab = true, tile = { m = 16, n = 128, k = 64 }, consumers = 1'
  m = assert(gm(swap))
  T.deq(m.tmaps, { tm("ta", "a", { "k", "m" }, { 64, 16 }, 128), tm("tb", "b", { "k", "n" }, { 64, 128 }, 128) },
    "gemm, swap_ab: auto is 128")
  T.contains(m.name, "_sw1_l2p128", "the resolved promotion is in the name")
  T.contains(m.json, '"l2_promotion": 128', "and in the manifest's json")
  for _, v in ipairs({ 0, 64, 256 }) do
    m = assert(gm(swap .. ", l2_promotion = " .. v))
    T.eq(m.tmaps[1].l2_promotion, v, "ta l2_promotion = " .. v); T.eq(m.tmaps[2].l2_promotion, v, "tb " .. v)
    T.contains(m.name, "_sw1_l2p" .. v, "name " .. v)
  end
  for _, v in ipairs({ "32", "512", "-64", '"128"', "true" }) do
    local _, e = gm("l2_promotion = " .. v)
    T.contains(e, "gemm.lua: l2_promotion = " .. v .. ': "auto" or 0, 64, 128 or 256 (bytes)', "refused " .. v)
  end
  m = assert(ag('variant = "fused", comm = "tma"'))
  T.deq(m.tmaps, { tm("ta", "a", { "k", "m/ranks" }, { 64, 128 }), tm("tb", "b", { "n", "k" }, { 64, 64 }),
                   tm("tsh", "comm.shards", { "k", "m/ranks", "ranks", "halves" }, { 64, 128, 1, 1 }) }, "fused tma")
  -- fused's own comm (auto) is threadload: the peer shards land in this rank's comm.local
  m = assert(ag('variant = "fused"'))
  T.deq(m.tmaps, { tm("ta", "a", { "k", "m/ranks" }, { 64, 128 }), tm("tb", "b", { "n", "k" }, { 64, 64 }),
                   tm("tsh", "comm.local", { "k", "m/ranks", "ranks", "halves" }, { 64, 128, 1, 1 }) }, "fused auto")
  for _, c in ipairs({ "threadload", "multimem" }) do
    m = assert(ag('variant = "fused", tile = { m = 256, n = 128, k = 64 }, comm = "' .. c .. '"'))
    T.deq(m.tmaps[3], tm("tsh", "comm.local", { "k", "m/ranks", "ranks", "halves" }, { 64, 256, 1, 1 }), "fused " .. c)
    T.deq(m.tmaps[1].box, { 64, 256 }, "fused " .. c .. " ta box")
  end
  -- f16: every map says so
  m = assert(ag('variant = "fused", dtype = "f16"'))
  for _, t in ipairs(m.tmaps) do T.eq(t.dtype, "f16", "f16 " .. t.name) end
  -- no WGMMA, no tensor maps: not even the key
  for _, v in ipairs({ "naive_remote", "threadload_gather", "multimem_gather", "gather_then_gemm" }) do
    m = assert(ag('variant = "' .. v .. '"'))
    T.eq(m.tmaps, nil, v)
    T.not_contains(m.json, '"tmaps"', v .. " json")
  end
end)

T.test("ag_gemm: a comm section for every variant; family gemm has none", function()
  local g = assert(gm(""))
  T.eq(g.comm, nil, "gemm")
  T.not_contains(g.json, '"comm": {', "gemm json")
  T.not_contains(g.source, "weft::Comm", "gemm source")
  local cases = {
    { 'variant = "fused"', { multimem = false, emulate = false } },
    { 'variant = "fused", comm = "threadload"', { multimem = false, emulate = false } },
    { 'variant = "fused", comm = "tma"', { multimem = false, emulate = false } },
    { 'variant = "fused", comm = "multimem", fallback = "emulate"', { multimem = true, emulate = true } },
    { 'variant = "naive_remote"', { multimem = false, emulate = false } },
    { 'variant = "threadload_gather", dtype = "f16"', { multimem = false, emulate = false } },
    { 'variant = "multimem_gather"', { multimem = true, emulate = false } },
    { 'variant = "gather_then_gemm", comm = "multimem", fallback = "emulate"', { multimem = true, emulate = true } },
  }
  for _, c in ipairs(cases) do
    local m = assert(ag(c[1]))
    if not c[2] then
      T.eq(m.comm, nil, c[1])
      T.not_contains(m.json, '"comm": {', c[1] .. " json")
      T.not_contains(m.source, "weft::Comm", c[1] .. " source")
    else
      T.deq(m.comm, { signals = { "ready", "pulled" }, halves = 2, elem_bytes = 2, elems = { "m", "k" }, divide = "m",
                      multimem = c[2].multimem, emulate = c[2].emulate }, c[1])
      T.contains(m.source, "const __grid_constant__ weft::Comm comm)", c[1] .. " Comm is the last parameter")
    end
  end
end)

T.test("gemm: block and shared memory follow the tile, stages and consumers", function()
  local cases = {   -- tile, stages, consumers -> threads, smem
    { "128, 256", 4, 2, 384, 4 * 384 * 128 + 64 + 1024 },   -- 197696: the examples
    { "128, 128", 7, 2, 384, 7 * 256 * 128 + 112 + 1024 },  -- 230512: just fits
    { "64, 256", 4, 1, 256, 4 * 320 * 128 + 64 + 1024 },
    { "256, 128", 3, 2, 384, 3 * 384 * 128 + 48 + 1024 },
    { "64, 64", 2, 1, 256, 2 * 128 * 128 + 32 + 1024 },
    { "128, 192", 5, 2, 384, 5 * 320 * 128 + 80 + 1024 },
  }
  for _, c in ipairs(cases) do
    local mn = {}
    for x in c[1]:gmatch("%d+") do mn[#mn + 1] = x end
    local f = string.format('tile = { m = %s, n = %s, k = 64 }, stages = %d, consumers = %d',
      mn[1], mn[2], c[2], c[3])
    local m, e = gm(f)
    T.ok(m, f .. ": " .. tostring(e))
    T.deq(m.block, { c[4], 1, 1 }, f .. " block")
    T.eq(m.smem, c[5], f .. " smem")
    T.contains(m.source, "__launch_bounds__(" .. c[4] .. ", 1)", f .. " launch bounds")
  end
  T.eq(assert(ag("")).smem, 197696, "the example's ring")
  -- the scalar kernels and the gather: 256 threads, static shared memory only
  for _, v in ipairs({ "naive_remote", "threadload_gather", "multimem_gather", "gather_then_gemm" }) do
    local m = assert(ag('variant = "' .. v .. '"'))
    T.deq(m.block, { 256, 1, 1 }, v .. " block")
    T.eq(m.smem, 0, v .. " smem")
  end
end)

T.test("gemm, ag_gemm: the shared-memory and accumulator limits are exact", function()
  T.ok(gm('tile = { m = 128, n = 128, k = 64 }, stages = 7'), "230512 bytes fit")
  local _, e = gm('tile = { m = 128, n = 128, k = 64 }, stages = 8')
  T.eq(e, "gemm.lua: stages = 8: needs 263296 bytes of shared memory per block, at most 232448 (227 KB) on sm_90; "
    .. "use fewer stages or a smaller tile")
  T.ok(ag('variant = "fused", stages = 4'), "the example's 4 stages")
  _, e = ag('variant = "fused", stages = 5')
  T.contains(e, "ag.lua: stages = 5: needs 246864 bytes of shared memory per block")
  -- 128 f32 accumulators per consumer thread, no more
  for _, ok in ipairs({ "64, n = 256, k = 64 }, consumers = 1", "256, n = 128, k = 64 }, consumers = 2",
                        "256, n = 64, k = 64 }, consumers = 1", "128, n = 128, k = 64 }, consumers = 1" }) do
    local m, err = gm('tile = { m = ' .. ok)
    T.ok(m, ok .. ": " .. tostring(err))
  end
  _, e = gm('tile = { m = 128, n = 192, k = 64 }, consumers = 1')
  T.contains(e, 'gemm.lua: tile = "128x192x64": ')
  T.contains(e, "128 x 192 over 1 consumer warpgroup(s) is 192 f32 accumulators per thread; at most 128 fit")
  _, e = gm('tile = { m = 256, n = 192, k = 64 }, consumers = 2')
  T.contains(e, "256 x 192 over 2 consumer warpgroup(s) is 192 f32 accumulators per thread; at most 160 fit "
    .. "(use a smaller tile: m x n <= 40960)")
  -- two cooperative consumers of family gemm hold 160 (the loading warpgroup's registers shifted
  -- to them); pingpong's whole tile per warpgroup and one consumer stay at 128
  T.ok(gm('b_layout = "col", tile = { m = 256, n = 160, k = 64 }, consumers = 2, stages = 3'))
  _, e = gm('b_layout = "col", tile = { m = 256, n = 176, k = 64 }, consumers = 2, stages = 3')
  T.contains(e, "256 x 176 over 2 consumer warpgroup(s) is 176 f32 accumulators per thread; at most 160 fit")
  _, e = gm('b_layout = "col", tile = { m = 256, n = 160, k = 64 }, consumers = 2, stages = 3, stream_k = true')
  T.contains(e, "160 f32 accumulators per thread; at most 128 fit (use a smaller tile: m x n <= 32768, or "
    .. "stream_k = false (which holds 160))")
  _, e = gm('b_layout = "col", tile = { m = 128, n = 160, k = 64 }, consumers = 1')
  T.contains(e, "128 x 160 over 1 consumer warpgroup(s) is 160 f32 accumulators per thread; at most 128 fit")
end)

T.test("gemm: swap_ab renders A's rows as the WGMMA's n and B's as its 64-row groups", function()
  local fields = 'b_layout = "col", epilogue = "direct", swap_ab = true, tile = { m = 8, n = 128, k = 64 }, consumers = 1, '
    .. 'stages = 12'
  local m, e = gm(fields)
  T.ok(m, fields .. ": " .. tostring(e))
  T.contains(m.name, "_8x128x64_s12_c1_cooperative_cl1x1_sk1_skt0_epdirect_g16_pdl0_sw1", "name")
  T.contains(m.source, "static constexpr bool SWAP = true;", "SWAP")
  T.contains(m.source, "static constexpr int ACC_N = 8;", "the accumulators: A's 8 rows")
  T.contains(m.source, "m64n8k16", "the WGMMA's n is tile.m")
  -- the ring: 8 rows of A and 128 of B per stage, 128 bytes each
  T.contains(m.source, "SMEM_B = 1024, SMEM_STAGE = 17408", "stage layout")
  local plain = assert(gm('b_layout = "col", tile = { m = 64, n = 128, k = 64 }, consumers = 1'))
  T.contains(plain.source, "static constexpr bool SWAP = false;", "unswapped")
  T.contains(plain.source, "static constexpr int ACC_N = 128;", "unswapped accumulators: tile.n")
  -- two consumers split B's 64-row groups: 256 rows, 2 groups each
  T.ok(gm('b_layout = "col", epilogue = "direct", swap_ab = true, tile = { m = 16, n = 256, k = 64 }, stages = 6'))
end)

T.test("gemm: a thin tile (unswapped, tile.m < 64) loads tile.m rows of A in a stage of at least 64", function()
  local m, e = gm('b_layout = "col", epilogue = "direct", tile = { m = 16, n = 80, k = 64 }, consumers = 1, stages = 16')
  T.ok(m, tostring(e))
  T.contains(m.name, "_16x80x64_s16_c1_cooperative_cl1x1_sk1_skt0_epdirect_g16_pdl0_sw0_l2p128", "name: auto promotion 128")
  T.contains(m.source, "static constexpr bool SWAP = false;", "unswapped")
  T.contains(m.source, "static constexpr int ACC_N = 80;", "the accumulators: 64 rows x tile.n")
  T.contains(m.source, "m64n80k16", "the m64 WGMMA")
  -- 16 + 80 rows of 128 bytes; A's box is 16 rows
  T.contains(m.source, "SMEM_B = 2048, SMEM_STAGE = 12288", "stage layout")
  T.deq(m.tmaps[1].box, { 64, 16 }, "A's box: tile.m rows")
  -- 8 x 32: the stage is padded to the 64 rows the WGMMA reads; split-K's partial tile is 64 x 32
  -- f32 (the accumulators' rows), C's map 8 rows tall
  m, e = gm('b_layout = "col", epilogue = "tma", tile = { m = 8, n = 32, k = 64 }, consumers = 1, stages = 16, split_k = 2')
  T.ok(m, tostring(e))
  local L = m.smem_layout
  T.eq(L.stage, 64 * 128, "8 + 32 rows padded to 64")
  T.eq(L.b, 8 * 128, "B after A's 8 rows")
  T.ok(L.epi >= L.red + 64 * 32 * 4, "the partial tile holds 64 x 32 floats")
  T.deq(m.tmaps[3].box, { 64, 8 }, "C's map: the tile's 8 rows")
  T.deq(m.tmaps[4].box, { 32, 8 }, "C's narrow map (32 columns)")
  m = assert(gm('b_layout = "col", tile = { m = 16, n = 80, k = 64 }, consumers = 1, stages = 16, l2_promotion = 256'))
  T.contains(m.name, "_l2p256", "a set promotion stays")
  -- 64 rows is an ordinary tile (promotion 256, stage m + n)
  m = assert(gm('b_layout = "col", tile = { m = 64, n = 80, k = 64 }, consumers = 1, stages = 8'))
  T.contains(m.name, "_l2p256", "64 rows: not thin")
  T.eq(m.smem_layout.stage, (64 + 80) * 128, "64 x 80 stage")
  -- the deepest ring the rule fits for a thin tile is the swapped one's (16), not 8
  local F = weft.family_module("gemm")
  local deepest = 0
  for _, c in ipairs(F.auto({ m = 16, n = 10240, k = 8192 }, { family = "gemm", b_layout = "col" },
    { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 1 })) do
    if c.tile and c.tile.m == 16 and not c.swap_ab and c.tile.n == 80 then deepest = math.max(deepest, c.stages) end
  end
  T.eq(deepest, 16, "16 x 80's ring")
end)

T.test("ag_gemm: mma = pingpong is named, rendered and bounded by whole tiles per warpgroup", function()
  -- the name token sits between consumers and group; the config struct says PINGPONG
  for _, fam in ipairs({ "gemm", "ag_gemm" }) do
    local v = fam == "gemm" and "" or 'variant = "fused", '
    local gen1 = fam == "gemm" and gm or ag
    local file = fam == "gemm" and "gemm.lua" or "ag.lua"
    local tail = fam == "gemm" and "_g16_pdl0" or "_g16_ring"
    local skt = fam == "gemm" and "_skt0" or ""   -- (the split tail is family gemm's)
    local fields = v .. 'tile = { m = 128, n = 128, k = 64 }, mma = "pingpong"'
    local m, e = gen1(fields)
    T.ok(m, fields .. ": " .. tostring(e))
    T.contains(m.name, "_128x128x64_s4_c2_pingpong_cl1x1_sk1" .. skt .. "_epdirect" .. tail, fields .. " name")
    T.contains(m.source, "static constexpr bool PINGPONG = true;", fields .. " PINGPONG")
    T.contains(m.source, "wgmma.mma_async.sync.aligned.m64n128k16", fields .. " wgmma shape")
    T.eq(param(m, "mma"), "pingpong", fields .. " param")
    check_manifest(m, complete(assert(load("return { family = \"" .. fam .. "\", " .. fields .. " }", "=ag", "t", {}))()),
      file, fields)
    -- the launch is cooperative's: same block and ring, another kernel
    local c = assert(gen1(v .. 'tile = { m = 128, n = 128, k = 64 }'))
    T.contains(c.name, "_128x128x64_s4_c2_cooperative_cl1x1_sk1" .. skt .. "_epdirect" .. tail, fam .. " cooperative name")
    T.contains(c.source, "static constexpr bool PINGPONG = false;", fam .. " cooperative PINGPONG false")
    T.ne(c.name, m.name, fam .. " names differ")
    T.deq(c.block, m.block, fam .. " block"); T.eq(c.smem, m.smem, fam .. " smem")
  end
  -- each warpgroup holds a whole tile's accumulators: in family gemm m x n <= 24576, in the
  -- fused families 16384 (the bounds are exact)
  for _, t in ipairs({ "128, n = 128", "256, n = 64", "128, n = 192" }) do
    local f = 'mma = "pingpong", tile = { m = ' .. t .. ', k = 64 }'
    local m, e = gm(f)
    T.ok(m, f .. ": " .. tostring(e))
  end
  local _, e = ag('variant = "fused", mma = "pingpong"')
  T.eq(e, 'ag.lua: tile = "128x256x64": 128 x 256 over 1 consumer warpgroup(s) is 256 f32 accumulators per '
    .. 'thread; at most 128 fit (pingpong gives each warpgroup a whole tile: m x n <= 16384, or mma = "cooperative")')
  for _, t in ipairs({ { 128, 256 }, { 256, 128 }, { 256, 256 }, { 128, 208, "col" }, { 256, 112, "col" } }) do
    local mm, nn = t[1], t[2]
    _, e = gm(string.format('mma = "pingpong", tile = { m = %d, n = %d, k = 64 }%s', mm, nn,
      t[3] and ', b_layout = "col"' or ""))
    T.contains(e, string.format('gemm.lua: tile = "%dx%dx64": %d x %d over 1 consumer warpgroup(s)', mm, nn, mm, nn), mm .. "x" .. nn)
    T.contains(e, "at most 192 fit (pingpong gives each warpgroup a whole tile: m x n <= 24576", mm .. "x" .. nn)
  end
  -- the edge: 192 accumulators (256 x 96 with column-major B) in family gemm; the fused families
  -- refuse 128 x 192, with their bound
  T.ok(gm('mma = "pingpong", b_layout = "col", tile = { m = 256, n = 96, k = 64 }, stages = 3'), "256 x 96 pingpong")
  for _, fam in ipairs({ "ag_gemm", "gemm_rs", "gemm_ar" }) do
    local src = fam == "ag_gemm" and 'family = "ag_gemm", variant = "fused"' or string.format('family = "%s", ranks = 2', fam)
    local ok, e2 = gen("return { " .. src .. ', consumers = 2, mma = "pingpong", tile = { m = 128, n = 192, k = 64 }, '
      .. "stages = 3 }", "f.lua")
    T.ok(not ok, fam .. " 128 x 192 pingpong refused")
    T.contains(tostring(e2), "at most 128 fit (pingpong gives each warpgroup a whole tile: m x n <= 16384", fam)
  end
  -- it alternates two warpgroups: one consumer is refused, with only that message
  _, e = ag('variant = "fused", mma = "pingpong", consumers = 1')
  T.eq(e, 'ag.lua: mma = "pingpong": pingpong alternates two consumer warpgroups: set consumers = 2')
  _, e = gm('mma = "pingpong", consumers = 1, tile = { m = 128, n = 128, k = 64 }')
  T.eq(e, 'gemm.lua: mma = "pingpong": pingpong alternates two consumer warpgroups: set consumers = 2')
end)

T.test("gemm: mma = kturns is named, rendered, laid out with one warpgroup's sums, and bounded", function()
  -- two consumer warpgroups take turns along K on every tile: each holds a whole tile (the TMA
  -- epilogue's box is the tile's rows), and the layout keeps one warpgroup's f32 sums after the
  -- ring where split-K keeps its partial tile
  local cases = { { 'b_layout = "col", tile = { m = 64, n = 64, k = 64 }, epilogue = "tma", stages = 10', 64, 64, 64 },
                  { 'b_layout = "col", swap_ab = true, tile = { m = 56, n = 64, k = 64 }, stages = 14', 56, 64, 56 },
                  { 'b_layout = "col", tile = { m = 16, n = 128, k = 64 }, stages = 8, l2_promotion = 128', 64, 128, 16 } }
  for _, c in ipairs(cases) do
    local fields = 'mma = "kturns", consumers = 2, ' .. c[1]
    local m, e = gm(fields)
    T.ok(m, fields .. ": " .. tostring(e))
    T.contains(m.name, "_c2_kturns_cl1x1_sk1_", fields .. " name")
    T.contains(m.source, "static constexpr bool KTURNS = true;", fields .. " KTURNS")
    T.contains(m.source, "static constexpr bool PINGPONG = false;", fields .. " not PINGPONG")
    T.eq(param(m, "mma"), "kturns", fields .. " param")
    local L = m.smem_layout
    local rows, n = c[2], c[3]   -- (the WGMMAs' rows -- a thin tile's 64 -- by the tile's width)
    T.eq(L.red, L.red_bar + 16, fields .. " red")
    T.ok(L.epi >= L.red + rows * n * 4, fields .. " the sums end before C's stages")
    T.deq(m.block, { 384, 1, 1 }, fields .. " block")
    for _, tm in ipairs(m.tmaps) do
      if tm.name == "tc" then T.eq(tm.box[2], c[4], fields .. " C's box: the whole tile's rows") end
    end
    gm_manifest(m, fields)
  end
  -- one warpgroup's sums take the bytes of split-K's partial tile: the same shared memory
  local k = assert(gm('mma = "kturns", tile = { m = 64, n = 128, k = 64 }, stages = 4'))
  local s2 = assert(gm('consumers = 1, tile = { m = 64, n = 128, k = 64 }, stages = 4, split_k = 2'))
  T.eq(k.smem, s2.smem, "kturns' sums and split-K's partial tile")
  -- the rules, each with its own message
  local refused = gm_refused
  local t64 = 'tile = { m = 64, n = 128, k = 64 }, '
  refused(t64 .. 'mma = "kturns", consumers = 1', 'consumers = 1: mma = "kturns" is two consumer warpgroups taking '
    .. "turns along K: consumers = 2")
  for _, st in ipairs({ 2, 3, 5 }) do
    refused(t64 .. 'mma = "kturns", stages = ' .. st, "stages = " .. st .. ': mma = "kturns" gives each consumer '
      .. "warpgroup every other stage, one of them in flight while it waits for its next: an even count, 4 or more")
  end
  refused(t64 .. 'mma = "kturns", split_k = 2', 'split_k = 2: mma = "kturns" sums its two halves of K inside the CTA: '
    .. "split_k = 1")
  refused('tile = { m = 64, n = 256, k = 64 }, mma = "kturns"', 'tile = "64x256x64": 64 x 256 over 1 consumer '
    .. "warpgroup(s) is 128 f32 accumulators per thread; at most 96 fit (kturns gives each warpgroup a whole tile: "
    .. 'm x n <= 12288, or mma = "cooperative" with consumers = 1)')
  T.ok(gm('tile = { m = 64, n = 192, k = 64 }, mma = "kturns"'), "64 x 192: 96 accumulators fit")
  -- a thin tile's WGMMA has 64 rows whatever tile.m: 32 x 256 holds 128 (it spilled 472 bytes)
  T.ok(gm('b_layout = "col", tile = { m = 32, n = 192, k = 64 }, mma = "kturns"'), "thin 32 x 192: 96 fit")
  refused('b_layout = "col", tile = { m = 32, n = 256, k = 64 }, mma = "kturns"', 'tile = "32x256x64": 32 x 256 is the '
    .. "WGMMA's 64 rows by 256: 128 f32 accumulators per thread; mma = \"kturns\" holds at most 96 (tile.n <= 192, or "
    .. 'mma = "cooperative" with consumers = 1)')
  -- family gemm's alone: the fused families' mma takes cooperative and pingpong
  local _, e = ag('variant = "fused", mma = "kturns"')
  T.contains(e, 'mma = "kturns": must be one of "cooperative", "pingpong"', "ag_gemm")
end)

T.test("gemm: mma = cooperative_n is named, rendered, laid out in 64-row chunks, and bounded", function()
  -- the two consumers split each tile by columns: each WGMMA is tile.n / 2 wide, each consumer's C
  -- leaves in boxes of 64 rows (a chunk per 64-row group and 64 columns), and both read every
  -- stage; 192 x 192 keeps four stages beside two 8 KB buffers per consumer
  local cases = { { 'b_layout = "col", tile = { m = 192, n = 192, k = 64 }, stages = 4, cluster = { m = 2, n = 1 }, '
                      .. 'epilogue = "tma"', 96, 2, 32 },
                  { 'tile = { m = 128, n = 256, k = 64 }, stages = 4, epilogue = "tma", dtype = "f16"', 128, 2, nil },
                  { 'b_layout = "col", tile = { m = 256, n = 160, k = 64 }, stages = 3, epilogue = "direct"', 80, 0, nil },
                  { 'b_layout = "col", tile = { m = 128, n = 176, k = 64 }, stages = 4, cluster = { m = 1, n = 2 }, '
                      .. 'epilogue = "tma"', 88, 4, 24 },
                  { 'tile = { m = 192, n = 192, k = 64 }, stages = 4, cluster = { m = 2, n = 1 }, epilogue = "tma"', 96, 2,
                      32, 64 },
                  { 'tile = { m = 128, n = 64, k = 64 }, stages = 8, epilogue = "tma"', 32, 2, 32, 64 },
                  -- (five stages of 128 x 192 leave room for one buffer per consumer)
                  { 'tile = { m = 128, n = 192, k = 64 }, stages = 5, epilogue = "tma"', 96, 1, 32, 64 },
                  -- (three stages of 192 x 192: a buffer per chunk, each 64-row group's narrow one dense)
                  { 'b_layout = "col", tile = { m = 192, n = 192, k = 64 }, stages = 3, cluster = { m = 2, n = 1 }, '
                      .. 'epilogue = "tma"', 96, 6, 32 } }
  for _, c in ipairs(cases) do
    local fields = 'mma = "cooperative_n", ' .. c[1]
    local m, e = gm(fields)
    T.ok(m, fields .. ": " .. tostring(e))
    T.contains(m.name, "_c2_cooperativen_cl", fields .. " name")
    T.contains(m.source, "static constexpr bool COOP_N = true;", fields .. " COOP_N")
    T.contains(m.source, "static constexpr int ACC_N = " .. c[2] .. ";", fields .. " ACC_N: half the width")
    T.contains(m.source, "aligned.m64n" .. c[2] .. "k16", fields .. " the WGMMA")
    T.eq(param(m, "mma"), "cooperative_n", fields .. " param")
    T.eq(m.smem_layout.epi_bufs, c[3], fields .. " C's buffers per consumer")
    local tct
    for _, tm in ipairs(m.tmaps) do
      if tm.name == "tc" then T.deq(tm.box, { 64, 64 }, fields .. " C's box: 64 rows") end
      if tm.name == "tct" then tct = tm.box end
    end
    T.deq(tct, c[4] and { c[4], 64 } or nil, fields .. " the narrow chunk's box")
    -- (row-major B whose halves are not whole 64-column boxes: 32-column ones, the 64-byte swizzle)
    T.contains(m.source, "static constexpr bool B_SW64 = " .. tostring(c[5] == 64) .. ";", fields .. " B_SW64")
    -- through one or two buffers, each a whole 8 KB chunk's; a buffer per chunk: each 64-row
    -- group's full chunks of 8 KB, then its narrow one of 64 dense rows
    local groups, nch = tonumber(fields:match("m = (%d+)")) // 64, (c[2] + 63) // 64
    local whole = groups * nch == c[3]
    local group_bytes = 8192 * (nch - 1) + 64 * 2 * (c[4] or 64)
    if c[3] > 0 then
      T.eq(m.smem_layout.epi_stage, whole and groups * group_bytes or c[3] * 64 * 128, fields .. " C's stage")
    end
    T.contains(m.source, "static constexpr int EPI_BUFS = " .. c[3] .. ";", fields .. " EPI_BUFS")
    gm_manifest(m, fields)
  end
  local refused = gm_refused
  local cn = 'mma = "cooperative_n", '
  refused(cn .. 'tile = { m = 64, n = 128, k = 64 }, consumers = 1', "consumers = 1: mma = \"cooperative_n\" splits "
    .. "each tile's columns over two consumer warpgroups: consumers = 2")
  refused(cn .. 'b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 128, k = 64 }',
    'swap_ab = true: mma = "cooperative_n" splits an unswapped tile\'s columns: swap_ab = false (or mma = "cooperative")')
  refused(cn .. 'b_layout = "col", tile = { m = 32, n = 128, k = 64 }', 'tile.m = 32: mma = "cooperative_n" gives each '
    .. "consumer all of a tile's rows in 64-row WGMMA groups: tile.m in {64, 128, 192, 256} (it is 32)")
  refused(cn .. 'tile = { m = 128, n = 128, k = 64 }, split_k = 2', 'split_k = 2: mma = "cooperative_n" runs unsplit '
    .. "tiles: split_k = 1")
  refused(cn .. 'tile = { m = 128, n = 96, k = 64 }', 'tile.n = 96: wgmma tiles take n in {64, 128, 192, 256} (the '
    .. 'm64nNk16 shape; B arrives in 64-column boxes); with b_layout = "col", any multiple of 16 up to 256')
  refused(cn .. 'tile = { m = 256, n = 256, k = 64 }', 'tile = "256x256x64": 256 x 256 over 2 consumer warpgroup(s) is '
    .. "256 f32 accumulators per thread; at most 192 fit (use a smaller tile: m x n <= 49152)")
  T.ok(gm(cn .. 'b_layout = "col", tile = { m = 256, n = 192, k = 64 }, stages = 3'), "256 x 192: 192 accumulators fit")
  -- family gemm's alone: the fused families' mma takes cooperative and pingpong
  local _, e = ag('variant = "fused", mma = "cooperative_n"')
  T.contains(e, 'mma = "cooperative_n": must be one of "cooperative", "pingpong"', "ag_gemm")
end)

T.test("ag_gemm: every rule's message at once, each starting with the file", function()
  local _, e = gm('tile = { m = 96, n = 96, k = 32 }')
  local lines = T.lines(e)
  T.eq(#lines, 3, "three problems: " .. e)
  T.contains(e, "gemm.lua: tile.m = 96: ")
  T.contains(e, "gemm.lua: tile.n = 96: ")
  T.contains(e, "gemm.lua: tile.k = 32: ")
  _, e = ag('variant = "naive_remote", comm = "tma", stages = 3, group = 4, mma = "pingpong", '
    .. 'tile = { m = 128, n = 128, k = 16 }')
  lines = T.lines(e)
  T.eq(#lines, 5, "five problems: " .. e)
  for _, l in ipairs(lines) do T.eq(l:sub(1, 7), "ag.lua:", l) end
  T.contains(e, 'ag.lua: comm = "tma": variant = "naive_remote" takes comm = threadload')
  T.contains(e, "ag.lua: stages = 3: applies to compute = \"wgmma\" only; leave it 4")
  T.contains(e, "ag.lua: group = 4: applies to compute = \"wgmma\" only; leave it 16")
  T.contains(e, 'ag.lua: mma = "pingpong": applies to compute = "wgmma" only; leave it "cooperative"')
  T.contains(e, 'ag.lua: tile = "128x128x16": ')
  _, e = ag('dtype = "f32", variant = "allgather", consumers = 4')
  T.contains(e, 'ag.lua: dtype = "f32": must be one of "f16", "bf16"')
  T.contains(e, 'ag.lua: variant = "allgather": must be one of "gemm", "naive_remote", "threadload_gather", '
    .. '"multimem_gather", "gather_then_gemm", "fused"')
  T.contains(e, "ag.lua: consumers = 4: must be one of 1, 2")
end)

T.test("gemm: --set reaches into the tile", function()
  local text = assert(weft_read("examples/gemm.lua"))
  local m = assert(gen(text, "examples/gemm.lua", { "tile.m=64", "tile.n=128", "consumers=1" }))
  T.eq(m.name, "weft_gemm_bf16_brow_64x128x64_s3_c1_cooperative_cl1x1_sk1_skt0_eptma_g16_pdl0_sw0_l2p256_stk0_an0")
  T.eq(param(m, "tile.m"), "64")
  T.deq(m.tmaps[1].box, { 64, 64 })
  m = assert(gen(text, "examples/gemm.lua", { "tile=auto", "family=ag_gemm" }))
  T.eq(m.name, AG_PREFIX .. "fused_threadload_fbnone_wgmma_brow_128x256x64_s3_c2_cooperative_cl1x1_sk1_eptma_g16_ring")
  m = assert(gen(text, "examples/gemm.lua", { "tile.n=128", "mma=pingpong" }))
  T.eq(m.name, "weft_gemm_bf16_brow_128x128x64_s3_c2_pingpong_cl1x1_sk1_skt0_eptma_g16_pdl0_sw0_l2p256_stk0_an0")
  m = assert(gen(text, "examples/gemm.lua", { "split_k=2", "split_k_tail=true", "tile.n=128", "stages=4" }))
  T.contains(m.name, "_sk2_skt1_")
  T.contains(m.source, "static constexpr bool SPLIT_TAIL = true;")
  T.deq(m.cluster, { 2, 1, 1 })
  m = assert(gen(text, "examples/gemm.lua", { "pdl=true" }))   -- launched early; the kernel waits itself
  T.eq(m.pdl, true)
  T.contains(m.name, "_g16_pdl1")
  T.contains(m.source, "static constexpr bool PDL = true;")
  local _, e = gen(text, "examples/gemm.lua", { "tile.n=96" })
  T.contains(e, "examples/gemm.lua: tile.n = 96: wgmma tiles take n in {64, 128, 192, 256}")
  _, e = gen(text, "examples/gemm.lua", { "tile.x=1" })
  T.contains(e, "(unknown key x)")
  -- a config without a tile gets a partial one from --set: the message says what is missing
  _, e = ag("", { "tile.m=64" })
  T.contains(e, "ag.lua: tile = { m = 64 }: ")
  T.contains(e, "(n is missing or not a positive integer)")
end)


-- Each config, generated twice, gives byte-identical source and JSON, and no two share a name.
local function same_twice(gen_fn, configs)
  local names = {}
  for _, c in ipairs(configs) do
    local a, e = gen_fn(c)
    T.ok(a, c .. ": " .. tostring(e))
    local b = assert(gen_fn(c))
    T.eq(a.source, b.source, c .. " source")
    T.eq(a.json, b.json, c .. " json")
    T.ok(not names[a.name], c .. ": name " .. a.name .. " also for " .. tostring(names[a.name]))
    names[a.name] = c
  end
end

T.test("ag_gemm: the same config twice gives byte-identical source and json, for every variant", function()
  local configs = {
    'variant = "fused"', 'variant = "fused", comm = "threadload", schedule = "rank_order"',
    'variant = "fused", comm = "multimem", fallback = "emulate", group = 4, stages = 3',
    'variant = "fused", comm = "tma"', 'variant = "fused", tile = { m = 128, n = 128, k = 64 }, mma = "pingpong"',
    'variant = "naive_remote"', 'variant = "threadload_gather", tile = { m = 64, n = 16, k = 32 }',
    'variant = "multimem_gather", fallback = "emulate"', 'variant = "gather_then_gemm", comm = "multimem"',
  }
  same_twice(ag, configs)
end)

T.test("gemm: the same config twice gives byte-identical source and json", function()
  local configs = { "", 'dtype = "f16", b_layout = "col", tile = { m = 64, n = 128, k = 64 }, consumers = 1',
                    'tile = { m = 128, n = 128, k = 64 }, mma = "pingpong", epilogue = "tma", stages = 3',
                    'cluster = { m = 2 }', 'split_k = 2, tile = { m = 128, n = 128, k = 64 }', "pdl = true" }
  same_twice(gm, configs)
end)

T.test("ag_gemm: variant = gemm says the plain GEMM is family gemm now, and nothing else", function()
  local _, e = ag('variant = "gemm", tile = { m = 128, n = 256, k = 64 }')
  T.eq(#T.lines(e), 1, e)
  T.contains(e, 'ag.lua: variant = "gemm": the plain GEMM is family = "gemm" now')
  -- and what it pointed to takes the GEMM keys as they were
  T.ok(gm('tile = { m = 128, n = 256, k = 64 }, stages = 3, epilogue = "tma"'), "family gemm")
  _, e = gm('variant = "fused"')
  T.contains(e, 'gemm.lua: variant = "fused": unknown key for family "gemm"')
end)

-- ---- the GEMM's shared-memory layout (gen/core/gemm.lua): computed once, carved by the device
-- code with the constants rendered from it; here its invariants, one independent total
-- (ag_smem above) and a few offsets written out by hand
T.test("gemm layout: aligned, in order, not overlapping, and the manifest's", function()
  local G = require("gen.core.gemm")
  local function L(f) local m = assert(gm(f)); return m.smem_layout, m end
  -- 128 x 256, 4 stages, direct: stages of 48 KB, then 4 full and 4 empty barriers
  local l = L("stages = 4")
  T.eq(l.b, 16384); T.eq(l.stage, 49152); T.eq(l.full, 196608); T.eq(l.empty, 196640); T.eq(l.red_bar, 196672)
  T.eq(l.bytes, 196672, "direct, no split-K: the barriers end it"); T.eq(l.smem, 197696)
  -- split-K: two more barriers and the f32 partial tile (16-byte aligned) after the ring's
  l = L("split_k = 2, tile = { m = 128, n = 128, k = 64 }, stages = 4")
  T.eq(l.red, l.red_bar + 16); T.eq(l.bytes, l.red + 128 * 128 * 4)
  -- the TMA epilogue: C's stages 1024-byte aligned after everything else, one per consumer, each
  -- a buffer per 64-column chunk of its rows where they fit, else two (so 128 x 256 keeps four stages)
  l = L('epilogue = "tma", stages = 3')
  T.eq(l.epi, 148480, "align(3 * 49152 + 48, 1024)"); T.eq(l.epi_bufs, 4); T.eq(l.epi_stage, 4 * 64 * 128)
  T.eq(l.bytes, l.epi + 2 * 32768)
  l = L('epilogue = "tma", stages = 4')
  T.eq(l.epi, 197632, "align(4 * 49152 + 64, 1024)"); T.eq(l.epi_bufs, 2, "the whole tile does not fit: two in turn")
  T.eq(l.smem, 197632 + 2 * 16384 + 1024, "fits 227 KB")
  l = L('epilogue = "tma", stages = 3, mma = "pingpong", tile = { m = 128, n = 128, k = 64 }')
  T.eq(l.epi_stage, 2 * 128 * 128, "pingpong: a warpgroup's whole rows, two chunks")
  l = L('epilogue = "tma", stages = 8, tile = { m = 64, n = 64, k = 64 }, consumers = 1')
  T.eq(l.epi_stage, 64 * 128, "one 64-column chunk: one buffer")
  l = L('epilogue = "tma", stages = 5, b_layout = "col", tile = { m = 128, n = 176, k = 64 }')
  T.eq(l.epi_bufs, 2, "176 columns: two full chunks and a narrow one, through two buffers")
  l = L('epilogue = "tma", stages = 3, b_layout = "col", tile = { m = 128, n = 176, k = 64 }')
  T.eq(l.epi_bufs, 3, "... or one each, with a shallower ring")
  T.eq(l.epi_stage, 2 * 64 * 128 + 64 * 96, "the narrow chunk's buffer: its dense rows, 48 x 2 bytes each")
  l = L('epilogue = "tma", stages = 4, b_layout = "col", tile = { m = 128, n = 208, k = 64 }')
  T.eq(l.epi_bufs, 4, "208 with four stages keeps a buffer per chunk (the narrow one is 2 KB)")
  local m208 = assert(gm('epilogue = "tma", stages = 4, b_layout = "col", tile = { m = 128, n = 208, k = 64 }'))
  T.contains(m208.source, "static constexpr int EPI_BUFS = 4;", "the layout's buffer count reaches the device code")
  local big = gm('epilogue = "tma", stages = 5')
  T.ok(not big, "128 x 256 with five stages does not fit")
  -- three consumers (192-row tiles): one buffer each where two do not fit, so 192 x 192 keeps four
  -- stages; two consumers never drop to one (128 x 192 at five stages stays too big)
  l = L('epilogue = "tma", stages = 4, consumers = 3, tile = { m = 192, n = 192, k = 64 }')
  T.eq(l.epi, 197632, "align(4 * 49152 + 64, 1024)"); T.eq(l.epi_bufs, 1, "192 x 192 at four stages: one buffer each")
  T.eq(l.epi_stage, 64 * 128); T.eq(l.smem, 197632 + 3 * 8192 + 1024, "fits 227 KB")
  l = L('epilogue = "tma", stages = 3, consumers = 3, tile = { m = 192, n = 192, k = 64 }')
  T.eq(l.epi_bufs, 3, "... a buffer per chunk at three")
  l = L('epilogue = "tma", stages = 4, consumers = 3, b_layout = "col", tile = { m = 192, n = 176, k = 64 }')
  T.eq(l.epi_bufs, 1, "176 columns: the narrow chunk through the one buffer too"); T.eq(l.epi_stage, 64 * 128)
  T.ok(not gm('epilogue = "tma", stages = 5, tile = { m = 128, n = 192, k = 64 }'),
    "two consumers keep two buffers: 128 x 192 at five stages does not fit")
  local m1 = assert(gm('epilogue = "tma", stages = 4, consumers = 3, tile = { m = 192, n = 192, k = 64 }'))
  T.contains(m1.source, "static constexpr int EPI_BUFS = 1;", "one buffer reaches the device code")
  -- pingpong tiles wider than 128 x 128 (family gemm) drop to one buffer each where two do not
  -- fit: 128 x 176 keeps five stages; 128 x 128 and four stages keep theirs
  local pp = 'epilogue = "tma", mma = "pingpong", b_layout = "col", tile = { m = 128, n = 176, k = 64 }, '
  l = L(pp .. "stages = 5")
  T.eq(l.epi_bufs, 1, "pingpong 128 x 176 at five stages: one buffer each"); T.eq(l.epi_stage, 128 * 128)
  T.eq(l.epi, 194560 + 1024, "align(5 * 38912 + 80, 1024)"); T.eq(l.smem, l.epi + 2 * 16384 + 1024, "fits 227 KB")
  T.eq(L(pp .. "stages = 4").epi_bufs, 2, "... two at four")
  T.eq(L('epilogue = "tma", mma = "pingpong", stages = 5, tile = { m = 128, n = 128, k = 64 }').epi_bufs, 2,
    "pingpong 128 x 128 keeps its two")
  T.ok(not gm('epilogue = "tma", mma = "pingpong", stages = 5, tile = { m = 128, n = 192, k = 64 }'),
    "128 x 192 at five stages does not fit even so")
  T.contains(assert(gm(pp .. "stages = 5")).source, "static constexpr int EPI_BUFS = 1;", "one buffer reaches the device code")
  -- invariants over a spread of configs, for both families
  local cases = { "", 'epilogue = "tma", stages = 3', 'split_k = 2, tile = { m = 128, n = 128, k = 64 }',
                  'split_k = 2, epilogue = "tma", tile = { m = 64, n = 128, k = 64 }, consumers = 1, stages = 3',
                  'mma = "pingpong", epilogue = "tma", tile = { m = 128, n = 128, k = 64 }', 'tile = { m = 64, n = 64, k = 64 }, consumers = 1, stages = 8',
                  'dtype = "f16", tile = { m = 256, n = 128, k = 64 }, stages = 3, epilogue = "tma"' }
  for _, f in ipairs(cases) do
    for _, fam in ipairs({ "gemm", "ag_gemm" }) do
      local m, e
      if fam == "gemm" then m, e = gm(f) else m, e = ag('variant = "fused"' .. (f ~= "" and ", " .. f or "")) end
      T.ok(m, fam .. " " .. f .. ": " .. tostring(e))
      local x, where = m.smem_layout, fam .. " " .. f
      T.eq(x.stage % 1024, 0, where .. " stages keep the swizzle's alignment"); T.eq(x.b % 1024, 0, where .. " B")
      T.eq(x.full % 8, 0, where .. " barriers 8-byte aligned"); T.eq(x.red % 16, 0, where .. " red 16-byte aligned")
      T.eq(x.epi % 1024, 0, where .. " C's stages aligned")
      T.ok(x.full >= x.stage * tonumber(param(m, "stages")), where .. " barriers after the stages")
      T.ok(x.empty >= x.full + 8 * tonumber(param(m, "stages")) and x.red_bar >= x.empty + 8 * tonumber(param(m, "stages")),
        where .. " full, empty, red_bar in order")
      local red_end = param(m, "split_k") == "2" and x.red + tonumber(param(m, "tile.m")) * tonumber(param(m, "tile.n")) * 4
        or x.red_bar
      if param(m, "epilogue") == "tma" then
        T.ok(x.epi >= red_end, where .. " C after the barriers and the partial tile")
        T.eq(x.bytes, x.epi + tonumber(param(m, "consumers")) * x.epi_stage, where .. " C's stages end it")
      else
        T.eq(x.bytes, red_end, where .. " the barriers (or the partial tile) end it")
      end
      T.eq(x.smem, x.bytes + 1024, where .. " the slack for aligning the base")
      T.eq(m.smem, x.smem, where .. " the manifest's smem is the layout's")
      T.eq(m.smem, ag_smem(ag_resolve(complete(assert(load("return { family = \"" .. fam .. "\", "
        .. (fam == "ag_gemm" and 'variant = "fused", ' or "") .. f .. " }", "=l", "t", {}))()))), where .. " independent total")
      T.deq(x, G.layout(setmetatable({}, { __index = function(_, k)
        local v = param(m, k)
        if k == "tile" then return { m = tonumber(param(m, "tile.m")), n = tonumber(param(m, "tile.n")), k = 64 } end
        return tonumber(v) or v
      end })), where .. " the layout function gives what the manifest carries")
    end
  end
end)

-- ---- multi-launch variants and the rendered parameter list ---------------------------------

T.test("gather_then_gemm: the result holds both kernels, the GEMM the same as family gemm's", function()
  -- knobs: (1) the variant's own comm keys, which the GEMM drops; (2) everything that carries over
  local cases = {
    { 'comm = "threadload"', "" },
    { 'comm = "multimem", fallback = "emulate", schedule = "rank_order"',
      'dtype = "f16", b_layout = "col", tile = { m = 64, n = 128, k = 64 }, consumers = 1, stages = 6, group = 8, '
      .. 'epilogue = "tma"' },
    { 'comm = "threadload"', 'tile = { m = 128, n = 128, k = 64 }, mma = "pingpong", cluster = { m = 2 }' },
    { 'comm = "multimem"', 'tile = { m = 128, n = 128, k = 64 }, split_k = 2' },
  }
  for _, c in ipairs(cases) do
    local knobs = c[2] ~= "" and ", " .. c[2] or ""
    local where = c[1] .. knobs
    local m, e = ag('variant = "gather_then_gemm", ' .. c[1] .. knobs)
    T.ok(m, where .. ": " .. tostring(e))
    local gemm = assert(gm(c[2]))
    T.eq(#m.parts, 1, where .. " one more kernel")
    local p = m.parts[1]
    T.eq(p.name, gemm.name, where .. " the GEMM's name")
    T.eq(p.source, gemm.source, where .. " the GEMM's source (so one cache entry for both)")
    for _, k in ipairs({ "family", "entry", "block", "cluster", "smem", "args", "tmaps", "grid", "limits", "params", "pdl" }) do
      T.deq(p[k], gemm[k], where .. " the GEMM's " .. k)
    end
    T.eq(p.comm, nil, where .. " the GEMM has no comm")
    T.ok(m.comm, where .. " the gather has")
    T.eq(p.config_file, "ag.lua", where .. " the GEMM names the config")
    T.deq(m.kernels, { m.name, p.name }, where .. " kernels, in launch order")
    T.deq(p.kernels, m.kernels, where .. " the GEMM's kernels")
    T.deq(T.json_decode(m.json).kernels, m.kernels, where .. " the gather's json")
    T.deq(T.json_decode(p.json).kernels, m.kernels, where .. " the GEMM's json")
    T.eq(p.parts, nil, where .. " parts only on the first")
    T.contains(p.source, "weft::gemm_wgmma<GemmCfg>", where .. " the GEMM kernel")
    T.not_contains(m.source, "ag_gemm_wgmma<", where .. " the gather only gathers")
    -- the gather's A is the GEMM's A: same dtype, the GEMM's m and k are the gather's
    T.eq(m.args[1].name, "ag"); T.eq(p.args[2].name, "a"); T.eq(m.args[1].dtype, p.args[2].dtype, where .. " dtype")
  end
  -- every other variant and family: one kernel
  for _, c in ipairs({ 'variant = "fused"', 'variant = "naive_remote"' }) do
    local m = assert(ag(c))
    T.deq(m.parts, {}, c .. " no parts"); T.deq(m.kernels, { m.name }, c .. " kernels")
  end
  local g = assert(gm(""))
  T.deq(g.parts, {}, "gemm no parts"); T.deq(g.kernels, { g.name }, "gemm kernels")
  local m = assert(gen('return { family = "row_reduce" }'))
  T.deq(m.parts, {}, "row_reduce no parts"); T.deq(m.kernels, { m.name }, "row_reduce kernels")
end)

T.test("render_params: C types from type, dtype and role; tensor maps, then the communicator", function()
  T.eq(weft.render_params({ { name = "y", type = "ptr", dtype = "bf16", role = "out" },
                            { name = "x", type = "ptr", dtype = "f16", role = "in" },
                            { name = "w", type = "ptr", dtype = "f32", role = "in" },
                            { name = "rows", type = "i32", role = "size" }, { name = "n", type = "i64", role = "size" },
                            { name = "eps", type = "f32", role = "scalar" } },
                           { { name = "ta" }, { name = "tb" } }, { signals = { "ready" } }),
    "weft::bf16 *y, const weft::f16 *x, const float *w, int rows, long long n, float eps, "
    .. "const __grid_constant__ weft::TensorMap ta, const __grid_constant__ weft::TensorMap tb, "
    .. "const __grid_constant__ weft::Comm comm")
  T.eq(weft.render_params({ { name = "out", type = "ptr", dtype = "f32", role = "out" } }), "float *out")
  T.eq(weft.render_params({}), "")
  local _, e = weft.render_params({ { name = "p", type = "ptr", dtype = "f64", role = "in" } })
  T.contains(e, "args[1] (p): a pointer needs dtype f32, f16, bf16 or fp8_e4m3 and role in, out or inout, not f64, in")
  -- inout (read, then written): a pointer to non-const
  T.eq(weft.render_params({ { name = "r", type = "ptr", dtype = "bf16", role = "inout" } }), "weft::bf16 *r")
  _, e = weft.render_params({ { name = "p", type = "ptr", dtype = "f32", role = "size" } })
  T.contains(e, "not f32, size")
  _, e = weft.render_params({ { name = "out", type = "ptr", dtype = "f32", role = "out" }, { name = "q", type = "u8" } })
  T.contains(e, "args[2] (q): type u8 has no C type")
end)

T.test("a family cannot write its own parameter list", function()
  local fam = weft.family_module("row_reduce")
  local derive = fam.derive
  fam.derive = function(cfg)
    local d = derive(cfg)
    d.values.params = "float *out"
    return d
  end
  local ok, e = pcall(gen, 'return { family = "row_reduce" }')
  fam.derive = derive
  T.ok(not ok, "refused")
  T.contains(tostring(e), "values.params is the generator's")
end)

-- ---- json ---------------------------------------------------------------------------------

T.test("json.encode: sorted keys, arrays, escapes, empty tables", function()
  T.eq(json.encode({ b = 1, a = { 1, "x", true }, c = {} }),
    '{\n  "a": [\n    1,\n    "x",\n    true\n  ],\n  "b": 1,\n  "c": []\n}\n')
  T.eq(json.encode('q"\\\n\t\1'), '"q\\"\\\\\\n\\t\\u0001"\n')
  T.eq(json.encode(0.5), "0.5\n")
  T.ok(not pcall(json.encode, 0 / 0), "NaN refused")
  T.ok(not pcall(json.encode, { [1] = 1, x = 2, [true] = 3 }), "non-string key refused")
  T.ok(not pcall(json.encode, print), "function refused")
end)

T.done("test_generate")
