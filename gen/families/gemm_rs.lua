-- gen/families/gemm_rs.lua: GEMM + reduce-scatter, the row-parallel linear layer.  Rank r of P
-- holds A_r (M x k, its K shard of A: k = K / P) and B_r (k x N); C_r = A_r . B_r is its
-- partial, and rank r ends with rows r*M/P .. (r+1)*M/P - 1 of sum_p C_p (f32 accumulation;
-- reduce = "ordered": folded in rank order, rounded once, the same bits on every run; "atomic":
-- added by TMA bulk reduce-adds in the order they arrive, not bit-stable).  ag_gemm's mirror
-- image: the same persistent GEMM (gen/core/gemm.lua's fields, rules, layout, grid and rule), with
-- a source whose epilogue pushes each finished f32 tile to the rank that owns its rows.  Device
-- side: templates/weft/gemm_rs.cuh (ordered: the protocol and the fold), weft/gemm_rs_atomic.cuh
-- (atomic), weft/gemm_kernel.cuh (the GEMM).
local common = require("gen.core.common")
local gemm = require("gen.core.gemm")

local F = {
  name = "gemm_rs",
  template = "templates/gemm_rs.cu",
  doc = "rows r*M/P.. of sum over ranks of A_r . B_r on rank r; launch with weft_comm_launch",
}

local G = gemm.fields()

F.fields = {
  common.dtype({ "f16", "bf16" }, "bf16"),
  { name = "reduce", kind = "enum", values = { "ordered", "atomic" }, default = "ordered", tag = "",
    doc = "ordered: each finished f32 tile goes to its owner's staging, the owner folds the P partials in rank "
      .. "order and rounds once (the same bits every run). atomic: each finished f32 tile is added into its owner's "
      .. "one f32 staging by the TMA bulk reduce-add (cp.reduce.async.bulk .add.f32, rows staged through shared "
      .. "memory), then the owner rounds the sum once; the adds land in the order they arrive, so the result's bits "
      .. "depend on timing (NOT bit-stable from run to run; within the GEMM's tolerance). A staging of M/P x N f32 "
      .. "per half instead of M x N" },
  { name = "comm", kind = "enum", values = { "auto", "threadload", "tma", "multimem" }, default = "auto", tag = "",
    doc = "how a finished f32 tile reaches its owner: threadload (the epilogue's threads store 8-byte vectors into the "
      .. "owner's mapped buffer), tma (rows staged in shared memory, then TMA bulk copies, or bulk reduce-adds for "
      .. "reduce = \"atomic\"), or multimem (every partial stays home; the owner's multimem.ld_reduce sums them, in "
      .. "the switch's order); auto: tma for atomic, else threadload" },
  { name = "fallback", kind = "enum", values = { "none", "emulate" }, default = "none", tag = "fb",
    doc = "comm = multimem where multicast is unavailable: none (fail) or emulate (unicast twin: the rank-order fold "
      .. "of loads from every rank)" },
  G.b_layout,
  gemm.tile_field(),
  G.stages, G.consumers, G.mma, G.cluster, G.split_k,
  { name = "epilogue", kind = "enum", values = { "direct" }, default = "direct", tag = "ep",
    doc = "direct: f32 partial tiles from registers to the owner's staging (P = 1: the plain GEMM's direct "
      .. "stores to C). The TMA-store epilogue is not built for gemm_rs" },
  G.group,
  common.ranks(),
  { name = "fold", kind = "enum", values = { "after", "tiles" }, default = "after", tag = "fd",
    doc = "after: every CTA folds its share of the rank's rows once every rank's tiles are in (a DONE round); "
      .. "tiles: each own tile is folded in its epilogue as the other ranks' partials of it arrive (a flag per "
      .. "tile; the walk takes the own rows last), so the fold overlaps the GEMM. The same bits either way" },
  { name = "reducer", kind = "enum", values = { "consumers", "producer" }, default = "consumers", tag = "rd",
    doc = "which warps fold the own rows (fold = \"tiles\"): consumers (each own tile in its warpgroup's epilogue, "
      .. "its own partial from the accumulators) or producer (warps 1-3 of the loading warpgroup, beside the TMA warp: "
      .. "the consumers send every tile, the own ones too, and go on; split_k = 1). The same bits either way" },
}

-- atomic adds every tile into one f32 sum: there are no per-source partials for fold = "tiles"
function F.check(cfg, errs)
  gemm.check_auto_tile(cfg, errs)
  if cfg.comm == "auto" then cfg.comm = cfg.reduce == "atomic" and "tma" or "threadload" end
  if cfg.reduce == "atomic" and cfg.comm ~= "tma" then
    errs.add("comm", cfg.comm, 'reduce = "atomic" adds with the TMA bulk reduce: comm = "tma" (or "auto")')
  end
  if cfg.fold == "tiles" and cfg.comm == "tma" and cfg.reduce ~= "atomic" then
    errs.add("fold", cfg.fold, 'fold = "tiles" flags each tile after its thread stores: comm = "threadload" (TMA '
      .. 'bulk stores complete asynchronously); use fold = "after" with comm = "tma"')
  end
  if cfg.comm ~= "multimem" and cfg.fallback ~= "none" then
    errs.add("fallback", cfg.fallback, 'only comm = "multimem" has a fallback; leave it "none"')
  end
  if cfg.comm == "multimem" and (cfg.fold == "tiles" or cfg.reduce == "atomic") then
    errs.add("comm", cfg.comm, 'comm = "multimem" sums once every partial is in (reduce = "ordered", fold = "after")')
  end
  if cfg.reducer == "producer" and cfg.fold ~= "tiles" then
    errs.add("reducer", cfg.reducer, 'the producer\'s warps fold tile by tile: fold = "tiles" (fold = "after" folds '
      .. 'with every warp once the GEMM is done)')
  end
  if cfg.reducer == "producer" and cfg.split_k ~= 1 then
    errs.add("reducer", cfg.reducer, string.format('split_k = %d: the producer\'s warps fold the tiles of an unsplit '
      .. 'walk (split_k = 1), or use reducer = "consumers"', cfg.split_k))
  end
  if cfg.reduce == "atomic" and cfg.fold == "tiles" then
    errs.add("fold", cfg.fold, 'reduce = "atomic" adds every tile into one f32 sum as it arrives, so there are no '
      .. 'partials to fold tile by tile; use fold = "after" (the default)')
  end
end

-- The manifest of a GEMM whose epilogue talks to the other ranks (gemm_rs; gemm_ar reuses it):
-- `as` names its config struct and kernel body, adds lines to the struct, and its comm section.
function F.derive_as(cfg, as)
  local dt = cfg.dtype
  local layout = gemm.layout(cfg)
  local threads = gemm.threads(cfg)
  local big = common.INT_MAX
  local lines = { string.format("static constexpr int NP = %d;   // ranks (0: any)", common.ranks_value(cfg)) }
  for _, x in ipairs(as.lines or {}) do lines[#lines + 1] = x end
  lines[#lines + 1] = string.format("static constexpr int SIGNALS = %d;   // comm.signals: their pads come first", #as.comm.signals)
  as.comm.ranks = common.ranks_value(cfg)
  return {
    values = { threads = threads,
               body = string.format("weft::%s<%s>(c, (long)m, (long)n, (long)k, ta, tb, comm);", as.body, as.struct),
               wgmma = gemm.wgmma_struct(cfg.tile.n, dt, cfg.b_layout == "row"),
               cfg = gemm.cfg_struct(as.struct, cfg, layout, lines) },
    block = { threads, 1, 1 },
    cluster = { cfg.cluster.m * cfg.cluster.n * cfg.split_k, 1, 1 },
    smem = layout.smem,
    layout = layout,
    smem_field = "stages",
    smem_hint = gemm.smem_hint(cfg),
    args = gemm.cab_args(dt),
    -- A over all M rows: the tile of shard s loads rows s*M/P + ...; a box that runs past the shard
    -- reads the next shard's rows, which the epilogue never stores
    tmaps = gemm.tmaps_ab(cfg, "m"),
    -- persistent and co-resident (every CTA waits for every CTA of every rank), C tiled per shard
    grid = gemm.grid(cfg, true),
    limits = { { arg = "m", min = 1, max = big }, { arg = "k", min = 8, max = big, multiple = 8 },
               { arg = "n", min = 8, max = big, multiple = 8 } },
    comm = as.comm,
  }
end

-- c: this rank's M/P x N rows of the sum; a: its M x k block of A; b: its k x N block of B.
-- The data area: per half, ordered: P f32 partials of M/P x N, one per source rank (m * n floats
-- in all); atomic: their one sum, M/P x N f32 (scatter: comm.c sizes a half m * n / P).
-- (ranks = 1: no staging is used, but the communicator still carries the epoch.)
-- fold = "tiles": no DONE; a flag per (source, tile, part) in a region of its own (flag_div: half a
-- byte per element of m x n + 4 KB holds them: tiles are at least 64 x 64 elements, n >= 8).
-- atomic's config struct also has SMEM_RS, the consumer warps' f32 slices (gen/core/gemm.lua's
-- layout: none on one rank, the plain epilogue).
function F.derive(cfg)
  local tiles, atomic, bulk, mm = cfg.fold == "tiles", cfg.reduce == "atomic", cfg.comm == "tma", cfg.comm == "multimem"
  local lines = { "static constexpr bool FOLD_TILES = " .. tostring(tiles) .. ";",
                  "static constexpr bool MULTIMEM = " .. tostring(mm) .. ";",
                  "static constexpr bool REDUCER_PRODUCER = " .. tostring(cfg.reducer == "producer") .. ";" }
  if bulk then
    lines[#lines + 1] = string.format("static constexpr unsigned SMEM_RS = %d;   // the warps' f32 slices", gemm.layout(cfg).rs or 0)
    lines[#lines + 1] = "static constexpr bool ATOMIC = " .. tostring(atomic) .. ";"
  end
  return F.derive_as(cfg, { struct = "GemmRsCfg", body = bulk and "gemm_rs_bulk_wgmma" or "gemm_rs_wgmma",
    lines = lines,
    comm = { signals = { tiles and "tile" or "done" }, halves = 2, elem_bytes = 4, elems = { "m", "n" },
             divide = "m", flag_div = tiles and 2 or nil, scatter = atomic or nil, multimem = mm or nil,
             emulate = mm and cfg.fallback == "emulate" or nil } })
end

F.sizes = gemm.SIZES   -- m: all rows (rank r ends with m / ranks of them); k: this rank's share of K
F.key = gemm.KEY

-- The rule (gen/core/auto.lua): the GEMM's wave model for the per-rank problem, M x N x k with
-- C's rows cut into one shard per rank, each tiled on its own (as the kernel walks them).  The
-- model does not price the staging stores or the fold: they are the same for every schedule.
-- The kernel is generated for the world's size where that is several ranks.  One rank is also
-- what a caller with no count passes (`weft gen --auto`), and a kernel for one rank (the plain
-- GEMM's epilogue, no staging) refuses a larger world, so there ranks stays "any"; a one-rank job
-- sets ranks = 1 for the plain epilogue (allreduce_norm's rule does the same).
function F.auto_for(family)
  return function(shape, fixed, dev)
    local ranks = math.max(1, dev and dev.ranks or 1)
    local open = fixed.ranks == nil or fixed.ranks == "auto"
    return gemm.candidates(shape, fixed, dev, { family = family, shards = ranks,
                                                extra = open and ranks > 1 and { ranks = ranks } or nil })
  end
end
F.auto = F.auto_for("gemm_rs")

-- The GEMM's shapes, with the comm families' baseline (there is no cuBLAS twin of the fused op).
function F.run()
  local r = gemm.run_spec()
  r.baseline = "none"
  return r
end

return F
