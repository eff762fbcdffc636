-- expect: mode = "registers": must be one of "onchip", "tma", "stream"
return { family = "row_softmax", mode = "registers", max_cols = 8192 }
