-- expect: syntax_error.lua:5: unexpected symbol near '='
return {
  family = "row_reduce",
  dtype = "f32",
  threads = = 256,
}
