-- expect: comm = "tma": must be one of "threadload", "multimem"
return { family = "all_gather", comm = "tma" }
