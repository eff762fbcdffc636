-- the rule's first 4 candidates for row_reduce_max f16 cols=32000 rows=16 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f16", family = "row_reduce", op = "max" },
  space = { cluster = { 4 }, exchange = { "pull", "push" }, min_blocks = { 2, 4 }, persistent = { false, true }, threads = { 256, 512 }, unroll = { 2, 4 } },
  where = function(c) return (c.cluster == 4 and c.exchange == "pull" and c.min_blocks == 4 and c.persistent == true and c.threads == 256 and c.unroll == 4) or (c.cluster == 4 and c.exchange == "pull" and c.min_blocks == 4 and c.persistent == false and c.threads == 256 and c.unroll == 4) or (c.cluster == 4 and c.exchange == "push" and c.min_blocks == 4 and c.persistent == true and c.threads == 256 and c.unroll == 4) or (c.cluster == 4 and c.exchange == "pull" and c.min_blocks == 2 and c.persistent == true and c.threads == 512 and c.unroll == 2) end,
  shapes = { { rows = 16, cols = 32000 } },
}
