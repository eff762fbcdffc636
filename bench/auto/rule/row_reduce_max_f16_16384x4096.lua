-- the rule's first 4 candidates for row_reduce_max f16 cols=4096 rows=16384 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f16", family = "row_reduce", op = "max" },
  space = { cluster = { 1 }, min_blocks = { 2, 4 }, persistent = { false, true }, threads = { 256, 512 }, unroll = { 2 } },
  where = function(c) return (c.cluster == 1 and c.min_blocks == 4 and c.persistent == false and c.threads == 256 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 4 and c.persistent == true and c.threads == 256 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == false and c.threads == 512 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == true and c.threads == 512 and c.unroll == 2) end,
  shapes = { { rows = 16384, cols = 4096 } },
}
