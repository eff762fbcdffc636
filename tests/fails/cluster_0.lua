-- expect: cluster = 0: must be an integer in 1..16
return { family = "row_softmax", mode = "stream", cluster = 0 }
