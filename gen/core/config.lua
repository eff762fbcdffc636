-- gen/core/config.lua: loading a config in a sandbox, and --set overrides.
--
-- A config is a Lua chunk that returns a table.  It runs with no io, os, require, load or
-- debug: only pure functions (math, string, table, utf8, pairs, ...), so a config cannot touch
-- the machine, and its result depends on nothing but its text.  A count hook stops a config
-- that loops forever.

local M = {}

local MAX_INSTRUCTIONS = 10000000

local LIMIT_MSG = "config ran for more than " .. MAX_INSTRUCTIONS .. " instructions: does it loop forever?"

local function sandbox(state)
  -- pcall would swallow the instruction limit's error: once the limit is hit, re-raise it.
  local function guarded_pcall(f, ...)
    local r = table.pack(pcall(f, ...))
    if state.exceeded then error(LIMIT_MSG, 2) end
    return table.unpack(r, 1, r.n)
  end
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
    select = select, tonumber = tonumber, tostring = tostring, type = type,
    pcall = guarded_pcall, rawequal = rawequal, rawget = rawget, rawlen = rawlen,
    math = {}, string = {}, table = {}, utf8 = {},
  }
  for k, v in pairs(math) do if k ~= "random" and k ~= "randomseed" then env.math[k] = v end end
  for k, v in pairs(string) do if k ~= "dump" then env.string[k] = v end end
  for k, v in pairs(table) do env.table[k] = v end
  for k, v in pairs(utf8) do env.utf8[k] = v end
  return env
end

-- load(text, file) -> table | nil, message
function M.load(text, file)
  local state = { exceeded = false }
  local chunk, err = load(text, "@" .. file, "t", sandbox(state))
  if not chunk then return nil, err end
  local co = coroutine.create(chunk)
  debug.sethook(co, function()
    state.exceeded = true
    -- and on every later instruction of the config itself (not of weft's pcall wrapper)
    debug.sethook(co, function()
      if debug.getinfo(2, "S").source == "@" .. file then error(LIMIT_MSG, 2) end
    end, "", 1)
    error(LIMIT_MSG, 2)
  end, "", MAX_INSTRUCTIONS)
  local ok, result = coroutine.resume(co)
  if not ok then
    if state.exceeded and (type(result) ~= "string" or not result:find(LIMIT_MSG, 1, true)) then
      result = LIMIT_MSG
    end
    if type(result) ~= "string" then
      return nil, string.format("%s: the config raised an error whose value is a %s (%s), not a message",
        file, type(result), tostring(result))
    end
    if not result:find(file, 1, true) then result = file .. ": " .. result end
    return nil, result
  end
  if coroutine.status(co) ~= "dead" then return nil, file .. ": config yielded; it must return a table" end
  if type(result) ~= "table" then
    return nil, string.format("%s: the config must return a table, it returned %s", file,
      result == nil and "nothing" or type(result))
  end
  return result
end

-- "true"/"false" -> boolean, numbers -> number, anything else -> string (quotes stripped)
function M.parse_value(s)
  if s == "true" then return true end
  if s == "false" then return false end
  local n = math.tointeger(tonumber(s)) or tonumber(s)
  if n then return n end
  local q = s:match('^"(.*)"$') or s:match("^'(.*)'$")
  return q or s
end

-- apply(cfg, overrides, file) -> cfg | nil, message.  overrides: list of "a.b.c=value".
function M.apply(cfg, overrides, file)
  for _, o in ipairs(overrides or {}) do
    local key, value = o:match("^([^=]+)=(.*)$")
    local well_formed = key ~= nil
    if key then
      for part in (key .. "."):gmatch("([^.]*)%.") do
        if not part:match("^[%a_][%w_]*$") then well_formed = false end
      end
    end
    if not well_formed then
      return nil, string.format('%s: --set %q: expected key=value, with key a name or dotted path (tile.m=128)', file, o)
    end
    local t, parts = cfg, {}
    for p in key:gmatch("[^.]+") do parts[#parts + 1] = p end
    for i = 1, #parts - 1 do
      if t[parts[i]] == nil then t[parts[i]] = {} end
      if type(t[parts[i]]) ~= "table" then
        return nil, string.format("%s: --set %s: %s is a %s, not a table", file, o,
          table.concat(parts, ".", 1, i), type(t[parts[i]]))
      end
      t = t[parts[i]]
    end
    t[parts[#parts]] = M.parse_value(value)
  end
  return cfg
end

return M
