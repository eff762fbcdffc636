-- expect: family = nil: must be one of "cluster_reduce", "row_reduce", "row_softmax"
-- No family at all.
return { dtype = "f32", op = "sum", threads = 256 }
