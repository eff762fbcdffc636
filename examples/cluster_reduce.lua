-- The cluster allreduce primitive itself: 4 CTAs combine 2-wide values, 8 times in a row,
-- alternating two slots instead of retiring the slot with a trailing barrier.
return {
  family = "cluster_reduce",
  op = "max",
  width = 2,
  cluster = 4,
  threads = 128,
  need_tail_sync = false,
  iters = 8,
}
