-- expect: op = "custom": comm = "multimem" with dtype = "f16": multimem.ld_reduce has no custom operator
return { family = "allreduce", dtype = "f16", algo = "two_shot", comm = "multimem",
         op = { combine = "fmaxf(a, b)", identity = "-1e30f" } }
