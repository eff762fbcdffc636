-- expect: memory_doubling.lua:4: config used more than 256 MB of memory (the cap on a config; WEFT_CONFIG_MEMORY_MB raises it)
-- s = s .. s thirty times grew to 14.7 GB before the cap (issue 16, item 7)
local s = "weft"
for i = 1, 40 do s = s .. s end
return { family = "row_reduce", n = #s }
