-- gen/families/gemm.lua: weft's GEMM on one GPU, C[M,N] = A[M,K] . B (bf16 or f16 in, f32
-- accumulate): a persistent, warp-specialised TMA + WGMMA kernel, measured against cuBLASLt.
-- It is the compute core of ag_gemm's fused kernel and gather_then_gemm's second launch; the
-- fields, rules, layout and config struct are gen/core/gemm.lua's, the device code
-- templates/weft/gemm_kernel.cuh (through templates/gemm.cu).
local common = require("gen.core.common")
local gemm = require("gen.core.gemm")

local F = {
  name = "gemm",
  template = "templates/gemm.cu",
  doc = "C = A . B on one GPU (TMA + WGMMA, persistent); the GEMM inside ag_gemm",
}

local G = gemm.fields()

F.fields = {
  common.dtype({ "f16", "bf16" }, "bf16"),
  G.b_layout,
  gemm.tile_field(),
  G.stages, G.consumers, G.mma_kturns, G.cluster, G.split_k, G.split_k_tail, G.epilogue, G.group,
  { name = "pdl", kind = "bool", default = false, tag = "pdl",
    doc = "programmatic dependent launch (the kernel may start while the previous one in its stream finishes; it "
      .. "sets up its shared memory, then waits for it before touching global memory)" },
  G.swap_ab, G.l2_promotion, G.stream_k, G.any_n,
}

F.check = gemm.check_auto_tile

function F.derive(cfg)
  local dt = cfg.dtype
  local args = gemm.cab_args(dt)
  local tmaps = gemm.tmaps_ab(cfg, "m")
  local epi_tma = cfg.epilogue == "tma"
  -- (column-major B: a consumer's columns -- the tile's, or cooperative_n's half -- may end in a
  -- chunk narrower than 64)
  local tail = gemm.wgmma_n(cfg) % 64
  if epi_tma then   -- the epilogue's map over C: each consumer warpgroup's rows x 64 columns per box
    tmaps[3] = { name = "tc", source = "c", dtype = dt, swizzle = 128, dims = { "n", "m" }, box = { 64, gemm.epi_rows(cfg) } }
    if tail > 0 then   -- ... and its last, narrow chunk (dense rows of tail * 2 bytes)
      tmaps[4] = { name = "tct", source = "c", dtype = dt, swizzle = 0, dims = { "n", "m" },
                   box = { tail, gemm.epi_rows(cfg) } }
    end
  end
  local layout = gemm.layout(cfg)
  local threads = gemm.threads(cfg)
  local csize = cfg.cluster.m * cfg.cluster.n * cfg.split_k
  local uses_ws = cfg.stream_k or gemm.flat_l2(cfg)   -- stream-K's partials, or the flat sum's slices
  local big = common.INT_MAX
  return {
    values = { threads = threads,
               body = string.format("weft::gemm_wgmma<GemmCfg>(c, (long)m, (long)n, (long)k, ta, tb, %s, %s%s);",
                 epi_tma and "&tc" or "nullptr", epi_tma and tail > 0 and "&tct" or "nullptr", uses_ws and ", ws" or ""),
               wgmma = gemm.wgmma_struct(gemm.wgmma_n(cfg), dt, cfg.b_layout == "row"),
               cfg = gemm.cfg_struct("GemmCfg", cfg, layout) },
    block = { threads, 1, 1 },
    cluster = { csize, 1, 1 },
    pdl = cfg.pdl,
    smem = layout.smem,
    layout = layout,
    smem_field = "stages",
    smem_hint = gemm.smem_hint(cfg),
    args = args,
    tmaps = tmaps,
    -- stream-K, the flat sum through L2: the runtime's workspace for the launch's stream
    -- (weft/gemm_streamk.cuh's layout)
    workspace = uses_ws and { header = gemm.STREAMK_HEADER, flags = gemm.STREAMK_MAX_CTAS,
                                   per_cta = gemm.streamk_slot(cfg) } or nil,
    grid = gemm.grid(cfg),
    -- K: the rows of A (and of column-major B) are K long, and TMA loads rows of 16-byte
    -- multiples.  N: the same for row-major B's rows and for C's through the TMA epilogue; with
    -- any_n (column-major B, direct stores) N is only a count of rows and columns (a vocabulary
    -- of 50257, a head of one output); the hint names what takes it
    limits = { { arg = "m", min = 1, max = big }, { arg = "k", min = 8, max = big, multiple = 8, intrinsic = true },
               cfg.any_n == true and { arg = "n", min = 1, max = big }
                 or { arg = "n", min = 8, max = big, multiple = 8, hint = gemm.any_n_hint(cfg) } },
  }
end

F.sizes = gemm.SIZES
F.key = gemm.KEY

-- The rule (gen/core/auto.lua): gen/core/gemm.lua's wave-count model ranks tile, consumers, mma,
-- cluster, split_k and epilogue (stages: the deepest ring that fits, up to 8; pdl for launches
-- of under ~20 us), around whatever the user fixed.  max: the list's length (gen/core/gemm.lua
-- candidates' default, 8, where not given; the bench's rule tools ask for 10).
-- rule_opts(extra): the options this family's rule passes gen/core/gemm.lua (candidates, ranked),
-- a fresh table with `extra`'s fields added (the bench and the tests rank with the same).
function F.rule_opts(extra)
  local o = { family = "gemm", has_pdl = true, has_tail = true }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end
function F.auto(shape, fixed, dev, max)
  return gemm.candidates(shape, fixed, dev, F.rule_opts({ max = max }))
end

-- A measured row from another shape (auto's nearest) is not reused: a tile count that filled the
-- GPU's waves at one shape rarely does at another, and at decode the model cannot tell (every
-- schedule sits on the copy floor).  Measured over the 16 shapes off the published set, the rule
-- alone was 0.865 of cuBLASLt as a geomean, the nearest table rows 0.828 (bench/RESULTS.md "GEMM
-- at every shape, third session").  A row at this very shape is still used as measured.
function F.fit() return nil end

-- What the tools need (gen/core/weft.lua's run_spec): the GEMM's shapes (gen/core/gemm.lua).
function F.run() return gemm.run_spec() end

return F
