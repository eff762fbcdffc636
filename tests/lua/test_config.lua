-- tests/lua/test_config.lua: gen/core/config.lua, the config sandbox and --set overrides.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local config = require("gen.core.config")

local F = "cfg.lua"

-- ---- the sandbox --------------------------------------------------------------------------

T.test("a plain config loads", function()
  local cfg = assert(config.load('return { family = "row_reduce", threads = 256, op = { combine = "a", identity = "0" } }', F))
  T.eq(cfg.family, "row_reduce")
  T.eq(cfg.threads, 256)
  T.eq(cfg.op.combine, "a")
end)

T.test("pure functions are available", function()
  local cfg = assert(config.load([[
    local t = {}
    for i, v in ipairs({ 3, 1, 2 }) do t[#t + 1] = v end
    table.sort(t)
    return { n = math.max(table.unpack(t)) * 2 ^ 3 // 1, s = string.format("%d-%s", 7, ("ab"):upper()),
             u = utf8.char(72), ok = pcall(error, "x"), ty = type(tostring(1)), k = select("#", 1, 2),
             nx = next({}) == nil, r = rawlen({ 1, 2 }), tn = tonumber("0x10") }
  ]], F))
  T.eq(cfg.n, 24.0); T.eq(cfg.s, "7-AB"); T.eq(cfg.u, "H"); T.eq(cfg.ok, false)
  T.eq(cfg.ty, "string"); T.eq(cfg.k, 2); T.eq(cfg.nx, true); T.eq(cfg.r, 2); T.eq(cfg.tn, 16)
end)

T.test("the sandbox has no io, os, require, load, dofile, loadfile, debug, ...", function()
  local names = { "io", "os", "require", "load", "loadstring", "dofile", "loadfile", "debug", "package",
                  "coroutine", "collectgarbage", "setmetatable", "getmetatable", "rawset", "_G",
                  "print", "weft_read" }
  local fields = {}
  for _, n in ipairs(names) do fields[#fields + 1] = n .. " = type(" .. n .. ")" end
  local cfg = assert(config.load("return { " .. table.concat(fields, ", ") .. " }", F))
  for _, n in ipairs(names) do T.eq(cfg[n], "nil", n) end
end)

T.test("nothing impure or unseeded in math and string", function()
  local cfg = assert(config.load("return { r = type(math.random), s = type(math.randomseed), d = type(string.dump) }", F))
  T.eq(cfg.r, "nil", "math.random"); T.eq(cfg.s, "nil", "math.randomseed"); T.eq(cfg.d, "nil", "string.dump")
end)

T.test("a config cannot change the host's libraries", function()
  assert(config.load("string.format = nil; math.floor = nil; table.insert = nil; return {}", F))
  T.eq(type(string.format), "function", "string.format")
  T.eq(type(math.floor), "function", "math.floor")
  T.eq(type(table.insert), "function", "table.insert")
end)

T.test("each config gets a fresh sandbox", function()
  assert(config.load("leak = 1; math.pi = 3; return {}", F))
  local cfg = assert(config.load("return { leak = leak, pi = math.pi }", F))
  T.eq(cfg.leak, nil, "global from the last config")
  T.ne(cfg.pi, 3, "math.pi from the last config")
end)

T.test("a config calling os.exit fails clearly, naming file:line and os", function()
  local msg = T.fails("load", config.load, 'local x = 1\nos.exit(3)\nreturn {}', F)
  T.contains(msg, "cfg.lua:2")
  T.contains(msg, "'os'")
end)

T.test("a config calling io.open fails clearly", function()
  local msg = T.fails("load", config.load, 'local f = io.open("/etc/passwd")\nreturn {}', F)
  T.contains(msg, "cfg.lua:1")
  T.contains(msg, "'io'")
end)

T.test("require, load and dofile fail clearly", function()
  for _, call in ipairs({ 'require("gen.core.weft")', 'load("return 1")', 'dofile("x.lua")', 'loadfile("x")' }) do
    local msg = T.fails(call, config.load, call .. "\nreturn {}", F)
    T.contains(msg, "cfg.lua:1", call)
    T.contains(msg, call:match("^(%a+)"), call)
  end
end)

T.test("an infinite loop is stopped by the instruction limit", function()
  local msg = T.fails("load", config.load, "local i = 0\nwhile true do i = i + 1 end\nreturn {}", F)
  T.contains(msg, "cfg.lua:2")
  T.contains(msg, "instructions")
end)

T.test("string.dump is out of reach, even through a string's methods", function()
  local cfg = assert(config.load('return { d = type(("").dump), g = type(string.dump) }', F))
  T.eq(cfg.d, "nil", '("").dump')
  T.eq(cfg.g, "nil", "string.dump")
end)

T.test("no address reaches a config: tostring and string.format of tables and functions", function()
  local cfg = assert(config.load([[
    local t, f = {}, function() end
    return { a = tostring(t), b = tostring(f), c = string.format("%s %s", t, f), d = ("%s"):format(t),
             n = tostring(12), s = string.format("%d%%", 5) }
  ]], F))
  T.eq(cfg.a, "table"); T.eq(cfg.b, "function"); T.eq(cfg.c, "table function"); T.eq(cfg.d, "table")
  T.eq(cfg.n, "12"); T.eq(cfg.s, "5%")
  local msg = T.fails("load", config.load, 'return { x = string.format("%p", {}) }', F)
  T.contains(msg, "cfg.lua:1: string.format: %p prints an address")
end)

T.test("pairs and next walk keys in sorted order", function()
  local cfg = assert(config.load([[
    local t = { zeta = 1, alpha = 2, mid = 3, [3] = 4, [1] = 5, [true] = 6, [2.5] = 7 }
    local order = {}
    for k in pairs(t) do order[#order + 1] = tostring(k) end
    local first = next(t)
    local second = next(t, first)
    return { order = table.concat(order, ","), first = first, second = second }
  ]], F))
  T.eq(cfg.order, "1,2.5,3,alpha,mid,zeta,true")
  T.eq(cfg.first, 1); T.eq(cfg.second, 2.5)
end)

T.test("a catastrophic pattern is refused before it runs", function()
  local t0 = os.clock()
  local msg = T.fails("load", config.load,
    'local s = string.rep("a", 30)\nreturn { x = s:find(string.rep("a-", 13) .. "b") }', F)
  T.contains(msg, "cfg.lua:2: string.find: the pattern")
  T.contains(msg, "at most 1e+09 inside a config")
  T.ok(os.clock() - t0 < 5, "it took " .. (os.clock() - t0) .. " s")
  -- an ordinary pattern on an ordinary string is fine
  local cfg = assert(config.load('return { x = ("tile_128x64"):match("^(%a+)_(%d+)x(%d+)$") }', F))
  T.eq(cfg.x, "tile")
end)

T.test("string.rep of an empty string is instant, and a table.move without end is refused", function()
  local cfg = assert(config.load('return { x = #string.rep("", 1e15 // 1) }', F))
  T.eq(cfg.x, 0)
  local msg0 = T.fails("load", config.load, 'local x = 1\nreturn { x = string.rep("x", 1 << 50) }', F)
  T.contains(msg0, "cfg.lua:2: resulting string too large")
  local msg = T.fails("load", config.load, 'table.move({}, 1, 1e14 // 1, 1, {})\nreturn {}', F)
  T.contains(msg, "cfg.lua:1: table.move: ")
  T.contains(msg, "at most 16777216 inside a config")
end)

T.test("memory: s = s .. s stops at the cap, through pcall too, naming the file and the cap", function()
  local memory_mb = weft_sandbox_caps()
  for _, body in ipairs({ 'local s = "x"\nfor i = 1, 40 do s = s .. s end\nreturn {}',
                          'local s = "x"\nfor i = 1, 40 do pcall(function() s = s .. s end) end\nreturn {}',
                          'return { x = string.rep("x", 1 << 30) }' }) do
    local msg = T.fails("load", config.load, body, F)
    T.contains(msg, "cfg.lua")
    T.contains(msg, "config used more than " .. memory_mb .. " MB of memory")
    T.contains(msg, "WEFT_CONFIG_MEMORY_MB")
  end
  -- the cap is lifted afterwards: the generator itself may allocate again
  local big = string.rep("y", (memory_mb + 16) << 20)
  T.eq(#big, (memory_mb + 16) << 20)
end)

T.test("the wall-clock cap stops time spent inside C functions, which the count hook does not see", function()
  local real = weft_sandbox_caps
  weft_sandbox_caps = function() local m = real(); return m, 1 end   -- a 1 s cap for this test
  local t0 = weft_clock()
  local ok, r, msg = pcall(config.load,
    'local n = 0\nfor i = 1, 1e7 do n = n + #string.rep("x", 1 << 22) end\nreturn {}', F)
  weft_sandbox_caps = real
  local took = weft_clock() - t0
  T.ok(ok, tostring(r))
  T.eq(r, nil, "result")
  T.contains(msg, "cfg.lua:2: config ran for more than 1 s (the cap on a config's time; WEFT_CONFIG_SECONDS")
  T.ok(took < 5, "it took " .. took .. " s")
end)

T.test("cycles, deep nesting and exponential sharing are refused, naming the field", function()
  local msg = T.fails("load", config.load, 'local t = {}\nt.self = t\nreturn { family = "row_reduce", op = t }', F)
  T.contains(msg, "cfg.lua: op.self refers back to op (a cyclic table)")
  msg = T.fails("load", config.load, 'local t = {}\nfor i = 1, 100000 do t = { t } end\nreturn { x = t }', F)
  T.contains(msg, "cfg.lua: x")
  T.contains(msg, "nested more than 32 deep")
  msg = T.fails("load", config.load, 'local t = {}\nfor i = 1, 30 do t = { t, t } end\nreturn { x = t }', F)
  T.contains(msg, "cfg.lua: x")
  T.contains(msg, "holds more than 1000000 values")
  -- sharing without a cycle is fine
  assert(config.load('local t = { 1 }\nreturn { a = t, b = { t, t } }', F))
end)

T.test("infinite recursion fails", function()
  local msg = T.fails("load", config.load, "local function f(n) return 1 + f(n + 1) end\nreturn { f(1) }", F)
  T.contains(msg, "cfg.lua")
end)

T.test("recursion through a library call names its position once, with the count", function()
  -- (gsub calling a function that calls gsub: Lua adds the position at every level, ~100 times)
  local msg = T.fails("load", config.load,
    'local function f(s) return (s:gsub(".", function(c) return f(c) end)) end\nf("a")\nreturn {}', F)
  T.ok(msg:match("^cfg%.lua:1: %(%d+ nested calls%) "), "said once, with the count: " .. msg:sub(1, 120))
  T.not_contains(msg, "cfg.lua:1: cfg.lua:1:", "not repeated")
end)

T.test("a loop inside pcall is still stopped by the instruction limit", function()
  -- The limit is a count hook that raises an error; the sandbox's pcall can catch it.  Guard
  -- this test against hanging: wrap debug.sethook so that, after the limit has fired a few
  -- times, the hook errors on every instruction (which no pcall can outrun).
  local real_sethook = debug.sethook
  local fired, escalated = 0, false
  debug.sethook = function(co, hook, mask, count)
    if type(co) ~= "thread" then co, hook, mask, count = coroutine.running(), co, hook, mask end
    local function guard(...)
      fired = fired + 1
      -- the hook runs every HOOK_STEP instructions to read the clock: allow the count to
      -- reach the limit, then 10 firings more
      if fired > config.MAX_INSTRUCTIONS // config.HOOK_STEP + 50 and not escalated then
        escalated = true
        real_sethook(co, function() error("test guard: hook fired " .. fired .. " times", 0) end, "", 1)
      end
      return hook(...)
    end
    return real_sethook(co, guard, mask, count)
  end
  local ok, r, msg = pcall(config.load, "while true do pcall(function() while true do end end) end\nreturn {}", F)
  debug.sethook = real_sethook
  T.ok(ok, "config.load raised instead of returning nil, message: " .. tostring(r))
  T.eq(r, nil, "result")
  T.ok(not escalated, "the instruction limit fired " .. fired .. " times: the config's pcall caught it and kept looping")
  T.contains(msg, "instructions")
end)

T.test("a config returning nothing, a number or a string fails", function()
  local msg = T.fails("load", config.load, "local x = 1", F)
  T.contains(msg, "cfg.lua")
  T.contains(msg, "must return a table")
  T.contains(msg, "nothing")
  msg = T.fails("load", config.load, "return 42", F)
  T.contains(msg, "cfg.lua"); T.contains(msg, "number")
  msg = T.fails("load", config.load, "return 'row_reduce'", F)
  T.contains(msg, "cfg.lua"); T.contains(msg, "string")
end)

T.test("a syntax error names file and line", function()
  local msg = T.fails("load", config.load, 'return {\n  family = "row_reduce",\n  threads = = 256,\n}', "dir/my cfg.lua")
  T.contains(msg, "dir/my cfg.lua:3:")
  msg = T.fails("load", config.load, 'return { family = "row_reduce"', F)
  T.contains(msg, "cfg.lua:1:")
end)

T.test("a runtime error names file and line", function()
  local msg = T.fails("load", config.load, 'local t = nil\nreturn { x = t.y }', F)
  T.contains(msg, "cfg.lua:2:")
  msg = T.fails("load", config.load, 'error("my message")', F)
  T.contains(msg, "cfg.lua:1: my message")
end)

T.test("an error raised with a non-string value still names the file", function()
  local bad = {}
  for _, text in ipairs({ 'error({ code = 1 })', 'error("no position", 0)', 'error()' }) do
    local msg = T.fails("load", config.load, text, F)
    if not msg:find("cfg.lua", 1, true) then bad[#bad + 1] = text .. " -> " .. T.show(msg) end
  end
  T.eq(#bad, 0, "messages without the file name: " .. table.concat(bad, "; "))
end)

T.test("a binary chunk is refused, naming the file", function()
  -- string.dump is gone from the whole state (see the sandbox tests): a chunk's header will do
  local msg = T.fails("load", config.load, "\27Lua\x54\0\x19\x93\r\n\x1a\n", F)
  T.contains(msg, "cfg.lua: is a compiled Lua chunk (bytecode)")
end)

-- ---- --set values ------------------------------------------------------------------------

T.test("parse_value: numbers", function()
  T.eq(config.parse_value("256"), 256)
  T.eq(math.type(config.parse_value("256")), "integer")
  T.eq(math.type(config.parse_value("256.0")), "integer", "256.0 is an integer")
  T.eq(config.parse_value("-3"), -3)
  T.eq(config.parse_value("1.5"), 1.5)
  T.eq(math.type(config.parse_value("1.5")), "float")
  T.eq(config.parse_value("1e3"), 1000)
  T.eq(config.parse_value("0x10"), 16)
end)

T.test("parse_value: booleans", function()
  T.eq(config.parse_value("true"), true)
  T.eq(config.parse_value("false"), false)
  T.eq(config.parse_value("True"), "True", "only lowercase true is a boolean")
end)

T.test("parse_value: strings, quoted or not", function()
  T.eq(config.parse_value("f16"), "f16")
  T.eq(config.parse_value('"f16"'), "f16")
  T.eq(config.parse_value("'f16'"), "f16")
  T.eq(config.parse_value('"256"'), "256", "a quoted number stays a string")
  T.eq(config.parse_value('"true"'), "true", "a quoted boolean stays a string")
  T.eq(config.parse_value(""), "", "empty")
  T.eq(config.parse_value('""'), "", "empty quoted")
  T.eq(config.parse_value("a + b"), "a + b")
  T.eq(config.parse_value('"unbalanced'), '"unbalanced')
end)

-- ---- --set application -------------------------------------------------------------------

T.test("apply: top-level keys, with types", function()
  local cfg = assert(config.apply({ family = "row_reduce", threads = 256 },
    { "threads=512", "nonportable=true", "dtype=f16", 'op="max"' }, F))
  T.eq(cfg.threads, 512); T.eq(cfg.nonportable, true); T.eq(cfg.dtype, "f16"); T.eq(cfg.op, "max")
end)

T.test("apply: later overrides win; a value may contain '='", function()
  local cfg = assert(config.apply({}, { "a=1", "a=2", "b=x==y" }, F))
  T.eq(cfg.a, 2); T.eq(cfg.b, "x==y")
end)

T.test("apply: dotted keys create nested tables", function()
  local cfg = assert(config.apply({ family = "x" }, { "tile.m=128", "tile.n=64", "a.b.c=true", "op.combine=a + b" }, F))
  T.deq(cfg.tile, { m = 128, n = 64 })
  T.deq(cfg.a, { b = { c = true } })
  T.deq(cfg.op, { combine = "a + b" })
end)

T.test("apply: dotted keys extend an existing table", function()
  local cfg = assert(config.apply({ op = { combine = "a + b", identity = "0.0f" } }, { "op.identity=1.0f" }, F))
  T.deq(cfg.op, { combine = "a + b", identity = "1.0f" })
end)

T.test("apply: no overrides, or nil, leaves the config as is", function()
  local c = { threads = 1 }
  T.eq(assert(config.apply(c, {}, F)), c)
  T.eq(assert(config.apply(c, nil, F)), c)
  T.deq(c, { threads = 1 })
end)

T.test("apply: a dotted path through a non-table fails, naming it", function()
  local msg = T.fails("apply", config.apply, { op = "sum" }, { "op.combine=a" }, F)
  T.contains(msg, "cfg.lua")
  T.contains(msg, "op.combine=a")
  T.contains(msg, "op is a string, not a table")
  msg = T.fails("apply", config.apply, { a = { b = 3 } }, { "a.b.c=1" }, F)
  T.contains(msg, "a.b is a number")
end)

T.test("apply: malformed overrides fail with the expected shape", function()
  for _, o in ipairs({ "threads", "=5", "", "1abc=3", "a b=1", "-x=1", "threads 256", "a-b=1", "a/b=1" }) do
    local msg = T.fails("apply " .. o, config.apply, {}, { o }, F)
    T.contains(msg, "cfg.lua", o)
    T.contains(msg, "expected key=value", o)
  end
end)

T.test("apply: malformed dotted keys fail (a..b, a., .a, a.1b)", function()
  local accepted = {}
  for _, o in ipairs({ "a..b=1", "threads.=128", ".a=1", "a.1b=1" }) do
    local cfg, msg = config.apply({}, { o }, F)
    if cfg ~= nil then accepted[#accepted + 1] = o .. " -> " .. T.show(cfg)
    else T.contains(msg, "expected key=value", o) end
  end
  T.eq(#accepted, 0, "malformed --set accepted: " .. table.concat(accepted, "; "))
end)

T.test("at most MAX_OVERRIDES --set: more is refused before any is applied", function()
  local sets = {}
  for i = 1, config.MAX_OVERRIDES + 1 do sets[i] = "k" .. i .. "=1" end
  local cfg, err = config.apply({ family = "row_reduce" }, sets, "c.lua")
  T.eq(cfg, nil, "refused")
  T.ok(err:find("c.lua: 4097 overrides %(%-%-set%): at most 4096") ~= nil, err)
end)

T.done("test_config")
