-- expect: require_call.lua:2: attempt to call a nil value (global 'require')
local weft = require("gen.core.weft")
return { family = "row_reduce" }
