-- expect: epilogue = "tma": must be one of "direct"
return { family = "gemm_ar", epilogue = "tma" }
