-- expect: custom op combine must not hold digraphs (<% %> <: :> %:): it is one expression, not a block
-- A statement block spelled with digraphs (<% %> are { }) to get past a search for braces.
return { family = "row_reduce", op = { combine = "a + b %> float evil() <% return 1.0f", identity = "0.0f" } }
