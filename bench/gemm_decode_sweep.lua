-- Issue 19's decode sweep: the schedules for M = 1..256 at the linear layers of Llama-3-8B
-- (QKV 6144 x 4096, O 4096 x 4096, gate/up 14336 x 4096, down 4096 x 14336) and Llama-3-70B
-- (QKV 10240 x 8192, down 8192 x 28672), bf16, B column-major.  Tiles 64 or 128 rows by 64..256
-- columns, split_k 1..8 (a cluster of CTAs along K), each with the deepest ring up to 8 stages
-- that fits beside the TMA epilogue and split-K's f32 partial tile (gen/core/gemm.lua's layout).
--   build/weft tune bench/gemm_decode_sweep.lua --jobs 16 --iters 20 --db DB
local LIMIT = 232448   -- sm_90: 227 KB per block
local function smem(c, stages)
  local m, n = c.tile.m, c.tile.n
  local used = stages * (m + n) * 128 + 16 * stages + 16 + (c.split_k > 1 and m * n * 4 or 0)
  local rows = c.mma == "pingpong" and m or m // c.consumers
  return (used + 1023) // 1024 * 1024 + c.consumers * rows * n * 2 + 1024
end
local shapes = {}
for _, m in ipairs({ 1, 16, 64, 128, 256 }) do
  for _, nk in ipairs({ { 14336, 4096 }, { 4096, 14336 }, { 6144, 4096 }, { 4096, 4096 }, { 10240, 8192 }, { 8192, 28672 } }) do
    shapes[#shapes + 1] = { m = m, n = nk[1], k = nk[2] }
  end
end
return {
  base = { family = "gemm", dtype = "bf16", b_layout = "col", tile = { m = 128, n = 256, k = 64 },
           stages = 3, consumers = 2, epilogue = "tma", group = 16 },
  space = {
    ["tile.m"] = { 64, 128 },
    ["tile.n"] = { 64, 128, 192, 256 },
    consumers = { 1, 2 },
    mma = { "cooperative", "pingpong" },
    split_k = { 1, 2, 3, 4, 8 },
    stages = { 2, 3, 4, 5, 6, 7, 8 },
  },
  where = function(c)
    if c.mma == "pingpong" and (c.tile.m ~= 128 or c.tile.n ~= 128 or c.split_k > 1) then return false end
    if c.mma == "cooperative" and c.consumers ~= c.tile.m // 64 then return false end
    if c.tile.m == 128 and c.tile.n == 64 then return false end
    if smem(c, c.stages) > LIMIT or (c.stages < 8 and smem(c, c.stages + 1) <= LIMIT) then return false end
    return true
  end,
  shapes = shapes,
}
