-- expect: op = { combine = "fmaxf(a, b)", identity = "0xff800000" }: custom op identity gives an integer: the integer literal "0xff800000" at character 1, which C converts to f32 by value
-- expect: or reinterpret a bit pattern with __int_as_float(0xff800000)
-- -inf's bits without __int_as_float: C converts them by value, to 4286578688.0f.
return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "0xff800000" } }
