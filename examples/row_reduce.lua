-- Sum of each row, in f32, one row per cluster of 4 CTAs (cluster_allreduce across the row).
return {
  family = "row_reduce",
  dtype = "f32",
  op = "sum",
  cluster = 4,
  threads = 512,
  unroll = 4,
}
