-- expect: split_k_tail = true: the split tail needs a split: set split_k to 2..8
-- The tail of the last wave is split over a split-K cluster's CTAs; without one there is nothing to split over.
return { family = "gemm", split_k_tail = true }
