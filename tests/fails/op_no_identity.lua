-- expect: op = { combine = "fmaxf(a, b)" }: custom op needs identity = "<CUDA expression>"
return { family = "row_reduce", op = { combine = "fmaxf(a, b)" } }
