-- A config that leaves what auto chooses open: family and dtype only (tests/CMakeLists.txt cli.auto_*).
return { family = "row_softmax", dtype = "f32" }
