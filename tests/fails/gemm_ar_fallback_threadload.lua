-- expect: fallback = "emulate": only comm = "multimem" has a fallback
-- the unicast twin stands in for the switch; threadload has nothing to stand in for
return { family = "gemm_ar", comm = "threadload", fallback = "emulate" }
