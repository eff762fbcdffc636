-- expect: deep_nesting.lua: tile
-- expect: tables nested more than 32 deep: at most 32
-- 100k levels used to overflow the generator's stack (issue 16, item 9)
local t = {}
for i = 1, 100000 do t = { t } end
return { family = "gemm", tile = t }
