-- expect: blocks = 0: "auto" or an integer in 1..1024
return { family = "reduce_scatter", blocks = 0 }
