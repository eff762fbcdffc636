-- tests/lua/test_schema.lua: gen/core/schema.lua (validation and messages), gen/core/ops.lua, gen/core/common.lua
-- rules, and the families' schemas as data.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local schema = require("gen.core.schema")
local ops = require("gen.core.ops")
local common = require("gen.core.common")
local weft = require("gen.core.weft")

local F = "cfg.lua"

local FIELDS = {
  { name = "threads", kind = "int", values = { 64, 128, 256 }, default = 128, tag = "t" },
  { name = "cluster", kind = "int", min = 1, max = 16, default = 1, tag = "c" },
  { name = "flag", kind = "bool", default = false, tag = "f" },
  { name = "dtype", kind = "enum", values = { "f32", "f16" }, default = "f32", tag = "" },
  { name = "label", kind = "string", default = "x", tag = "l" },
  { name = "op", kind = "custom", check = ops.check, default = "sum", tag = "" },
}

local function validate(cfg, fields) return schema.validate(cfg, fields or FIELDS, F) end

-- ---- show / list ---------------------------------------------------------------------------

T.test("custom operators: the tokenizer admits expressions and nothing else", function()
  for _, e in ipairs({ "a + b", "fmaxf(a, b) + 0.0f", "a > b ? a : b", "(a * 2.0f) - (b / 3)", "fabsf(a) + fabsf(b)",
                       "__int_as_float(__float_as_int(a) & 0x7fffffff) + b", "a * 1e-3f + b * .5f", "-a + !b",
                       "fmaf(a, 2.f, b)", "(a < b) && (b >= 0.0f) ? b : a" }) do
    local op, why = ops.check({ combine = e, identity = "0.0f" })
    T.ok(op, e .. ": " .. tostring(why))
  end
  for _, id in ipairs({ "0.0f", "__int_as_float(0xff800000)", "-1e30f", "1.0f / 0.0f", "0x1p3f" }) do
    local op = ops.check({ combine = "a + b", identity = id })
    if id == "0x1p3f" then T.ok(not op, "a hex float with p is not a C++ float here: " .. id)
    else T.ok(op, "identity " .. id) end
  end
  local cases = {
    { "a + b <% return 0; %>", "digraphs" }, { "a /* x */ + b", "comments" }, { "a // b", "comments" },
    { "(a + b", "( without its )" }, { "a + b)", ") without its (" }, { "a + c", "uses c" },
    { "fmaxf + a", "fmaxf without parentheses" }, { 'a + "b"', "holds" }, { "a + 'b'", "holds" },
    { "a[0] + b", "holds" }, { "a.x + b", "malformed number" }, { "a = b", "holds" }, { "a + 1.2.3", "malformed number" },
    { string.rep("a + ", 1100) .. "b", "at most 4096" }, { "a +\tb", nil }, { "a\n+ b", "no ; { } #" },
  }
  for _, c in ipairs(cases) do
    local op, why = ops.check({ combine = c[1], identity = "0.0f" })
    if c[2] then
      T.ok(not op, "refused: " .. c[1])
      T.ok(why and why:find(c[2], 1, true), c[1] .. " -> " .. tostring(why))
    else
      T.ok(op, "accepted: " .. c[1] .. " " .. tostring(why))
    end
  end
end)

T.test("show: strings quoted, tables sorted, others plain", function()
  T.eq(schema.show("256"), '"256"')
  T.eq(schema.show(256), "256")
  T.eq(schema.show(true), "true")
  T.eq(schema.show(nil), "nil")
  T.eq(schema.show({ identity = "0", combine = "a" }), '{ combine = "a", identity = "0" }')
  T.eq(schema.list({ 1, "a", false }), '1, "a", false')
end)

T.test("show: a long string is cut, with its length, so the message still says what is allowed", function()
  T.eq(schema.show(string.rep("x", 160)), '"' .. string.rep("x", 160) .. '"')
  T.eq(schema.show(string.rep("x", 100000)), '"' .. string.rep("x", 160) .. '" ... (100000 bytes in all)')
  local _, err = validate({ family = "fam", dtype = string.rep("y", 100000) })
  T.ok(err and #err < 400 and err:find("(100000 bytes in all): must be one of", 1, true), tostring(err):sub(1, 300))
end)

T.test("show: a long key and a long table are cut too, so the message still says why", function()
  local key = string.rep("k", 1000000)
  local _, err = validate({ family = "fam", [key] = 1 })
  T.ok(err and #err < 600 and err:find(string.rep("k", 160) .. " ... (1000000 bytes in all) = 1: unknown key", 1, true),
    tostring(err):sub(1, 300))
  local big = {}
  for i = 1, 1000 do big[i] = i end
  local shown = schema.show(big)
  T.ok(#shown < 300 and shown:find("1 = 1, 10 = 10, 100 = 100", 1, true) and shown:sub(-29) == ", ... (1000 entries in all) }",
    shown:sub(1, 300))
  T.eq(schema.show({ 1, 2 }), "{ 1 = 1, 2 = 2 }")
end)

T.test("show: a value on one line (a newline split the message in two), UTF-8 whole", function()
  T.eq(schema.show("f3\n2"), '"f3\\n2"')
  T.eq(schema.show("caf\195\169"), '"caf\195\169"')
  T.eq(schema.show("a\rb\0c"), '"a\\13b\\0c"')
  T.eq(schema.quote("caf\195\169", true), '"caf\\195\\169"')
  -- cut at 160 bytes, but not through a character: 159 x's and then a two-byte é
  T.eq(schema.show(string.rep("x", 159) .. string.rep("\195\169", 10)), '"' .. string.rep("x", 159) .. '" ... (179 bytes in all)')
  local _, err = validate({ family = "fam", dtype = "f3\n2" })
  T.ok(err and not err:find("\n", 1, true) and err:find('dtype = "f3\\n2"', 1, true), tostring(err))
end)

T.test("cut: at most max bytes, never part of a UTF-8 character", function()
  local e2, e3, e4 = "\195\169", "\226\130\172", "\240\159\152\128"   -- é, €, 😀
  T.eq(schema.cut("abcdef", 4), "abcd", "ASCII: max bytes")
  T.eq(schema.cut("abcd", 4), "abcd", "no longer than max: as it is")
  T.eq(schema.cut("", 4), "", "empty")
  T.eq(schema.cut("abc", 0), "", "max 0")
  for _, c in ipairs({ e2, e3, e4 }) do
    local n = #c
    -- a character ending exactly at max is kept, whatever follows it
    T.eq(schema.cut(string.rep("x", 10 - n) .. c .. "y", 10), string.rep("x", 10 - n) .. c, n .. "-byte ending at max")
    T.eq(schema.cut(string.rep("x", 10 - n) .. c .. c, 10), string.rep("x", 10 - n) .. c, n .. "-byte ending at max, another after")
    -- a character crossing max, at any of its bytes, is dropped whole
    for over = 1, n - 1 do
      local before = string.rep("x", 10 - n + over)
      T.eq(schema.cut(before .. c .. "y", 10), before, n .. "-byte crossing max by " .. over)
    end
  end
  T.eq(schema.cut(e2:rep(5) .. "x", 10), e2:rep(5), "all two-byte, the last ending at max")
  T.eq(schema.cut(e3:rep(4), 10), e3:rep(3), "all three-byte, the fourth crossing max")
  T.eq(schema.cut(e4, 2), "", "a character longer than max: nothing")
  -- not UTF-8: no error, and never longer than max
  T.eq(schema.cut(("\128"):rep(12), 10), ("\128"):rep(10), "only continuation bytes: cut at max, as bytes")
  T.eq(schema.cut("\128\128", 1), "\128", "a continuation byte at the start")
  T.eq(schema.cut("abc\195" .. "def", 4), "abc\195", "a lead byte with no continuation: bytes as they are")
  T.eq(schema.cut("abc\255\255\255\255", 5), "abc\255\255", "bytes UTF-8 never uses")
  for len = 0, 24 do
    for max = 0, 12 do
      local s = (e4 .. "a" .. e3 .. "\128\255" .. e2):rep(2):sub(1, len)
      local got = schema.cut(s, max)
      T.ok(#got <= max or got == s, "len " .. len .. " max " .. max .. ": at most max bytes")
      T.eq(s:sub(1, #got), got, "len " .. len .. " max " .. max .. ": a prefix")
    end
  end
end)

-- ---- validation -------------------------------------------------------------------------

T.test("defaults fill absent keys; family passes through", function()
  local cfg = assert(validate({ family = "fam" }))
  T.eq(cfg.family, "fam"); T.eq(cfg.threads, 128); T.eq(cfg.cluster, 1); T.eq(cfg.flag, false)
  T.eq(cfg.dtype, "f32"); T.eq(cfg.label, "x"); T.eq(cfg.op.name, "sum")
end)

T.test("valid values pass and the input is not modified", function()
  local input = { family = "fam", threads = 64, cluster = 16, flag = true, dtype = "f16", label = "y", op = "max" }
  local cfg = assert(validate(input))
  T.eq(cfg.threads, 64); T.eq(cfg.cluster, 16); T.eq(cfg.flag, true); T.eq(cfg.dtype, "f16")
  T.eq(cfg.op.name, "max")
  T.eq(input.op, "max", "input op untouched")
end)

T.test("integral floats become integers", function()
  local cfg = assert(validate({ threads = 256.0, cluster = 2.0 }))
  T.eq(math.type(cfg.threads), "integer"); T.eq(cfg.threads, 256)
  T.eq(math.type(cfg.cluster), "integer"); T.eq(cfg.cluster, 2)
end)

T.test("int from a set: value, and the allowed set", function()
  local msg = T.fails("validate", validate, { threads = 100 })
  T.eq(msg, "cfg.lua: threads = 100: must be one of 64, 128, 256")
end)

T.test("int in a range", function()
  T.eq(T.fails("v", validate, { cluster = 0 }), "cfg.lua: cluster = 0: must be an integer in 1..16")
  T.eq(T.fails("v", validate, { cluster = 17 }), "cfg.lua: cluster = 17: must be an integer in 1..16")
  T.eq(T.fails("v", validate, { cluster = -1 }), "cfg.lua: cluster = -1: must be an integer in 1..16")
end)

T.test("wrong types for ints", function()
  T.eq(T.fails("v", validate, { threads = "256" }), 'cfg.lua: threads = "256": must be an integer in {64, 128, 256}')
  T.eq(T.fails("v", validate, { cluster = 1.5 }), "cfg.lua: cluster = 1.5: must be an integer in 1..16")
  T.eq(T.fails("v", validate, { cluster = true }), "cfg.lua: cluster = true: must be an integer in 1..16")
  T.contains(T.fails("v", validate, { cluster = { 2 } }), "cfg.lua: cluster = { 1 = 2 }: must be an integer")
end)

T.test("huge and non-finite numbers are config errors, not generator crashes", function()
  local bad = {}
  for _, v in ipairs({ 1e300, -1e300, math.huge, -math.huge, 2.0 ^ 63, 0 / 0 }) do
    for _, field in ipairs({ "cluster", "threads" }) do
      local ok, r, msg = pcall(validate, { [field] = v })
      if not ok then bad[#bad + 1] = field .. " = " .. tostring(v) .. ": raised " .. tostring(r)
      elseif r ~= nil then bad[#bad + 1] = field .. " = " .. tostring(v) .. ": accepted"
      elseif not msg:find("cfg.lua: " .. field .. " = ", 1, true) or msg:find(field .. " = nil", 1, true) then
        bad[#bad + 1] = field .. " = " .. tostring(v) .. ": message " .. T.show(msg)
      end
    end
  end
  T.eq(#bad, 0, table.concat(bad, "\n    "))
end)

T.test("bool, enum, string", function()
  T.eq(T.fails("v", validate, { flag = "yes" }), 'cfg.lua: flag = "yes": must be true or false')
  T.eq(T.fails("v", validate, { flag = 1 }), "cfg.lua: flag = 1: must be true or false")
  T.eq(T.fails("v", validate, { dtype = "f64" }), 'cfg.lua: dtype = "f64": must be one of "f32", "f16"')
  T.eq(T.fails("v", validate, { dtype = 32 }), 'cfg.lua: dtype = 32: must be one of "f32", "f16"')
  T.eq(T.fails("v", validate, { label = "" }), 'cfg.lua: label = "": must be a non-empty string')
  T.eq(T.fails("v", validate, { label = 5 }), "cfg.lua: label = 5: must be a non-empty string")
end)

T.test("unknown keys are named, with the family and the known keys", function()
  local msg = T.fails("v", validate, { family = "fam", thread = 256 })
  T.eq(msg, 'cfg.lua: thread = 256: unknown key for family "fam"; known keys: threads, cluster, flag, dtype, label, op')
end)

T.test("non-string keys are reported too", function()
  local msg = T.fails("v", validate, { family = "fam", 256 })
  T.contains(msg, "cfg.lua: 1 = 256: unknown key")
end)

T.test("every problem is reported at once, in a stable order", function()
  local msg = T.fails("v", validate, { zeta = 1, alpha = 2, threads = 100, flag = "no", dtype = "f64" })
  local lines = T.lines(msg)
  T.eq(#lines, 5, "one line per problem:\n" .. msg)
  T.contains(lines[1], "alpha = 2: unknown key")
  T.contains(lines[2], "zeta = 1: unknown key")
  T.contains(lines[3], "threads = 100")
  T.contains(lines[4], "flag = \"no\"")
  T.contains(lines[5], "dtype = \"f64\"")
  for i, l in ipairs(lines) do T.eq(l:sub(1, #F + 2), F .. ": ", "line " .. i .. " starts with the file") end
end)

T.test("a field without a default is required", function()
  local fields = { { name = "n", kind = "int", min = 1, max = 4, tag = "n", doc = "the n" } }
  local msg = T.fails("v", validate, {}, fields)
  T.eq(msg, "cfg.lua: n is required (the n)")
end)

T.test("a schema field of unknown kind is a generator bug (raises)", function()
  local ok, err = pcall(validate, { x = 1 }, { { name = "x", kind = "float", tag = "x" } })
  T.eq(ok, false)
  T.contains(tostring(err), "unknown kind")
end)

T.test("errors(): add and raw share the message shape", function()
  local e = schema.errors("f.lua")
  T.ok(e.ok())
  e.add("cluster", 16, "must be at most 8")
  e.raw("something else")
  T.ok(not e.ok())
  T.eq(e.text(), "f.lua: cluster = 16: must be at most 8\nf.lua: something else")
end)

-- ---- operators ---------------------------------------------------------------------------

T.test("fnv1a: the 64-bit FNV-1a test vectors", function()
  T.eq(ops.fnv1a(""), "cbf29ce484222325")
  T.eq(ops.fnv1a("a"), "af63dc4c8601ec8c")
  T.eq(ops.fnv1a("foobar"), "85944171f73967e8")
end)

T.test("builtin operators", function()
  for _, n in ipairs(ops.names) do
    local op = assert(ops.check(n))
    T.eq(op.name, n); T.eq(op.tag, n)
    T.eq(op.combine, ops.builtin[n].combine); T.eq(op.identity, ops.builtin[n].identity)
  end
  T.eq(#ops.names, 4)
  for n in pairs(ops.builtin) do
    local found = false
    for _, m in ipairs(ops.names) do found = found or m == n end
    T.ok(found, n .. " listed in ops.names")
  end
end)

T.test("unknown operator names", function()
  local op, allowed = ops.check("avg")
  T.eq(op, nil)
  T.contains(allowed, '"sum", "max", "min", "prod"')
  T.contains(allowed, "combine")
  T.eq(ops.check(3), nil)
  T.eq(ops.check(true), nil)
  T.eq(ops.check("SUM"), nil)
end)

T.test("custom operators: tag from the text, stable, ref allowed", function()
  local a = assert(ops.check({ combine = "fmaxf(a, b)", identity = "0.0f" }))
  T.eq(a.name, "custom")
  T.ok(a.tag:match("^cx%x%x%x%x%x%x%x%x%x%x$"), "tag shape: " .. a.tag)
  T.eq(a.tag, "cx" .. ops.fnv1a("fmaxf(a, b)\0" .. "0.0f"):sub(1, 10))
  local b = assert(ops.check({ combine = "fmaxf(a, b)", identity = "0.0f", ref = function(x, y) return math.max(x, y) end }))
  T.eq(b.tag, a.tag, "ref does not change the kernel")
  T.eq(type(b.ref), "function")
  local c = assert(ops.check({ combine = "fmaxf(a, b)", identity = "1.0f" }))
  T.ne(c.tag, a.tag, "identity changes the tag")
  local d = assert(ops.check({ combine = "fmaxf(b, a)", identity = "0.0f" }))
  T.ne(d.tag, a.tag, "combine changes the tag")
  local e = assert(ops.check({ combine = "a + b", identity = "0.0f" }))
  T.ne(e.tag, "sum", "a custom sum is not the builtin")
end)

T.test("custom operators: what is missing or unknown", function()
  local _, m = ops.check({ identity = "0.0f" })
  T.contains(m, "needs combine")
  _, m = ops.check({ combine = "a + b" })
  T.contains(m, "needs identity")
  _, m = ops.check({ combine = "a + b", identity = "0", scale = 2 })
  T.contains(m, "unknown key scale")
  T.contains(m, "combine, identity, ref")
  _, m = ops.check({ combine = "a + b", identity = "0.0f", ref = "a + b" })
  T.contains(m, "ref must be a Lua function")
end)

T.test("custom operators: injection and empty text are rejected", function()
  local bad = { "a + b; asm(\"trap;\")", "a + b }", "{ a }", "a\n+ b", "a\r+b", "#define X", "a \\\n b", "", "   ", 5, true }
  for _, s in ipairs(bad) do
    local op, m = ops.check({ combine = s, identity = "0.0f" })
    T.eq(op, nil, "combine " .. T.show(s))
    T.contains(m, "combine", T.show(s))
    op, m = ops.check({ combine = "a + b", identity = s })
    T.eq(op, nil, "identity " .. T.show(s))
    T.contains(m, "identity", T.show(s))
  end
end)

T.test("op through validate: value and allowed in one message", function()
  local msg = T.fails("v", validate, { op = { combine = "a; b", identity = "0" } })
  T.eq(msg, 'cfg.lua: op = { combine = "a; b", identity = "0" }: custom op combine must be a single expression: no ; { } # \\ or newlines (";" at character 2)')
  msg = T.fails("v", validate, { op = "avg" })
  T.contains(msg, 'cfg.lua: op = "avg": must be one of "sum", "max", "min", "prod"')
end)

-- ---- common rules ------------------------------------------------------------------------

T.test("check_cluster: above 8 needs nonportable", function()
  local e = schema.errors(F)
  common.check_cluster({ cluster = 8, nonportable = false }, e)
  common.check_cluster({ cluster = 16, nonportable = true }, e)
  T.ok(e.ok(), e.text())
  common.check_cluster({ cluster = 9, nonportable = false }, e)
  T.eq(e.text(), "cfg.lua: cluster = 9: must be at most 8; up to 16 needs nonportable = true")
end)

T.test("grid_per_cluster", function()
  T.deq(common.grid_per_cluster("rows", 4),
    { { arg = "rows", per = 1, times = 4 }, { per = 1, times = 1 }, { per = 1, times = 1 } })
end)

-- ---- the families' schemas as data --------------------------------------------------------

local KINDS = { int = true, bool = true, enum = true, string = true, custom = true }

T.test("every family module exists and is well-formed", function()
  T.ok(#weft.families() >= 3, "families")
  for _, name in ipairs(weft.families()) do
    local fam = weft.family_module(name)
    T.ok(fam, name)
    T.eq(fam.name, name, "module name")
    T.eq(fam.template, "templates/" .. name .. ".cu", name .. " template path")
    T.ok(weft_read(fam.template), fam.template .. " readable")
    T.eq(type(fam.check), "function", name .. ".check")
    T.eq(type(fam.derive), "function", name .. ".derive")
    T.ok(type(fam.fields) == "table" and #fam.fields > 0, name .. ".fields")
  end
  T.eq(weft.family_module("nope"), nil)
  T.eq(weft.family_module("config"), nil, "only listed families load")
end)

T.test("every field: known kind, tag, doc, default valid; names unique", function()
  for _, name in ipairs(weft.families()) do
    local fam = weft.family_module(name)
    local seen = {}
    for _, f in ipairs(fam.fields) do
      local where = name .. "." .. tostring(f.name)
      T.ok(type(f.name) == "string" and f.name:match("^[%a_][%w_]*$"), where .. " name")
      T.ok(not seen[f.name], where .. " duplicate"); seen[f.name] = true
      T.ok(f.name ~= "family", where .. " shadows family")
      T.ok(KINDS[f.kind], where .. " kind " .. tostring(f.kind))
      T.eq(type(f.tag), "string", where .. " tag")
      T.ok(not f.tag:find("_"), where .. " tag has no _")
      T.eq(type(f.doc), "string", where .. " doc")
      T.ok(f.default ~= nil, where .. " default")
      if f.kind == "int" then
        T.ok(f.values or (math.type(f.min) == "integer" and math.type(f.max) == "integer"), where .. " values or min/max")
      end
      if f.kind == "enum" then T.ok(type(f.values) == "table" and #f.values > 0, where .. " values") end
      if f.kind == "custom" then T.eq(type(f.check), "function", where .. " check") end
      local cfg, msg = schema.validate({ family = name }, { f }, F)
      T.ok(cfg, where .. " default validates: " .. tostring(msg))
    end
  end
end)

T.test("an empty config gets every field's default", function()
  for _, name in ipairs(weft.families()) do
    local fam = weft.family_module(name)
    local cfg = assert(schema.validate({ family = name }, fam.fields, F))
    for _, f in ipairs(fam.fields) do
      if f.kind ~= "custom" then T.eq(cfg[f.name], f.default, name .. "." .. f.name) end
    end
  end
end)

T.done("test_schema")
