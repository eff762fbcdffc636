-- expect: any_n = true: any N is stored by the direct epilogue from column-major B: b_layout = "col" and epilogue = "direct" (it is b_layout = "row", epilogue = "direct")
-- Row-major B's rows are N long (TMA loads 16-byte multiples), so only column-major B takes any N.
return { family = "gemm", any_n = true }
