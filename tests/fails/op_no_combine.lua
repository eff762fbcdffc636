-- expect: op = { identity = "0.0f" }: custom op needs combine = "<CUDA expression of a, b>"
return { family = "cluster_reduce", op = { identity = "0.0f" } }
