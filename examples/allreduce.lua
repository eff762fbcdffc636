-- examples/allreduce.lua: sum across the ranks of an MPI job, every rank getting the same bits.
--   mpirun -np 4 build/weft run examples/allreduce.lua          (checks, then times 8 B .. 256 MB)
--   build/weft run examples/allreduce.lua --set algo=two_shot --set dtype=bf16
return {
  family = "allreduce",
  dtype = "f32",
  op = "sum",           -- max | min | prod | { combine = "...", identity = "..." }
  algo = "one_shot",    -- two_shot: reduce-scatter + all-gather (less traffic for large messages)
  comm = "threadload",  -- multimem: multimem.ld_reduce + multimem.st (needs NVLink multicast)
  fallback = "none",    -- with comm = "multimem": "emulate" runs the unicast twin where multicast is off
  threads = 512,
  blocks = "auto",
}
