-- the rule's first 4 candidates for row_reduce_sum f16 cols=50257 rows=4096 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f16", family = "row_reduce", op = "sum" },
  space = { cluster = { 1 }, min_blocks = { 2, 4 }, persistent = { false, true }, threads = { 256, 512 }, unroll = { 4, 8 } },
  where = function(c) return (c.cluster == 1 and c.min_blocks == 4 and c.persistent == false and c.threads == 256 and c.unroll == 8) or (c.cluster == 1 and c.min_blocks == 4 and c.persistent == true and c.threads == 256 and c.unroll == 8) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == false and c.threads == 512 and c.unroll == 4) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == true and c.threads == 512 and c.unroll == 4) end,
  shapes = { { rows = 4096, cols = 50257 } },
}
