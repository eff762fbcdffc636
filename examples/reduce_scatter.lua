-- examples/reduce_scatter.lua: rank r gets the sum over the ranks of x[r*n .. r*n+n) (NCCL's
-- reduce-scatter, n its recvcount), folded in rank order: the same bits on every run.
--   mpirun -np 4 build/weft run examples/reduce_scatter.lua     (checks, then times chunks of 8 B .. 32 MB)
--   build/weft run examples/reduce_scatter.lua --set dtype=bf16 --set op=max
return {
  family = "reduce_scatter",
  dtype = "f32",
  op = "sum",           -- max | min | prod | { combine = "...", identity = "..." }
  comm = "threadload",  -- multimem: multimem.ld_reduce of the own chunk (needs NVLink multicast)
  fallback = "none",    -- with comm = "multimem": "emulate" runs the unicast twin where multicast is off
  threads = 512,
  blocks = "auto",
}
