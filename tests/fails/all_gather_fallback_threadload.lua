-- expect: fallback = "emulate": only comm = "multimem" has a fallback; leave it "none"
return { family = "all_gather", fallback = "emulate" }
