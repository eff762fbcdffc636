-- expect: custom op combine must not hold comments (/* or //)
-- A comment that swallows the rest of the template's line.
return { family = "row_reduce", op = { combine = "a + b /* ", identity = "0.0f" } }
