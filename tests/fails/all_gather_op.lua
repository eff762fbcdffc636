-- expect: op = "sum": unknown key for family "all_gather"
-- An all-gather copies: it has no operator.
return { family = "all_gather", op = "sum" }
