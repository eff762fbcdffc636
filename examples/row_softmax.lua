-- Softmax of f32 rows up to 32768 columns, each row's slice held in registers: the fastest config
-- `weft tune` measured at 8192 x 32768 on the H200 (bench/auto/row_softmax_f32.lua; 522.7 us, 0.98
-- of copy). Leave out cluster and threads and run `weft run ... --auto` to have them chosen per shape
-- (--auto keeps the fields a config sets; examples/auto/row_softmax.lua leaves max_cols open too).
return {
  family = "row_softmax",
  dtype = "f32",
  mode = "onchip",
  max_cols = 32768,
  cluster = 1,
  threads = 1024,
}
