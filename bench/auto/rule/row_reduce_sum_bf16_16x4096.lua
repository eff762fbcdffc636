-- the rule's first 4 candidates for row_reduce_sum bf16 cols=4096 rows=16 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "bf16", family = "row_reduce", op = "sum" },
  space = { cluster = { 1 }, min_blocks = { 2, 4 }, persistent = { false, true }, threads = { 256, 512 }, unroll = { 2 } },
  where = function(c) return (c.cluster == 1 and c.min_blocks == 4 and c.persistent == true and c.threads == 256 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 4 and c.persistent == false and c.threads == 256 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == true and c.threads == 512 and c.unroll == 2) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == false and c.threads == 512 and c.unroll == 2) end,
  shapes = { { rows = 16, cols = 4096 } },
}
