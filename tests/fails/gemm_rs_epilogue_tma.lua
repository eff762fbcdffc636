-- expect: epilogue = "tma": must be one of "direct"
-- the partial tiles leave as f32 from registers; the TMA-store epilogue is not built for gemm_rs
return { family = "gemm_rs", epilogue = "tma" }
