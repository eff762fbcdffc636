-- expect: stream_k = true: stream-K shares out K itself: leave split_k = 1 (it is 2)
-- Stream-K divides the k-blocks among all CTAs; a split-K cluster on top would split them twice.
return { family = "gemm", stream_k = true, split_k = 2, tile = { m = 128, n = 128, k = 64 } }
