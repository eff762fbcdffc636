-- expect: any_n
-- any_n is family gemm's (its direct stores); the fused families keep N a multiple of 8.
return { family = "ag_gemm", any_n = true }
