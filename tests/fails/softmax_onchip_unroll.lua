-- expect: unroll = 2: applies to mode = "stream" only; leave it 4
return { family = "row_softmax", mode = "onchip", max_cols = 8192, unroll = 2 }
