-- Sum of each f32 row: the fastest config `weft tune` measured at 8192 x 32768 on the H200
-- (bench/auto/row_reduce_sum_f32.lua; 236.2 us, 1.08 of copy): one CTA of 512 threads per row, 8
-- loads in flight per thread, two CTAs per SM.  Long rows with few of them take a cluster instead
-- (--set cluster=4: the CTAs of a row combine with cluster_allreduce).
return {
  family = "row_reduce",
  dtype = "f32",
  op = "sum",
  cluster = 1,
  threads = 512,
  unroll = 8,
  min_blocks = 2,
}
