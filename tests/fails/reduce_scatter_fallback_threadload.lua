-- expect: fallback = "emulate": only comm = "multimem" has a fallback; leave it "none"
return { family = "reduce_scatter", comm = "threadload", fallback = "emulate" }
