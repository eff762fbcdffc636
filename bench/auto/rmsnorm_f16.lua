-- bench/auto/rmsnorm_f16.lua: issue 18's full sweep of rmsnorm, f16, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS, L = 0, 0, 0
local SMS = 132
local V = 8          -- elements per 16-byte vector
-- each shape's level: the higher, the narrower its space (grid.py's LEVELS: what a candidate costs)
local LEVEL = { ["1x32000"] = 1, ["1x151936"] = 1, ["16x4096"] = 1, ["16x128256"] = 1, ["128x50257"] = 1, ["128x262144"] = 2, ["1024x32000"] = 1, ["1024x151936"] = 3, ["4096x4096"] = 1, ["4096x128256"] = 4 }
-- the smallest cluster (a power of two, at most 16) that holds the row when each CTA holds
-- `vecs` 16-byte vectors (what the family's register budget allows at its best block size)
local function cmin(vecs)
  local c = 1
  while c < 16 and V * c * vecs < COLS do c = c * 2 end
  return c
end
return {
  base = { family = "rmsnorm", dtype = "f16", residual = false, eps = 1e-6, nonportable = true },
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
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks * c.rows_per_cta then return false end
    local lo = cmin(6656)                                         -- the row in one cluster's registers
    if c.cluster > math.max(4, 2 * lo) then return false end
    if L >= 1 and c.threads < 256 and COLS > 8192 then return false end
    if L >= 2 and (c.threads < 256 or c.rows_per_cta > 2 or c.min_blocks > 1) then return false end
    if L >= 3 then
      if c.threads > 512 or c.rows_per_cta > 1 or c.persistent then return false end
      if c.cluster > 1 and c.exchange == "pull" then return false end
    end
    if L >= 4 and c.threads ~= 512 then return false end
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
  },
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return { max_cols = s.cols, residual = false }
  end,
}
