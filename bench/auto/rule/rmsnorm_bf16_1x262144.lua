-- the rule's first 4 candidates for rmsnorm bf16 cols=262144 rows=1 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "bf16", eps = 1e-06, family = "rmsnorm", residual = false },
  space = { cluster = { 16 }, exchange = { "pull", "push" }, max_cols = { 262144 }, min_blocks = { 1, 2 }, nonportable = { true }, persistent = { false, true }, rows_per_cta = { 1 }, threads = { 256, 512 } },
  where = function(c) return (c.cluster == 16 and c.exchange == "pull" and c.max_cols == 262144 and c.min_blocks == 2 and c.nonportable == true and c.persistent == true and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 16 and c.exchange == "pull" and c.max_cols == 262144 and c.min_blocks == 2 and c.nonportable == true and c.persistent == false and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 16 and c.exchange == "push" and c.max_cols == 262144 and c.min_blocks == 2 and c.nonportable == true and c.persistent == true and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 16 and c.exchange == "pull" and c.max_cols == 262144 and c.min_blocks == 1 and c.nonportable == true and c.persistent == true and c.rows_per_cta == 1 and c.threads == 512) end,
  shapes = { { rows = 1, cols = 262144 } },
}
