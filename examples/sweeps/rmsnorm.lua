-- Autotune space for rmsnorm (weft tune) at the four target shapes: how a row is split (rows
-- per CTA for short rows, a cluster of CTAs for long ones), the block size, the register cap
-- (min_blocks) and the cluster exchange.  The generator prunes what does not fit in registers.
local SHAPE = {   -- dtype and residual of each target shape (bench/rmsnorm_torch.py)
  ["8192x4096"] = { dtype = "bf16" },
  ["16384x8192"] = { dtype = "bf16" },
  ["4096x16384"] = { dtype = "f32" },
  ["2048x5120"] = { dtype = "f16", residual = true },
}
return {
  base = { family = "rmsnorm", dtype = "bf16", eps = 1e-6 },
  space = {
    cluster = { 1, 2, 4, 8 },
    threads = { 128, 256, 512, 1024 },
    rows_per_cta = { 1, 2, 4, 8 },
    min_blocks = { 1, 2 },
    exchange = { "pull", "push" },
  },
  -- a cluster takes whole CTAs per row; with one CTA, push and pull are the same kernel
  where = function(c) return (c.cluster == 1 or c.rows_per_cta == 1) and (c.cluster > 1 or c.exchange == "pull") end,
  shapes = {
    { rows = 8192, cols = 4096 },
    { rows = 16384, cols = 8192 },
    { rows = 4096, cols = 16384 },
    { rows = 2048, cols = 5120 },
  },
  per_shape = function(s)
    local o = { max_cols = s.cols }
    for k, v in pairs(SHAPE[s.rows .. "x" .. s.cols]) do o[k] = v end
    return o
  end,
}
