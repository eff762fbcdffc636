-- expect: algo = "one_shot": comm = "multimem" needs algo = "two_shot"
return { family = "allreduce", dtype = "bf16", op = "sum", algo = "one_shot", comm = "multimem" }
