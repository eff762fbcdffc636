-- expect: stages = 4: needs 264192 bytes of shared memory per block, at most 232448 (227 KB) on sm_90; use fewer stages or a smaller tile (epilogue = "tma" also stages C: a tile per consumer warpgroup)
-- The shipped 128 x 256 tile with four stages leaves no room for C's 64 KB stage.
return { family = "gemm", epilogue = "tma" }
