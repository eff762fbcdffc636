-- expect: op = "prod": comm = "multimem" with dtype = "bf16": multimem.ld_reduce has no prod
-- expect: it reduces max, min, sum
return { family = "allreduce", dtype = "bf16", op = "prod", algo = "two_shot", comm = "multimem" }
