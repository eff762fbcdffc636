-- tests/lua/testlib.lua: a small assertion helper for weft's Lua unit tests.
-- Loaded by each test with:
--   local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
--
--   T.test("name", function() ... end)   runs one case; failures are counted, not fatal
--   T.eq(got, want, what)  T.ok(cond, what)  T.contains(s, sub, what)  T.not_contains(...)
--   T.done()                              prints "N passed, M failed"; error() if M > 0

local T = { passed = 0, failed = 0, failures = {} }

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for k, x in pairs(v) do parts[#parts + 1] = tostring(k) .. "=" .. show(x) end
  table.sort(parts)
  return "{" .. table.concat(parts, ", ") .. "}"
end
T.show = show

local function fail(msg, level)
  error(msg, (level or 1) + 2)
end

function T.ok(cond, what)
  if not cond then fail("expected true: " .. (what or "condition"), 1) end
  return cond
end

function T.eq(got, want, what)
  if got ~= want then
    fail(string.format("%s: got %s, want %s", what or "value", show(got), show(want)), 1)
  end
end

function T.ne(got, other, what)
  if got == other then fail(string.format("%s: both are %s", what or "values", show(got)), 1) end
end

function T.contains(s, sub, what)
  if type(s) ~= "string" or not s:find(sub, 1, true) then
    fail(string.format("%s: %s does not contain %s", what or "text", show(s), show(sub)), 1)
  end
end

function T.not_contains(s, sub, what)
  if type(s) ~= "string" or s:find(sub, 1, true) then
    fail(string.format("%s: %s contains %s", what or "text", show(s), show(sub)), 1)
  end
end

-- deep equality of plain data (tables, strings, numbers, booleans)
function T.same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not T.same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

function T.deq(got, want, what)
  if not T.same(got, want) then
    fail(string.format("%s: got %s, want %s", what or "value", show(got), show(want)), 1)
  end
end

-- Call f, which must return nil, message (the generator's error convention); returns message.
function T.fails(what, f, ...)
  local r, msg = f(...)
  if r ~= nil then fail(what .. ": expected nil, message; got " .. show(r), 1) end
  if type(msg) ~= "string" then fail(what .. ": expected an error message, got " .. show(msg), 1) end
  return msg
end

function T.test(name, f)
  local ok, err = xpcall(f, debug.traceback)
  if ok then
    T.passed = T.passed + 1
  else
    T.failed = T.failed + 1
    T.failures[#T.failures + 1] = name
    io.write("FAIL ", name, "\n  ", tostring(err):gsub("\n", "\n  "), "\n")
  end
end

function T.done(suite)
  io.write(string.format("%s: %d passed, %d failed\n", suite or "tests", T.passed, T.failed))
  io.stdout:flush()
  if T.failed > 0 then
    error(string.format("%d failed: %s", T.failed, table.concat(T.failures, ", ")), 0)
  end
end

-- A reader over an in-memory tree, falling back to the real one (weft_read).
function T.reader(files, fallback)
  return function(path)
    local t = files[path]
    if t then return t end
    if fallback then return weft_read(path) end
    return nil, path .. ": not found (test reader)"
  end
end

-- Lines of a text, without the newlines.
function T.lines(text)
  local out = {}
  for l in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

-- The source tree's root, from this runner's script path (…/tests/lua/x.lua).
function T.source_dir()
  local src = debug.getinfo(2, "S").source
  return src:match("^@(.*)/tests/lua/[^/]*$") or "."
end

-- ---- a small JSON decoder, to check manifests against their tables ------------------------
local function decode(s)
  local pos = 1
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local function err(m) error(string.format("json: %s at byte %d", m, pos), 0) end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == "" then err("unterminated string") end
      if c == '"' then pos = pos + 1; break end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
        if map[e] then out[#out + 1] = map[e]; pos = pos + 2
        elseif e == "u" then
          out[#out + 1] = utf8.char(tonumber(s:sub(pos + 2, pos + 5), 16)); pos = pos + 6
        else err("bad escape") end
      else
        out[#out + 1] = c; pos = pos + 1
      end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then err("expected a key") end
        local k = str(); ws()
        if s:sub(pos, pos) ~= ":" then err("expected :") end
        pos = pos + 1
        t[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then err("expected , or }") end
      end
    elseif c == "[" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then err("expected , or ]") end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" then err("unexpected character") end
      pos = pos + #num
      return math.tointeger(tonumber(num)) or tonumber(num)
    end
  end
  local v = value(); ws()
  if pos <= #s then err("trailing text") end
  return v
end
T.json_decode = decode

return T
