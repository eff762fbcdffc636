-- expect: fold = "tiles": must be one of "after"
-- the gather pairs blocks by the fold's split of the rows, which a per-tile fold does not have
return { family = "gemm_ar", fold = "tiles" }
