-- the rule's first 4 candidates for row_softmax f32 cols=262144 rows=2048 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f32", family = "row_softmax" },
  space = { cluster = { 8 }, exchange = { "pull", "push" }, max_cols = { 262144 }, min_blocks = { 1 }, mode = { "onchip" }, persistent = { false, true }, threads = { 1024, 512 } },
  where = function(c) return (c.cluster == 8 and c.exchange == "push" and c.max_cols == 262144 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 8 and c.exchange == "push" and c.max_cols == 262144 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == false and c.threads == 1024) or (c.cluster == 8 and c.exchange == "pull" and c.max_cols == 262144 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 8 and c.exchange == "push" and c.max_cols == 262144 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 512) end,
  shapes = { { rows = 2048, cols = 262144 } },
}
