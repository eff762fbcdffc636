-- expect: algo = "ring": must be one of "one_shot", "two_shot"
return { family = "allreduce", algo = "ring" }
