-- examples/all_gather.lua: every rank gets every rank's x, y[p*n + i] = x_p[i] (NCCL's all-gather,
-- n its sendcount), bit-exact.
--   mpirun -np 4 build/weft run examples/all_gather.lua         (checks, then times chunks of 8 B .. 32 MB)
--   build/weft run examples/all_gather.lua --set dtype=bf16 --set comm=multimem --set fallback=emulate
return {
  family = "all_gather",
  dtype = "f32",
  comm = "threadload",  -- multimem: one multimem.st of x into every rank's buffer (needs NVLink multicast)
  fallback = "none",    -- with comm = "multimem": "emulate" runs the unicast twin where multicast is off
  threads = 512,
  blocks = "auto",
}
