-- expect: threads = 32: must be one of 64, 128, 256, 512
return { family = "all_gather", threads = 32 }
