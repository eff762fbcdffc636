-- the rule's first 4 candidates for row_softmax bf16 cols=128256 rows=4096 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "bf16", family = "row_softmax" },
  space = { cluster = { 2 }, exchange = { "pull", "push" }, max_cols = { 131072 }, min_blocks = { 1 }, mode = { "onchip" }, persistent = { false, true }, threads = { 1024, 512 } },
  where = function(c) return (c.cluster == 2 and c.exchange == "push" and c.max_cols == 131072 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 2 and c.exchange == "push" and c.max_cols == 131072 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == false and c.threads == 1024) or (c.cluster == 2 and c.exchange == "pull" and c.max_cols == 131072 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 1024) or (c.cluster == 2 and c.exchange == "push" and c.max_cols == 131072 and c.min_blocks == 1 and c.mode == "onchip" and c.persistent == true and c.threads == 512) end,
  shapes = { { rows = 4096, cols = 128256 } },
}
