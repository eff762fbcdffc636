-- bench/auto/row_reduce_max_f32.lua: issue 18's full sweep of row_reduce op = max, f32, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS = 0, 0
local SMS = 132
local V = 4          -- elements per 16-byte vector
return {
  base = { family = "row_reduce", dtype = "f32", op = "max", nonportable = true },
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
    if c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end
    if c.cluster * c.threads * V * c.unroll > 2 * COLS then return false end   -- loads past the row
    if ROWS * c.cluster > 64 * SMS and c.cluster > 1 then return false end    -- rows enough for every SM
    if c.unroll == 1 and COLS > 8192 then return false end
    if c.exchange == "push" and ROWS > SMS then return false end
    if ROWS * COLS * 4 > (1 << 30) then
      if c.unroll < 4 or c.threads < 256 or c.cluster > 4 then return false end
    end
    return true
  end,
  shapes = {
    { rows = 1, cols = 32000 },
    { rows = 1, cols = 151936 },
    { rows = 16, cols = 4096 },
    { rows = 16, cols = 128256 },
    { rows = 128, cols = 50257 },
    { rows = 128, cols = 262144 },
    { rows = 1024, cols = 32000 },
    { rows = 1024, cols = 151936 },
    { rows = 4096, cols = 4096 },
    { rows = 4096, cols = 128256 },
    { rows = 16384, cols = 50257 },
  },
  per_shape = function(s)
    ROWS, COLS = s.rows, s.cols
    return { op = "max" }
  end,
}
