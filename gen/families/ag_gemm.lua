-- gen/families/ag_gemm.lua: C[M,N] = A[M,K] . B with A row-sharded over the ranks (all-gather +
-- GEMM), every rank computing all of C.  The plain GEMM it is built from is family gemm
-- (gen/families/gemm.lua); the GEMM's fields, rules, layout and config struct are shared
-- through gen/core/gemm.lua.  Device side: templates/weft/ag_gemm.cuh (the kernels),
-- weft/ag_protocol.cuh (publish, signals, waits), weft/gemm_kernel.cuh (the GEMM).
local common = require("gen.core.common")
local gemm = require("gen.core.gemm")
local schema_show = require("gen.core.schema").show

local F = {
  name = "ag_gemm",
  template = "templates/ag_gemm.cu",
  doc = "C = allgather(A) . B on every rank; launch with weft_comm_launch (the plain GEMM: family gemm)",
}

-- ("gemm" stays a value only to say where the plain GEMM went: family = "gemm")
local VARIANTS = { "gemm", "naive_remote", "threadload_gather", "multimem_gather", "gather_then_gemm", "fused" }
-- what each variant computes with, and the comm methods it has
-- (gather_then_gemm's own kernel only gathers; its tile, stages, ... configure the GEMM launched after it)
local COMPUTE = { fused = "wgmma", gather_then_gemm = "wgmma", naive_remote = "scalar",
                  threadload_gather = "scalar", multimem_gather = "scalar" }
local COMMS = { naive_remote = { "threadload" }, threadload_gather = { "threadload" },
                multimem_gather = { "multimem" }, gather_then_gemm = { "threadload", "multimem" },
                fused = { "tma", "threadload", "multimem" } }
local DEFAULT_COMM = { naive_remote = "threadload", threadload_gather = "threadload",
                       multimem_gather = "multimem", gather_then_gemm = "threadload", fused = "threadload" }

local SCALAR_MN = { 16, 32, 64 }
local SCALAR_K = { 8, 16, 32 }
local SCALAR_THREADS = 256
local has = gemm.has
local G = gemm.fields("wgmma: ")

local function tile_check(v) return gemm.tile_check(v) end

F.fields = {
  common.dtype({ "f16", "bf16" }, "bf16"),
  { name = "variant", kind = "enum", values = VARIANTS, default = "fused", tag = "",
    doc = "naive_remote | threadload_gather | multimem_gather | gather_then_gemm | fused (gemm: now family = \"gemm\")" },
  { name = "comm", kind = "enum", values = { "auto", "threadload", "multimem", "tma" }, default = "auto", tag = "",
    doc = "how shards travel: threadload (SM loads over NVLink), multimem (owner's multimem.st), tma (TMA reads the "
      .. "peer's memory); auto: the variant's own (fused: threadload)" },
  { name = "fallback", kind = "enum", values = { "none", "emulate" }, default = "none", tag = "fb",
    doc = "comm = multimem where multicast is unavailable: none (fail) or emulate (unicast fan-out twin)" },
  { name = "compute", kind = "enum", values = { "auto", "scalar", "wgmma" }, default = "auto", tag = "",
    doc = "scalar (CUDA cores, the seed's fused kernels) or wgmma (tensor cores); auto: the variant's own" },
  G.b_layout,
  { name = "tile", kind = "custom", check = tile_check, default = "auto", tag = "",
    doc = "output tile per CTA and K step (auto: 128x256x64 for wgmma, 32x32x16 for scalar): wgmma m in {64,128,256}, n in {64,128,192,256}, k = 64; "
      .. "scalar m, n in {16,32,64}, k in {8,16,32}" },
  G.stages, G.consumers, G.mma, G.cluster, G.split_k, G.epilogue, G.group,
  { name = "schedule", kind = "enum", values = { "ring", "rank_order" }, default = "ring", tag = "",
    doc = "shard order: ring (own shard, then rank+1, ...: no two ranks read one owner at once) or rank_order" },
}

-- knobs of the WGMMA kernels that the scalar ones have no use for (cluster has its own message)
local WGMMA_ONLY = { stages = true, consumers = true, mma = true, split_k = true, epilogue = true, group = true }

-- auto -> the variant's own; then every rule, each message naming what is allowed
function F.check(cfg, errs)
  local v = cfg.variant
  if v == "gemm" then   -- the plain GEMM is its own family, with the same GEMM keys
    errs.add("variant", v, 'the plain GEMM is family = "gemm" now (the same dtype, b_layout, tile, stages, consumers, '
      .. 'mma, cluster, split_k, epilogue and group; no variant, comm, fallback, compute or schedule)')
    return
  end
  if cfg.comm == "auto" then cfg.comm = DEFAULT_COMM[v] end
  if cfg.compute == "auto" then cfg.compute = COMPUTE[v] end
  if cfg.tile == "auto" then
    cfg.tile = tile_check(cfg.compute == "scalar" and { m = 32, n = 32, k = 16 } or gemm.DEFAULT_TILE)
  end
  if not has(COMMS[v], cfg.comm) then
    errs.add("comm", cfg.comm, string.format('variant = "%s" takes comm = %s', v, table.concat(COMMS[v], " | ")))
  end
  if cfg.compute ~= COMPUTE[v] then
    errs.add("compute", cfg.compute, string.format('variant = "%s" computes with %s (%s)', v, COMPUTE[v],
      COMPUTE[v] == "scalar" and "the seed's scalar kernels; fused and gather_then_gemm use wgmma" or "tensor cores; the scalar kernels are naive_remote, threadload_gather and multimem_gather"))
  end
  if cfg.fallback ~= "none" and cfg.comm ~= "multimem" then
    errs.add("fallback", cfg.fallback, 'only comm = "multimem" has a fallback; leave it "none"')
  end
  local t = cfg.tile
  if cfg.compute == "wgmma" then   -- (gather_then_gemm: the GEMM it launches second)
    gemm.check(cfg, errs)
  else
    if cfg.compute == "scalar" and (not has(SCALAR_MN, t.m) or not has(SCALAR_MN, t.n) or not has(SCALAR_K, t.k)) then
      errs.add("tile", t.tag, "scalar tiles take m, n in {16, 32, 64} and k in {8, 16, 32} (a 16 x 16 grid of threads); "
        .. "tile = \"auto\" picks 32 x 32 x 16")
    end
    if cfg.cluster.m * cfg.cluster.n > 1 then
      errs.add("cluster", gemm.cluster_value(cfg), 'applies to compute = "wgmma" only (TMA multicast); leave it { m = 1, n = 1 }')
    end
    for _, f in ipairs(F.fields) do   -- the WGMMA-only knobs must stay at their defaults
      if WGMMA_ONLY[f.name] and cfg[f.name] ~= f.default then
        errs.add(f.name, cfg[f.name], string.format('applies to compute = "wgmma" only; leave it %s', schema_show(f.default)))
      end
    end
  end
end

-- gather_then_gemm's GEMM: family gemm over the gathered A, with this config's tile, stages,
-- consumers, ... and no comm.  The only place that names the GEMM's family and what carries
-- over.
local function gemm_config(cfg)
  return { family = "gemm", dtype = cfg.dtype, b_layout = cfg.b_layout,
           tile = { m = cfg.tile.m, n = cfg.tile.n, k = cfg.tile.k }, stages = cfg.stages, consumers = cfg.consumers,
           mma = cfg.mma, cluster = { m = cfg.cluster.m, n = cfg.cluster.n }, split_k = cfg.split_k,
           epilogue = cfg.epilogue, group = cfg.group }
end

-- The kernels launched after this config's own, as configs the generator validates and renders
-- like any other (gen/core/weft.lua generate): a multi-launch variant returns them all at once.
function F.parts(cfg)
  if cfg.variant == "gather_then_gemm" then return { gemm_config(cfg) } end
  return {}
end

function F.derive(cfg)
  local v, t, dt = cfg.variant, cfg.tile, cfg.dtype
  local ct = "weft::" .. common.CTYPE[dt]
  local b_row = cfg.b_layout == "row"
  local wgmma = v == "fused"   -- the one kernel with WGMMA code (gather_then_gemm's GEMM is family gemm's)
  local comm_id = ({ threadload = "weft::COMM_THREADLOAD", multimem = "weft::COMM_MULTIMEM", tma = "weft::COMM_TMA" })[cfg.comm]
  local ring = tostring(cfg.schedule == "ring")
  local esize = common.ESIZE[dt]
  local threads = wgmma and gemm.threads(cfg) or SCALAR_THREADS

  local args, body, tmaps, cfg_struct, layout
  local size = function(name) return { name = name, type = "i64", role = "size" } end
  if v == "gather_then_gemm" then
    args = { { name = "ag", type = "ptr", dtype = dt, role = "out", align = 16 },
             { name = "a", type = "ptr", dtype = dt, role = "in", align = 16 }, size("m"), size("k") }
    body = string.format("weft::ag_gather<%s, %s, %s>(ag, a, (long)m, (long)k, comm);", ct, comm_id, ring)
  else
    args = { { name = "c", type = "ptr", dtype = dt, role = "out", align = 16 },
             { name = "a", type = "ptr", dtype = dt, role = "in", align = 16 },
             { name = "b", type = "ptr", dtype = dt, role = "in", align = 16 }, size("m"), size("n"), size("k") }
  end
  if wgmma then
    tmaps = gemm.tmaps_ab(cfg, "m/ranks")
    -- peer shards: TMA straight from every rank's buffer (tma), or from this rank's own regions
    tmaps[3] = { name = "tsh", source = cfg.comm == "tma" and "comm.shards" or "comm.local", dtype = dt,
                 dims = { "k", "m/ranks", "ranks", "halves" }, box = { 64, t.m // cfg.cluster.n, 1, 1 }, swizzle = 128 }
    -- the epilogue's map over C: 3-d (rows of a shard, then the shard), so a tile never spills
    -- into the next shard; each consumer warpgroup's rows x 64 columns per box
    local epi_tma = cfg.epilogue == "tma"
    if epi_tma then
      tmaps[4] = { name = "tc", source = "c", dtype = dt, swizzle = 128, dims = { "n", "m/ranks", "ranks" },
                   box = { 64, gemm.epi_rows(cfg), 1 } }
    end
    layout = gemm.layout(cfg)
    cfg_struct = gemm.cfg_struct("AgGemmCfg", cfg, layout,
      { "static constexpr int COMM = " .. comm_id .. ";", "static constexpr bool RING = " .. ring .. ";" })
    body = string.format("weft::ag_gemm_wgmma<AgGemmCfg>(c, a, (long)m, (long)n, (long)k, ta, tb, tsh, %s, comm);",
      epi_tma and "&tc" or "nullptr")
  elseif v ~= "gather_then_gemm" then
    body = string.format("weft::ag_gemm_scalar<%s, %d, %d, %d, %s, %s, %s, %s>(c, a, b, (long)m, (long)n, (long)k, comm);",
      ct, t.m, t.n, t.k, comm_id, v == "naive_remote" and "weft::SCALAR_NAIVE" or "weft::SCALAR_GATHERED",
      tostring(b_row), ring)
  end

  local csize = wgmma and cfg.cluster.m * cfg.cluster.n * cfg.split_k or 1
  local big = common.INT_MAX
  local limits = { { arg = "m", min = 1, max = big }, { arg = "k", min = 8, max = big, multiple = 8 } }
  if v ~= "gather_then_gemm" then limits[#limits + 1] = { arg = "n", min = 8, max = big, multiple = 8 } end

  return {
    values = { ctype = ct, threads = threads, body = body,
               -- (the PTX type names are the dtype names)
               wgmma = wgmma and gemm.wgmma_struct(t.n, dt, b_row) or "// scalar or gather: no WGMMA",
               cfg = cfg_struct or "// scalar or gather: no GEMM config", variant = v },
    block = { threads, 1, 1 },
    cluster = { csize, 1, 1 },
    smem = layout and layout.smem or 0,
    layout = layout,
    smem_field = "stages",
    smem_hint = wgmma and gemm.smem_hint(cfg) or nil,
    args = args,
    tmaps = tmaps,
    -- persistent: at most one CTA per co-resident slot, each looping over tiles (the comm
    -- variants wait for other ranks' CTAs, which must all be resident); coresident counts clusters
    -- (fused: gen/core/gemm.lua's grid over M's shards, one per rank, each tiled on its own)
    grid = wgmma and gemm.grid(cfg, true)
      or { { arg = "m", per = 1, times = csize, cap = "coresident" }, { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = limits,
    -- the data area: per half, P regions of M/P x K (elems = m * k in all)
    comm = { signals = { "ready", "pulled" }, halves = 2, elem_bytes = esize, elems = { "m", "k" },
             divide = "m", multimem = cfg.comm == "multimem", emulate = cfg.fallback == "emulate" },
  }
end

F.sizes = gemm.SIZES   -- m: the gathered M (every rank holds m / ranks rows of A)
F.key = gemm.KEY

-- The rule (gen/core/auto.lua).  variant, comm and compute stay the config's (default: fused,
-- threadload pull, wgmma): the owner push (comm = "multimem", fallback = "emulate") was faster on
-- two H200s (bench/RESULTS.md, issue 7 at P = 2: 1.29x against the pull's 1.05x of NCCL +
-- cuBLASLt at 16384 x 1792 x 4096), but it uses real multicast wherever the machine has it,
-- which no GPU here has run; so it is the second candidate, for first-use tuning to measure and
-- check, never the choice.  The GEMM's knobs come from gen/core/gemm.lua's model: the fused
-- kernel tiles each rank's shard of C (m / ranks rows) on its own; gather_then_gemm's GEMM is
-- the plain one over the gathered A.  The scalar variants have no knobs to choose.
function F.auto(shape, fixed, dev)
  local v = fixed.variant or "fused"
  if COMPUTE[v] ~= "wgmma" then return { { why = "variant " .. tostring(v) .. ": its own defaults" } } end
  local ranks = math.max(1, dev and dev.ranks or 1)
  local list = gemm.candidates(shape, fixed, dev, { family = "ag_gemm", shards = v == "fused" and ranks or 1 })
  local open = function(k) return fixed[k] == nil or fixed[k] == "auto" end
  if v == "fused" and ranks > 1 and open("comm") and open("fallback") and #list > 0 and list[1].tile then
    local push = {}
    for k, x in pairs(list[1]) do push[k] = x end
    push.comm, push.fallback = "multimem", "emulate"
    push.why = "the choice with the owner push (multimem, emulated where there is no multicast)"
    table.insert(list, 2, push)
    if #list > 8 then table.remove(list, #list - 1) end
  end
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): the GEMM's shapes (gen/core/gemm.lua).
function F.run() return gemm.run_spec() end

return F
