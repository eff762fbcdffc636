-- A small row_reduce sweep (2 candidates, 1 shape) to try `weft run --tuned` on the GPU machine:
--   build/weft tune tests/sweeps/tuned_small.lua --db DB -o DIR
--   build/weft run examples/row_reduce.lua --set op=sum --tuned --db DB --rows 256 --cols 65536   (tuned)
--   build/weft run examples/row_reduce.lua --set op=max --tuned --db DB --rows 256 --cols 65536   (not: op differs)
return {
  base = { family = "row_reduce", dtype = "f32", op = "sum" },
  space = { threads = { 256, 1024 } },
  shapes = { { rows = 256, cols = 65536 } },
}
