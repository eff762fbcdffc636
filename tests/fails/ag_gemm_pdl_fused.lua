-- expect: pdl = true: unknown key for family "ag_gemm"
-- A kernel that talks to other ranks starts with its own protocol; only the plain GEMM (family
-- gemm) launches early, so pdl is a key of that family alone.
return { family = "ag_gemm", variant = "fused", pdl = true }
