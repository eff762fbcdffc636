-- expect: pdl = true: applies to variant = "gemm" only (the others wait on their ranks' signals); leave it false
-- A kernel that talks to other ranks starts with its own protocol; only the plain GEMM launches early.
return { family = "ag_gemm", variant = "fused", pdl = true }
