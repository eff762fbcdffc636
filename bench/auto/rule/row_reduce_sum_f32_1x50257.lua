-- the rule's first 4 candidates for row_reduce_sum f32 cols=50257 rows=1 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f32", family = "row_reduce", op = "sum" },
  space = { cluster = { 16 }, exchange = { "pull", "push" }, min_blocks = { 2, 4 }, nonportable = { true }, persistent = { false, true }, threads = { 256, 512 }, unroll = { 2, 4 } },
  where = function(c) return (c.cluster == 16 and c.exchange == "pull" and c.min_blocks == 4 and c.nonportable == true and c.persistent == true and c.threads == 256 and c.unroll == 4) or (c.cluster == 16 and c.exchange == "pull" and c.min_blocks == 4 and c.nonportable == true and c.persistent == false and c.threads == 256 and c.unroll == 4) or (c.cluster == 16 and c.exchange == "push" and c.min_blocks == 4 and c.nonportable == true and c.persistent == true and c.threads == 256 and c.unroll == 4) or (c.cluster == 16 and c.exchange == "pull" and c.min_blocks == 2 and c.nonportable == true and c.persistent == true and c.threads == 512 and c.unroll == 2) end,
  shapes = { { rows = 1, cols = 50257 } },
}
