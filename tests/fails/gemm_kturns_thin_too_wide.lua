-- expect: tile = "32x256x64": 32 x 256 is the WGMMA's 64 rows by 256: 128 f32 accumulators per thread
-- expect: mma = "kturns" holds at most 96 (tile.n <= 192
-- A thin tile's WGMMA still has 64 rows: at 256 wide each warpgroup holds 128 accumulators, which spilled.
return { family = "gemm", b_layout = "col", tile = { m = 32, n = 256, k = 64 }, consumers = 2, mma = "kturns", stages = 8 }
