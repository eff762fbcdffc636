-- expect: op = "avg": must be one of "sum", "max", "min", "prod"
return { family = "allreduce", op = "avg" }
