-- expect: max_cols = 4096: applies to modes "onchip" and "tma" only; leave it 0 with mode = "stream"
return { family = "row_softmax", mode = "stream", max_cols = 4096 }
