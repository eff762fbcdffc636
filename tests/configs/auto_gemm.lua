-- tests/configs/auto_gemm.lua: a GEMM whose schedule auto chooses entirely (the cli.auto_device tests)
return { family = "gemm", dtype = "bf16", b_layout = "col" }
