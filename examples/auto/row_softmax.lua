-- A config that fixes only what the result depends on (family and dtype) and leaves the rest,
-- the longest row it takes included, to be chosen for each shape; so it is used with auto:
--   build/weft suggest examples/auto/row_softmax.lua 4096x50257       (the choice, and where from)
--   build/weft run examples/auto/row_softmax.lua --auto --rows 4096 --cols 50257
--   build/weft gen examples/auto/row_softmax.lua --auto --shape 4096x50257 -o out
-- (Without --auto it is refused: mode "onchip" needs max_cols, which only a shape gives.)
return { family = "row_softmax", dtype = "f32" }
