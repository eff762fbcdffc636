-- bench/auto/row_reduce_sum_f32.lua: issue 18's full sweep of row_reduce op = sum, f32, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS, L = 0, 0, 0
local SMS = 132
local V = 4          -- elements per 16-byte vector
-- each shape's level: the higher, the narrower its space (grid.py's LEVELS: what a candidate costs)
local LEVEL = { ["1x50257"] = 1, ["1x262144"] = 1, ["16x32000"] = 1, ["16x151936"] = 1, ["128x4096"] = 1, ["128x128256"] = 1, ["1024x50257"] = 1, ["1024x262144"] = 3, ["4096x32000"] = 2, ["16384x4096"] = 1, ["8192x32768"] = 2, ["2048x262144"] = 3, ["32x1048576"] = 2 }
-- the smallest cluster (a power of two, at most 16) that holds the row when each CTA holds
-- `vecs` 16-byte vectors (what the family's register budget allows at its best block size)
local function cmin(vecs)
  local c = 1
  while c < 16 and V * c * vecs < COLS do c = c * 2 end
  return c
end
return {
  base = { family = "row_reduce", dtype = "f32", op = "sum", nonportable = true },
  space = {
    cluster = { 1, 2, 4, 8, 16 },
    threads = { 128, 256, 512, 1024 },
    unroll = { 1, 2, 4, 8 },
    min_blocks = { 1, 2, 4, 8 },
    persistent = { false, true },
    exchange = { "pull", "push" },
  },
  where = function(c)
    if c.cluster == 1 and c.exchange == "push" then return false end
    if c.threads * c.min_blocks > 2048 then return false end
    if c.min_blocks > 1 and c.threads * c.min_blocks < 1024 then return false end   -- half an SM or more
    if c.unroll == 1 then return false end
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end   -- one wave: as above
    if c.cluster * c.threads * V * c.unroll > 2 * COLS then return false end   -- loads past the row
    if c.cluster > 1 and ROWS >= 1024 and c.cluster > 4 then return false end  -- rows enough for every SM
    -- few rows: spread them over more CTAs, while a doubled cluster still has a row to read
    if c.cluster < 16 and ROWS * c.cluster * 4 < SMS and 2 * c.cluster * 128 * V * 2 <= COLS then return false end
    if c.exchange == "push" and (ROWS > 16 or c.cluster < 8) then return false end   -- a wide combine, few rows
    -- clusters up to 4x the smallest that spreads the rows over the SMs
    local spread = 1
    while spread < 16 and ROWS * spread * 4 < SMS do spread = spread * 2 end
    if c.cluster > 4 * spread then return false end
    if L >= 1 and (c.threads < 256 and c.min_blocks == 2 or c.unroll < 4 and COLS > 16384) then return false end
    if c.min_blocks > 1 and c.threads >= 512 and c.threads * c.min_blocks > 1024 then return false end
    if ROWS >= 1024 and c.cluster > 2 and COLS <= 65536 then return false end
    local wide = COLS > 16384   -- a short row takes 256 threads x 4 vectors in a pass
    if L >= 2 and (c.unroll < 4 or c.threads < (wide and 512 or 256) and not (c.threads == 128 and c.min_blocks == 1)
                   or c.min_blocks > 2) then return false end
    if L >= 3 then
      if c.threads ~= (wide and 512 or 256) or c.min_blocks ~= 2048 // c.threads // 2 or c.unroll ~= (wide and 8 or 4) then
        return false
      end
      if c.cluster ~= 1 and c.cluster ~= (COLS > 65536 and 4 or 2) then return false end
    end
    if L >= 4 and not c.persistent then return false end
    return true
  end,
  shapes = {
    { rows = 1, cols = 50257 },
    { rows = 1, cols = 262144 },
    { rows = 16, cols = 32000 },
    { rows = 16, cols = 151936 },
    { rows = 128, cols = 4096 },
    { rows = 128, cols = 128256 },
    { rows = 1024, cols = 50257 },
    { rows = 1024, cols = 262144 },
    { rows = 4096, cols = 32000 },
    { rows = 16384, cols = 4096 },
    { rows = 8192, cols = 32768 },
    { rows = 2048, cols = 262144 },
    { rows = 32, cols = 1048576 },
  },
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return { op = "sum" }
  end,
}
