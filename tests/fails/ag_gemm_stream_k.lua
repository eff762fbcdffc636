-- expect: stream_k
-- Stream-K is family gemm's (its workspace is the runtime's per stream); the fused families have no such field.
return { family = "ag_gemm", stream_k = true }
