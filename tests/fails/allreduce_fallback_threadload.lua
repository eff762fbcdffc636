-- expect: fallback = "emulate": only comm = "multimem" has a fallback
return { family = "allreduce", comm = "threadload", fallback = "emulate" }
