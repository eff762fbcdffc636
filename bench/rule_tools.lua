-- bench/rule_tools.lua: what the gemm rule's bench tools (gemm_rule_regret.lua, gemm_rule_moves.lua)
-- share: their NAME=NUMBER[,NUMBER...] arguments, which set constants of the rule's model
-- (gen/core/gemm.lua M.MODEL); how their refusals quote what was given; a config's kernel name.
local gemm = require("gen.core.gemm")
local weft = require("gen.core.weft")

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

-- A config's kernel name (the generator's own canonical text of every field, defaults resolved):
-- a measured row and the rule's pick match when their names do.  nil for a config that does not
-- validate.  who: the tool, for weft.check's messages.
function M.kernel_name(cfg, who)
  local fam, ncfg = weft.check(cfg, who)
  return fam and weft.kernel_name(fam, ncfg)
end

-- The kernel name of one of the rule's entries (family.auto's list, gemm.ranked's s.c: the fields
-- it chose, without family, dtype and B's layout) at a dtype and B layout; nil as above.
function M.entry_name(entry, dtype, b_layout, who)
  local cfg = { family = "gemm", dtype = dtype, b_layout = b_layout }
  for k, v in pairs(entry) do if k ~= "why" then cfg[k] = v end end
  return M.kernel_name(cfg, who)
end

return M
