-- cluster_reduce with a custom operator and its Lua reference (op.ref): a sum clamped at 1e30,
-- associative like every operator the reductions may regroup.
return {
  family = "cluster_reduce",
  op = {
    combine = "fminf(a + b, 1e30f)",
    identity = "0.0f",
    ref = function(a, b) return math.min(a + b, 1e30) end,
  },
  width = 2,
  cluster = 4,
  threads = 128,
  need_tail_sync = false,
  iters = 3,
}
