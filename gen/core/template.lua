-- gen/core/template.lua: the template engine.
--
-- A template is ordinary CUDA C with ${name} holes.  render() fills every hole from a table of
-- values and fails on any name it cannot fill (never leaves ${x} behind).  It also expands
-- `#include "weft/..."` lines by inlining templates/weft/... once each, so the rendered source
-- is self-contained: NVRTC needs no include path, `weft gen` output compiles on its own, and
-- the source hash covers the headers too.  #line directives map every line back to its file
-- in templates/, so compiler errors point at the template, not at generated text.

local M = {}

local MAX_ERRORS = 20

local function fmt_value(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  if t == "boolean" then return v and "true" or "false" end
  return nil
end

-- Fill ${name} holes in one line.  Returns the line and whether a value spanned lines.
local function fill_line(line, values, where, errors)
  local multiline = false
  local out = line:gsub("%${([^}]*)}", function(name)
    if #errors >= MAX_ERRORS then return "" end
    if not name:match("^[%a_][%w_]*$") then
      errors[#errors + 1] = string.format("%s: bad hole ${%s}: names are letters, digits and _", where, name)
      return ""
    end
    local v = values[name]
    if v == nil then
      errors[#errors + 1] = string.format("%s: no value for ${%s}", where, name)
      return ""
    end
    local s = fmt_value(v)
    if not s then
      errors[#errors + 1] = string.format("%s: value for ${%s} is a %s, not a string, number or boolean",
        where, name, type(v))
      return ""
    end
    if s:find("\n", 1, true) then multiline = true end
    return s
  end)
  if #errors < MAX_ERRORS and line:gsub("%${[^}]*}", ""):find("${", 1, true) then
    errors[#errors + 1] = string.format("%s: unclosed ${ (a hole is ${name})", where)
  end
  return out, multiline
end

local function lines_of(text)
  local lines = {}
  for l in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = l
  end
  return lines
end

-- Expand one file (template or header) into out[].
--   path:    the file's name under the source tree, e.g. "templates/row_reduce.cu"
--   values:  hole values, or nil for headers (headers are plain CUDA C: holes there are errors)
local function expand(path, values, read, out, seen, errors, depth)
  if depth > 16 then
    errors[#errors + 1] = path .. ": includes nested more than 16 deep"
    return
  end
  local text, err = read(path)
  if not text then
    errors[#errors + 1] = err or (path .. ": cannot read")
    return
  end
  out[#out + 1] = string.format('#line 1 "%s"', path)
  for n, line in ipairs(lines_of(text)) do
    if #errors >= MAX_ERRORS then return end
    local inc = line:match('^%s*#%s*include%s+"(weft/[^"]+)"')
    if inc then
      local ipath = "templates/" .. inc
      if not seen[ipath] then
        seen[ipath] = true
        expand(ipath, nil, read, out, seen, errors, depth + 1)
      end
      out[#out + 1] = string.format('#line %d "%s"', n + 1, path)
    elseif values then
      local filled, multiline = fill_line(line, values, path .. ":" .. n, errors)
      out[#out + 1] = filled
      if multiline then out[#out + 1] = string.format('#line %d "%s"', n + 1, path) end
    else
      if line:find("${", 1, true) then
        errors[#errors + 1] = string.format("%s:%d: ${...} holes belong in family templates, not in headers", path, n)
      end
      out[#out + 1] = line
    end
  end
end

-- render(path, values, read) -> source | nil, message
--   read(path) -> text | nil, message   (the host's file access: embedded or a source tree)
function M.render(path, values, read)
  local out, errors = {}, {}
  expand(path, values, read, out, {}, errors, 0)
  if #errors > 0 then
    if #errors >= MAX_ERRORS then errors[#errors + 1] = "(stopped after " .. MAX_ERRORS .. " errors)" end
    return nil, table.concat(errors, "\n")
  end
  return table.concat(out, "\n") .. "\n"
end

-- Fill holes in a string (no includes, no #line): for small generated snippets.
function M.fill(text, values, where)
  local errors, out = {}, {}
  for n, line in ipairs(lines_of(text)) do
    out[#out + 1] = (fill_line(line, values, (where or "snippet") .. ":" .. n, errors))
  end
  if #errors > 0 then return nil, table.concat(errors, "\n") end
  return table.concat(out, "\n")
end

return M
