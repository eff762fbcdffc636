-- expect: threads = "256": must be an integer in {64, 128, 256, 512, 1024}
-- A number given as a string.
return { family = "row_reduce", threads = "256" }
