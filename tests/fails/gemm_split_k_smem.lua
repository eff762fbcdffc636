-- expect: stages = 4: needs 328784 bytes of shared memory per block, at most 232448 (227 KB) on sm_90; use fewer stages or a smaller tile (split_k = 2 also holds the f32 partial tile, 128 x 256 x 4 bytes)
-- The shipped 128 x 256 tile with split-K: the 128 KB partial tile does not fit beside four stages.
return { family = "gemm", split_k = 2 }
