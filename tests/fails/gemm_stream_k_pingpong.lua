-- expect: stream_k = true: stream-K adds partial sums of cooperative tiles: mma = "cooperative"
-- Pingpong gives each warpgroup whole tiles of its own; the hand-over is written for cooperative tiles.
return { family = "gemm", stream_k = true, mma = "pingpong", tile = { m = 128, n = 128, k = 64 } }
