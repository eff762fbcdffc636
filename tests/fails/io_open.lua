-- expect: io_open.lua:2: attempt to index a nil value (global 'io')
local f = io.open("/etc/hostname")
return { family = "row_reduce", op = f:read("l") }
