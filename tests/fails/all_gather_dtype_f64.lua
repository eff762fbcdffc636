-- expect: dtype = "f64": must be one of "f32", "f16", "bf16"
return { family = "all_gather", dtype = "f64" }
