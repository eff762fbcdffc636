-- examples/allreduce_norm.lua: the allreduce + residual + RMS norm after a row-parallel layer, in one
-- launch: s = sum over ranks of x, h = s + r (written back to r), y = rmsnorm(h) * w, the same bits
-- on every rank.
--   mpirun -np 4 build/weft run examples/allreduce_norm.lua        (checks 1..1000 tokens, then times)
--   build/weft run examples/allreduce_norm.lua --set algo=two_shot --rows 16 --cols 4096
return {
  family = "allreduce_norm",
  dtype = "bf16",
  algo = "one_shot",     -- two_shot: each rank normalises 1/P of the rows; one_shot_ll: slower here (RESULTS)
  comm = "threadload",   -- multimem: multimem.ld_reduce + multimem.st (two_shot; fallback = "emulate" off NVLS)
  residual = true,
  eps = 1e-6,
  max_cols = 4096,       -- the hidden size
  threads = 512,
}
