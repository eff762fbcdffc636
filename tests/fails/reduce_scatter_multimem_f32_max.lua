-- expect: op = "max": comm = "multimem" with dtype = "f32": multimem.ld_reduce has no max; it reduces sum (use comm = "threadload" for this operator)
-- The switch has no f32 max: the reduce-scatter's own chunk cannot be reduced there.
return { family = "reduce_scatter", dtype = "f32", op = "max", comm = "multimem", fallback = "emulate" }
