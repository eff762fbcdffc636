-- expect: fold = "tiles": reduce = "atomic" adds every tile into one f32 sum as it arrives
-- expect: use fold = "after"
return { family = "gemm_rs", reduce = "atomic", fold = "tiles" }
