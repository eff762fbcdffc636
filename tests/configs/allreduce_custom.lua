-- A custom operator across ranks: the largest magnitude, with a Lua reference for the checks.
return {
  family = "allreduce",
  dtype = "f32",
  op = { combine = "fabsf(a) > fabsf(b) ? a : b", identity = "0.0f",
         ref = function(a, b) return math.abs(a) > math.abs(b) and a or b end },
  algo = "two_shot",
}
