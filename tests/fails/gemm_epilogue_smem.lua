-- expect: stages = 5: needs 280576 bytes of shared memory per block, at most 232448 (227 KB) on sm_90
-- expect: (epilogue = "tma" also stages C: a buffer per 64-column chunk, a narrow last one dense (cooperative_n: per 64-row group and 64 columns), or two whole-chunk ones (three consumers, pingpong tiles wider than 128 x 128 and cooperative_n: one), per consumer warpgroup)
-- The shipped 128 x 256 tile fits four stages beside C's two chunk buffers per warpgroup, not five.
return { family = "gemm", epilogue = "tma", stages = 5 }
