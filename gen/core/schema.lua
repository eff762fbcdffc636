-- gen/core/schema.lua: validating a config against a family's schema.
--
-- A schema is data: an ordered list of fields.  Each field has
--   name     key in the config ("threads"; nested tables use dotted names later: "tile.m")
--   kind     "int" | "bool" | "enum" | "string" | "custom"
--   values   allowed values (enum, or int from a set), or
--   min/max  integer range
--   default  value when the key is absent (nil: required)
--   tag      short prefix used in the kernel name ("t" -> "t256")
--   check    for kind "custom": function(value) -> normalised value | nil, "what is allowed"
--   doc      one line for the config reference
-- Messages follow one shape:  <file>: <field> = <value>: <what is allowed>

local M = {}

local SHOW_MAX = 160   -- bytes of a long string a message echoes (the rest is counted, not shown)

-- t quoted on one line: %q, but a newline as \n (%q keeps it, after a backslash, splitting the
-- message); ascii: bytes past 127 as \ddd too (a snippet cut anywhere shows as numbers, not as a
-- broken character), else UTF-8 stays as written.
local function quote(t, ascii)
  local q = string.format("%q", t):gsub("\\\n", "\\n")
  if ascii then q = q:gsub("[\128-\255]", function(c) return "\\" .. c:byte() end) end
  return q
end
M.quote = quote

-- s's first max bytes, less the start of a UTF-8 character that max would split: a character
-- ending at byte max is kept, one crossing it is dropped whole.  The cut is a character boundary
-- when byte max + 1 is not a continuation byte (10xxxxxx); a character has at most 3 of them, so
-- the cut moves back at most 3 bytes.  Not UTF-8 there (a longer run of continuation bytes): cut
-- at max, as bytes.
local function cut(s, max)
  if #s <= max then return s end
  local n = max
  while n > max - 3 and n > 0 and s:byte(n + 1) & 0xC0 == 0x80 do n = n - 1 end
  if s:byte(n + 1) & 0xC0 == 0x80 then n = max end
  return s:sub(1, n)
end
M.cut = cut

-- A key (a field's name, a table's key) as a message shows it: as written, or its first SHOW_MAX
-- bytes and its length (a megabyte of key pushed the message's reason past the end of its buffer).
local function show_key(k)
  local t = tostring(k)
  if #t > SHOW_MAX then return string.format("%s ... (%d bytes in all)", cut(t, SHOW_MAX), #t) end
  return t
end
M.show_key = show_key

-- A table as a message shows it: "{ k = v, ... }" sorted, each value by show_value, the first
-- SHOW_ENTRIES entries and their count (a thousand entries pushed the reason past the buffer's end).
local SHOW_ENTRIES = 16
function M.show_table(t, show_value)
  local parts = {}
  for k, x in pairs(t) do parts[#parts + 1] = show_key(k) .. " = " .. show_value(x) end
  table.sort(parts)
  local n = #parts
  if n > SHOW_ENTRIES then
    for i = n, SHOW_ENTRIES + 1, -1 do parts[i] = nil end
    parts[#parts + 1] = string.format("... (%d entries in all)", n)
  end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

local function show(v)
  if type(v) == "function" then return "function" end   -- never its address: messages stay the same run to run
  if type(v) == "string" then
    if #v > SHOW_MAX then return string.format("%s ... (%d bytes in all)", quote(cut(v, SHOW_MAX)), #v) end
    return quote(v)
  end
  if type(v) == "table" then return M.show_table(v, show) end
  return tostring(v)
end
M.show = show

local function list(values)
  local parts = {}
  for i, v in ipairs(values) do parts[i] = show(v) end
  return table.concat(parts, ", ")
end
M.list = list

-- An error collector: one per validation, so messages from every field arrive together.  show_value:
-- how a value is shown (default show; the sweep's own shows functions and depth).
function M.errors(file, show_value)
  show_value = show_value or show
  local e = { file = file, items = {} }
  function e.add(field, value, allowed)
    e.items[#e.items + 1] = string.format("%s: %s = %s: %s", file, show_key(field), show_value(value), allowed)
  end
  function e.raw(msg) e.items[#e.items + 1] = file .. ": " .. msg end
  function e.ok() return #e.items == 0 end
  function e.text() return table.concat(e.items, "\n") end
  return e
end

local function check_field(f, v, errs)
  if f.kind == "int" then
    if math.type(v) ~= "integer" then
      local iv = type(v) == "number" and math.tointeger(v) or nil   -- nil for 1.5, 1e300, inf, nan
      if iv then v = iv
      else errs.add(f.name, v, "must be an integer" .. (f.values and (" in {" .. list(f.values) .. "}") or
        (f.min and string.format(" in %d..%d", f.min, f.max) or ""))); return nil end
    end
    if f.values then
      for _, a in ipairs(f.values) do if a == v then return v end end
      errs.add(f.name, v, "must be one of " .. list(f.values)); return nil
    end
    if (f.min and v < f.min) or (f.max and v > f.max) then
      errs.add(f.name, v, string.format("must be an integer in %d..%d", f.min, f.max)); return nil
    end
    return v
  elseif f.kind == "bool" then
    if type(v) ~= "boolean" then errs.add(f.name, v, "must be true or false"); return nil end
    return v
  elseif f.kind == "enum" then
    for _, a in ipairs(f.values) do if a == v then return v end end
    errs.add(f.name, v, "must be one of " .. list(f.values)); return nil
  elseif f.kind == "string" then
    if type(v) ~= "string" or v == "" then errs.add(f.name, v, "must be a non-empty string"); return nil end
    return v
  elseif f.kind == "custom" then
    local nv, allowed = f.check(v)
    if nv == nil then errs.add(f.name, v, allowed); return nil end
    return nv
  end
  error("schema: field " .. f.name .. " has unknown kind " .. tostring(f.kind))
end

-- Why a key field (it changes the result) cannot be "auto": weft gen's message and auto's.
function M.auto_key_why(name, default)
  return string.format("\"auto\" chooses no %s: it changes the result, so it is the config's to set; left out, it is %s",
    name, default == nil and "required" or show(default))
end

-- Adds to errs each key of cfg that is not family nor one of fields, with the known keys (the key
-- as written: a caller searching the message for it finds it).
function M.unknown_keys(cfg, fields, errs)
  local byname, names = {}, {}
  for _, f in ipairs(fields) do byname[f.name] = true; names[#names + 1] = f.name end
  local unknown = {}
  for k in pairs(cfg) do
    if k ~= "family" and not byname[k] then unknown[#unknown + 1] = k end
  end
  table.sort(unknown, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(unknown) do
    errs.add(tostring(k), cfg[k], "unknown key for family " .. show(cfg.family) .. "; known keys: " .. table.concat(names, ", "))
  end
end

-- validate(cfg, fields, file[, keys]) -> normalised config | nil, message
-- Unknown keys, wrong types and values out of range are all reported, not just the first.
-- keys: the family's key fields (F.key: they change the result, so auto never chooses them).
function M.validate(cfg, fields, file, keys)
  local is_key = {}
  for _, k in ipairs(keys or {}) do is_key[k] = true end
  local errs = M.errors(file)
  M.unknown_keys(cfg, fields, errs)
  local out = { family = cfg.family }
  for _, f in ipairs(fields) do
    local v = cfg[f.name]
    if v == nil then
      if f.default == nil then errs.raw(f.name .. " is required (" .. (f.doc or "") .. ")")
      else out[f.name] = check_field(f, f.default, errs) end   -- defaults are normalised too
    else
      local n = #errs.items
      out[f.name] = check_field(f, v, errs)
      if v == "auto" and #errs.items > n and is_key[f.name] then   -- (auto keeps a key field: its default)
        errs.items[#errs.items] = errs.items[#errs.items] .. " (" .. M.auto_key_why(f.name, f.default) .. ")"
      elseif v == "auto" and #errs.items > n then   -- (not a value of the field: what "auto" needs)
        errs.items[#errs.items] = errs.items[#errs.items] .. ' (or "auto", chosen for a shape: with --auto --shape S, '
          .. "weft suggest, or the auto API)"
      end
    end
  end
  if not errs.ok() then return nil, errs.text() end
  return out
end

return M
