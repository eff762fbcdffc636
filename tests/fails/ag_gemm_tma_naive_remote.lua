-- expect: comm = "tma": variant = "naive_remote" takes comm = threadload
return { family = "ag_gemm", variant = "naive_remote", comm = "tma" }
