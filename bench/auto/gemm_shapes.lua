-- The GEMM rule's check (issue 18: the auto choice at least 0.97 of the best sweep config): a
-- sweep over the schedules gen/core/gemm.lua's rule chooses among, at eight shapes of the GEMM
-- issue's LLM set (bf16, B column-major as nn.Linear stores it): Llama-3-8B's gate/up (N 14336,
-- K 4096) and down (N 4096, K 14336) at M = 16, 1024 and 4096, and Llama-3-70B's QKV (N 10240,
-- K 8192) at M = 16 and 128.  `where` keeps what the rule ranks: pingpong only with 128-row
-- tiles, split_k only without a cluster (19 candidates per shape, 152 in all), each with the rule's ring: the deepest up to 6 stages that fits in
-- shared memory beside the TMA epilogue (and split-K's f32 partial tile), as gen/core/gemm.lua's
-- layout counts it.  pdl stays off here (the rule turns it on only under ~20 us; none of these).
--   build/weft tune bench/auto/gemm_shapes.lua --jobs 16 --iters 10 --budget 150 --db DB
-- then the rule's choice at the same shapes (bench/auto/gemm_open.lua leaves every knob open):
--   WEFT_AUTO_TABLE=none build/weft suggest bench/auto/gemm_open.lua 16x14336x4096 ...
local LIMIT = 232448   -- sm_90: 227 KB per block
local function smem(c, stages)
  local m, n = c.tile.m, c.tile.n
  local used = stages * (m + n) * 128 + 16 * stages + 16 + (c.split_k == 2 and m * n * 4 or 0)
  local rows = c.mma == "pingpong" and m or m // c.consumers
  return (used + 1023) // 1024 * 1024 + c.consumers * rows * n * 2 + 1024
end
return {
  base = { family = "gemm", dtype = "bf16", b_layout = "col", tile = { m = 128, n = 256, k = 64 },
           stages = 3, consumers = 2, epilogue = "tma", group = 16 },
  space = {
    ["tile.m"] = { 64, 128 },
    ["tile.n"] = { 128, 192, 256 },
    consumers = { 1, 2 },
    mma = { "cooperative", "pingpong" },
    ["cluster.n"] = { 1, 2 },
    split_k = { 1, 2 },
    stages = { 2, 3, 4, 5, 6 },
  },
  where = function(c)
    if c.mma == "pingpong" and (c.tile.m ~= 128 or c.tile.n ~= 128) then return false end
    if c.mma == "cooperative" and c.consumers ~= c.tile.m // 64 then return false end
    if c.split_k == 2 and (c.cluster.n ~= 1 or c.mma ~= "cooperative") then return false end
    -- the rule's ring: this depth fits and one more (up to 6) does not
    if smem(c, c.stages) > LIMIT or (c.stages < 6 and smem(c, c.stages + 1) <= LIMIT) then return false end
    return true
  end,
  shapes = {
    { m = 16, n = 14336, k = 4096 }, { m = 1024, n = 14336, k = 4096 }, { m = 4096, n = 14336, k = 4096 },
    { m = 16, n = 4096, k = 14336 }, { m = 1024, n = 4096, k = 14336 }, { m = 4096, n = 4096, k = 14336 },
    { m = 16, n = 10240, k = 8192 }, { m = 128, n = 10240, k = 8192 },
  },
}
