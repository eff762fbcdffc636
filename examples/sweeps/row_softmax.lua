-- Autotune space for row_softmax (weft tune): the launch shape and cluster exchange, for a
-- short, a long and a very long row.  nonportable = true in the base allows cluster = 16; it
-- changes nothing for clusters of 8 or fewer but the kernel name.
return {
  base = { family = "row_softmax", dtype = "f32", mode = "onchip", nonportable = true },
  space = {
    cluster = { 1, 2, 4, 8, 16 },
    threads = { 256, 512, 1024 },
    min_blocks = { 1, 2 },
    exchange = { "pull", "push" },
    persistent = { false, true },
  },
  -- a cluster of one CTA exchanges nothing: push and pull are the same kernel there
  where = function(c) return c.cluster > 1 or c.exchange == "pull" end,
  shapes = {
    { rows = 8192, cols = 32768 },
    { rows = 2048, cols = 262144 },
    { rows = 32, cols = 1048576 },
  },
  -- rows up to 262144 columns stay on chip (max_cols = the row); longer ones stream
  per_shape = function(shape)
    if shape.cols > 262144 then return { mode = "stream", max_cols = 0 } end
    return { max_cols = shape.cols }
  end,
}
