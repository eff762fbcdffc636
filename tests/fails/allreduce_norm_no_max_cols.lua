-- expect: max_cols = 0: needs the longest row the kernel takes: max_cols = <hidden size>
return { family = "allreduce_norm", dtype = "bf16" }
