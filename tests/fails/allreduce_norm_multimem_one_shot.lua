-- expect: algo = "one_shot": comm = "multimem" needs algo = "two_shot": the switch reduces in its own order
-- The switch's sum is in its own order: only an owner may reduce a row, so every rank gets its bits.
return { family = "allreduce_norm", max_cols = 4096, algo = "one_shot", comm = "multimem", fallback = "emulate" }
