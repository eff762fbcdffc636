-- expect: iters = 0: must be an integer in 1..64
return { family = "cluster_reduce", iters = 0 }
