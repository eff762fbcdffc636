-- expect: max_cols = 0: mode = "tma" needs the longest row: max_cols = <cols>, or use mode = "stream"
return { family = "row_softmax", mode = "tma", cluster = 2 }
