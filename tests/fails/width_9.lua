-- expect: width = 9: must be an integer in 1..8
return { family = "cluster_reduce", width = 9 }
