-- expect: comm = "multimem" with dtype = "bf16": multimem.ld_reduce has no custom operator; it reduces max, min, sum
return { family = "reduce_scatter", dtype = "bf16", comm = "multimem", op = { combine = "fmaxf(fabsf(a), fabsf(b))", identity = "0.0f" } }
