-- gen/families/ag_gemm.lua: C[M,N] = A[M,K] . B with A row-sharded over the ranks (all-gather +
-- GEMM), every rank computing all of C; and the plain GEMM it is built from (variant = "gemm").
-- Device side: templates/weft/ag_gemm.cuh (the protocol and the kernels), weft/gemm.cuh (TMA,
-- mbarriers, WGMMA).  The WGMMA instruction for the chosen tile is rendered here.
local common = require("gen.core.common")
local schema_show = require("gen.core.schema").show

local F = {
  name = "ag_gemm",
  template = "templates/ag_gemm.cu",
  doc = "C = allgather(A) . B (or the plain GEMM); comm variants launch with weft_comm_launch",
}

local VARIANTS = { "gemm", "naive_remote", "threadload_gather", "multimem_gather", "gather_then_gemm", "fused" }
-- what each variant computes with, and the comm methods it has
-- (gather_then_gemm's own kernel only gathers; its tile, stages, ... configure the GEMM launched after it)
local COMPUTE = { gemm = "wgmma", fused = "wgmma", gather_then_gemm = "wgmma", naive_remote = "scalar",
                  threadload_gather = "scalar", multimem_gather = "scalar" }
local COMMS = { gemm = { "none" }, naive_remote = { "threadload" }, threadload_gather = { "threadload" },
                multimem_gather = { "multimem" }, gather_then_gemm = { "threadload", "multimem" },
                fused = { "tma", "threadload", "multimem" } }
local DEFAULT_COMM = { gemm = "none", naive_remote = "threadload", threadload_gather = "threadload",
                       multimem_gather = "multimem", gather_then_gemm = "threadload", fused = "threadload" }

local WGMMA_M = { 64, 128, 256 }
local WGMMA_N = { 64, 128, 192, 256 }
local SCALAR_MN = { 16, 32, 64 }
local SCALAR_K = { 8, 16, 32 }
local ACC_REGS = 128        -- f32 accumulators per consumer thread before the 232-register budget breaks
local SCALAR_THREADS = 256

local function has(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function tile_check(v)
  local allowed = '"auto" or a table { m = <rows>, n = <cols>, k = <depth> } of integers'
  if v == "auto" then return v end
  if type(v) ~= "table" then return nil, allowed end
  local out = {}
  for key in pairs(v) do
    if key ~= "m" and key ~= "n" and key ~= "k" then return nil, allowed .. " (unknown key " .. tostring(key) .. ")" end
  end
  for _, key in ipairs({ "m", "n", "k" }) do
    local x = v[key]
    local iv = math.type(x) == "integer" and x or (type(x) == "number" and math.tointeger(x))
    if not iv or iv < 1 then return nil, allowed .. " (" .. key .. " is missing or not a positive integer)" end
    out[key] = iv
  end
  out.tag = string.format("%dx%dx%d", out.m, out.n, out.k)
  return out
end

local function cluster_check(v)
  local allowed = "a table { m = <CTAs along M>, n = <CTAs along N> }, each 1 or 2, at most 2 CTAs in all"
  if type(v) ~= "table" then return nil, allowed end
  for key in pairs(v) do
    if key ~= "m" and key ~= "n" then return nil, allowed .. " (unknown key " .. tostring(key) .. ")" end
  end
  local out = {}
  for _, key in ipairs({ "m", "n" }) do
    local x = v[key] == nil and 1 or v[key]
    local iv = math.type(x) == "integer" and x or (type(x) == "number" and math.tointeger(x))
    if iv ~= 1 and iv ~= 2 then return nil, allowed .. " (" .. key .. " is not 1 or 2)" end
    out[key] = iv
  end
  if out.m * out.n > 2 then return nil, allowed .. " (" .. out.m * out.n .. " CTAs)" end
  out.tag = string.format("%dx%d", out.m, out.n)
  return out
end

F.fields = {
  common.dtype({ "f16", "bf16" }, "bf16"),
  { name = "variant", kind = "enum", values = VARIANTS, default = "fused", tag = "",
    doc = "gemm (local, no ranks) | naive_remote | threadload_gather | multimem_gather | gather_then_gemm | fused" },
  { name = "comm", kind = "enum", values = { "auto", "none", "threadload", "multimem", "tma" }, default = "auto", tag = "",
    doc = "how shards travel: threadload (SM loads over NVLink), multimem (owner's multimem.st), tma (TMA reads the "
      .. "peer's memory); auto: the variant's own (fused: threadload)" },
  { name = "fallback", kind = "enum", values = { "none", "emulate" }, default = "none", tag = "fb",
    doc = "comm = multimem where multicast is unavailable: none (fail) or emulate (unicast fan-out twin)" },
  { name = "compute", kind = "enum", values = { "auto", "scalar", "wgmma" }, default = "auto", tag = "",
    doc = "scalar (CUDA cores, the seed's fused kernels) or wgmma (tensor cores); auto: the variant's own" },
  { name = "b_layout", kind = "enum", values = { "row", "col" }, default = "row", tag = "b",
    doc = "row: B is K x N row-major; col: B is stored N x K (a linear layer's weight), C = A . B^T of that" },
  { name = "tile", kind = "custom", check = tile_check, default = "auto", tag = "",
    doc = "output tile per CTA and K step (auto: 128x256x64 for wgmma, 32x32x16 for scalar): wgmma m in {64,128,256}, n in {64,128,192,256}, k = 64; "
      .. "scalar m, n in {16,32,64}, k in {8,16,32}" },
  { name = "stages", kind = "int", min = 2, max = 8, default = 4, tag = "s",
    doc = "wgmma: depth of the shared-memory ring TMA fills ahead of the tensor cores" },
  { name = "consumers", kind = "int", values = { 1, 2 }, default = 2, tag = "c",
    doc = "wgmma: consumer warpgroups (each owns tile.m / consumers rows); one more warpgroup loads and talks" },
  { name = "mma", kind = "enum", values = { "cooperative", "pingpong" }, default = "cooperative", tag = "",
    doc = "wgmma, 2 consumers: cooperative (both split each tile by rows) or pingpong (each owns whole tiles, "
      .. "taking turns, so one's epilogue overlaps the other's WGMMAs)" },
  { name = "cluster", kind = "custom", check = cluster_check, default = { m = 1, n = 1 }, tag = "cl",
    doc = "wgmma: CTAs per cluster along M and N ({ m = 2 }: two row blocks share each B tile, { n = 2 }: two "
      .. "column blocks share each A tile); the shared tile is loaded once and multicast by TMA" },
  { name = "split_k", kind = "int", values = { 1, 2 }, default = 1, tag = "sk",
    doc = "wgmma, cooperative: 2 = a cluster of two CTAs per tile, each over half of K; the second adds its f32 "
      .. "partial sums into the first through distributed shared memory (small shapes: twice the CTAs per tile)" },
  { name = "epilogue", kind = "enum", values = { "direct", "tma" }, default = "direct", tag = "ep",
    doc = "wgmma: direct (accumulators straight to global memory, bounds-checked) or tma (C staged in shared memory, "
      .. "swizzled, and stored by TMA, which clips at the edges)" },
  { name = "group", kind = "int", values = { 1, 2, 4, 8, 16, 32 }, default = 16, tag = "g",
    doc = "wgmma: row blocks per raster group (tiles walk down a group of rows before moving right: L2 reuse)" },
  { name = "schedule", kind = "enum", values = { "ring", "rank_order" }, default = "ring", tag = "",
    doc = "shard order: ring (own shard, then rank+1, ...: no two ranks read one owner at once) or rank_order" },
  { name = "pdl", kind = "bool", default = false, tag = "pdl",
    doc = "variant = \"gemm\": programmatic dependent launch (the kernel may start while the previous one in its "
      .. "stream finishes; it sets up its shared memory, then waits for it before touching global memory)" },
}

-- knobs of the WGMMA kernels that the scalar ones have no use for (cluster has its own message)
local WGMMA_ONLY = { stages = true, consumers = true, mma = true, split_k = true, epilogue = true, group = true }

-- auto -> the variant's own; then every rule, each message naming what is allowed
function F.check(cfg, errs)
  local v = cfg.variant
  if cfg.comm == "auto" then cfg.comm = DEFAULT_COMM[v] end
  if cfg.compute == "auto" then cfg.compute = COMPUTE[v] end
  if cfg.tile == "auto" then
    cfg.tile = cfg.compute == "scalar" and tile_check({ m = 32, n = 32, k = 16 }) or tile_check({ m = 128, n = 256, k = 64 })
  end
  if not has(COMMS[v], cfg.comm) then
    errs.add("comm", cfg.comm, string.format('variant = "%s" takes comm = %s', v, table.concat(COMMS[v], " | ")))
  end
  if cfg.compute ~= COMPUTE[v] then
    errs.add("compute", cfg.compute, string.format('variant = "%s" computes with %s (%s)', v, COMPUTE[v],
      COMPUTE[v] == "scalar" and "the seed's scalar kernels; fused, gemm and gather_then_gemm use wgmma" or "tensor cores; the scalar kernels are naive_remote, threadload_gather and multimem_gather"))
  end
  if cfg.fallback ~= "none" and cfg.comm ~= "multimem" then
    errs.add("fallback", cfg.fallback, 'only comm = "multimem" has a fallback; leave it "none"')
  end
  local t = cfg.tile
  if cfg.compute == "wgmma" then   -- (gather_then_gemm: the GEMM it launches second)
    if not has(WGMMA_M, t.m) then
      errs.add("tile.m", t.m, "wgmma tiles take m in {64, 128, 256} (whole 64-row WGMMA groups)")
    end
    if not has(WGMMA_N, t.n) then
      errs.add("tile.n", t.n, "wgmma tiles take n in {64, 128, 192, 256} (the m64nNk16 shape; B arrives in 64-column boxes)")
    end
    if t.k ~= 64 then
      errs.add("tile.k", t.k, "wgmma tiles take k = 64: one 128-byte swizzled row of 16-bit elements per stage")
    end
    if cfg.split_k > 1 and cfg.mma == "pingpong" then
      errs.add("split_k", cfg.split_k, 'split-K adds partial sums of cooperative tiles; use mma = "cooperative"')
    elseif cfg.split_k > 1 and cfg.cluster.m * cfg.cluster.n > 1 then
      errs.add("split_k", cfg.split_k, "split-K takes the cluster's two CTAs; leave cluster = { m = 1, n = 1 }")
    end
    if cfg.mma ~= "pingpong" and has(WGMMA_M, t.m) and t.m // 64 < cfg.consumers then
      errs.add("consumers", cfg.consumers, string.format("tile.m = %d has %d 64-row group(s); use consumers <= %d",
        t.m, t.m // 64, t.m // 64))
    elseif cfg.mma == "pingpong" and cfg.consumers ~= 2 then
      errs.add("mma", cfg.mma, "pingpong alternates two consumer warpgroups: set consumers = 2")
    elseif has(WGMMA_M, t.m) and has(WGMMA_N, t.n) then
      local owners = cfg.mma == "pingpong" and 1 or cfg.consumers   -- warpgroups sharing a tile
      local regs = t.m * t.n // (128 * owners)
      if regs > ACC_REGS then
        errs.add("tile", t.tag, string.format("%d x %d over %d consumer warpgroup(s) is %d f32 accumulators per thread; "
          .. "at most %d fit (%s)", t.m, t.n, owners, regs, ACC_REGS,
          cfg.mma == "pingpong" and 'pingpong gives each warpgroup a whole tile: m x n <= 16384, or mma = "cooperative"'
          or (cfg.consumers == 1 and "use consumers = 2 or a smaller tile" or "use a smaller tile: m x n <= 32768")))
      end
    end
  else
    if cfg.compute == "scalar" and (not has(SCALAR_MN, t.m) or not has(SCALAR_MN, t.n) or not has(SCALAR_K, t.k)) then
      errs.add("tile", t.tag, "scalar tiles take m, n in {16, 32, 64} and k in {8, 16, 32} (a 16 x 16 grid of threads); "
        .. "tile = \"auto\" picks 32 x 32 x 16")
    end
    if cfg.cluster.m * cfg.cluster.n > 1 then
      errs.add("cluster", cfg.cluster.tag, 'applies to compute = "wgmma" only (TMA multicast); leave it { m = 1, n = 1 }')
    end
    for _, f in ipairs(F.fields) do   -- the WGMMA-only knobs must stay at their defaults
      if WGMMA_ONLY[f.name] and cfg[f.name] ~= f.default then
        errs.add(f.name, cfg[f.name], string.format('applies to compute = "wgmma" only; leave it %s', schema_show(f.default)))
      end
    end
  end
  if v == "gemm" and cfg.schedule ~= "ring" then
    errs.add("schedule", cfg.schedule, 'variant = "gemm" has no shards; leave it "ring"')
  end
  if cfg.pdl and v ~= "gemm" then
    errs.add("pdl", cfg.pdl, 'applies to variant = "gemm" only (the others wait on their ranks\' signals); leave it false')
  end
end

-- The WGMMA instruction for a consumer's 64 x n slice, with its n/2 accumulator operands.
local function wgmma_struct(n, dtype, b_row)
  local regs = {}
  for i = 0, n // 2 - 1 do regs[#regs + 1] = "%" .. i end
  local outs = {}
  for i = 0, n // 2 - 1 do outs[#outs + 1] = string.format('"+f"(d[%d])', i) end
  local a, b, sd = n // 2, n // 2 + 1, n // 2 + 2
  return table.concat({
    "// m64n" .. n .. "k16, " .. dtype .. " in, f32 accumulate; B " .. (b_row and "MN-major (transposed)" or "K-major"),
    "struct Wgmma {",
    "  __device__ __forceinline__ static void mma(float (&d)[" .. n // 2 .. "], weft::u64 da, weft::u64 db, int scale_d) {",
    '    asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %' .. sd .. ', 0;\\n"',
    '                 "wgmma.mma_async.sync.aligned.m64n' .. n .. 'k16.f32.' .. dtype .. "." .. dtype .. ' {"',
    '                 "' .. table.concat(regs, ", ") .. '"',
    '                 "}, %' .. a .. ", %" .. b .. ", p, 1, 1, 0, " .. (b_row and 1 or 0) .. ';\\n}\\n"',
    "                 : " .. table.concat(outs, ", "),
    '                 : "l"(da), "l"(db), "r"(scale_d));',
    "  }",
    "};",
  }, "\n")
end


-- gather_then_gemm's GEMM: the plain GEMM over the gathered A, with this config's tile, stages,
-- consumers, ... and no comm.  The only place that names the GEMM's family and what carries
-- over, so that it can be pointed at another family's derivation.
local function gemm_config(cfg)
  return { family = "ag_gemm", variant = "gemm", dtype = cfg.dtype, b_layout = cfg.b_layout,
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
  local wgmma = cfg.compute == "wgmma" and v ~= "gather_then_gemm"   -- kernels with WGMMA code
  local comm_id = ({ threadload = "weft::COMM_THREADLOAD", multimem = "weft::COMM_MULTIMEM", tma = "weft::COMM_TMA",
                     none = "weft::COMM_NONE" })[cfg.comm]
  local ring = tostring(cfg.schedule == "ring")
  local esize = common.ESIZE[dt]
  local threads = wgmma and 128 * (1 + cfg.consumers) or SCALAR_THREADS

  local args, body, tmaps
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
    local rows = v == "gemm" and "m" or "m/ranks"
    -- with a cluster each CTA loads its part of the shared tile: A's rows split over cluster.n,
    -- column-major B's over cluster.m (row-major B comes in 64-column boxes, shared out whole)
    local cl = cfg.cluster
    tmaps = {
      { name = "ta", source = "a", dtype = dt, dims = { "k", rows }, box = { 64, t.m // cl.n }, swizzle = 128 },
      b_row and { name = "tb", source = "b", dtype = dt, dims = { "n", "k" }, box = { 64, 64 }, swizzle = 128 }
             or { name = "tb", source = "b", dtype = dt, dims = { "k", "n" }, box = { 64, t.n // cl.m }, swizzle = 128 },
    }
    local epi_tma = cfg.epilogue == "tma"
    local targs = string.format("%s, %d, %d, %d, %d, %s, %d, %d, %d, %s, %s, %d, %s, %s, %s, Wgmma", ct, t.m, t.n,
      cfg.stages, cfg.consumers, tostring(cfg.mma == "pingpong"), cl.m, cl.n, cfg.split_k, tostring(epi_tma),
      tostring(b_row), cfg.group, comm_id, ring, tostring(cfg.pdl))
    -- the epilogue's map over C: each consumer warpgroup's rows x 64 columns per box; the fused
    -- kernel's is 3-d (rows of a shard, then the shard), so a tile never spills into the next shard
    local epi_rows = cfg.mma == "pingpong" and t.m or t.m // cfg.consumers
    local tc = epi_tma and { name = "tc", source = "c", dtype = dt, swizzle = 128,
                             dims = v == "gemm" and { "n", "m" } or { "n", "m/ranks", "ranks" },
                             box = v == "gemm" and { 64, epi_rows } or { 64, epi_rows, 1 } } or nil
    local tc_arg = epi_tma and "&tc" or "nullptr"
    if v == "gemm" then
      if tc then tmaps[#tmaps + 1] = tc end
      body = string.format("weft::ag_gemm_wgmma<%s>(c, a, (long)m, (long)n, (long)k, ta, tb, nullptr, %s, nullptr);",
        targs, tc_arg)
    else
      -- peer shards: TMA straight from every rank's buffer (tma), or from this rank's own regions
      tmaps[3] = { name = "tsh", source = cfg.comm == "tma" and "comm.shards" or "comm.local", dtype = dt,
                   dims = { "k", "m/ranks", "ranks", "halves" }, box = { 64, t.m // cl.n, 1, 1 }, swizzle = 128 }
      if tc then tmaps[#tmaps + 1] = tc end
      body = string.format("weft::ag_gemm_wgmma<%s>(c, a, (long)m, (long)n, (long)k, ta, tb, &tsh, %s, &comm);", targs,
        tc_arg)
    end
  elseif v ~= "gather_then_gemm" then
    body = string.format("weft::ag_gemm_scalar<%s, %d, %d, %d, %s, %s, %s, %s>(c, a, b, (long)m, (long)n, (long)k, comm);",
      ct, t.m, t.n, t.k, comm_id, v == "naive_remote" and "weft::SCALAR_NAIVE" or "weft::SCALAR_GATHERED",
      tostring(b_row), ring)
  end

  local smem, csize = 0, wgmma and cfg.cluster.m * cfg.cluster.n * cfg.split_k or 1
  if wgmma then
    smem = cfg.stages * (t.m + t.n) * 128 + 2 * cfg.stages * 8 + 1024   -- weft::Ring: stages, both barriers, 1024-byte alignment
    if cfg.split_k > 1 then smem = smem + 16 + t.m * t.n * 4 end       -- split-K: two barriers, the f32 partial tile
    if cfg.epilogue == "tma" then                                        -- C's stages (1024-byte aligned), one per consumer
      smem = smem + 1024 + (cfg.mma == "pingpong" and 2 or 1) * t.m * t.n * common.ESIZE[dt]
    end
  end
  local big = common.INT_MAX
  local limits = { { arg = "m", min = 1, max = big }, { arg = "k", min = 8, max = big, multiple = 8 } }
  if v ~= "gather_then_gemm" then limits[#limits + 1] = { arg = "n", min = 8, max = big, multiple = 8 } end

  return {
    values = { ctype = ct, threads = threads, body = body,
               -- (the PTX type names are the dtype names)
               wgmma = wgmma and wgmma_struct(t.n, dt, b_row) or "// scalar or gather: no WGMMA",
               variant = v },
    block = { threads, 1, 1 },
    cluster = { csize, 1, 1 },
    pdl = cfg.pdl,
    smem = smem,
    smem_field = "stages",
    smem_hint = "use fewer stages or a smaller tile" .. (wgmma and cfg.split_k > 1
      and string.format(" (split_k = 2 also holds the f32 partial tile, %d x %d x 4 bytes)", t.m, t.n) or "")
      .. (wgmma and cfg.epilogue == "tma" and " (epilogue = \"tma\" also stages C: a tile per consumer warpgroup)" or ""),
    args = args,
    tmaps = tmaps,
    -- persistent: at most one CTA per co-resident slot, each looping over tiles (the comm
    -- variants wait for other ranks' CTAs, which must all be resident); coresident counts clusters
    grid = { { arg = "m", per = 1, times = csize, cap = "coresident" }, { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = limits,
    -- the data area: per half, P regions of M/P x K (elems = m * k in all)
    comm = v ~= "gemm" and { signals = { "ready", "pulled" }, halves = 2, elem_bytes = esize, elems = { "m", "k" },
                             divide = "m", multimem = cfg.comm == "multimem", emulate = cfg.fallback == "emulate" } or nil,
  }
end

-- What the tools need (gen/core/weft.lua's run_spec).  The runner adds one shape that depends
-- on the world size, (1024 P) x 1536 x 512, big enough to sample rows of every shard.
-- weft tune checks at most 2048 x 1024 of a shape (the CPU reference stays cheap), times it whole.
function F.run(cfg)
  return { sizes = { "m", "n", "k" },
           check = { { m = 1000, n = 1000, k = 1000 }, { m = 128, n = 256, k = 64 }, { m = 1000, n = 1024, k = 1000 } },
           time = { { m = 1024, n = 1024, k = 1024 }, { m = 4096, n = 4096, k = 4096 }, { m = 8192, n = 8192, k = 8192 } },
           metric = "flops", baseline = "cublaslt", ranks = true, check_cap = { m = 2048, n = 1024 } }
end

return F
