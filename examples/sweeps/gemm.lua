-- Autotune space for weft's GEMM (ag_gemm, variant = "gemm"; weft tune): tile shape, ring depth,
-- consumer warpgroups and raster group, for a square, a tall-skinny and a small problem.  Tiles
-- that do not fit (accumulators, shared memory) are pruned by the generator's own rules.
--   build/weft tune examples/sweeps/gemm.lua --jobs 8
return {
  base = { family = "ag_gemm", variant = "gemm", dtype = "bf16", b_layout = "row",
           tile = { m = 128, n = 256, k = 64 }, stages = 4, consumers = 2, group = 16 },
  space = {
    ["tile.m"] = { 64, 128, 256 },
    ["tile.n"] = { 128, 256 },
    stages = { 3, 4, 5, 6 },
    consumers = { 1, 2 },
    group = { 8, 16 },
  },
  shapes = {
    { m = 4096, n = 4096, k = 4096 },
    { m = 8192, n = 1024, k = 1024 },
    { m = 1024, n = 1024, k = 1024 },
  },
}
