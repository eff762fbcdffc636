-- expect: op = { combine = "a < b", identity = "0.0f" }: custom op combine gives an integer: the comparison "<" at character 3, which C converts to f32 by value
-- expect: a combine of f32 values gives an f32: choose an operand with ?: (a < b ? a : b)
-- A comparison as the combine: it compiles, and reduces f32 values to 0 and 1.
return { family = "row_reduce", op = { combine = "a < b", identity = "0.0f" } }
