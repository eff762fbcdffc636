-- the rule's first 4 candidates for row_reduce_sum bf16 cols=128256 rows=4096 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "bf16", family = "row_reduce", op = "sum" },
  space = { cluster = { 1 }, min_blocks = { 1, 2 }, persistent = { false, true }, threads = { 1024, 512 }, unroll = { 8 } },
  where = function(c) return (c.cluster == 1 and c.min_blocks == 2 and c.persistent == false and c.threads == 512 and c.unroll == 8) or (c.cluster == 1 and c.min_blocks == 2 and c.persistent == true and c.threads == 512 and c.unroll == 8) or (c.cluster == 1 and c.min_blocks == 1 and c.persistent == false and c.threads == 1024 and c.unroll == 8) or (c.cluster == 1 and c.min_blocks == 1 and c.persistent == true and c.threads == 1024 and c.unroll == 8) end,
  shapes = { { rows = 4096, cols = 128256 } },
}
