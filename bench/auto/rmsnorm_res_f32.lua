-- bench/auto/rmsnorm_res_f32.lua: issue 18's full sweep of rmsnorm residual = true, f32, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS = 0, 0
local SMS = 132
local V = 4          -- elements per 16-byte vector
return {
  base = { family = "rmsnorm", dtype = "f32", residual = true, eps = 1e-6, nonportable = true },
  space = {
    cluster = { 1, 2, 4, 8, 16 },
    threads = { 128, 256, 512, 1024 },
    rows_per_cta = { 1, 2, 4, 8 },
    min_blocks = { 1, 2 },
    persistent = { false, true },
    exchange = { "pull", "push" },
  },
  where = function(c)
    if c.cluster > 1 and c.rows_per_cta > 1 then return false end     -- a cluster takes whole CTAs
    if c.cluster == 1 and c.exchange == "push" then return false end
    local group = c.threads // c.rows_per_cta
    if c.cluster * group * V > COLS then return false end               -- idle threads
    if c.rows_per_cta > 1 and (ROWS < SMS * c.rows_per_cta or COLS > 16384) then return false end
    if c.persistent and ROWS * c.cluster <= SMS * c.min_blocks * c.rows_per_cta then return false end
    if ROWS >= 1024 and c.cluster > 4 then return false end
    if ROWS * COLS * 4 > (1 << 30) then
      if c.threads < 256 or c.rows_per_cta > 2 then return false end
    end
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
    { rows = 4096, cols = 151936 },
    { rows = 16384, cols = 4096 },
  },
  per_shape = function(s)
    ROWS, COLS = s.rows, s.cols
    return { max_cols = s.cols, residual = true }
  end,
}
