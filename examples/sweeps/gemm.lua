-- Autotune space for weft's GEMM (family gemm; weft tune): tile shape, ring depth,
-- consumer warpgroups, cooperative or ping-pong consumers, clusters of two sharing B by TMA
-- multicast, the epilogue (direct stores, or C through shared memory and TMA), and programmatic
-- dependent launch (which hides a launch's set-up under the previous one's tail: worth ~0.5 us,
-- 8 % at 1024^3), for a square, a tall-skinny and a small problem.  Combinations the generator refuses (accumulators per
-- thread, shared memory, pingpong's whole tiles) are pruned by its own rules.
--   build/weft tune examples/sweeps/gemm.lua --jobs 8
return {
  base = { family = "gemm", dtype = "bf16", b_layout = "row",
           tile = { m = 128, n = 256, k = 64 }, stages = 4, consumers = 2, group = 16 },
  space = {
    ["tile.m"] = { 64, 128 },
    ["tile.n"] = { 128, 256 },
    stages = { 3, 6 },
    consumers = { 1, 2 },
    mma = { "cooperative", "pingpong" },
    ["cluster.m"] = { 1, 2 },
    epilogue = { "direct", "tma" },
    pdl = { false, true },
  },
  shapes = {
    { m = 4096, n = 4096, k = 4096 },
    { m = 8192, n = 1024, k = 1024 },
    { m = 1024, n = 1024, k = 1024 },
  },
}
