-- weft tune with swept values of a few KB each (a custom operator's combine): the labels, the CSV
-- rows and the stored configs are longer than any fixed buffer weft had (4 KB on the stack).
local long = "a + b"
for i = 1, 780 do long = long .. " + 0.0f * a" end   -- ~9 KB: past 4096 would be refused, so ~3.9 KB
long = long:sub(1, 3900) .. " + b"
return {
  base = { family = "row_reduce", dtype = "f32", op = { combine = "a + b", identity = "0.0f" } },
  space = { ["op.combine"] = { "a + b", long }, threads = { 256, 512 } },
  shapes = { { rows = 64, cols = 4096 } },
}
