-- Softmax of rows up to 32768 f32 columns, each row's slice held in registers.
return {
  family = "row_softmax",
  dtype = "f32",
  mode = "onchip",
  max_cols = 32768,
  cluster = 2,
  threads = 512,
}
