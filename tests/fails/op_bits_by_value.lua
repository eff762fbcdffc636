-- expect: custom op combine converts a bit pattern to f32 by value: the hex literal "0xff800000" at character 10 (a branch of the ?: at character 8, beside an f32 branch)
-- expect: reinterpret the bits with __int_as_float(...)
-- -inf's bits as a ?: branch beside an f32: C converts them by value, to 4286578688.0f (op_identity_integer's mistake, inside).
return { family = "row_reduce", op = { combine = "a != a ? 0xff800000 : fmaxf(a, b)", identity = "__int_as_float(0xff800000)" } }
