-- expect: op = { combine = "a + b", identity = "0.0f } float evil() { return 1.0f" }: custom op identity must be a single expression: no ; { } # \ or newlines
-- Breaking out of the functor's body through the identity.
return { family = "row_reduce", op = { combine = "a + b", identity = "0.0f } float evil() { return 1.0f" } }
