-- expect: --set "threads": expected key=value, with key a name or dotted path (tile.m=128)
-- set: threads
return { family = "row_reduce" }
