-- expect: schedule = "rank_order": variant = "gemm" has no shards; leave it "ring"
return { family = "ag_gemm", variant = "gemm", schedule = "rank_order" }
