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

T.test("infinite recursion fails", function()
  local msg = T.fails("load", config.load, "local function f(n) return 1 + f(n + 1) end\nreturn { f(1) }", F)
  T.contains(msg, "cfg.lua")
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
      if fired > 10 and not escalated then
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

T.test("a binary chunk is refused", function()
  local bin = string.dump(function() return {} end)
  local msg = T.fails("load", config.load, bin, F)
  T.contains(msg, "binary")
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

T.done("test_config")
