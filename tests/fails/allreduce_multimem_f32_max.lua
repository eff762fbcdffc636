-- expect: op = "max": comm = "multimem" with dtype = "f32": multimem.ld_reduce has no max
-- expect: it reduces sum
-- The switch reduces f32 only with add; max and min exist for the 16-bit types alone.
return { family = "allreduce", dtype = "f32", op = "max", algo = "two_shot", comm = "multimem", fallback = "emulate" }
