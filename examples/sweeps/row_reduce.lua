-- Autotune space for row_reduce sum (weft tune): cluster size, launch shape and loads in
-- flight, for many medium rows and a few very long ones.
return {
  base = { family = "row_reduce", dtype = "f32", op = "sum" },
  space = {
    cluster = { 1, 2, 4, 8 },
    threads = { 256, 512, 1024 },
    unroll = { 1, 2, 4, 8 },
    min_blocks = { 1, 2 },
  },
  shapes = {
    { rows = 8192, cols = 32768 },
    { rows = 32, cols = 1048576 },
  },
}
