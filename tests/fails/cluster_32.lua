-- expect: cluster = 32: must be an integer in 1..16
return { family = "row_reduce", cluster = 32, nonportable = true }
