-- the rule's first 4 candidates for rmsnorm_res f32 cols=32000 rows=16 (bench/auto/rule_sweeps.py)
return {
  base = { dtype = "f32", eps = 1e-06, family = "rmsnorm", residual = true },
  space = { cluster = { 4 }, exchange = { "pull", "push" }, max_cols = { 32768 }, min_blocks = { 1 }, persistent = { false, true }, rows_per_cta = { 1 }, threads = { 256, 512 } },
  where = function(c) return (c.cluster == 4 and c.exchange == "pull" and c.max_cols == 32768 and c.min_blocks == 1 and c.persistent == true and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 4 and c.exchange == "pull" and c.max_cols == 32768 and c.min_blocks == 1 and c.persistent == false and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 4 and c.exchange == "push" and c.max_cols == 32768 and c.min_blocks == 1 and c.persistent == true and c.rows_per_cta == 1 and c.threads == 256) or (c.cluster == 4 and c.exchange == "pull" and c.max_cols == 32768 and c.min_blocks == 1 and c.persistent == true and c.rows_per_cta == 1 and c.threads == 512) end,
  shapes = { { rows = 16, cols = 32000 } },
}
