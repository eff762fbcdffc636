-- Autotune space for the allreduce (weft tune under mpirun: every rank runs every candidate, the
-- slowest rank's time counts): algorithm, threads per block and programmatic dependent launch,
-- for a small, a medium and a large message (n: elements per rank; one_shot_ll takes at most 2M).
--   mpirun -np 2 build/weft tune examples/sweeps/allreduce.lua --jobs 8
return {
  base = { family = "allreduce", dtype = "bf16", op = "sum" },
  space = {
    algo = { "one_shot", "two_shot", "one_shot_ll" },
    threads = { 256, 512 },
    pdl = { false, true },
  },
  shapes = {
    { n = 4096 },
    { n = 131072 },
    { n = 2097152 },
  },
}
