-- the rule's first 4 candidates for row_softmax f16 cols=151936 rows=1024 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f16", family = "row_softmax" },
  space = { cluster = { 2 }, exchange = { "pull", "push" }, max_cols = { 155648, 163840 }, min_blocks = { 1 }, mode = { "onchip" }, persistent = { false, true }, threads = { 1024, 512 } },
  where = function(c) return (c.cluster == 2 and c.exchange == "push" and c.max_cols == 163840 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 2 and c.exchange == "push" and c.max_cols == 163840 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == false and c.threads == 1024) or (c.cluster == 2 and c.exchange == "pull" and c.max_cols == 163840 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 2 and c.exchange == "push" and c.max_cols == 155648 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 512) end,
  shapes = { { rows = 1024, cols = 151936 } },
}
