-- expect: max_cols = 0: mode = "onchip" needs the longest row: max_cols = <cols>, or use mode = "stream"
return { family = "row_softmax", mode = "onchip", cluster = 2, threads = 512 }
