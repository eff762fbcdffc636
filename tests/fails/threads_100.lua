-- expect: threads = 100: must be one of 64, 128, 256, 512, 1024
return { family = "row_reduce", threads = 100 }
