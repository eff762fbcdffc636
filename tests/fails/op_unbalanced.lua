-- expect: custom op combine has a ) without its (
-- Closing the functor's parenthesis early.
return { family = "row_reduce", op = { combine = "a + b) + (a", identity = "0.0f" } }
