-- gen/core/json.lua: a deterministic JSON encoder (object keys sorted) for manifests.
local M = {}

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
                  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return escapes[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function is_array(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

local function enc(v, indent, out)
  local t = type(v)
  if t == "string" then out[#out + 1] = str(v)
  elseif t == "number" then
    if math.type(v) == "integer" then out[#out + 1] = tostring(v)
    elseif v ~= v or v == math.huge or v == -math.huge then error("json: cannot encode " .. tostring(v))
    else out[#out + 1] = string.format("%.17g", v) end
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "table" then
    local pad, pad1 = string.rep("  ", indent), string.rep("  ", indent + 1)
    if next(v) == nil then out[#out + 1] = is_array(v) and "[]" or "{}"; return end
    if is_array(v) then
      out[#out + 1] = "[\n"
      for i, x in ipairs(v) do
        out[#out + 1] = pad1; enc(x, indent + 1, out)
        out[#out + 1] = i < #v and ",\n" or "\n"
      end
      out[#out + 1] = pad .. "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("json: object key " .. tostring(k) .. " is not a string") end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{\n"
      for i, k in ipairs(keys) do
        out[#out + 1] = pad1 .. str(k) .. ": "; enc(v[k], indent + 1, out)
        out[#out + 1] = i < #keys and ",\n" or "\n"
      end
      out[#out + 1] = pad .. "}"
    end
  elseif t == "nil" then out[#out + 1] = "null"
  else error("json: cannot encode a " .. t) end
end

function M.encode(v)
  local out = {}
  enc(v, 0, out)
  return table.concat(out) .. "\n"
end

return M
