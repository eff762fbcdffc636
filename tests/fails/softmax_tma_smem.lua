-- expect: needs 8000112 bytes of shared memory per block, at most 232448 (227 KB) on sm_90
-- expect: raise cluster or lower max_cols
-- expect: max_cols = 1000000
-- Two stages of a 1M-column f32 slice do not fit in one CTA's shared memory; the message must
-- name the config value that caused it, like every other config error.
return { family = "row_softmax", mode = "tma", max_cols = 1000000, cluster = 1 }
