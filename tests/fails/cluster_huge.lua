-- expect: cluster = 1e+300: must be an integer in 1..16
-- A float too large for an integer must be a config error (exit 2), not a generator crash.
return { family = "row_reduce", cluster = 1e300 }
