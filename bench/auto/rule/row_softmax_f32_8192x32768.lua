-- the rule's first 4 candidates for row_softmax f32 cols=32768 rows=8192 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f32", family = "row_softmax" },
  space = { cluster = { 1 }, max_cols = { 32768 }, min_blocks = { 1 }, mode = { "onchip" }, persistent = { false, true }, threads = { 1024, 512 } },
  where = function(c) return (c.cluster == 1 and c.max_cols == 32768 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == false and c.threads == 1024) or (c.cluster == 1 and c.max_cols == 32768 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 1 and c.max_cols == 32768 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == false and c.threads == 512) or (c.cluster == 1 and c.max_cols == 32768 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 512) end,
  shapes = { { rows = 8192, cols = 32768 } },
}
