-- expect: threads = 1024: must be one of 64, 128, 256, 512
return { family = "allreduce", threads = 1024 }
