-- expect: fallback = "emulate": only comm = "multimem" has a fallback; leave it "none"
return { family = "allreduce_norm", max_cols = 4096, fallback = "emulate" }
