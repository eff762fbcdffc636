-- A row_reduce config that leaves what auto chooses open (tests/cli/auto_export.cmake).
return { family = "row_reduce", dtype = "f32", op = "sum" }
