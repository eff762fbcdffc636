-- expect: custom op needs identity
return { family = "allreduce", op = { combine = "a + b" } }
