-- bench/auto/row_softmax_bf16.lua: issue 18's full sweep of row_softmax, bf16, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS = 0, 0
local SMS = 132
local V = 8          -- elements per 16-byte vector
return {
  base = { family = "row_softmax", dtype = "bf16", nonportable = true },
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
    if c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end   -- one wave anyway
    local span = c.cluster * c.threads * V
    if c.mode ~= "stream" then
      if span > COLS then return false end                              -- idle threads
      local pt = (COLS + span - 1) // span                              -- vectors per thread
      if c.prefetch and (pt > 8 or ROWS * c.cluster <= SMS) then return false end
      if c.mode == "tma" and pt > 16 then return false end
      if c.mode == "onchip" and pt < 2 and c.threads > 256 then return false end
    end
    if ROWS >= 4096 and c.cluster > 4 and COLS <= 151936 then return false end
    if ROWS >= 1024 and c.threads == 128 then return false end
    if ROWS * COLS * 2 > (1 << 30) then
      if c.threads < 256 or c.min_blocks > 1 and c.threads > 512 then return false end
      if c.mode == "tma" and c.cluster < 4 then return false end
      if c.prefetch then return false end
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
    { rows = 16384, cols = 128256 },
    { rows = 4096, cols = 262144 },
    { rows = 4096, cols = 128256 },
  },
  per_shape = function(s)
    ROWS, COLS = s.rows, s.cols
    return { max_cols = s.cols <= 262144 and s.cols or 0 }
  end,
}
