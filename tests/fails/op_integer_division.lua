-- expect: op = { combine = "a + b", identity = "1/0" }: custom op identity divides an integer by an integer at character 2: C truncates that (1/2 is 0, and 1/0 is undefined); write a float literal on either side, e.g. 1.0f/2
-- Integer division: 1/0 is undefined in C (1.0f/0.0f is the infinity it may have meant).
return { family = "row_reduce", op = { combine = "a + b", identity = "1/0" } }
