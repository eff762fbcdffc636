-- expect: unroll = 3: must be one of 1, 2, 4, 8
return { family = "row_reduce", unroll = 3 }
