-- A custom operator in a reduce-scatter: the largest magnitude, with a Lua reference for the checks.
return {
  family = "reduce_scatter",
  dtype = "f32",
  op = { combine = "fabsf(a) > fabsf(b) ? a : b", identity = "0.0f",
         ref = function(a, b) return math.abs(a) > math.abs(b) and a or b end },
}
