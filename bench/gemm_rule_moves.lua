-- bench/gemm_rule_moves.lua: the shapes of a grid where a change to the gemm rule's model moves
-- its first pick -- the shapes a held-out GPU run of that change must time (bench/RESULTS.md:
-- "held out").  Host only; run inside weft's Lua environment:
--
--   build/tests/weft-lua . bench/gemm_rule_moves.lua NAME=VALUE... [OPTION=VALUE...]
--
-- NAME=VALUE sets a constant of the rule's model (gen/core/gemm.lua M.MODEL) for the changed rule;
-- several change it together.  Options (lower case):
--   m=LIST n=LIST k=LIST   the grid, comma lists (default: m=16,32,...,256 x the LLM set's N x K
--                          pairs below); nk=NxK,NxK,... pairs in place of n and k's product
--   mem=GBS sms=N          the device (default an H200's 4800 GB/s and 132 SMs; an H100: mem=3352)
--   dtype=bf16|f16 layout=col|row
--   cands=N                print the shapes as bench/gemm_rule_rows.sh's OFF_SHAPES wants them,
--                          and how many of the changed rule's first N candidates hold the old pick
-- Prints each moved shape with both picks' kernel schedules and estimates, then the count.
-- Exit 0; 2 on a bad argument (named, with what is allowed).
local gemm = require("gen.core.gemm")
local weft = require("gen.core.weft")
local family = weft.family_module("gemm")   -- its rule, as auto asks it (gen/families/gemm.lua)
-- (weft's Lua loads only gen.* modules: the bench helper is read from beside this script)
local rule_tools = dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/rule_tools.lua")

local USAGE = "usage: weft-lua . bench/gemm_rule_moves.lua NAME=VALUE... [m=LIST] [n=LIST] [k=LIST] [nk=NxK,...] "
  .. "[mem=GBS] [sms=N] [dtype=bf16|f16] [layout=col|row] [cands=N]\n"

local function fail(msg)
  io.stderr:write("gemm_rule_moves: " .. msg .. "\n" .. USAGE)
  os.exit(2)
end

local function ints(text, what)
  local out = {}
  for x in (text .. ","):gmatch("([^,]*),") do
    local v = math.tointeger(tonumber(x))
    if not v or v < 1 then fail(string.format("%s=%s: %s is not a whole number from 1", what, rule_tools.quote(text), rule_tools.quote(x))) end
    out[#out + 1] = v
  end
  return out
end

-- the LLM set's N x K pairs (bench/gemm_llm_shapes.py's layers), the default grid's columns
local NK = { { 6144, 4096 }, { 4096, 4096 }, { 28672, 4096 }, { 4096, 14336 }, { 10240, 8192 }, { 8192, 8192 },
             { 57344, 8192 }, { 8192, 28672 }, { 29568, 8192 }, { 8192, 29568 }, { 14336, 4096 } }
local opts = { dtype = "bf16", layout = "col", sms = 132, mem = nil, cands = nil }
local ms, ns, ks, nk
local changes, names = {}, {}
if #arg == 0 then fail("no change given") end
for i = 1, #arg do
  local k, v = arg[i]:match("^([%w_]+)=(.*)$")
  if not k then fail(rule_tools.quote(arg[i]) .. ": not NAME=VALUE") end
  if k:match("^%u[%u_]*$") then
    local name, x = rule_tools.parse(arg[i], false)
    if not name then fail(x) end
    changes[k] = x[1]
    names[#names + 1] = arg[i]
  elseif k == "m" then ms = ints(v, k)
  elseif k == "n" then ns = ints(v, k)
  elseif k == "k" then ks = ints(v, k)
  elseif k == "nk" then
    nk = {}
    for p in (v .. ","):gmatch("([^,]*),") do
      local a, b = p:match("^(%d+)x(%d+)$")
      if not a or tonumber(a) < 1 or tonumber(b) < 1 then fail(string.format("nk=%s: %s is not NxK", rule_tools.quote(v), rule_tools.quote(p))) end
      nk[#nk + 1] = { tonumber(a), tonumber(b) }
    end
  elseif k == "mem" or k == "sms" or k == "cands" then
    opts[k] = ints(v, k)[1]
    if k == "cands" and opts[k] > 10 then fail(string.format("cands=%s: 1 to 10 (the rule lists at most 10)", rule_tools.quote(v))) end
  elseif k == "dtype" then
    if v ~= "bf16" and v ~= "f16" then fail(string.format("dtype=%s: bf16 or f16", rule_tools.quote(v))) end
    opts.dtype = v
  elseif k == "layout" then
    if v ~= "col" and v ~= "row" then fail(string.format("layout=%s: col or row (B's layout)", rule_tools.quote(v))) end
    opts.layout = v
  else
    fail(rule_tools.quote(arg[i]) .. ": unknown option (m, n, k, nk, mem, sms, dtype, layout, cands)")
  end
end
if #names == 0 then fail("no change given: NAME=VALUE of the model's constants") end
if nk and (ns or ks) then fail("nk= replaces n= and k=: give one or the other") end
if not nk then
  if ns or ks then
    if not (ns and ks) then fail("n= and k= go together (or nk=)") end
    nk = {}
    for _, n in ipairs(ns) do for _, k in ipairs(ks) do nk[#nk + 1] = { n, k } end end
  else
    nk = NK
  end
end
if not ms then ms = {} for m = 16, 256, 16 do ms[#ms + 1] = m end end

local dev = { sms = opts.sms, mem_gbs = opts.mem }
local fixed = { b_layout = opts.layout, dtype = opts.dtype }
-- (the rule lists only configs that validate; where none does, its one entry says so)
local function name_of(c)
  return rule_tools.entry_name(c, opts.dtype, opts.layout, "gemm_rule_moves") or "(none: " .. tostring(c.why) .. ")"
end
local function short(name) return (name:gsub("^weft_gemm_%w+_b%w+_", "")) end
local function picks(n)   -- the rule's first n candidates at every shape, under the model as it is now
  local out = {}
  for _, m in ipairs(ms) do
    for _, p in ipairs(nk) do
      local shape = { m = m, n = p[1], k = p[2] }
      local list = family.auto(shape, fixed, dev, 10)
      local got = {}
      for i = 1, math.min(n, #list) do got[i] = { name = name_of(list[i]), why = list[i].why or "" } end
      out[#out + 1] = { shape = shape, list = got }
    end
  end
  return out
end
local function est(why) return why:match("~([%d.]+) us") or "?" end

local before = picks(1)
local saved = {}
for k, v in pairs(changes) do saved[k], gemm.MODEL[k] = gemm.MODEL[k], v end
local after = picks(math.max(1, opts.cands or 1))
for k, v in pairs(saved) do gemm.MODEL[k] = v end

print(string.format("the rule with %s against the rule as it is: %s x %d N x K pair(s), %s %s B, %d SMs, DRAM %s",
  table.concat(names, " "), #ms == 1 and ("M = " .. ms[1]) or (#ms .. " M"), #nk, opts.dtype, opts.layout, opts.sms,
  opts.mem and (opts.mem .. " GB/s") or "the H200's (no mem=)"))
local moved, off, held = 0, {}, 0
for i, b in ipairs(before) do
  local a, s = after[i], b.shape
  if b.list[1].name ~= a.list[1].name then
    moved = moved + 1
    off[#off + 1] = string.format("%dx%dx%d", s.m, s.n, s.k)
    local has = false
    for _, c in ipairs(a.list) do has = has or c.name == b.list[1].name end
    held = held + (has and 1 or 0)
    print(string.format("%6d x %6d x %6d  now %s (~%s us)  changed %s (~%s us)%s", s.m, s.n, s.k,
      short(b.list[1].name), est(b.list[1].why), short(a.list[1].name), est(a.list[1].why),
      opts.cands and (has and "" or "  (the old pick is not among the first " .. opts.cands .. ")") or ""))
  end
end
print(string.format("%d of %d shape(s) move", moved, #before))
if opts.cands and moved > 0 then
  print(string.format("OFF_SHAPES=%s  (the old pick among the changed rule's first %d candidates at %d of %d)",
    table.concat(off, ","), opts.cands, held, moved))
end
