-- A custom reduction operator: the largest magnitude in each row.  combine is CUDA C over the
-- f32 values a and b; identity is the value that changes nothing.
return {
  family = "row_reduce",
  dtype = "bf16",
  op = { combine = "fmaxf(fabsf(a), fabsf(b))", identity = "0.0f" },
  cluster = 2,
  threads = 256,
}
