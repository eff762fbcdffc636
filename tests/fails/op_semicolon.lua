-- expect: op = { combine = "a + b; return 0", identity = "0.0f" }: custom op combine must be a single expression: no ; { } # \ or newlines
-- Statement injection through the operator text.
return { family = "row_reduce", op = { combine = "a + b; return 0", identity = "0.0f" } }
