-- expect: op = { combine = "a + b", identity = "0.0f", scale = 2 }: custom op has unknown key scale; keys are combine, identity, ref
return { family = "row_reduce", op = { combine = "a + b", identity = "0.0f", scale = 2 } }
