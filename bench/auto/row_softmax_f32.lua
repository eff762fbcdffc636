-- bench/auto/row_softmax_f32.lua: issue 18's full sweep of row_softmax, f32, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS, L = 0, 0, 0
local SMS = 132
local V = 4          -- elements per 16-byte vector
-- each shape's level: the higher, the narrower its space (grid.py's LEVELS: what a candidate costs)
local LEVEL = { ["1x4096"] = 1, ["1x128256"] = 1, ["16x50257"] = 1, ["16x262144"] = 1, ["128x32000"] = 1, ["128x151936"] = 1, ["1024x4096"] = 1, ["1024x128256"] = 2, ["4096x50257"] = 2, ["8192x32768"] = 3, ["2048x262144"] = 3, ["32x1048576"] = 2 }
-- the smallest cluster (a power of two, at most 16) that holds the row when each CTA holds
-- `vecs` 16-byte vectors (what the family's register budget allows at its best block size)
local function cmin(vecs)
  local c = 1
  while c < 16 and V * c * vecs < COLS do c = c * 2 end
  return c
end
return {
  base = { family = "row_softmax", dtype = "f32", nonportable = true },
  space = {
    mode = { "onchip", "tma", "stream" },
    cluster = { 1, 2, 4, 8, 16 },
    threads = { 128, 256, 512, 1024 },
    min_blocks = { 1, 2 },
    persistent = { false, true },
    exchange = { "pull", "push" },
    prefetch = { false, true },
    unroll = { 2, 4, 8 },
  },
  where = function(c)
    if c.cluster == 1 and c.exchange == "push" then return false end   -- nothing to exchange
    if (c.mode == "stream") ~= (COLS > 262144) then return false end   -- rows past 256K stream
    if c.mode ~= "stream" and c.unroll ~= 4 then return false end      -- unroll is stream's
    if c.mode ~= "onchip" and c.prefetch then return false end
    -- one wave: persistent or not, the same launch; keep the persistent one (the rule's pick)
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end
    if c.threads == 128 and COLS > 65536 then return false end
    if c.min_blocks > 1 and (c.threads > 512 or c.mode == "tma") then return false end
    -- clusters from the smallest that holds the row in registers (a CTA holds at most ~13K
    -- vectors: 26 a thread at 512 threads) to 2x that; few rows may spread to 16
    local lo = cmin(13312)
    if c.mode ~= "stream" and c.cluster > 2 * lo and not (ROWS <= 16 and c.cluster <= 16) then return false end
    if c.mode == "stream" and ROWS * c.cluster < 2 * SMS and c.cluster < 16 then return false end
    -- the next row is prefetched (tma, prefetch) only where a CTA loops over rows
    if (c.mode == "tma" or c.prefetch) and not c.persistent then return false end
    local span = c.cluster * c.threads * V
    if c.mode ~= "stream" then
      if span > COLS then return false end                              -- idle threads
      local pt = (COLS + span - 1) // span                              -- vectors per thread
      if c.prefetch and (pt > 8 or ROWS * c.cluster <= SMS) then return false end
      if c.mode == "tma" and pt > 16 then return false end
    end
    if L >= 1 and (c.threads < 256 and ROWS > 4096 or c.prefetch and c.mode == "onchip" and COLS > 65536) then
      return false
    end
    if L >= 2 then
      if c.min_blocks > 1 or c.prefetch or c.cluster > 2 * lo then return false end
      if c.mode == "tma" and not c.persistent then return false end
    end
    if L >= 3 then
      if c.mode ~= "onchip" or c.threads < 512 or c.cluster < lo or not c.persistent and ROWS * c.cluster > SMS then
        return false
      end
      if c.cluster > 1 and c.exchange == "pull" then return false end
    end
    if L >= 4 and c.threads ~= 1024 then return false end
    return true
  end,
  shapes = {
    { rows = 1, cols = 4096 },
    { rows = 1, cols = 128256 },
    { rows = 16, cols = 50257 },
    { rows = 16, cols = 262144 },
    { rows = 128, cols = 32000 },
    { rows = 128, cols = 151936 },
    { rows = 1024, cols = 4096 },
    { rows = 1024, cols = 128256 },
    { rows = 4096, cols = 50257 },
    { rows = 8192, cols = 32768 },
    { rows = 2048, cols = 262144 },
    { rows = 32, cols = 1048576 },
  },
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return { max_cols = s.cols <= 262144 and s.cols or 0 }
  end,
}
