-- expect: thread = 256: unknown key for family "row_reduce"; known keys: dtype, op, cluster
-- expect: threads
-- A typo in a key: thread for threads.
return { family = "row_reduce", thread = 256 }
