-- expect: split_k_tail = true: unknown key for family "gemm_rs"
-- the split tail is family gemm's (one shard); gemm_rs has no such field
return { family = "gemm_rs", split_k = 2, split_k_tail = true }
