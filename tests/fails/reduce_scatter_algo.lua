-- expect: algo = "two_shot": unknown key for family "reduce_scatter"
-- reduce_scatter has one data path: no algo (that is the allreduce's).
return { family = "reduce_scatter", algo = "two_shot" }
