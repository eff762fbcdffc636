-- expect: the config must return a table, it returned string
return "row_reduce"
