-- Softmax of rows of any length (the row is read twice), one row per cluster of 8 CTAs.
return {
  family = "row_softmax",
  dtype = "f32",
  mode = "stream",
  cluster = 8,
  threads = 512,
  unroll = 4,
}
