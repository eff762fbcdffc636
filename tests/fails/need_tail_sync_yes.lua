-- expect: need_tail_sync = "yes": must be true or false
return { family = "cluster_reduce", need_tail_sync = "yes" }
