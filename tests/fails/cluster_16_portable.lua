-- expect: cluster = 16: must be at most 8; up to 16 needs nonportable = true
return { family = "row_reduce", cluster = 16 }
