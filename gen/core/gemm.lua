-- gen/core/gemm.lua: what the WGMMA GEMM kernels of several families share (family gemm, and
-- ag_gemm's fused kernel and gather_then_gemm's GEMM): the schema fields, their rules, the
-- WGMMA instruction for a tile, the shared-memory layout and the config struct the device code
-- (templates/weft/gemm_kernel.cuh) takes as its one template parameter.
local common = require("gen.core.common")

local M = {}

M.WGMMA_M = { 64, 128, 256 }
M.WGMMA_N = { 64, 128, 192, 256 }
M.ACC_REGS = 128   -- f32 accumulators per consumer thread before the 232-register budget breaks
-- Two cooperative consumers of family gemm get 232 registers each from the loading warpgroup's
-- share (weft/gemm_kernel.cuh SHIFT_REGS): 160 accumulators (256 x 160) compile without a spill
-- (tests/host/compile_matrix.c), as cuBLASLt's 256 x 152 tiles hold 152.  The fused families stay
-- at 128: their comm warps keep more of the registers (ag_gemm's and gemm_rs's consumers get 216),
-- and none was measured with more.
M.ACC_REGS_SHIFTED = 160
-- Three consumers (family gemm's 192-row tiles, 512 threads) get 160 registers each and leave
-- the producer 32 (weft/gemm_kernel.cuh): 96 accumulators, a 192 x 192 tile (cuBLASLt's tile at
-- 3072^3).
M.ACC_REGS_THREE = 96
-- mma = "kturns": each warpgroup holds the whole tile and adds the other's sums to it; at 128
-- accumulators (64 x 256, 128 x 128, swapped 256 x 64 and 128 x 128, thin 32 x 256) ptxas spilled
-- 456-472 bytes, at 96 (64 x 192, swapped 192 x 64, thin 32 x 192) nothing.
M.ACC_REGS_KTURNS = 96
-- Pingpong in family gemm: each warpgroup holds a whole tile, up to 192 accumulators (128 x 192,
-- and with column-major B 256 x 96; cuBLASLt's kernel at 1024 x 14336 x 4096 runs 128 x 176 tiles
-- this way); at 192 accumulators and 232 registers ptxas spilled nothing.  The fused families
-- keep 128 (their consumers get 216 registers).
M.ACC_REGS_PINGPONG = 192
-- mma = "cooperative_n" (family gemm): the two consumers split each tile by columns, each all of
-- its rows by half its width (cuBLASLt's coopB kernels: 192 x 192 at 3072^3 and 16384 x 6144 x
-- 4096, each warpgroup 192 x 96).  The same 232-register consumers as pingpong's, so the same 192.
function M.coop_n(cfg) return cfg.mma == "cooperative_n" end
-- Row-major B whose halves (cooperative_n) are not whole 64-column boxes (192: 96 each) arrives in
-- 32-column boxes with the 64-byte swizzle instead, each half of the tile whole boxes of those.
function M.b_sw64(cfg) return M.coop_n(cfg) and cfg.b_layout == "row" and (cfg.tile.n // 2) % 64 ~= 0 end
function M.wide_pingpong(cfg)
  return cfg.family == "gemm" and cfg.mma == "pingpong" and cfg.tile.m * cfg.tile.n > 128 * 128
end
function M.acc_regs(cfg)
  if cfg.consumers == 3 then return M.ACC_REGS_THREE end
  if cfg.mma == "kturns" then return M.ACC_REGS_KTURNS end
  if cfg.family == "gemm" and (cfg.mma == "pingpong" or M.coop_n(cfg)) then return M.ACC_REGS_PINGPONG end
  return (cfg.family == "gemm" and cfg.mma == "cooperative" and cfg.consumers == 2 and not M.swapped(cfg)
          and not cfg.stream_k)   -- (stream-K's hand-over spilled 16 bytes at 256 x 160)
    and M.ACC_REGS_SHIFTED or M.ACC_REGS
end
-- Consumer warpgroups that split one tile's rows (pingpong, kturns and cooperative_n: each holds
-- all of them).
function M.owners(cfg)
  return (cfg.mma == "pingpong" or cfg.mma == "kturns" or M.coop_n(cfg)) and 1 or cfg.consumers
end
-- Consumer warpgroups that store parts of each tile (pingpong, kturns: one; cooperative_n: both,
-- each its columns).
function M.storers(cfg) return M.coop_n(cfg) and cfg.consumers or M.owners(cfg) end
-- Whether a config's tile.m takes whole 64-row WGMMA groups over its consumers: 64, 128, 256,
-- and 192 with three consumers or cooperative_n.
local function rows_ok(cfg)
  for _, x in ipairs(M.WGMMA_M) do if x == cfg.tile.m then return true end end
  return cfg.tile.m == 192 and (cfg.consumers == 3 or M.coop_n(cfg))
end
M.DEFAULT_TILE = { m = 128, n = 256, k = 64 }
M.MAX_SPLIT_K = 8   -- a cluster of up to 8 CTAs (the portable cluster size)

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

-- The cluster field's form: CTAs along M (sharing B's tile) and along N (sharing A's), 1, 2, 4 or
-- 8 each; how many a config may take is the family's rule (M.check: two along one of them, or
-- swapped up to 8 in all).
M.CLUSTER_SIZES = { 1, 2, 4, 8 }
-- A resolved config's cluster as the user writes it (an error message shows it so).
function M.cluster_value(cfg) return { m = cfg.cluster.m, n = cfg.cluster.n } end
function M.cluster_check(v)
  local allowed = "a table { m = <CTAs along M>, n = <CTAs along N> }, each 1, 2, 4 or 8"
  if type(v) ~= "table" then return nil, allowed end
  for key in pairs(v) do
    if key ~= "m" and key ~= "n" then return nil, allowed .. " (unknown key " .. tostring(key) .. ")" end
  end
  local out = {}
  for _, key in ipairs({ "m", "n" }) do
    local x = v[key] == nil and 1 or v[key]
    local iv = math.type(x) == "integer" and x or (type(x) == "number" and math.tointeger(x))
    if not has(M.CLUSTER_SIZES, iv) then return nil, allowed .. " (" .. key .. " is not 1, 2, 4 or 8)" end
    out[key] = iv
  end
  if out.m * out.n > 8 then
    return nil, allowed .. " (" .. out.m * out.n .. " CTAs in all: a cluster holds at most 8)"
  end
  out.tag = string.format("%dx%d", out.m, out.n)
  return out
end

M.L2_PROMOTION = { 0, 64, 128, 256 }   -- bytes: cuTensorMapEncodeTiled's CU_TENSOR_MAP_L2_PROMOTION_*
function M.l2_promotion_check(v)
  if v == "auto" then return v end
  local iv = math.type(v) == "integer" and v or (type(v) == "number" and math.tointeger(v))
  if iv and has(M.L2_PROMOTION, iv) then return iv end
  return nil, '"auto" or 0, 64, 128 or 256 (bytes)'
end

-- The GEMM's schema fields, by name; each family lists them in its own order (the order is the
-- kernel name's).  `pre` starts each doc line ("wgmma: " where a family also has scalar kernels).
function M.fields(pre)
  pre = pre or ""
  local mma_doc = pre .. "2 consumers: cooperative (both split each tile by rows) or pingpong (each owns whole tiles, "
    .. "taking turns, so one's epilogue overlaps the other's WGMMAs)"
  return {
    b_layout = { name = "b_layout", kind = "enum", values = { "row", "col" }, default = "row", tag = "b",
      doc = "row: B is K x N row-major; col: B is stored N x K (a linear layer's weight), C = A . B^T of that" },
    stages = { name = "stages", kind = "int", min = 2, max = 16, default = 4, tag = "s",
      doc = pre .. "depth of the shared-memory ring TMA fills ahead of the tensor cores" },
    consumers = { name = "consumers", kind = "int", values = { 1, 2, 3 }, default = 2, tag = "c",
      doc = pre .. "consumer warpgroups (each owns tile.m / consumers rows); one more warpgroup loads. 3: family "
        .. "gemm's 192-row tiles (tile.m = 192, n up to 192; cooperative, unswapped, unsplit). The rule does not "
        .. "pick them: set tile with it" },
    mma = { name = "mma", kind = "enum", values = { "cooperative", "pingpong" }, default = "cooperative", tag = "",
      doc = mma_doc },
    -- family gemm's: also kturns (weft/gemm_kernel.cuh KTURNS)
    mma_kturns = { name = "mma", kind = "enum", values = { "cooperative", "pingpong", "kturns", "cooperative_n" },
      default = "cooperative", tag = "", doc = mma_doc .. "; or kturns (both take turns along K on every tile, each "
        .. "a whole tile's accumulators, summed in shared memory before one stores it: for narrow tiles, whose WGMMAs "
        .. "alone leave the tensor cores idle between them; stages even, 4 or more; unsplit); or cooperative_n (both "
        .. "split each tile by columns, each all its rows by tile.n / 2: tile.m in {64, 128, 192, 256}; b_layout = "
        .. "\"row\" takes tile.n in {64, 128, 192, 256}, \"col\" any multiple of 16; unswapped, unsplit). The rule does not pick "
        .. "cooperative_n: set tile with it" },
    cluster = { name = "cluster", kind = "custom", check = M.cluster_check, default = { m = 1, n = 1 }, tag = "cl",
      doc = pre .. "CTAs per cluster along M and N ({ m = 2 }: two row blocks share each B tile, { n = 2 }: two "
        .. "column blocks share each A tile); the shared tile is loaded once and multicast by TMA. At most 2 CTAs; "
        .. "with swap_ab, up to 8 along either or both (m, n in 1, 2, 4, 8; m x n <= 8)" },
    split_k = { name = "split_k", kind = "int", min = 1, max = M.MAX_SPLIT_K, default = 1, tag = "sk",
      doc = pre .. "cooperative: S > 1 = a cluster of S CTAs per tile, each over 1/S of K; their f32 partial sums "
        .. "meet in the first through distributed shared memory, in a fixed tree (the same bits every run). For "
        .. "few tiles or a long K (decode: S times the CTAs streaming B)" },
    split_k_tail = { name = "split_k_tail", kind = "bool", default = false, tag = "skt",
      doc = pre .. "split_k > 1: the CTAs take whole tiles of their own over all of K for every full wave, and "
        .. "split K only over the last, partial wave (data-parallel, then split-K: the tail costs 1/split_k of a "
        .. "wave instead of a whole one); with fewer tiles than clusters it is plain split-K" },
    stream_k = { name = "stream_k", kind = "bool", default = false, tag = "stk",
      doc = pre .. "family gemm, cooperative, no cluster, split_k = 1: every co-resident CTA takes whole tiles for "
        .. "each full wave, then the k-blocks of the tiles left over are shared out evenly over at most about four "
        .. "CTAs per tile (a CTA's share may end inside a tile); a tile's parts meet in the CTA holding its first "
        .. "k-block through a workspace the runtime keeps per stream, added in a fixed order (the same bits every "
        .. "run). Measured slower than the rule's schedules at every shape timed (bench/RESULTS.md, fourteenth "
        .. "session; with swapped tiles of 40-104 rows at M = 72-256, seventeenth), so the rule does not pick it" },
    any_n = { name = "any_n", kind = "bool", default = false, tag = "an",
      doc = pre .. "family gemm, b_layout = \"col\", epilogue = \"direct\": N any count (a vocabulary's 50257, one "
        .. "output), C stored one element at a time where N is odd (its rows are off 4-byte lines); false: N a "
        .. "multiple of 8 and 32-bit stores only. The rule sets it where N is not a multiple of 8" },
    epilogue = { name = "epilogue", kind = "enum", values = { "direct", "tma" }, default = "direct", tag = "ep",
      doc = pre .. "direct (accumulators straight to global memory, bounds-checked) or tma (C staged in shared "
        .. "memory, swizzled, and stored by TMA, which clips at the edges)" },
    swap_ab = { name = "swap_ab", kind = "bool", default = false, tag = "sw",
      doc = pre .. "family gemm, b_layout = \"col\", decode: B's rows are the WGMMA's 64-row side (tile.n in {64, 128, "
        .. "192, 256}) and A's rows its N side (tile.m = 8, 16, ..., 256), so a tile is as tall as M needs (M = 1: "
        .. "8 rows, not 64) and the ring holds B, not A's padding; cooperative, direct epilogue; a cluster of up "
        .. "to 8 CTAs along M, N or both (unsplit: B's rows read once for cluster.m tiles, A's for cluster.n)" },
    l2_promotion = { name = "l2_promotion", kind = "custom", check = M.l2_promotion_check, default = "auto", tag = "l2p",
      doc = pre .. "family gemm: the L2 promotion of A's and B's tensor maps, in bytes (0, 64, 128 or 256: how much "
        .. "L2 fetches around each TMA box row); auto: 128 with swap_ab or a tile under 64 rows (a decode tile "
        .. "reads B once, and 256 brought neighbours nobody asked for: 2-5 % slower, bench/RESULTS.md), 256 otherwise" },
    group = { name = "group", kind = "int", values = { 1, 2, 4, 8, 16, 32 }, default = 16, tag = "g",
      doc = pre .. "row blocks per raster group (tiles walk down a group of rows before moving right: L2 reuse)" },
  }
end

-- The tile field of the WGMMA-only families (gemm, gemm_rs), "auto" resolved by check_auto_tile.
function M.tile_field()
  return { name = "tile", kind = "custom", check = M.tile_check, default = "auto", tag = "",
           doc = "output tile per CTA and K step (auto: 128x256x64): m in {64,128,256}, n in {64,128,192,256} (family "
             .. "gemm with b_layout = \"col\": any multiple of 16 up to 256; with swap_ab, m = 8, 16, ..., 256 and n in {64, 128, 192, "
             .. "256}), k = 64; family gemm also takes m = 8, 16, ..., 56 unswapped (a thin tile for decode: A's box is m "
             .. "rows, one consumer, no cluster) and m = 192 with consumers = 3" }
end
-- F.check of those families: the default tile for "auto", then the WGMMA rules.
function M.check_auto_tile(cfg, errs)
  if cfg.tile == "auto" then cfg.tile = M.tile_check(M.DEFAULT_TILE) end
  M.check(cfg, errs)
end
-- Their arguments: c (out), a, b (in; 16-byte aligned), then the sizes m, n, k.
function M.cab_args(dt)
  local function size(name) return { name = name, type = "i64", role = "size" } end
  return { { name = "c", type = "ptr", dtype = dt, role = "out", align = 16 },
           { name = "a", type = "ptr", dtype = dt, role = "in", align = 16 },
           { name = "b", type = "ptr", dtype = dt, role = "in", align = 16 }, size("m"), size("n"), size("k") }
end

-- Tile widths: row-major B arrives in 64-column boxes (n a multiple of 64); family gemm with
-- column-major B takes any multiple of 16 up to 256 (B's box is n rows tall, half each with a
-- cluster of two along M; C's last chunk is narrower than 64 columns, weft/gemm_epilogue.cuh), so
-- a tile width can fit the tile count to the GPU's waves (176: 82 column blocks of 14336).
function M.any_width(cfg) return cfg.family == "gemm" and cfg.b_layout == "col" end
-- Whether the rule sets any_n at a shape: N off 8's multiples, column-major B (any_n: C stored by
-- the direct epilogue, whose rows need no 16-byte strides; row-major B's rows and the TMA
-- epilogue's are N long)
function M.odd_n(shape, fixed, family) return shape.n % 8 ~= 0 and family == "gemm" and fixed.b_layout == "col" end
-- What takes an N off 8's multiples, for a config that does not (its limit's hint)
function M.any_n_hint(cfg)
  if cfg.family ~= "gemm" then return nil end
  if cfg.b_layout ~= "col" then return 'b_layout = "col" (B as N x K), epilogue = "direct" and any_n = true take any n' end
  if cfg.epilogue ~= "direct" then return 'epilogue = "direct" with any_n = true takes any n' end
  return "any_n = true takes any n"
end
function M.n_ok(cfg)
  local n = cfg.tile.n
  if M.any_width(cfg) then return math.type(n) == "integer" and n >= 16 and n <= 256 and n % 16 == 0 end
  return has(M.WGMMA_N, n)
end

-- swap_ab (family gemm): A's rows are the WGMMA's N side, B's its 64-row groups.
function M.swapped(cfg) return cfg.swap_ab == true end
-- A thin tile (family gemm, unswapped, tile.m < 64: decode at any width): its A box is tile.m
-- rows, so a stage holds B and the rows M has, not a 64-row group's zero padding; the m64 WGMMA
-- still reads 64 rows, the rest from the bytes after them (the stage's B), into accumulator rows
-- that are never stored.  Against swap_ab, its width is any multiple of 16 (a tile count fitted
-- to the SMs: 16 x 80 is 128 tiles of N = 10240) and C leaves by either epilogue.
function M.thin(cfg) return cfg.family == "gemm" and not M.swapped(cfg) and cfg.tile.m < 64 end
-- A thin tile holding one of several row blocks of M's `rows`, unsplit: the tile the model's
-- THIN_KB and PDL_THIN_US are about.
function M.thin_row_blocks(cfg, rows) return M.thin(cfg) and rows > M.SWAP_BELOW and cfg.split_k == 1 end
-- Rows of the tile the WGMMAs compute (a thin tile's 64; swapped: its n, A's rows).
local function mma_rows(cfg) return M.thin(cfg) and 64 or cfg.tile.m end
-- The WGMMA's n, the accumulators' columns: the tile's width (cooperative_n: half of it, each
-- consumer's), or swapped, its rows.
function M.wgmma_n(cfg)
  return M.swapped(cfg) and cfg.tile.m or M.coop_n(cfg) and cfg.tile.n // 2 or cfg.tile.n
end

-- The rules of a swapped tile: tile.m is the WGMMA's n, tile.n whole 64-row groups of B over the
-- consumers; B column-major (its rows K-major, as the WGMMA's A operand reads them); the
-- cooperative main loop, C stored straight from the accumulators (transposed).  A cluster of up
-- to 8 CTAs, cluster.m x cluster.n: those along M share B's tile, those along N A's.
local function check_swapped(cfg, errs)
  local t = cfg.tile
  if cfg.b_layout ~= "col" then
    errs.add("swap_ab", cfg.swap_ab, 'swap_ab reads B\'s rows as the WGMMA\'s A operand: set b_layout = "col"')
  end
  if t.m % 8 ~= 0 or t.m < 8 or t.m > 256 then
    errs.add("tile.m", t.m, "with swap_ab, tile.m is the WGMMA's n: 8, 16, 24, ..., 256")
  end
  local owners = M.owners(cfg)
  if not has(M.WGMMA_N, t.n) or (t.n // 64) % owners ~= 0 then
    errs.add("tile.n", t.n, string.format("with swap_ab, tile.n is B's rows in 64-row WGMMA groups, split over the "
      .. "%d consumer warpgroup(s): %s", owners, owners == 2 and "128 or 256" or "64, 128, 192 or 256"))
  end
  if cfg.mma == "pingpong" then errs.add("mma", cfg.mma, 'swap_ab has the cooperative main loop: mma = "cooperative"') end
  if cfg.cluster.m * cfg.cluster.n > 1 and cfg.split_k > 1 then
    errs.add("split_k", cfg.split_k, string.format("split-K's cluster is its CTAs along K; with cluster = "
      .. "{ m = %d, n = %d } leave split_k = 1 (no multicast with it)", cfg.cluster.m, cfg.cluster.n))
  end
  if cfg.epilogue ~= "direct" then
    errs.add("epilogue", cfg.epilogue, 'swap_ab stores C (transposed) from the accumulators: epilogue = "direct"')
  end
  local regs = (t.n // 64 // owners) * (t.m // 2)
  if t.m % 8 == 0 and has(M.WGMMA_N, t.n) and regs > M.acc_regs(cfg) then
    errs.add("tile", t.tag, string.format("with swap_ab, %d x %d over %d consumer warpgroup(s) is %d f32 accumulators "
      .. "per thread; at most %d fit (use %sa smaller tile.m or tile.n)", t.m, t.n, owners, regs, M.acc_regs(cfg),
      owners == 1 and (cfg.mma == "kturns" and 'mma = "cooperative" with consumers = 1 (128 fit), ' or "consumers = 2, ")
        or ""))
  end
end

-- The rules of a thin tile: whole 8-row groups of A (the swizzle's 1024-byte atoms), one 64-row
-- WGMMA group on one consumer warpgroup, no multicast (one row block: nothing to share along M,
-- and A's box is too short to split along N).
local function check_thin(cfg, errs)
  local t = cfg.tile
  if t.m % 8 ~= 0 or t.m < 8 then
    errs.add("tile.m", t.m, "a tile under 64 rows (family gemm, unswapped: the m64 WGMMA over tile.m rows of A) takes "
      .. "m = 8, 16, 24, ..., 56; or 64, 128, 256")
  end
  if not M.n_ok(cfg) then
    errs.add("tile.n", t.n, M.any_width(cfg) and "family gemm with b_layout = \"col\" takes n = 16, 32, ..., 256"
      or "with b_layout = \"row\", n in {64, 128, 192, 256} (B arrives in 64-column boxes)")
  end
  if cfg.mma == "pingpong" then
    errs.add("mma", cfg.mma, 'a tile under 64 rows is one WGMMA group: mma = "cooperative", consumers = 1 (or mma = '
      .. '"kturns", consumers = 2)')
  elseif cfg.mma == "cooperative" and cfg.consumers ~= 1 then
    errs.add("consumers", cfg.consumers, string.format("tile.m = %d is one 64-row WGMMA group: consumers = 1 (or mma = "
      .. '"kturns", two taking turns along K)', t.m))
  end
  -- (kturns: each warpgroup holds the WGMMA's 64 rows by n, and adds the other's; one consumer's
  -- 128 -- 64 x 256 -- fit without that)
  if cfg.mma == "kturns" and M.n_ok(cfg) and t.n // 2 > M.acc_regs(cfg) then
    errs.add("tile", t.tag, string.format('%d x %d is the WGMMA\'s 64 rows by %d: %d f32 accumulators per thread; mma = '
      .. '"kturns" holds at most %d (tile.n <= %d, or mma = "cooperative" with consumers = 1)', t.m, t.n, t.n, t.n // 2,
      M.acc_regs(cfg), 2 * M.acc_regs(cfg)))
  end
  if cfg.cluster.m * cfg.cluster.n > 1 then
    errs.add("cluster", M.cluster_value(cfg), "a tile under 64 rows takes no multicast cluster: cluster = "
      .. "{ m = 1, n = 1 }")
  end
end

-- The WGMMA rules over a config whose tile is resolved (family gemm; ag_gemm's wgmma variants).
function M.check(cfg, errs)
  local t = cfg.tile
  if cfg.l2_promotion == "auto" then cfg.l2_promotion = (M.swapped(cfg) or M.thin(cfg)) and 128 or 256 end
  if t.k ~= 64 then
    errs.add("tile.k", t.k, "wgmma tiles take k = 64: one 128-byte swizzled row of 16-bit elements per stage")
  end
  if cfg.split_k_tail and cfg.split_k == 1 then
    errs.add("split_k_tail", cfg.split_k_tail, "the split tail needs a split: set split_k to 2..8")
  end
  if cfg.stream_k then
    if cfg.split_k > 1 then
      errs.add("stream_k", cfg.stream_k, string.format("stream-K shares out K itself: leave split_k = 1 (it is %d)",
        cfg.split_k))
    end
    if cfg.mma ~= "cooperative" then
      errs.add("stream_k", cfg.stream_k, 'stream-K adds partial sums of cooperative tiles: mma = "cooperative"')
    end
    if cfg.cluster.m * cfg.cluster.n > 1 then
      errs.add("stream_k", cfg.stream_k, "stream-K's CTAs take k-blocks of their own, not a shared tile: cluster = "
        .. "{ m = 1, n = 1 }")
    end
  end
  if cfg.any_n and not (cfg.b_layout == "col" and cfg.epilogue == "direct") then
    errs.add("any_n", cfg.any_n, 'any N is stored by the direct epilogue from column-major B: b_layout = "col" and '
      .. 'epilogue = "direct" (it is ' .. string.format('b_layout = "%s", epilogue = "%s")', cfg.b_layout, cfg.epilogue))
  end
  if cfg.mma == "kturns" then
    if cfg.consumers ~= 2 then
      errs.add("consumers", cfg.consumers, 'mma = "kturns" is two consumer warpgroups taking turns along K: consumers = 2')
    end
    if cfg.stages % 2 ~= 0 or cfg.stages < 4 then
      errs.add("stages", cfg.stages, 'mma = "kturns" gives each consumer warpgroup every other stage, one of them in flight '
        .. "while it waits for its next: an even count, 4 or more")
    end
    if cfg.split_k > 1 then
      errs.add("split_k", cfg.split_k, 'mma = "kturns" sums its two halves of K inside the CTA: split_k = 1')
    end
    if cfg.consumers ~= 2 then return end
  end
  if M.coop_n(cfg) then
    local field, why
    if cfg.consumers ~= 2 then
      field, why = "consumers", 'mma = "cooperative_n" splits each tile\'s columns over two consumer warpgroups: consumers = 2'
    elseif M.swapped(cfg) then
      field, why = "swap_ab", 'mma = "cooperative_n" splits an unswapped tile\'s columns: swap_ab = false (or mma = '
        .. '"cooperative")'
    elseif not rows_ok(cfg) then
      field, why = "tile.m", string.format('mma = "cooperative_n" gives each consumer all of a tile\'s rows in 64-row '
        .. "WGMMA groups: tile.m in {64, 128, 192, 256} (it is %d)", t.m)
    elseif cfg.split_k > 1 then
      field, why = "split_k", 'mma = "cooperative_n" runs unsplit tiles: split_k = 1'
    end
    if why then
      errs.add(field, field == "tile.m" and t.m or cfg[field], why)
      return
    end
  end
  if cfg.consumers == 3 then
    local why = cfg.family ~= "gemm" and "three consumer warpgroups are family gemm's (192-row tiles); this family "
        .. "takes 1 or 2"
      or M.swapped(cfg) and "swap_ab splits B's rows over 1 or 2 consumer warpgroups"
      or cfg.mma ~= "cooperative" and 'three consumers split each tile by rows: mma = "cooperative"'
      or t.m ~= 192 and string.format("three consumers take tile.m = 192, one 64-row WGMMA group each (it is %d)", t.m)
      or cfg.split_k > 1 and "three consumers run unsplit tiles: split_k = 1"
      or cfg.stream_k and "three consumers run unsplit tiles: stream_k = false"
    if why then
      errs.add("consumers", cfg.consumers, why)
      return
    end
  end
  if M.swapped(cfg) then return check_swapped(cfg, errs) end
  if M.thin(cfg) then return check_thin(cfg, errs) end
  if not rows_ok(cfg) then
    errs.add("tile.m", t.m, "wgmma tiles take m in {64, 128, 256} (whole 64-row WGMMA groups)"
      .. (cfg.family == "gemm" and '; family gemm also takes m = 192 with consumers = 3, m = 8, 16, ..., 56 (a thin '
        .. 'tile), and with b_layout = "col", swap_ab = true takes m = 8, 16, ..., 256' or ""))
  end
  if not M.n_ok(cfg) then
    errs.add("tile.n", t.n, M.any_width(cfg)
      and "family gemm with b_layout = \"col\" takes n = 16, 32, ..., 256 (a multiple of 16: m64nNk16 with half "
        .. "of B's box per CTA of a cluster in whole 8-row groups)"
      or "wgmma tiles take n in {64, 128, 192, 256} (the m64nNk16 shape; B arrives in 64-column boxes)"
        .. (cfg.family == "gemm" and '; with b_layout = "col", any multiple of 16 up to 256' or ""))
  end
  if cfg.cluster.m * cfg.cluster.n > 2 then
    errs.add("cluster", M.cluster_value(cfg), "at most 2 CTAs per multicast cluster, along M or along N "
      .. "(clusters of 4 or 8, or along both, are swap_ab's: family gemm, b_layout = \"col\")")
  end
  if cfg.split_k > 1 and cfg.mma == "pingpong" then
    errs.add("split_k", cfg.split_k, 'split-K adds partial sums of cooperative tiles; use mma = "cooperative"')
  elseif cfg.split_k > 1 and cfg.cluster.m * cfg.cluster.n > 1 then
    errs.add("split_k", cfg.split_k, "split-K's cluster is its CTAs along K; leave cluster = { m = 1, n = 1 } "
      .. "(no multicast with it)")
  end
  if M.owners(cfg) > 1 and rows_ok(cfg) and t.m // 64 < cfg.consumers then
    errs.add("consumers", cfg.consumers, string.format("tile.m = %d has %d 64-row group(s); use consumers <= %d",
      t.m, t.m // 64, t.m // 64))
  elseif cfg.mma == "pingpong" and cfg.consumers ~= 2 then
    errs.add("mma", cfg.mma, "pingpong alternates two consumer warpgroups: set consumers = 2")
  elseif rows_ok(cfg) and M.n_ok(cfg) then
    local share = M.storers(cfg)   -- warpgroups sharing a tile's accumulators
    local regs, cap = t.m * t.n // (128 * share), M.acc_regs(cfg)
    if regs > cap then
      errs.add("tile", t.tag, string.format("%d x %d over %d consumer warpgroup(s) is %d f32 accumulators per thread; "
        .. "at most %d fit (%s)", t.m, t.n, share, regs, cap,
        (cfg.mma == "pingpong" or cfg.mma == "kturns") and string.format('%s gives each warpgroup a whole tile: '
          .. 'm x n <= %d, or mma = "cooperative"%s', cfg.mma, cap * 128,
          cfg.mma == "kturns" and t.m < 128 and " with consumers = 1" or "")
        or (cfg.consumers == 1 and "use consumers = 2 or a smaller tile"
          or string.format("use a smaller tile: m x n <= %d%s", cap * 128 * share,
            cfg.stream_k and cfg.family == "gemm"
              and string.format(", or stream_k = false (which holds %d)", M.ACC_REGS_SHIFTED) or ""))))
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

-- Rows of C in one box of a consumer warpgroup's TMA epilogue: its rows of the tile, or
-- cooperative_n's 64 (each 64-row group of its columns leaves in boxes of its own, so that its
-- chunk buffers stay small beside a deep ring: 192 x 192 keeps four stages).
function M.epi_rows(cfg)
  return M.coop_n(cfg) and 64 or cfg.tile.m // M.owners(cfg)
end

-- The chunks one consumer warpgroup's C leaves in by the TMA epilogue: 64 columns each (its
-- accumulators' width), and with cooperative_n one set per 64-row group.
function M.epi_chunks(cfg)
  local groups = M.coop_n(cfg) and cfg.tile.m // 64 or 1
  return groups * ((M.wgmma_n(cfg) * common.ESIZE[cfg.dtype] + 127) // 128)
end

local function align(x, a) return (x + a - 1) // a * a end

-- The shared-memory layout, the one place it is computed: byte offsets from the CTA's
-- 1024-byte aligned base (the swizzled stages need it).  The device code carves with these
-- (rendered into the config struct), the manifest carries them (smem_layout), tests/lua checks
-- them.
--   stage s     A at s * stage, B at s * stage + b (BM, BN rows x 128 bytes: 64 16-bit k each); a
--               thin tile's stage at least 64 rows (its WGMMA reads 64 rows from A's start);
--               load: the bytes TMA writes into a stage (full[s]'s expect_tx), A's box and B's
--   full, empty STAGES mbarriers each, after the stages
--   red_bar     split-K: red_full, red_empty; then red, the f32 partial tile (16-byte aligned; a
--               swapped tile's flat sum keeps its slots in it, weft/gemm_splitk.cuh); mma = "kturns":
--               red alone, one warpgroup's sums handed to the other (weft/gemm_mainloop.cuh)
--   epi         epilogue = "tma": C's stages, one per consumer warpgroup (1024-byte aligned:
--               their 128-byte swizzle), each epi_bufs 64-column chunk buffers of rows x 128 bytes,
--               or with a buffer per chunk a narrow last one of rows x its width, dense (epi_rows:
--               cooperative_n's 64, a chunk per 64-row group and 64 columns)
--   rs          gemm_rs's TMA bulk stores (reduce = "atomic", or comm = "tma") on several ranks only: each
--               consumer warp's slice of a finished tile, 8 rows x 64 f32 (rows RS_LD floats apart),
--               staged for the bulk copy or reduce-add (the ring stays the producer's: the kernel is
--               persistent); rs_warp bytes per warp
--   bytes       the end of what is used; smem = bytes + 1024 (slack to align the base)
M.RS_ROWS, M.RS_COLS = 8, 64   -- a warp's slice: its 8 rows of one m64 half, one 64-column chunk
M.RS_LD = 72                   -- 64 + 8 floats: a half-warp's 8-byte stores (rows 0..3) hit 32 banks once
-- Whether the config stages tiles for gemm_rs's TMA bulk stores (one rank: the plain epilogue).
function M.bulk_slices(cfg)
  return cfg.family == "gemm_rs" and (cfg.reduce == "atomic" or cfg.comm == "tma") and cfg.ranks ~= 1
end
function M.layout(cfg)
  local t, esize = cfg.tile, common.ESIZE[cfg.dtype]
  local L = { b = t.m * 128, stage = math.max(t.m + t.n, mma_rows(cfg)) * 128, load = (t.m + t.n) * 128 }
  L.full = cfg.stages * L.stage
  L.empty = L.full + 8 * cfg.stages
  L.red_bar = L.empty + 8 * cfg.stages
  L.red = L.red_bar + 16
  local used = (cfg.split_k > 1 or cfg.mma == "kturns") and L.red + mma_rows(cfg) * t.n * 4 or L.red_bar
  L.epi = align(used, 1024)
  -- Each warpgroup's C leaves in 64-column chunks of rows x 128 bytes: a buffer per chunk where
  -- they fit beside the ring (the whole tile written, then stored; a last, narrow chunk of BN % 64
  -- columns in dense rows takes rows x 2W bytes, a multiple of 1024 as the next warpgroup's stage
  -- needs), else two whole-chunk buffers in turn (128 x 256 with four stages; weft/gemm_epilogue.cuh),
  -- and for three consumers, where two do not fit either, one
  -- (cooperative_n: each consumer's tile.n / 2 columns, in chunks of 64 rows each, so each of its
  -- 64-row groups has its own chunks, a narrow one among them; with a buffer per chunk each group's
  -- chunks in turn, its narrow one dense as above; through two or one, each buffer a whole chunk's
  -- size)
  local chunks, rows = M.epi_chunks(cfg), M.epi_rows(cfg)
  local groups = M.coop_n(cfg) and cfg.tile.m // 64 or 1
  local narrow = (M.wgmma_n(cfg) % 64) * esize
  L.epi_bufs, L.epi_stage = 0, 0
  if cfg.epilogue == "tma" then
    L.epi_bufs = chunks
    L.epi_stage = groups * rows * (128 * (chunks // groups - 1) + (narrow > 0 and narrow or 128))
    if L.epi + cfg.consumers * L.epi_stage + 1024 > common.SMEM_LIMIT and chunks > 2 then
      L.epi_bufs, L.epi_stage = 2, rows * 128 * 2
    end
    -- three consumers (192-row tiles): one buffer each where two do not fit, so that 192 x 192
    -- keeps four stages; pingpong tiles wider than 128 x 128 (five stages at 128 x 176); and
    -- cooperative_n.  No layout of any other tile moves.
    if (cfg.consumers == 3 or M.wide_pingpong(cfg) or M.coop_n(cfg)) and L.epi + cfg.consumers * L.epi_stage + 1024 > common.SMEM_LIMIT
        and chunks > 1 then
      L.epi_bufs, L.epi_stage = 1, rows * 128
    end
  end
  L.bytes = cfg.epilogue == "tma" and L.epi + cfg.consumers * L.epi_stage or used
  if M.bulk_slices(cfg) then   -- (16-byte aligned rows: the bulk source)
    L.rs = align(L.bytes, 128)
    L.rs_warp = M.RS_ROWS * M.RS_LD * 4
    L.bytes = L.rs + 4 * cfg.consumers * L.rs_warp
  end
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
    "  static constexpr bool KTURNS = " .. b(cfg.mma == "kturns") .. ";",
    "  static constexpr bool COOP_N = " .. b(M.coop_n(cfg)) .. ";   // the consumers split each tile by columns",
    string.format("  static constexpr int CM = %d, CN = %d, SPLITK = %d;", cl.m, cl.n, cfg.split_k),
    "  static constexpr bool SPLIT_TAIL = " .. b(cfg.split_k_tail == true) .. ";",
    "  static constexpr bool STREAM_K = " .. b(cfg.stream_k == true) .. ";",
    "  static constexpr bool FLAT_L2 = " .. b(M.flat_l2(cfg)) .. ";   // the flat sum through the workspace",
    string.format("  static constexpr long STREAMK_SLOT = %d;   // bytes per CTA in the workspace", M.streamk_slot(cfg)),
    string.format("  static constexpr int STREAMK_FLAGS = %d, STREAMK_HEADER = %d;", M.STREAMK_MAX_CTAS,
      M.STREAMK_HEADER),
    string.format("  static constexpr bool EPI_TMA = %s, B_ROW = %s;", b(cfg.epilogue == "tma"), b(cfg.b_layout == "row")),
    -- row-major B in 32-column boxes, 64-byte swizzle (cooperative_n's halves that are not whole 64-column boxes)
    "  static constexpr bool B_SW64 = " .. b(M.b_sw64(cfg)) .. ";",
    -- N any count, odd included (gen/families/gemm.lua's limits): the direct epilogue's stores
    "  static constexpr bool ANY_N = " .. b(cfg.any_n == true) .. ";",
    string.format("  static constexpr int GROUP = %d;", cfg.group),
    "  static constexpr bool PDL = " .. b(cfg.pdl == true) .. ";",
    string.format("  static constexpr unsigned SMEM_B = %d, SMEM_STAGE = %d, SMEM_FULL = %d, SMEM_EMPTY = %d;", L.b, L.stage,
      L.full, L.empty),
    string.format("  static constexpr unsigned SMEM_RED_BAR = %d, SMEM_RED = %d, SMEM_EPI = %d, SMEM_EPI_STAGE = %d;",
      L.red_bar, L.red, L.epi, L.epi_stage),
    string.format("  static constexpr int EPI_BUFS = %d;", L.epi_bufs),
    string.format("  static constexpr unsigned SMEM_LOAD = %d;", L.load),
    -- swap_ab: the WGMMA's A operand is B's rows, its n A's; ACC_N: the accumulators' columns
    string.format("  static constexpr bool SWAP = %s;", b(M.swapped(cfg))),
    string.format("  static constexpr int ACC_N = %d;", M.wgmma_n(cfg)),
    "  static constexpr bool A_BY_K = " .. b(M.a_by_k(cfg)) .. ";",
  }
  for _, x in ipairs(extra or {}) do lines[#lines + 1] = "  " .. x end
  lines[#lines + 1] = "};"
  return table.concat(lines, "\n")
end

-- The persistent grid: one cluster per work unit (cluster.m x cluster.n tiles; with split_k, its
-- CTAs along K share one), at most as many as are co-resident, each looping over units.  So a
-- small M still fills the GPU when N has the tiles (M = 16, N = 14336: 112 units of 64 x 128).
-- sharded: M is cut into one shard per rank, each tiled on its own (the fused all-gather + GEMM).
function M.grid(cfg, sharded)
  local t, cl = cfg.tile, cfg.cluster
  if cfg.stream_k then   -- every co-resident CTA (one with no k-blocks, tiny shapes only, does nothing)
    return { { arg = "m", per = 1, by = { arg = "n", per = 1 }, times = 1, cap = "coresident", max = M.STREAMK_MAX_CTAS },
             { per = 1, times = 1 }, { per = 1, times = 1 } }
  end
  return { { arg = "m", per = t.m * cl.m, by = { arg = "n", per = t.n * cl.n }, times = cl.m * cl.n * cfg.split_k,
             cap = "coresident", shards = sharded and "ranks" or nil,
             max = M.flat_l2(cfg) and M.STREAMK_MAX_CTAS // cfg.split_k or nil },   -- (a workspace's blocks)
           { per = 1, times = 1 }, { per = 1, times = 1 } }
end

-- Stream-K's workspace (weft/gemm_streamk.cuh): per CTA, its f32 accumulators (consumers x 128
-- threads, each MR 64-row groups x the WGMMA's n / 2), after STREAMK_MAX_CTAS u32 flags.
M.STREAMK_MAX_CTAS = 4096
M.STREAMK_HEADER = 256   -- the runtime's (WEFT_WORKSPACE_HEADER): the error page's address
function M.streamk_slot(cfg)
  local groups = M.swapped(cfg) and cfg.tile.n // 64 or mma_rows(cfg) // 64
  return groups * 64 * M.wgmma_n(cfg) * 4
end

-- Whether a split config's partials meet in the flat sum (weft/gemm_splitk.cuh SplitK::FLAT: a
-- swapped tile whose S - 1 slices fit in the partial tile's buffer) rather than the tree.
function M.flat_sum(cfg)
  local S, J = cfg.split_k, cfg.tile.m // 8
  return M.swapped(cfg) and S > 1 and (S - 1) * ((J + S - 1) // S) <= J
end
-- Where the flat sum's slices travel: false, into the peers' shared memory (distributed shared
-- memory); true, through L2 (a workspace the runtime keeps per stream, stream-K's layout: each
-- CTA's slots where stream-K keeps its partial).  Through L2 was no faster than the tree, through
-- shared memory faster from S = 3 (bench/flat_probe.sh; bench/RESULTS.md): off.
M.FLAT_VIA_L2 = false
function M.flat_l2(cfg) return M.FLAT_VIA_L2 and M.flat_sum(cfg) end

-- Threads per CTA: the producer's warpgroup and the consumers'.
function M.threads(cfg) return 128 * (1 + cfg.consumers) end

-- A swapped tile shared along N whose rows do not split into whole 8-row groups (72 over 4): each
-- CTA multicasts A's whole box on its turn of k-blocks (weft/gemm_kernel.cuh), not a slice of it.
function M.a_by_k(cfg) return M.swapped(cfg) and cfg.cluster.n > 1 and cfg.tile.m % (8 * cfg.cluster.n) ~= 0 end

-- Tensor maps over A (`rows` of it: "m", or "m/ranks" for a shard) and B: with a cluster each
-- CTA loads its part of the shared tile: A's rows split over cluster.n, column-major B's over
-- cluster.m (row-major B comes in 64-column boxes, shared out whole); A's whole box with a_by_k.
-- A family with the l2_promotion field sets it on both (without it the runtime's default, 256).
function M.tmaps_ab(cfg, rows)
  local t, cl, dt = cfg.tile, cfg.cluster, cfg.dtype
  local maps = {
    { name = "ta", source = "a", dtype = dt, dims = { "k", rows }, box = { 64, M.a_by_k(cfg) and t.m or t.m // cl.n },
      swizzle = 128 },
    cfg.b_layout == "row" and { name = "tb", source = "b", dtype = dt, dims = { "n", "k" }, box = { M.b_sw64(cfg) and 32 or 64, 64 },
                                swizzle = M.b_sw64(cfg) and 64 or 128 }
      or { name = "tb", source = "b", dtype = dt, dims = { "k", "n" }, box = { 64, t.n // cl.m }, swizzle = 128 },
  }
  for _, tm in ipairs(maps) do tm.l2_promotion = cfg.l2_promotion end
  return maps
end

function M.smem_hint(cfg)
  local t = cfg.tile
  return "use fewer stages or a smaller tile" .. (cfg.split_k > 1
    and string.format(" (split_k = %d also holds the f32 partial tile, %d x %d x 4 bytes)", cfg.split_k, mma_rows(cfg), t.n)
    or cfg.mma == "kturns"
    and string.format(' (mma = "kturns" also holds one warpgroup\'s f32 sums, %d x %d x 4 bytes)', mma_rows(cfg), t.n)
    or "")
    .. (cfg.epilogue == "tma"
      and " (epilogue = \"tma\" also stages C: a buffer per 64-column chunk, a narrow last one dense (cooperative_n: per 64-row group and 64 columns), or two whole-chunk ones (three consumers, pingpong tiles wider than 128 x 128 and cooperative_n: one), per consumer warpgroup)" or "")
    .. (M.bulk_slices(cfg) and string.format(" (the TMA bulk stores of gemm_rs (reduce = \"atomic\", comm = \"tma\") also "
      .. "stage %d bytes of f32 rows per consumer warp)", M.RS_ROWS * M.RS_LD * 4) or "")
end

-- ---- the shape rule (F.auto of families gemm and ag_gemm) -------------------------------------
--
-- The kernel is persistent: its grid is min(units, co-resident) clusters of CM x CN x SPLITK CTAs
-- (one CTA per SM: 232 registers per consumer thread, most of the shared memory), and cluster c
-- takes cluster units c, c + clusters, ... of the tiles (weft/gemm_sched.cuh).  So a config's
-- time is its rounds (units over clusters, a partial last round costing a whole one: the wave
-- count) times what one unit costs a CTA.  The estimate, in microseconds:
--   k-block  sqrt(max(compute, smem)^2 + load^2): the tensor cores at US_PER_MFLOP, or the
--            shared memory the WGMMAs read and the TMA writes at SMEM_US_PER_KB, whichever binds;
--            the stage's A and B tiles at US_PER_KB (the L2 -> shared-memory rate with every SM
--            loading), added in quadrature (they overlap partly).
--            Each WGMMA reads its 64 rows of A and its n rows of B from shared memory (one
--            k-block: 128 bytes a row), so a tile of g 64-row groups reads g * (64 + n) rows and
--            the TMA writes m + n: per flop, narrow WGMMAs and tall tiles read more (64 x 160 on
--            one warpgroup ran 1.22-1.33x faster than 128 x 80 on two, the seventh session;
--            128 x 224 8-9 % faster than 256 x 128, the eighth).  At the fitted SMEM_US_PER_KB this
--            binds before the tensor cores for every tile (compute is at most 0.75 of it, at
--            128 x 256; cuBLASLt and weft reached 71-88 % of the H200's peak flop per clock), so
--            US_PER_MFLOP ranks nothing now; it stays for a faster shared memory.
--            The constants are fitted to rank candidates (bench/gemm_rule_regret.lua: the first
--            pick against the best measured), not to predict times: the k-blocks come out at
--            0.96 us for 128 x 256 c2, 0.62 for 128 x 128, 0.41 for 64 x 128 c1, where 4096^3 ran
--            0.815 / 0.48 / 0.294 and 256 x 4096 x 14336 ran 64 x 128 at 0.22.
--            Rows of an operand that do not start on 128-byte lines (K = 5000) make L2 the bound:
--            a multicast cluster's shared operand counts once.
--   epilogue per tile, its consumer warpgroups storing tile.m x tile.n: ~1 us for 128 x 256 by
--            TMA over two warpgroups (the 8192x1024x1024 fit); the direct stores cost more (the TMA
--            epilogue was 3-14 % faster per shape, third session); pingpong hides all but the last
--            under the other warpgroup's WGMMAs, and where each CTA holds one tile its one busy
--            warpgroup runs the main loop alone (PINGPONG_ALONE).
--   split_k  each CTA 1/S of K, plus log2(S) hand-overs of the f32 partial tile through
--            distributed shared memory (only the rows M has), not overlapped: ~4.7 us for 128 x
--            128 (1024^3 at S = 2: 10.5 us measured).
--   floor    A, B and C once at the copy rate (decode reads B once: the weight stream).
--   DRAM     the device's DRAM rate (dev.mem_gbs: memory clock x bus width, runtime/core/auto.c)
--            over the H200's, on which the constants were fitted, scales the price of split-K's
--            hand-overs, the tree's and the flat sum's (M.dram_scale; not the copy floor).
-- The grid counts units, so a small M with a wide N still fills the GPU; where the tiles are
-- few (N = 4096 at M <= 128: 32 units of 64 x 128) split_k multiplies the CTAs that stream B.
-- The model ranks candidates; bench/gemm_llm.py is the sweep that checks it.
M.MODEL = {
  US_PER_MFLOP = 0.1376,     -- 7.3 TFLOP/s per SM (the H200's dense bf16 peak is ~7.5 per SM; below
                             -- the shared-memory bound for every tile, see above)
  US_PER_KB = 0.0120,        -- ~85 GB/s into each SM's shared memory with all 132 loading
  SMEM_US_PER_KB = 0.006,    -- shared memory read by WGMMAs and written by TMA (~170 GB/s: ~100 bytes
                             -- a clock; fitted, eighth session: bench/gemm_rule_regret.lua)
  EPI_ELEMS_PER_US = 16384,  -- per consumer warpgroup, TMA epilogue
  DIRECT = 1.4,              -- direct epilogue, relative
  RED_ELEMS_PER_US = 1200,   -- split-K's hand-over and its cost beyond (fitted, sixth session)
  RED_FLAT_US = 3,           -- the flat sum's one hand-over, us (swapped splits of S >= 3, one consumer,
                             -- one round: M.estimate); false: priced as the tree.  Fitted on the
                             -- twenty-first session's rows (both rules' candidates,
                             -- bench/data/gemm_llm_s21.tsv): regret 1.0139 -> 1.0110, 2-4 alike
  SHALLOW = 1.3,             -- stages = 2: a k-block's load is not hidden behind the previous one
  COPY_GBS = 4200,           -- the H200's device copy rate (bench/RESULTS.md copy baselines)
  -- The H200's DRAM rate (4.8 TB/s), the machine the constants were fitted on.  A device's rate
  -- over it, d (M.dram_scale), prices split-K's hand-overs: where DRAM is slower, the split's
  -- extra CTAs have less to gain before DRAM binds.  The tree's RED_ELEMS_PER_US is multiplied by
  -- d ^ DRAM_RED_POWER, the flat sum's RED_FLAT_US divided by d ^ DRAM_FLAT_POWER; at d = 1
  -- nothing moves, so the H200's picks stay.  On an H100 (3.35 TB/s, d = 0.70): the tree's 1200 ->
  -- 700 elems/us, the flat sum's 3 -> 4.3 us.  History (bench/RESULTS.md, twenty-sixth and
  -- twenty-seventh sessions):
  --   - the tree scaled by d alone (838): the H100's 351 groups 1.0231 -> 1.0200 first pick; held
  --     out, the 13 shapes where it moved the pick 1.0527 -> 1.0336, but it lost at M = 48,
  --     where the dearer tree handed the pick to flat splits of 4-6 that ran 1.08-1.20x the best;
  --   - the powers 1.5 and 1 were fitted on the H100's 17 files (748 groups, first pick 1.0174
  --     -> 1.0148); held out on 20 fresh shapes of M = 32-160 where they move the pick, 1.0978
  --     -> 1.0270, 19 of 20 groups faster (the loss: 96 x 2048 x 8192, 1.107);
  --   - the same 800 for every device was refuted by the H200's rows.
  -- A proxy: the two machines share SMs, clocks and L2, and differ in DRAM.  The copy floor keeps
  -- the H200's rate: scaled, it moved no measured pick, but it lifted estimates past PDL_US and
  -- turned pdl off at 48-64 x 8192 x 3584 and x 9216 x 3072, where the H100's pdl pairs ran on
  -- 0.95x off in geomean (115 pairs, 0.89-0.98 even at 40-80 us; twenty-fifth session).
  DRAM_GBS = 4800,
  DRAM_RED_POWER = 1.5,
  DRAM_FLAT_POWER = 1,
  LAUNCH_US = 1.5,
  PDL_US = 20,               -- pdl below this estimate (below PDL_SPLIT_US with split-K)
  PDL_SPLIT_US = 60,
  -- pdl for unsplit tiles in 2 x 1 clusters below this estimate: a cluster's launch
  -- costs more, as split-K's does.  The rows' pdl pairs of unsplit cooperative 2 x 1 cluster
  -- tiles (`bench/gemm_pairs.py pdl false true --where cluster.m=2 --where cluster.n=1 --where
  -- split_k=1 --where mma=cooperative`): on the H100, pdl on 0.988 over 121 pairs (0.976 over the
  -- 50 at M = 513-2048); on the H200 faster at the shapes this term moves (256 x 14336 x 4096,
  -- 1024 x 4096 x 4096, 1500 x 8960 x 1536: 0.95-0.97) and slower only at shapes it leaves off
  -- (256 x 28672 x 8192, 1024 x 8192 x 8192).  Held out, 20 fresh shapes (M = 256-2048, estimates
  -- 25-96 us) where it turns pdl on, an H100: first pick / best 1.0393 -> 1.0083, 18 of 20 groups
  -- faster.  But one machine's pairs do not always carry: of four H100
  -- runs of the set, the rule's regret fell in three and rose in the fourth (1.0094 -> 1.0100;
  -- 1024 x 4096 x 4096 ran 3-6 % faster with pdl in three, 4 % slower in the fourth); pooled over
  -- every H100 row, 1.0143 -> 1.0131 (bench/RESULTS.md, twenty-seventh session).  Unlike the
  -- fifteenth session's pdl for every whole round up to 90 us (refuted at 64-row tiles without a
  -- cluster).
  PDL_CLUSTER_US = 100,
  PDL_FILL = 0.7,            -- and only where the grid holds at least this share of the SMs
  -- split-K where an unsplit schedule already fills the GPU in one round (M >= 64): its estimate
  -- times SPLIT_FULL.  The model counts a split tile's k-blocks as a wide tile's, but at M = 64-256
  -- the k-block time is the ring's latency (Little's law: ~1.5 us over the stages in flight), and
  -- the split's wide tiles have the shallow rings: 256 x 4096 x 14336 ran 128 x 128 c2 split 2 (4
  -- stages) at 57-60 us, 64 x 128 (8 stages, 128 tiles) at 50-55 (bench/RESULTS.md, tenth
  -- session: first-pick regret 1.0177 -> 1.0147 on the ninth session's rows, 1.0183 -> 1.0150 on
  -- the eighth's, 1.0129 -> 1.0114 on the sixth's, 1.0241 -> 1.0206 and 1.0371 -> 1.0149 on the
  -- tenth's two calls; any factor from 1.3 up ranks the same).
  SPLIT_FULL = 1.3,
  SPLIT_FULL_FRAC = 0.9,     -- "fills": one round of at least this share of the SMs
  -- SPLIT_FULL also applies, at M >= 64, to every split ring shallower than SPLIT_FULL_DEEP
  -- stages, and not to a split tile that holds all of M's rows with a deeper one: 128 x 4096 x
  -- 14336 ran 128 x 64 split 2 (two consumers, 7 stages; swapped, 8) at 36.8-37.5 us, 64 x 64
  -- unsplit at 42.4-43.1 and 64 x 128 split 2 at 42.6-43.6; off the set, 72 x 4096 x 4096 ran 72
  -- x 64 swapped split 2 (12 stages) at 14.9 us and 64 x 64 unsplit (two row blocks for 72 rows)
  -- at 23.5, while 4- and 5-stage splits ran 1.2-1.5x the best at M = 130-224 (bench/RESULTS.md,
  -- eleventh session: first-pick regret over 62 off-set groups 1.1383 -> 1.0735, the set's rows
  -- 1.0206 -> 1.0192, 1.0149 -> 1.0083 and 1.0177 -> 1.0165)
  SPLIT_FULL_DEEP = 6,
  -- One round of unswapped tiles at M >= 64 whose last row block is partly past M: the estimate
  -- times 1 + WASTE x (the share of the tiles' rows past M).  The model counts a CTA's k-blocks,
  -- not the L2 traffic of the extra row block's CTAs, each streaming the same B tiles for a few
  -- rows; swapped tiles hold M's rows as the WGMMA's n (multiples of 8).  130 x 5120 x 13824 ran
  -- 64 x 160 (three row blocks, 2 rows in the last) at 63.7-65.0 us, swapped 136 x 64 at
  -- 46.3-49.3; at M = 64, 128 and 256 nothing moves (bench/RESULTS.md, thirteenth session:
  -- first-measured regret over the off-set rows 1.0735 -> 1.0384 and 1.0921 -> 1.0591, the set's
  -- 1.0192 -> 1.0167, 1.0165 -> 1.0141, 1.0159 -> 1.0154; 0.5 and 1.0 were worse)
  WASTE = 0.75,
  -- Two-consumer 128-row tiles (cooperative) at least MULTICAST_N wide in a cluster of two along
  -- M, B multicast to both: the estimate times 1 - MULTICAST where M >= MULTICAST_M, K <=
  -- MULTICAST_K and the tiles take at most MULTICAST_ROUNDS rounds.  The aligned load term counts
  -- no multicast, but over the set's rows of eight machines the cluster ran 0.94-0.98x the same
  -- tile without it at 3072^3, 1024 x 4096..8192 x 4096..8192 and 256 x 14336..29568 (128 x
  -- 176..256, 1-5 rounds), about 1.0 at K = 28672, 1.02-1.05x from 6 rounds up (4096 x
  -- 6144..29568, 16384 x 4096) and 1.01-1.03x with narrower tiles (128 x 96..160 at M = 256).
  -- Regret over the set's rows (first measured in the rule's order) 1.0167 -> 1.0122 (tenth
  -- session) .. 1.0152 -> 1.0116 (thirteenth, call 4), the rows off the set unchanged
  -- (bench/RESULTS.md, thirteenth session).  Pingpong and M < 256 stay out: there the cluster
  -- was never the rule's neighbour, so never measured; the fused families (gemm_rs, gemm_ar,
  -- ag_gemm) were not measured with it either.
  MULTICAST = 0.02,
  MULTICAST_M = 256,
  MULTICAST_N = 176,
  MULTICAST_K = 8192,
  MULTICAST_ROUNDS = 5,
  -- An unsplit thin tile's k-block where M is cut into row blocks (M > 64, thin_tiles): the
  -- estimate above priced 40 x 48 at 72 x 3072 x 8192 at 29.1 us and it ran 21.3, where the rule
  -- took the swapped split (24.2 priced, 23.5 run).  At 0.8: first-pick regret over 19 fresh
  -- groups at M = 68-108 (shapes where it moves the pick) 1.0407 -> 1.0236, over every H100 row
  -- 1.0360 -> 1.0307; the set's picks do not move.  Split thin tiles keep the price: with them
  -- the factor moved picks at N = 1536 to thin split 2, which ran 1.09-1.17x the best (an H100,
  -- bench/RESULTS.md, twenty-fifth session).
  THIN_KB = 0.8,
  -- pdl for unsplit thin tiles in row blocks (M > 64) only below this estimate: over 30 such pdl
  -- pairs at estimates of 13-21 us pdl on ran 0.95-1.10x off, most of them slower; below 13
  -- 0.92-0.99x.  Set at 14, then run on 19 fresh shapes whose pdl it turns off (M = 70-98, N x K
  -- 2816-6144 x 3072-6144): every pdl-on twin there ran 1.005-1.14x slower, first-pick regret
  -- 1.0660 -> 1.0092 (an H100, bench/RESULTS.md, twenty-fifth session).
  PDL_THIN_US = 14,
  -- Pingpong where each CTA holds one tile (one round): its consumers take a CTA's tiles in turn,
  -- so one warpgroup runs the whole main loop and the epilogue it would hide has nothing to hide
  -- behind.  The estimate times 1 + PINGPONG_ALONE.  At 256 x 8192 x 28672..29568 (128 tiles of
  -- 128 x 128), cooperative 128 x 128 ran 2.5-6.4 % faster than pingpong in all 7 H100 groups,
  -- and faster in 24 of 29 H200 bf16 groups; in H200 f16 groups it was slower in 14 of 28
  -- (geomean 1.015).  Over every file's groups, first pick / best measured, the H100's 1.0189 ->
  -- 1.0181, the H200's 1.0122 either way (0.02-0.04 alike).  Held out, the 10 shapes of a
  -- 168-shape grid (M = 240-512) where it moves the pick, bf16 and f16 on an H100: the new pick was
  -- the best measured in all 20 groups, 1.0399 -> 1.0000 (bench/RESULTS.md, twenty-seventh session).
  PINGPONG_ALONE = 0.03,
}

local function cdiv(a, b) return (a + b - 1) // b end
M.cdiv = cdiv

-- The device's DRAM rate over the H200's (MODEL.DRAM_GBS), from dev.mem_gbs; 1 where the device
-- does not say (no GPU here: the shipped table's H200).  Only two rates were measured, an H100's
-- (0.70) and an H200's (1.0; its driver is expected to say ~4.9 TB/s, 1.02): the scale is held
-- between them, so an H100 PCIe's 2.0 TB/s is taken as the SXM's 3.35 and a faster DRAM as the
-- H200's, not extrapolated.
M.DRAM_SCALE_MIN, M.DRAM_SCALE_MAX = 0.69, 1.03
function M.dram_scale(dev)
  local g = type(dev) == "table" and dev.mem_gbs
  if math.type(g) ~= "integer" and math.type(g) ~= "float" or g ~= g or g <= 0 then return 1 end
  return math.min(M.DRAM_SCALE_MAX, math.max(M.DRAM_SCALE_MIN, g / M.MODEL.DRAM_GBS))
end

-- The split tail over `clusters` clusters of S CTAs (gemm_sched.cuh's GemmWalk, the same rule):
-- the whole waves of `units` tiles, then the tiles it splits; a leftover of more tiles than
-- clusters stays whole (one more wave, nothing split).
local function tail_waves(units, clusters, S)
  local full, left = units // (clusters * S), units % (clusters * S)
  if left > clusters then return full + 1, 0 end
  return full, left
end

-- Clusters of CS CTAs (one per SM) the H200 holds at once, as the driver's occupancy
-- calculator answered (`weft run`'s launch line, bench/RESULTS.md "GEMM at every shape"): a
-- cluster must fit in one GPC, so 3, 4, 6 and 8 leave SMs idle (39 x 3 = 117, 30 x 4 = 120,
-- 17 x 6 = 102, 15 x 8 = 120 of 132).  Other GPUs: scaled by their SM count.
M.CORESIDENT_H200 = { 132, 66, 39, 30, 24, 17, 15, 15 }
function M.coresident(cs, sms)
  sms = sms or 132
  return math.max(1, (M.CORESIDENT_H200[cs] or sms // cs) * sms // 132)
end

-- The work units of a resolved config at a shape, the clusters that take them at once, and so
-- its rounds (a partial last one counts whole).
function M.waves(cfg, shape, sms, shards)
  local t, cl = cfg.tile, cfg.cluster
  shards = shards or 1
  local units = cdiv(cdiv(math.max(1, cdiv(shape.m, shards)), t.m), cl.m) * cdiv(cdiv(shape.n, t.n), cl.n) * shards
  local clusters = math.max(1, math.min(units, M.coresident(cl.m * cl.n * cfg.split_k, sms)))
  return units, clusters, cdiv(units, clusters)
end

-- Whether A's rows (K long) and B's (K long column-major, N long row-major) start off the
-- 128-byte lines at a shape: each 128-byte row of a box then spans two lines (M.estimate).
function M.unaligned(cfg, shape)
  local es = common.ESIZE[cfg.dtype] or 2
  local a = (shape.k * es) % 128 ~= 0
  local b = ((cfg.b_layout == "col" and shape.k or shape.n) * es) % 128 ~= 0
  return a or b, a, b
end

-- est(cfg, shape, sms, shards, dram) -> microseconds, a line that says why, and the time without
-- the copy-rate floor (where the floor binds, decode, it still says which schedule has the most
-- CTAs streaming).  cfg: resolved (tile,
-- cluster tables; consumers, mma, split_k, epilogue, stages, dtype); shards: ag_gemm's ranks
-- (C in shards of m / ranks rows, each tiled on its own); dram: M.dram_scale's (nil: 1).
function M.estimate(cfg, shape, sms, shards, dram)
  local P, t, cl = M.MODEL, cfg.tile, cfg.cluster
  shards = shards or 1
  dram = dram or 1
  local cs = cl.m * cl.n * cfg.split_k
  local rows = math.max(1, cdiv(shape.m, shards))
  local units, clusters, rounds = M.waves(cfg, shape, sms, shards)
  local kb = cdiv(cdiv(shape.k, 64), cfg.split_k)
  local compute = 2 * mma_rows(cfg) * t.n * 64 / 1e6 * P.US_PER_MFLOP
  -- shared memory per k-block: every WGMMA reads its 64 rows of A and n rows of B (each warpgroup
  -- its own; swapped, A's operand is B's rows), and the TMA writes the stage's m + n rows
  local groups = (M.swapped(cfg) and t.n or mma_rows(cfg)) // 64 * (M.coop_n(cfg) and cfg.consumers or 1)
  local smem = (groups * (64 + M.wgmma_n(cfg)) + t.m + t.n) * 128 / 1024 * P.SMEM_US_PER_KB
  -- An operand whose rows do not start on 128-byte lines (A's rows are K long; B's are K long
  -- column-major, N long row-major): each 128-byte row of a box spans two lines, and L2's reads,
  -- not the SM's, bound its loads; a multicast cluster reads it once for its CTAs (5000^3, B
  -- column-major: 128 x 224 with cluster.m = 2 425 us, without 586).  Aligned, multicast changes
  -- little.  (Measured with K unaligned and B column-major only.)
  local es = common.ESIZE[cfg.dtype]
  local _, off_a, off_b = M.unaligned(cfg, shape)
  local ua = off_a and 1 / cl.n or 1
  local ub = off_b and 1 / cl.m or 1
  local load = (t.m * ua + t.n * ub) * 128 / 1024 * P.US_PER_KB
  local core = math.max(compute, smem)
  local t_kb = math.sqrt(core * core + load * load) * (cfg.stages < 3 and P.SHALLOW or 1)
  if M.thin_row_blocks(cfg, rows) then t_kb = t_kb * P.THIN_KB end
  local pingpong = cfg.mma == "pingpong"
  local elems = t.m * t.n
  -- (kturns: one warpgroup stores each tile; its main loop is priced as the cooperative one's --
  -- the model has no term for the gaps between narrow WGMMAs it fills, and the rule lists no kturns)
  local epi = elems / (P.EPI_ELEMS_PER_US * M.storers(cfg)) *
    (cfg.epilogue == "tma" and 1 or P.DIRECT)
  -- split-K's tree: log2(S) hand-overs, each of the rows that exist (a warp past M sends nothing)
  local steps = 0
  while (1 << steps) < cfg.split_k do steps = steps + 1 end
  local live = M.swapped(cfg) and 1 or math.min(t.m, cdiv(math.min(rows, t.m), 16) * 16) / t.m   -- (swapped: B's rows)
  local red = steps * elems * live / (P.RED_ELEMS_PER_US * dram ^ P.DRAM_RED_POWER)
  -- the flat sum's one step (weft/gemm_splitk.cuh scatter), RED_FLAT_US, where it was measured
  -- faster than the tree: S >= 3 (at S = 2 both are one step, and they tied), one consumer, one
  -- round of tiles.  Elsewhere the tree's price keeps the rule away from the flat splits that ran
  -- slow: two consumers (200 x 128 split 4 at 200 x 3072 x 12288 41.0 us, 104 x 64 unsplit 35.9)
  -- and several rounds (152 x 64 split 4 in 3 rounds at 150 x 5120 x 13824 61.7 us, unsplit in one
  -- 51.8; bench/RESULTS.md, twentieth and twenty-first sessions)
  if P.RED_FLAT_US and M.flat_sum(cfg) and cfg.split_k >= 3 and cfg.consumers == 1 and rounds == 1 then
    red = P.RED_FLAT_US / dram ^ P.DRAM_FLAT_POWER
  end
  local unit = kb * t_kb + (pingpong and 0 or epi) + red
  local time = rounds * unit + (pingpong and epi or 0)
  -- pingpong's consumers take a CTA's tiles in turn: with one tile per CTA, one warpgroup runs
  -- the whole main loop (M.MODEL.PINGPONG_ALONE)
  if pingpong and rounds == 1 then time = time * (1 + P.PINGPONG_ALONE) end
  local how = string.format("%d round(s) of %d k-blocks", rounds, kb)
  if cfg.split_k_tail then   -- whole tiles on every CTA for the full waves, then the tail split (gemm_sched.cuh)
    local full, left = tail_waves(units, clusters, cfg.split_k)
    local kb_all = cdiv(shape.k, 64)
    time = full * (kb_all * t_kb + epi) + (left > 0 and unit or 0)
    how = string.format("%d whole round(s) of %d k-blocks%s", full, kb_all,
      left > 0 and string.format(", then %d tile(s) split %d ways", left, cfg.split_k) or "")
  end
  -- one round of tiles whose last row block is partly past M: its CTAs stream B's tiles again for
  -- the few rows they hold (M.MODEL.WASTE)
  if not M.swapped(cfg) and rows >= M.SWAP_BELOW and rounds == 1 then
    time = time * (1 + P.WASTE * (1 - rows / (cdiv(rows, t.m) * t.m)))
  end
  -- B multicast to a cluster of two 128-row tiles along M (M.MODEL.MULTICAST)
  if cfg.family == "gemm" and cl.m == 2 and cl.n == 1 and cfg.split_k == 1 and cfg.consumers == 2 and t.m == 128
     and cfg.mma == "cooperative"
     and not M.swapped(cfg) and rows >= P.MULTICAST_M and t.n >= P.MULTICAST_N and rounds <= P.MULTICAST_ROUNDS
     and shape.k <= P.MULTICAST_K then
    time = time * (1 - P.MULTICAST)
  end
  local bytes = (shape.m * shape.k + shape.n * shape.k + shape.m * shape.n) * es
  local raw = time + P.LAUNCH_US
  time = math.max(time, bytes / (P.COPY_GBS * 1e3)) + P.LAUNCH_US
  local why = string.format("%d units of %dx%d%s on %d cluster(s) of %d CTA(s): %s, ~%.1f us "
    .. "(gen/core/gemm.lua's model)", units, t.m, t.n, cl.m * cl.n > 1 and string.format(" (cluster %dx%d)", cl.m, cl.n)
    or "", clusters, cs, how, time)
  return time, why, raw
end

-- The configurations the rule ranks, in order of preference where the model ties (the measured
-- best first: 128 x 256 c2 is examples/gemm.lua).  Stages follow from shared memory.  Pingpong
-- only with 128-row tiles: the one the GPU has measured (64-row pingpong tiles are valid, never run).
local ENUM_TILES = {
  { 128, 256, 2, "cooperative" }, { 128, 128, 2, "pingpong" }, { 64, 128, 1, "cooperative" },
  { 64, 256, 1, "cooperative" }, { 128, 192, 2, "cooperative" }, { 256, 128, 2, "cooperative" },
  { 128, 128, 2, "cooperative" }, { 64, 192, 1, "cooperative" }, { 64, 64, 1, "cooperative" },
  { 128, 64, 2, "cooperative" },
}
local ENUM_SPLIT = { { 1, 1, 1 }, { 1, 2, 1 }, { 2, 1, 1 }, { 1, 1, 2 }, { 1, 1, 3 }, { 1, 1, 4 }, { 1, 1, 6 },
                     { 1, 1, 8 }, { 1, 1, 2, true }, { 1, 1, 4, true } }   -- cluster.m, cluster.n, split_k, tail
M.MAX_STAGES = 8   -- 8 over 6 stages: 2-7 % at decode and M = 128 (64 x 128; bench/RESULTS.md "GEMM at every shape"); 12 of 64 x 64 did not help
-- swap_ab's and thin tiles' stages hold B and a few rows of A: the ring goes deeper (decode streams B)
M.MAX_STAGES_SWAP = 16
-- One-consumer 64-row tiles up to 96 wide (a stage of at most 20 KB: 64 x 64 fits 13 stages) are
-- the M = 64-256 tiles that stream B in one round, where a k-block's time is the ring's latency;
-- cuBLASLt runs 64 x 64 with 13 stages at 128 x 4096 x 4096 and x 14336.  Held at MAX_STAGES:
-- on one H100 (bench/data/gemm_offset_s25c.tsv) the deeper ring of the same tile ran 0.2-8.4 %
-- faster in all 6 pairs, but bench/deep_ring_probe.sh (the rule both ways on the 12 groups 13
-- moves) on an H200: auto / cuBLASLt, each run's own, 0.977 -> 0.978, 6 groups up and 6 down; in
-- time 7 of 12 faster, geomean 0.993, less than the runs' cuBLASLt moved (bench/RESULTS.md,
-- thirty-fifth session).
M.MAX_STAGES_NARROW = 8
-- The 64-row tiles under 64 wide (32, 48: M.fitted_tiles, at M <= 64) hold few bytes per stage, and
-- a deeper ring keeps as many in flight: on an H100, 64 x 32 with 12 stages ran 3.5-4.5 % faster
-- than with 8 at 64 and 60 x 4096 x 4096 in both dtypes (14.51 us against 15.08-15.14), 64 x 48
-- with 12 the same as with 8 at 64 x 6144 x 4096 (bench/RESULTS.md, thirty-sixth session).
M.MAX_STAGES_NARROWEST = 12
local function max_stages(r)
  if M.swapped(r) or M.thin(r) then return M.MAX_STAGES_SWAP end
  if r.tile.m == 64 and r.consumers == 1 and r.tile.n < 64 then return M.MAX_STAGES_NARROWEST end
  if r.tile.m == 64 and r.consumers == 1 and r.tile.n <= 96 then return M.MAX_STAGES_NARROW end
  return M.MAX_STAGES
end

local function errs_sink()
  local e = { n = 0 }
  function e.add() e.n = e.n + 1 end
  function e.raw() e.n = e.n + 1 end
  function e.ok() return e.n == 0 end
  return e
end

-- The ring for a config, up to `cap` stages, or nil if none fits in shared memory.  With the TMA
-- epilogue a ring may keep a C buffer per 64-column chunk ("whole") or pass C through two buffers
-- in turn and be deeper; measured (bench/RESULTS.md "GEMM at every shape", the sixth session's
-- database of 1270 runs):
--   - three stages are too shallow below 256 columns: 128 x 192 and 128 x 224 ran 12-15 % faster
--     with four (two buffers) than with three (whole);
--   - from four stages up the whole buffers win: 128 x 176 with four (whole) 7 % faster than five;
--   - 128 x 256 with three (whole) beat four by 1-5 % over several rounds of tiles, and lost by
--     1-4 % in a single round (whose one epilogue costs little);
--   - but where K leaves the rows off the 128-byte lines (L2 binds the loads: M.estimate), 128 x
--     256 with four ran 2-8 % faster than with three at the four such shapes of 2-16 rounds timed
--     on an H200 (16384 x 4096 x 3000: 604 us against 655); on an H100 1.4 % slower in geomean,
--     that shape 6 % (bench/RESULTS.md, twenty-second session: one run each, a weak signal).
-- `rounds`: the rounds of tiles the shape gives the config (nil: several); `unaligned`: A's or
-- B's rows are off the 128-byte lines at the shape.
function M.fit_stages(cfg, cap, rounds, unaligned)
  local deepest, whole
  for s = cap, 2, -1 do
    cfg.stages = s
    local L = M.layout(cfg)
    if L.smem <= common.SMEM_LIMIT then
      deepest = deepest or s
      if cfg.epilogue ~= "tma" or L.epi_bufs >= M.epi_chunks(cfg) then whole = s; break end
    end
  end
  local s = deepest
  if whole and whole >= 4 then s = whole
  elseif whole == 3 and deepest == 4 and M.wgmma_n(cfg) >= 256 and (rounds or 2) > 1 and not unaligned then s = 3 end
  if s then cfg.stages = s end
  return s
end

local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do if k ~= "tag" then t[k] = copy(x) end end
  return t
end

-- candidates(shape, fixed, dev, opts) -> the F.auto list of a GEMM family.  fixed: the user's
-- raw config (fixed fields win: a fixed tile stays and the rest is chosen around it); opts:
-- family (its name), shards (ag_gemm's ranks), extra (fields every candidate carries: ag_gemm's
-- comm), has_pdl, max (candidates returned, default 8); dev: sms and mem_gbs (M.dram_scale) where
-- the device says them, else an H200's.  Every candidate is validated here with
-- the user's fixed fields (gen/core/weft.lua check), so the list ends in one that takes every
-- shape the kernel takes (the GEMM's limits depend on no knob but any_n, with column-major B and
-- the direct stores: the rule sets it for an N off 8's multiples, and the fallback too).
-- The split tail of tiles tl = { m, n } over sp[3] CTAs (gemm_sched.cuh's GemmWalk): its whole
-- waves and the tiles it splits after them.
function M.tail_split(shape, tl, sp, sms, shards)
  shards = shards or 1
  local units = cdiv(math.max(1, cdiv(shape.m, shards)), tl[1]) * cdiv(shape.n, tl[2]) * shards
  return tail_waves(units, math.max(1, math.min(units, M.coresident(sp[3], sms))), sp[3])
end

-- The `count` widths of bm-row tiles (multiples of 16 from `lo` to `hi`, with `skip64` not the
-- multiples of 64) whose rounds cost least, rounds x width (ties: the wider); `per_kb(bn)`, where
-- given, prices a k-block of the tile instead of its width.
local function cheapest_widths(shape, sms, bm, lo, hi, skip64, count, per_kb)
  local widths = {}
  for bn = lo, hi, 16 do
    if not (skip64 and bn % 64 == 0) then
      local units = cdiv(shape.m, bm) * cdiv(shape.n, bn)
      widths[#widths + 1] = { bn = bn, cost = cdiv(units, math.min(units, sms)) * (per_kb and per_kb(bn) or bn) }
    end
  end
  table.sort(widths, function(a, b) if a.cost ~= b.cost then return a.cost < b.cost end return a.bn > b.bn end)
  local out = {}
  for i = 1, math.min(count, #widths) do out[i] = widths[i].bn end
  return out
end

-- Tile widths fitted to the waves (family gemm with column-major B, which takes any multiple of
-- 16): for 128-row tiles over two consumers and 64-row tiles over one, the two widths in 80..240
-- (not multiples of 64: ENUM_TILES has those) whose rounds cost least, rounds x width (ties: the
-- wider); and at M <= 64, 64 x 32 and 64 x 48 (below).  cuBLASLt does the same (its kernel
-- names: 176 x 128 at 1024 x 14336 x 4096, 112 x 128 at 256 x 14336 x 4096, 96 x 64 at 128 x 6144 x
-- 4096; bench/RESULTS.md).
-- And 256-row tiles over two consumers, 80..160 wide (M.ACC_REGS_SHIFTED), where M >= M.TALL_M
-- and K leaves the rows of A and B off the 128-byte lines (`unaligned`): there L2 binds the loads
-- (M.estimate), and the taller tile, with A multicast along N, reads less per output.  5000^3
-- ran 256 x 160 (cluster 1 x 2) at 404 us on an H100, 128 x 224 (the rule's pick) at 465-468,
-- cuBLASLt 377 (256 x 152 tiles); at aligned K the same tiles ran 1.0-1.6x slower than the
-- 128-row ones over the set's 24 shapes at M = 1024 and 4096 (bench/RESULTS.md, twenty-second
-- session), where the model would have picked them at 8.
M.TALL_M = 1024
function M.fitted_tiles(shape, sms, unaligned)
  local out = {}
  local kinds = { { 128, 2, 240 }, { 64, 1, 240 } }
  -- (first: where the model ties them with a 128-row tile, the 256-row one ran faster at all three
  -- shapes timed, 5000^3, 6000 x 6000 x 3000 and 3000 x 5000 x 5000: 245.8 us against 128 x 240's
  -- 265.2 on an H100, 242.4 against 250.0 on an H200)
  if unaligned and shape.m >= M.TALL_M then table.insert(kinds, 1, { 256, 2, M.ACC_REGS_SHIFTED, true }) end
  for _, bm in ipairs(kinds) do
    -- (256 rows: a k-block priced by its shared memory, M.estimate's term -- four 64-row groups each
    -- read all of B's n rows, so a narrow one costs more per column: 16384 x 4096 x 3000 ran 256 x
    -- 160 at 645 us, 256 x 128 at 731, 256 x 112 at 802, where rounds x width had ranked 112 and
    -- 128 first; bench/RESULTS.md, twenty-third session)
    local per_kb = bm[4] and function(bn) return 4 * (64 + bn) + bm[1] + bn end or nil
    for _, bn in ipairs(cheapest_widths(shape, sms, bm[1], 80, bm[3], true, 2, per_kb)) do
      out[#out + 1] = { bm[1], bn, bm[2], "cooperative" }
    end
  end
  -- M <= 64 (one 64-row block): 64-row tiles 32 and 48 wide too, which fill the SMs at N = 4096
  -- and 6144 without a split (128 tiles).  Where they moved the pick, the new one ran 0.96 of the
  -- old one's time in geomean over 22 groups of M = 64 and 0.91 over 14 held out at M = 57-64;
  -- faster at 28 of the 32 groups that moved, 2-3 % slower at four (an H100,
  -- bench/data/gemm_narrow_s36*.tsv; bench/RESULTS.md, thirty-sixth session)
  if shape.m <= M.SWAP_BELOW then
    for _, bn in ipairs({ 32, 48 }) do out[#out + 1] = { 64, bn, 1, "cooperative" } end
  end
  return out
end

-- Swapped tiles (family gemm, B column-major): A's rows rounded up to 8 as the WGMMA's n.  For
-- M < 64 (where a 64-row tile is mostly A's zero padding), B's rows in 64, 128, 192 or 256; for M
-- up to 256, one row block as tall as M (no 64-row padding of its last block: M = 130 is 136, not
-- 3 x 64) over 64 of B's rows on one consumer or 128 on two -- for few column tiles and a long K
-- with split-K (130 x 1536 x 8960: 136 x 64 split 4, 16.8 us against 64 x 128 split 3's 21.3;
-- bench/RESULTS.md, ninth session).  And for M from 64 up, M cut into 2 or 3 row blocks (of 64 to
-- 256 rows, multiples of 8) over 64 of B's rows with a deep ring, as cuBLASLt cuts it at M = 72-300
-- (200 = 3 x 72 or 2 x 104): 200 x 2048 x 7168 ran 104 x 64 split 2 at 18.9 us, where the best
-- without them was 64 x 64 at 22.3-23.2 and cuBLASLt took 16.9-17.5 (bench/RESULTS.md, twelfth
-- session: first-pick regret over 66 off-set groups 1.0778 -> 1.0701, the set's rows 1.0192 ->
-- 1.0171 and 1.0165 -> 1.0144).
-- A cluster the user fixed along M (cm CTAs sharing B's rows, cluster = { m = cm, .. }) adds the
-- tile that cuts M into cm row blocks, one per CTA of the cluster's column: at 130 x 1536 x 8960
-- with cluster 4 x 2, 40 x 64 ran 30.9-32.5 us, 48 x 64 32.9 (bench/RESULTS.md, fifteenth session),
-- where the rule's own tiles (64 or 72 rows) leave one or two of the four row blocks past M.
M.SWAP_BELOW = 64
M.SWAP_WHOLE_M = 256
M.SWAP_BLOCKS = 3

function M.swap_tiles(shape, cm)
  local bm = cdiv(shape.m, 8) * 8
  local out
  if shape.m >= M.SWAP_BELOW then
    out = {}
    if bm <= M.SWAP_WHOLE_M then out = { { bm, 64, 1, "cooperative", true }, { bm, 128, 2, "cooperative", true } } end
    for r = 2, M.SWAP_BLOCKS do
      local b = cdiv(cdiv(shape.m, r), 8) * 8
      if b >= 64 and b <= M.SWAP_WHOLE_M then out[#out + 1] = { b, 64, 1, "cooperative", true } end
    end
  else
    out = { { bm, 64, 1, "cooperative", true }, { bm, 128, 1, "cooperative", true },
            { bm, 192, 1, "cooperative", true }, { bm, 256, 1, "cooperative", true } }
  end
  if cm and cm > 1 then
    local b = cdiv(cdiv(shape.m, cm), 8) * 8
    local have = false
    for _, tl in ipairs(out) do have = have or (tl[1] == b and tl[2] == 64) end
    if b <= M.SWAP_WHOLE_M and not have then out[#out + 1] = { b, 64, 1, "cooperative", true } end
  end
  return out
end

-- Thin tiles (family gemm with column-major B): for a small M (< 64), A's rows rounded up to 8;
-- for M = 64-120, M cut into two row blocks of under 64 rows (M = 96: two of 48; THIN_BLOCKS),
-- as cuBLASLt cuts M = 96 (64 x 48 tiles, 4 x 2) -- one consumer, the
-- widths whose rounds cost least (rounds x width, ties: the wider), as fitted_tiles does: any
-- multiple of 16 from 32 (N = 10240: 80 wide, 128 tiles; 16 wide would tie in five rounds of
-- tiles each with its own epilogue).  The row blocks: on an H100, 48 x 48 ran 96 x 2560 x 2560 at
-- 8.9 us and 80 x 2560 x 2560 at 9.5 where the rule's 96 x 64 (80 x 64) swapped split 2 took
-- 10.8.  The rule's first pick against the best measured, without them -> with them: 1.061 ->
-- 1.038 and 1.034 -> 1.025 over the 36 + 40 shapes at M = 64-256 (N, K 1024-12288) they were fitted
-- on, 1.085 -> 1.051, 1.045 -> 1.031 and 1.047 -> 1.035 over 40, 44 and 16 held-out groups (M =
-- 66-120 in bf16 and f16; the shapes off the set).  A third row block (M = 128-184) moved picks
-- the runs had not timed and fitted no better; the set's picks do not move (an H100,
-- bench/RESULTS.md, twenty-fifth session).
M.THIN_BLOCKS = 2
function M.thin_tiles(shape, sms)
  local out, first, last = {}, 1, 1   -- the row blocks M is cut into: one below M = 64
  if shape.m >= M.SWAP_BELOW then first, last = 2, M.THIN_BLOCKS end
  for r = first, last do
    local bm = cdiv(cdiv(shape.m, r), 8) * 8
    if bm < 64 then
      for _, bn in ipairs(cheapest_widths(shape, sms, bm, 32, 256, false, 3)) do out[#out + 1] = { bm, bn, 1, "cooperative" } end
    end
  end
  return out
end

-- Every enumerated schedule that validates with the fixed fields, with its estimate.
local function score_all(shape, fixed, sms, opts)
  local open = function(k) return fixed[k] == nil or fixed[k] == "auto" end
  local scored = {}
  local tiles = ENUM_TILES
  if opts.family == "gemm" and fixed.b_layout == "col" and open("tile") then
    tiles = { table.unpack(ENUM_TILES) }
    local unaligned = M.unaligned({ dtype = open("dtype") and "bf16" or fixed.dtype, b_layout = "col" }, shape)
    for _, tl in ipairs(M.fitted_tiles(shape, sms, unaligned)) do tiles[#tiles + 1] = tl end
    for _, tl in ipairs(M.thin_tiles(shape, sms)) do tiles[#tiles + 1] = tl end
    if open("swap_ab") or fixed.swap_ab == true then
      local cm = type(fixed.cluster) == "table" and math.type(fixed.cluster.m) == "integer" and fixed.cluster.m or nil
      for _, tl in ipairs(M.swap_tiles(shape, cm)) do tiles[#tiles + 1] = tl end
    end
  elseif opts.family == "gemm" and fixed.b_layout == "col" and open("swap_ab") then
    -- a fixed tile may be a swapped one (8 x 64): the tile entries below take the fixed tile's
    -- place, so one more entry tries it swapped
    tiles = { table.unpack(ENUM_TILES) }
    tiles[#tiles + 1] = { 64, 128, 1, "cooperative", true }
  end
  -- (N off 8's multiples: C's rows are off TMA's 16-byte strides, only the direct stores take it,
  -- with any_n; elsewhere any_n stays off, so those kernels keep their 32-bit stores alone)
  local odd_n = M.odd_n(shape, fixed, opts.family)
  local epilogues = odd_n and { "direct" } or { "tma", "direct" }
  for i, tl in ipairs(tiles) do
    for j, sp in ipairs(ENUM_SPLIT) do
      -- (the split tail only where the family has it, and only where it has both whole waves and
      -- split tiles: otherwise it is plain split-K or plain tiles, candidates of their own)
      local full, split = 0, 0
      if sp[4] and opts.has_tail then full, split = M.tail_split(shape, tl, sp, sms, opts.shards) end
      if sp[4] and not (full > 0 and split > 0) then goto next_split end
      -- (swapped tiles take no cluster here: sharing A along N, B along M or both ran no faster
      -- than without at M = 72-300, bench/RESULTS.md, twelfth and fifteenth sessions; a user may
      -- still set one)
      if tl[5] and sp[1] * sp[2] > 1 then goto next_split end
      for e, epi in ipairs(epilogues) do
        local c = { tile = { m = tl[1], n = tl[2], k = 64 }, consumers = tl[3], mma = tl[4],
                    cluster = { m = sp[1], n = sp[2] }, split_k = sp[3], epilogue = epi, group = 16,
                    split_k_tail = opts.has_tail and sp[4] or nil, swap_ab = tl[5], any_n = odd_n or nil }
        -- the config as it will be: fixed fields over the candidate's
        local r = { dtype = open("dtype") and "bf16" or fixed.dtype, stages = 4, family = opts.family }
        for k, v in pairs(c) do r[k] = copy(v) end
        for k, v in pairs(fixed) do if v ~= "auto" then r[k] = copy(v) end end
        r.tile = M.tile_check(r.tile)
        r.cluster = type(r.cluster) == "table" and M.cluster_check(r.cluster) or nil
        local ok = r.tile and r.cluster and common.ESIZE[r.dtype] and math.type(r.split_k) == "integer"
          and math.type(r.consumers) == "integer" and r.split_k >= 1 and r.split_k <= M.MAX_SPLIT_K
          -- (a fixed 64-row tile would make ENUM's pingpong rows 64-row pingpong: unmeasured;
          -- a fixed pingpong would make its wider rows wide pingpong tiles, slower where timed --
          -- bench/RESULTS.md, thirty-seventh session)
          and (r.mma ~= "pingpong" or r.tile.m == 128 or not open("mma"))
          and not (open("tile") and M.wide_pingpong(r))
        if ok and open("stages") then
          ok = M.fit_stages(r, max_stages(r), select(3, M.waves(r, shape, sms, opts.shards)), M.unaligned(r, shape)) ~= nil
          c.stages = r.stages
        end
        if ok and math.type(r.stages) == "integer" then
          local errs = errs_sink()
          M.check(r, errs)
          if errs.ok() then
            local est, why, raw = M.estimate(r, shape, sms, opts.shards, opts.dram)
            -- pdl: a launch's set-up under the previous kernel's tail, ~0.5 us (7-8 % at 1024^3);
            -- 0.4-2 % slower at 4096^3 (fourth session), so only where the launch is a tenth.
            -- A split-K cluster's launch costs more: pdl on was 3-9 % faster up to ~45 us (64 x
            -- 128 split 2 at 128 x 4096 x 14336, 64 x 80 at 130 x 1536 x 8960; sixth session)
            -- Not from PDL_US up where one round leaves many SMs idle: on 80 of 132 SMs pdl on ran
            -- 1.14-1.29x slower at 40-55 us (swapped tiles at 72 and 130 x 5120 x 13824, 100 and
            -- 130 x 10240 x 8192), 0.98 at 96 x 2560 x 2560 (11 us); on 96-112 SMs 0.93-1.06x
            -- (bench/RESULTS.md, thirteenth session)
            if opts.has_pdl and open("pdl") then
              local _, clusters, rounds = M.waves(r, shape, sms, opts.shards)
              local ctas = clusters * r.cluster.m * r.cluster.n * r.split_k
              local thin_blocks = M.thin_row_blocks(r, cdiv(shape.m, opts.shards or 1))
              -- (clusters of two along M: the pairs measured)
              local clustered = r.cluster.m == 2 and r.cluster.n == 1
              c.pdl = est < (r.split_k > 1 and M.MODEL.PDL_SPLIT_US or thin_blocks and M.MODEL.PDL_THIN_US
                             or clustered and M.MODEL.PDL_CLUSTER_US or M.MODEL.PDL_US)
                and (est < M.MODEL.PDL_US or rounds > 1 or ctas >= M.MODEL.PDL_FILL * sms)
            end
            scored[#scored + 1] = { c = c, r = r, est = est, raw = raw, why = why, order = (i * 16 + j) * 2 + e }
          end
        end
      end
      ::next_split::
    end
  end
  return scored
end

-- Every enumerated schedule, best first: { c = the candidate's fields, r = it resolved, est, why }.
-- opts as candidates' (above), and dram: M.dram_scale of the device (nil: 1, an H200).
function M.ranked(shape, fixed, sms, opts)
  local scored = score_all(shape, fixed, sms, opts)
  -- M.MODEL.SPLIT_FULL (M >= 64, counted per shard as the tiles are): split-K ranks after the
  -- unsplit schedules where its ring is shallow, or where an unsplit schedule fills the GPU in one
  -- round and the split tile does not hold all of M's rows.  "Fills" counts a unit by the rows it
  -- holds: M = 72 in 64-row tiles is 1.125 row blocks, not 2.
  local rows = cdiv(shape.m, opts.shards or 1)
  if rows >= M.SWAP_BELOW then
    local fills = false
    for _, s in ipairs(scored) do
      if s.r.split_k == 1 then
        local units, _, rounds = M.waves(s.r, shape, sms, opts.shards)
        local held = rows / (cdiv(rows, s.r.tile.m) * s.r.tile.m)
        if rounds == 1 and units * held >= M.MODEL.SPLIT_FULL_FRAC * sms then fills = true; break end
      end
    end
    for _, s in ipairs(scored) do
      local shallow = s.r.stages < M.MODEL.SPLIT_FULL_DEEP
      if s.r.split_k > 1 and (shallow or (fills and s.r.tile.m < rows)) then
        s.est = s.est * M.MODEL.SPLIT_FULL
        s.why = s.why .. string.format("; x%.2f: %s", M.MODEL.SPLIT_FULL, shallow
          and string.format("a split ring of %d stages (fewer than %d)", s.r.stages, M.MODEL.SPLIT_FULL_DEEP)
          or "an unsplit schedule fills the GPU in one round")
      end
    end
  end
  -- 1 % buckets, then the preference order: the model does not resolve smaller differences
  -- (then the time without the floor, in 5 % buckets: among schedules the copy rate ties, the
  -- one with the most CTAs streaming)
  for _, s in ipairs(scored) do
    s.bucket = math.floor(math.log(s.est) / math.log(1.01))
    s.raw_bucket = math.floor(math.log(s.raw) / math.log(1.05))
  end
  table.sort(scored, function(a, b)
    if a.bucket ~= b.bucket then return a.bucket < b.bucket end
    if a.raw_bucket ~= b.raw_bucket then return a.raw_bucket < b.raw_bucket end
    return a.order < b.order
  end)
  return scored
end

function M.candidates(shape, fixed, dev, opts)
  local weft = require("gen.core.weft")
  local sms = dev and dev.sms or 132
  local want = opts.max or 8
  local open = function(k) return fixed[k] == nil or fixed[k] == "auto" end
  local ranked_opts = copy(opts)
  ranked_opts.dram = M.dram_scale(dev)
  local scored = M.ranked(shape, fixed, sms, ranked_opts)

  local out, names = {}, {}
  local function try(c, why)
    local v = copy(c)
    for k, x in pairs(opts.extra or {}) do v[k] = x end
    local raw = { family = opts.family }
    for k, x in pairs(v) do raw[k] = copy(x) end
    for k, x in pairs(fixed) do if x ~= "auto" then raw[k] = copy(x) end end
    local fam, ncfg = weft.check(raw, "gen/core/gemm.lua (the rule)")
    if not fam then return false end
    local name = weft.kernel_name(fam, ncfg)
    if names[name] then return false end
    names[name] = true
    v.why = why
    out[#out + 1] = v
    return true
  end
  -- the best of each schedule (tile, consumers, mma, cluster, split_k), then the best one's
  -- neighbours: first-use tuning times different schedules, not only different epilogues
  local best, seen = nil, {}
  local slots = math.max(1, want - 3)
  -- (swapped tiles leave two of the schedules to the unswapped ones, where both take the shape:
  -- the list keeps the best of each kind)
  local swaps, swap_cap = 0, open("swap_ab") and math.max(1, slots - 2) or math.huge
  for _, s in ipairs(scored) do
    if #out >= slots then break end
    local r = s.r
    -- (a multicast cluster is a neighbour below, not a schedule of its own: it changes little)
    local sched = string.format("%s %d %s %d %s %s", r.tile.tag, r.consumers, r.mma, r.split_k, tostring(r.split_k_tail),
      tostring(M.swapped(r)))
    if not seen[sched] and not (M.swapped(r) and swaps >= swap_cap) and try(s.c, s.why) then
      seen[sched] = true
      swaps = swaps + (M.swapped(r) and 1 or 0)
      best = best or s
    end
  end
  if best then   -- its neighbours: B multicast, a shallower or deeper ring, pdl, group 8, the direct epilogue
    local b = best.c
    local function resolved()   -- the best as a config whose ring can be fitted again
      local r = copy(best.r)
      r.tile, r.cluster = M.tile_check(r.tile), M.cluster_check(r.cluster)
      return r
    end
    local function variant(changes, why)
      if #out >= want - 1 then return end
      local v = copy(b)
      for k, x in pairs(changes) do v[k] = x end
      try(v, why)
    end
    -- (B multicast first: 1.5-4 % at 4096^3 .. 16384 x 4096 x 14336 with 128 x 256, four stages;
    -- bench/RESULTS.md "GEMM, second session")
    if best.r.split_k == 1 and best.r.cluster.m * best.r.cluster.n == 1 and open("cluster") then
      variant({ cluster = { m = 2, n = 1 } }, "the choice with B multicast to a cluster of two along M")
    end
    if b.stages and b.stages > 3 then variant({ stages = b.stages - 1 }, "the choice with one stage fewer") end
    if b.epilogue == "tma" and b.stages and open("stages") then   -- one stage deeper with C through two buffers, if it fits
      local r = resolved()
      r.stages = b.stages + 1
      if r.stages <= max_stages(r) and M.layout(r).smem <= common.SMEM_LIMIT then
        variant({ stages = r.stages }, "the choice with one stage more (C through two buffers in turn)")
      end
    end
    if opts.has_pdl and open("pdl") then
      variant({ pdl = not b.pdl }, "the choice with pdl " .. (b.pdl and "off" or "on"))
    end
    variant({ group = 8 }, "the choice with raster groups of 8 row blocks")
    if b.epilogue == "tma" and open("stages") then
      local r = resolved()
      r.epilogue = "direct"
      if M.fit_stages(r, max_stages(r)) then variant({ epilogue = "direct", stages = r.stages }, "the choice with direct stores") end
    end
  end
  -- last: examples/gemm.lua's config around the fixed fields, or the best that validates
  local last = { tile = { m = 128, n = 256, k = 64 }, stages = 3, consumers = 2, mma = "cooperative",
                 cluster = { m = 1, n = 1 }, split_k = 1, epilogue = shape.n % 8 == 0 and "tma" or "direct", group = 16,
                 any_n = M.odd_n(shape, fixed, opts.family) or nil }
  if not try(last, "examples/gemm.lua's config: takes every shape") then
    for _, s in ipairs(scored) do
      if #out > 0 then break end
      try(s.c, s.why)
    end
  end
  if #out == 0 then   -- nothing validates with the fixed fields: auto.lua reports the config's own errors
    out[1] = { why = "no candidate validates with the fixed fields" }
  end
  return out
end

-- The run spec of the GEMM families (gen/core/weft.lua's run_spec).  The runner adds one shape
-- that depends on the world size, (1024 P) x 1536 x 512, big enough to sample rows of every
-- shard (ag_gemm).  weft tune checks at most 2048 x 1024 of a shape (the CPU reference stays
-- cheap), times it whole.
M.SIZES = { "m", "n", "k" }
M.KEY = { "dtype", "b_layout" }   -- what changes the result (auto and --tuned never swap them)

function M.run_spec()
  return { sizes = M.SIZES,
           check = { { m = 1000, n = 1000, k = 1000 }, { m = 128, n = 256, k = 64 }, { m = 1000, n = 1024, k = 1000 } },
           time = { { m = 1024, n = 1024, k = 1024 }, { m = 4096, n = 4096, k = 4096 }, { m = 8192, n = 8192, k = 8192 } },
           metric = "flops", baseline = "cublaslt", ranks = true, check_cap = { m = 2048, n = 1024 },
           key = M.KEY }
end

return M
