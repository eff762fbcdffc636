-- expect: op = "avg": must be one of "sum", "max", "min", "prod", or a table { combine = "<CUDA expression of a, b>", identity = "<CUDA expression>" }
return { family = "row_reduce", op = "avg" }
