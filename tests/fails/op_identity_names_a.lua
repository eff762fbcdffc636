-- expect: custom op identity uses a: an expression may name only the math functions
-- The identity is a constant: it cannot read the operands.
return { family = "row_reduce", op = { combine = "a + b", identity = "a" } }
