-- expect: custom op combine uses printf: an expression may name only a, b and the math functions
-- A call of something that is not float math.
return { family = "row_reduce", op = { combine = "printf(\"x\") + a + b", identity = "0.0f" } }
