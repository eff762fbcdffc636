-- expect: family = "row_reduc": must be one of "cluster_reduce", "row_reduce", "row_softmax"
-- A typo in the family name.
return { family = "row_reduc", threads = 256 }
