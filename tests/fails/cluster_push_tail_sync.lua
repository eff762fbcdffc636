-- expect: need_tail_sync = true: must be false with exchange = "push"
-- The push exchange alternates two receive arrays; a trailing barrier per combine is not its discipline.
return { family = "cluster_reduce", exchange = "push", need_tail_sync = true, cluster = 4 }
