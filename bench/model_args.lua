-- bench/model_args.lua: the bench tools' NAME=NUMBER[,NUMBER...] arguments, which set constants of
-- the gemm rule's model (gen/core/gemm.lua M.MODEL), and how their refusals quote what was given.
local gemm = require("gen.core.gemm")

local M = {}

-- text as a refusal quotes it (%q), cut past `most` bytes: a 5000-character value need not come
-- back whole.  (The cut backs up to the start of a UTF-8 character, not into one.)
function M.quote(text, most)
  most = most or 60
  if #text > most then
    local cut = most
    while cut > 0 and (text:byte(cut + 1) or 0) & 0xC0 == 0x80 do cut = cut - 1 end
    text = text:sub(1, cut) .. "..."
  end
  return string.format("%q", text)
end

-- NAME=V1[,V2...] -> name, { values }; or nil and a message naming the argument, what is wrong and
-- the constants there are.  Values are finite numbers; `many` false allows one value only.
function M.parse(text, many)
  local name, v = text:match("^(%u[%u_]*)=(.+)$")
  local values, ok = {}, name ~= nil and gemm.MODEL[name] ~= nil
  for x in ((v or "") .. ","):gmatch("([^,]*),") do
    local n = tonumber(x)
    -- (tonumber gives no nan; it does give inf for 1e400)
    ok = ok and n ~= nil and n ~= math.huge and n ~= -math.huge
    values[#values + 1] = n
  end
  if ok and not many and #values > 1 then ok = false end
  if ok then return name, values end
  local all = {}
  for c in pairs(gemm.MODEL) do all[#all + 1] = c end
  table.sort(all)
  return nil, string.format("%s: not NAME=%s with NAME one of the model's constants: %s (and finite numbers)",
    M.quote(text), many and "NUMBER[,NUMBER...]" or "NUMBER", table.concat(all, ", "))
end

return M
