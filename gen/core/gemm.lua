-- gen/core/gemm.lua: what the WGMMA GEMM kernels of several families share (family gemm, and
-- ag_gemm's fused kernel and gather_then_gemm's GEMM): the schema fields, their rules, the
-- WGMMA instruction for a tile, the shared-memory layout and the config struct the device code
-- (templates/weft/gemm_kernel.cuh) takes as its one template parameter.
local common = require("gen.core.common")

local M = {}

M.WGMMA_M = { 64, 128, 256 }
M.WGMMA_N = { 64, 128, 192, 256 }
M.ACC_REGS = 128   -- f32 accumulators per consumer thread before the 232-register budget breaks
M.DEFAULT_TILE = { m = 128, n = 256, k = 64 }

local function has(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end
M.has = has

function M.tile_check(v)
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

function M.cluster_check(v)
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

-- The GEMM's schema fields, by name; each family lists them in its own order (the order is the
-- kernel name's).  `pre` starts each doc line ("wgmma: " where a family also has scalar kernels).
function M.fields(pre)
  pre = pre or ""
  return {
    b_layout = { name = "b_layout", kind = "enum", values = { "row", "col" }, default = "row", tag = "b",
      doc = "row: B is K x N row-major; col: B is stored N x K (a linear layer's weight), C = A . B^T of that" },
    stages = { name = "stages", kind = "int", min = 2, max = 8, default = 4, tag = "s",
      doc = pre .. "depth of the shared-memory ring TMA fills ahead of the tensor cores" },
    consumers = { name = "consumers", kind = "int", values = { 1, 2 }, default = 2, tag = "c",
      doc = pre .. "consumer warpgroups (each owns tile.m / consumers rows); one more warpgroup loads" },
    mma = { name = "mma", kind = "enum", values = { "cooperative", "pingpong" }, default = "cooperative", tag = "",
      doc = pre .. "2 consumers: cooperative (both split each tile by rows) or pingpong (each owns whole tiles, "
        .. "taking turns, so one's epilogue overlaps the other's WGMMAs)" },
    cluster = { name = "cluster", kind = "custom", check = M.cluster_check, default = { m = 1, n = 1 }, tag = "cl",
      doc = pre .. "CTAs per cluster along M and N ({ m = 2 }: two row blocks share each B tile, { n = 2 }: two "
        .. "column blocks share each A tile); the shared tile is loaded once and multicast by TMA" },
    split_k = { name = "split_k", kind = "int", values = { 1, 2 }, default = 1, tag = "sk",
      doc = pre .. "cooperative: 2 = a cluster of two CTAs per tile, each over half of K; the second adds its f32 "
        .. "partial sums into the first through distributed shared memory (small shapes: twice the CTAs per tile)" },
    epilogue = { name = "epilogue", kind = "enum", values = { "direct", "tma" }, default = "direct", tag = "ep",
      doc = pre .. "direct (accumulators straight to global memory, bounds-checked) or tma (C staged in shared "
        .. "memory, swizzled, and stored by TMA, which clips at the edges)" },
    group = { name = "group", kind = "int", values = { 1, 2, 4, 8, 16, 32 }, default = 16, tag = "g",
      doc = pre .. "row blocks per raster group (tiles walk down a group of rows before moving right: L2 reuse)" },
  }
end

-- The WGMMA rules over a config whose tile is resolved (family gemm; ag_gemm's wgmma variants).
function M.check(cfg, errs)
  local t = cfg.tile
  if not has(M.WGMMA_M, t.m) then
    errs.add("tile.m", t.m, "wgmma tiles take m in {64, 128, 256} (whole 64-row WGMMA groups)")
  end
  if not has(M.WGMMA_N, t.n) then
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
  if cfg.mma ~= "pingpong" and has(M.WGMMA_M, t.m) and t.m // 64 < cfg.consumers then
    errs.add("consumers", cfg.consumers, string.format("tile.m = %d has %d 64-row group(s); use consumers <= %d",
      t.m, t.m // 64, t.m // 64))
  elseif cfg.mma == "pingpong" and cfg.consumers ~= 2 then
    errs.add("mma", cfg.mma, "pingpong alternates two consumer warpgroups: set consumers = 2")
  elseif has(M.WGMMA_M, t.m) and has(M.WGMMA_N, t.n) then
    local owners = cfg.mma == "pingpong" and 1 or cfg.consumers   -- warpgroups sharing a tile
    local regs = t.m * t.n // (128 * owners)
    if regs > M.ACC_REGS then
      errs.add("tile", t.tag, string.format("%d x %d over %d consumer warpgroup(s) is %d f32 accumulators per thread; "
        .. "at most %d fit (%s)", t.m, t.n, owners, regs, M.ACC_REGS,
        cfg.mma == "pingpong" and 'pingpong gives each warpgroup a whole tile: m x n <= 16384, or mma = "cooperative"'
        or (cfg.consumers == 1 and "use consumers = 2 or a smaller tile" or "use a smaller tile: m x n <= 32768")))
    end
  end
end

-- The WGMMA instruction for a consumer's 64 x n slice, with its n/2 accumulator operands.
function M.wgmma_struct(n, dtype, b_row)
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

-- Rows of C one consumer warpgroup stores per tile (its TMA epilogue's box and stage).
function M.epi_rows(cfg)
  return cfg.mma == "pingpong" and cfg.tile.m or cfg.tile.m // cfg.consumers
end

local function align(x, a) return (x + a - 1) // a * a end

-- The shared-memory layout, the one place it is computed: byte offsets from the CTA's
-- 1024-byte aligned base (the swizzled stages need it).  The device code carves with these
-- (rendered into the config struct), the manifest carries them (smem_layout), tests/lua checks
-- them.
--   stage s     A at s * stage, B at s * stage + b (BM, BN rows x 128 bytes: 64 16-bit k each)
--   full, empty STAGES mbarriers each, after the stages
--   red_bar     split-K: red_full, red_empty; then red, the f32 partial tile (16-byte aligned)
--   epi         epilogue = "tma": C's stages, one per consumer warpgroup (1024-byte aligned:
--               their 128-byte swizzle)
--   bytes       the end of what is used; smem = bytes + 1024 (slack to align the base)
function M.layout(cfg)
  local t, esize = cfg.tile, common.ESIZE[cfg.dtype]
  local L = { b = t.m * 128, stage = (t.m + t.n) * 128 }
  L.full = cfg.stages * L.stage
  L.empty = L.full + 8 * cfg.stages
  L.red_bar = L.empty + 8 * cfg.stages
  L.red = L.red_bar + 16
  local used = cfg.split_k > 1 and L.red + t.m * t.n * 4 or L.red_bar
  L.epi = align(used, 1024)
  L.epi_stage = cfg.epilogue == "tma" and M.epi_rows(cfg) * t.n * esize or 0
  L.bytes = cfg.epilogue == "tma" and L.epi + cfg.consumers * L.epi_stage or used
  L.smem = L.bytes + 1024
  return L
end

-- The config struct: every constant the kernel takes, as one template parameter.  `extra`:
-- lines of the family's own (ag_gemm: COMM, RING), each a complete declaration.
function M.cfg_struct(name, cfg, L, extra)
  local t, cl, b = cfg.tile, cfg.cluster, tostring
  local lines = {
    "// the GEMM's constants (gen/core/gemm.lua); SMEM_*: its shared-memory layout, bytes from the",
    "// 1024-byte aligned base",
    "struct " .. name .. " {",
    "  using T = weft::" .. common.CTYPE[cfg.dtype] .. ";",
    "  using Wgmma = ::Wgmma;",
    string.format("  static constexpr int BM = %d, BN = %d, STAGES = %d, CONSUMERS = %d;", t.m, t.n, cfg.stages,
      cfg.consumers),
    "  static constexpr bool PINGPONG = " .. b(cfg.mma == "pingpong") .. ";",
    string.format("  static constexpr int CM = %d, CN = %d, SPLITK = %d;", cl.m, cl.n, cfg.split_k),
    string.format("  static constexpr bool EPI_TMA = %s, B_ROW = %s;", b(cfg.epilogue == "tma"), b(cfg.b_layout == "row")),
    string.format("  static constexpr int GROUP = %d;", cfg.group),
    "  static constexpr bool PDL = " .. b(cfg.pdl == true) .. ";",
    string.format("  static constexpr unsigned SMEM_B = %d, SMEM_STAGE = %d, SMEM_FULL = %d, SMEM_EMPTY = %d;", L.b, L.stage,
      L.full, L.empty),
    string.format("  static constexpr unsigned SMEM_RED_BAR = %d, SMEM_RED = %d, SMEM_EPI = %d, SMEM_EPI_STAGE = %d;",
      L.red_bar, L.red, L.epi, L.epi_stage),
  }
  for _, x in ipairs(extra or {}) do lines[#lines + 1] = "  " .. x end
  lines[#lines + 1] = "};"
  return table.concat(lines, "\n")
end

-- Threads per CTA: the producer's warpgroup and the consumers'.
function M.threads(cfg) return 128 * (1 + cfg.consumers) end

-- Tensor maps over A (`rows` of it: "m", or "m/ranks" for a shard) and B: with a cluster each
-- CTA loads its part of the shared tile: A's rows split over cluster.n, column-major B's over
-- cluster.m (row-major B comes in 64-column boxes, shared out whole).
function M.tmaps_ab(cfg, rows)
  local t, cl, dt = cfg.tile, cfg.cluster, cfg.dtype
  return {
    { name = "ta", source = "a", dtype = dt, dims = { "k", rows }, box = { 64, t.m // cl.n }, swizzle = 128 },
    cfg.b_layout == "row" and { name = "tb", source = "b", dtype = dt, dims = { "n", "k" }, box = { 64, 64 }, swizzle = 128 }
      or { name = "tb", source = "b", dtype = dt, dims = { "k", "n" }, box = { 64, t.n // cl.m }, swizzle = 128 },
  }
end

function M.smem_hint(cfg)
  local t = cfg.tile
  return "use fewer stages or a smaller tile" .. (cfg.split_k > 1
    and string.format(" (split_k = 2 also holds the f32 partial tile, %d x %d x 4 bytes)", t.m, t.n) or "")
    .. (cfg.epilogue == "tma" and " (epilogue = \"tma\" also stages C: a tile per consumer warpgroup)" or "")
end

-- The run spec of the GEMM families (gen/core/weft.lua's run_spec).  The runner adds one shape
-- that depends on the world size, (1024 P) x 1536 x 512, big enough to sample rows of every
-- shard (ag_gemm).  weft tune checks at most 2048 x 1024 of a shape (the CPU reference stays
-- cheap), times it whole.
function M.run_spec()
  return { sizes = { "m", "n", "k" },
           check = { { m = 1000, n = 1000, k = 1000 }, { m = 128, n = 256, k = 64 }, { m = 1000, n = 1024, k = 1000 } },
           time = { { m = 1024, n = 1024, k = 1024 }, { m = 4096, n = 4096, k = 4096 }, { m = 8192, n = 8192, k = 8192 } },
           metric = "flops", baseline = "cublaslt", ranks = true, check_cap = { m = 2048, n = 1024 },
           key = { "dtype", "b_layout" } }
end

return M
