-- A custom reduction operator: the largest magnitude in each row.  combine is CUDA C over the
-- f32 values a and b; identity is the value that changes nothing; ref is the same operator in
-- Lua, which `weft run` and the tests use as the host reference (optional: without it the
-- results cannot be checked).
return {
  family = "row_reduce",
  dtype = "bf16",
  op = {
    combine = "fmaxf(fabsf(a), fabsf(b))",
    identity = "0.0f",
    ref = function(a, b) return math.max(math.abs(a), math.abs(b)) end,
  },
  cluster = 2,
  threads = 256,
}
