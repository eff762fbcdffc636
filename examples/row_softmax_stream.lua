-- Softmax of rows of any length (the row is read twice), one row per cluster of 16 CTAs: the fastest
-- config `weft tune` measured at 32 x 1048576 f32 on the H200 (bench/auto/row_softmax_f32.lua;
-- 104.9 us, 4.1x torch.softmax).
return {
  family = "row_softmax",
  dtype = "f32",
  mode = "stream",
  cluster = 16,
  nonportable = true,
  threads = 512,
  unroll = 8,
  exchange = "push",
  persistent = true,
}
