-- expect: dtype = "f16": must be one of "f32"
-- cluster_reduce is 32-bit only.
return { family = "cluster_reduce", dtype = "f16" }
