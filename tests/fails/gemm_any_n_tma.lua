-- expect: any_n = true: any N is stored by the direct epilogue from column-major B: b_layout = "col" and epilogue = "direct" (it is b_layout = "col", epilogue = "tma")
-- The TMA epilogue stores C's rows (N long) in 16-byte multiples; only the direct stores take any N.
return { family = "gemm", b_layout = "col", epilogue = "tma", any_n = true }
