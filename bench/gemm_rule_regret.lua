-- bench/gemm_rule_regret.lua: how far the gemm rule's first pick is from the best measured config,
-- over a set of measured candidates -- the number the rule is fitted against (bench/RESULTS.md,
-- "the rule refitted").  Host only; run inside weft's Lua environment:
--
--   build/tests/weft-lua . bench/gemm_rule_regret.lua ROWS.tsv [ROWS.tsv ...] [WORST [NAME=VALUE ...]]
--
-- NAME=VALUE sets a constant of the rule's model (gen/core/gemm.lua M.MODEL, e.g. SMEM_US_PER_KB=0.005) for
-- this run: a refit is a loop over values, each scored by the same geomean.
-- ROWS.tsv: one measured candidate per line, dtype TAB shape TAB config TAB time_us [TAB base], as a
-- tuning database's results hold them (bench/gemm_rule_regret.sh dumps one: the shape "k=.. m=..
-- n=..", the config "key=value" fields separated by blanks, a string quoted or not; base, where
-- given, the Lua text of the config the fields override, as weft tune stores it).  Rows of one dtype, shape and b_layout form a
-- group; the rule (gen/core/gemm.lua candidates, for the file's device: below) ranks that group's shape, and
-- its first pick is looked up among the group's rows by kernel name (the generator validates each
-- row's config; one that does not validate is named by its line and left out).  Prints the geometric mean of pick / best
-- over the groups whose pick was measured, the count of those that were not, and the WORST groups
-- (default 10); then the same geomean for the first config in the rule's whole order
-- (gen/core/gemm.lua ranked) that the group measured, which counts every group (a change that
-- moves picks to configs never measured shows there).  Several files: each file's groups are its
-- own (one run, one machine: the same shape in two files is two groups), a line per file, then
-- the geomeans over every group of every file -- so a file weighs by its groups.  The device a
-- file was measured on (its SM count and DRAM rate, the rule's dev.sms and dev.mem_gbs) comes from
-- machines.txt in the file's folder (bench/data/machines.txt); a file it does not list, or a
-- folder without one, is scored as the rule's default device (an H200).  Files of more than one
-- device also get a pooled line per device.  NAME=V1,V2,... (one NAME at a time) scans that
-- constant: a pooled line per device for each value, and no list of groups -- a refit in one run.
-- Exit 0; 1 if a file or a machines.txt could not be read, or a file held no group.
local gemm = require("gen.core.gemm")
-- (weft's Lua loads only gen.* modules: the bench helper is read from beside this script)
local rule_tools = dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/rule_tools.lua")

local USAGE = "usage: weft-lua . bench/gemm_rule_regret.lua ROWS.tsv [ROWS.tsv ...] [WORST [NAME=VALUE[,VALUE...] ...]]\n"
local paths, worst_n, a = {}, 10, 1
while arg[a] and not tonumber(arg[a]) and not arg[a]:match("^%u[%u_]*=") do
  paths[#paths + 1] = arg[a]
  a = a + 1
end
if tonumber(arg[a]) then
  worst_n = tonumber(arg[a])
  a = a + 1
end
if #paths == 0 then
  io.stderr:write(USAGE)
  os.exit(2)
end
local scan   -- { name =, values = { ... } } for NAME=V1,V2,...
for i = a, #arg do
  local k, values = rule_tools.parse(arg[i], true)
  if not k or (#values > 1 and scan) then
    io.stderr:write("gemm_rule_regret: " .. (k and rule_tools.quote(arg[i]) .. ": one NAME scanned at a time" or values)
      .. "\n" .. USAGE)
    os.exit(2)
  end
  if #values > 1 then scan = { name = k, values = values } else gemm.MODEL[k] = values[1] end
end

local weft = require("gen.core.weft")
local family = weft.family_module("gemm")   -- its rule, as auto asks it (gen/families/gemm.lua)

-- (a measured row and the rule's pick match when their kernel names do: rule_tools.kernel_name)
local function name_of(cfg) return rule_tools.kernel_name(cfg, "gemm_rule_regret") end

local function parse(cfgs, dtype, base)
  local c = { family = "gemm", dtype = dtype }
  if base then   -- (weft tune's rows: the sweep's base config, as Lua text, under its overrides)
    local chunk = load(base, "base", "t", {})
    local ok, b = pcall(chunk or error)
    if not (ok and type(b) == "table") then return nil end
    for k, v in pairs(b) do
      if type(v) == "table" then c[k] = {} for kk, vv in pairs(v) do c[k][kk] = vv end else c[k] = v end
    end
    c.dtype = dtype
  end
  for k, v in cfgs:gmatch("(%S+)=(%S+)") do
    v = v:match('^"(.*)"$') or v   -- (weft tune stores a string as Lua writes it: epilogue="direct")
    local val = tonumber(v) or v
    if v == "true" then val = true elseif v == "false" then val = false end
    local a, b = k:match("^(%w+)%.(%w+)$")
    if a then
      c[a] = type(c[a]) == "table" and c[a] or {}
      c[a][b] = val
    else
      c[k] = val
    end
  end
  return c
end

-- A file's groups, in the order first seen; nil and a message if it cannot be read or holds none.
local function read_groups(path)
  local groups, order, lineno = {}, {}, 0
  local f, err = io.open(path, "r")
  if not f then return nil, tostring(err) end   -- (io.open's message names the path)
  for line in f:lines() do
    lineno = lineno + 1
    local dt, shp, cfgs, t, base = line:match("^(%S+)\t([^\t]+)\t([^\t]*)\t([^\t%s]+)\t?([^\t]*)$")
    local shape = {}
    for k, v in (shp or ""):gmatch("(%a)=(%d+)") do shape[k] = tonumber(v) end
    local c = cfgs and parse(cfgs, dt, base ~= "" and base or nil)
    local name = c and name_of(c)
    if not (dt and tonumber(t) and shape.m and shape.n and shape.k and name) then
      io.stderr:write(string.format("gemm_rule_regret: %s:%d: not dtype, shape, config, time_us: %q\n",
        path, lineno, line:sub(1, 120)))
    else
      local bl = c.b_layout or "row"
      local id = dt .. " " .. shp .. " " .. bl
      if not groups[id] then
        groups[id] = { id = id, shape = shape, dtype = dt, b_layout = bl, times = {}, best = math.huge }
        order[#order + 1] = groups[id]
      end
      local gr = groups[id]
      local t_us = tonumber(t)
      gr.times[name] = math.min(gr.times[name] or math.huge, t_us)
      gr.best = math.min(gr.best, t_us)
    end
  end
  f:close()
  if #order == 0 then return nil, path .. ": no rows" end
  return order
end

-- machines.txt of a folder: { [file name] = { gpu =, sms =, mem_gbs = } }, {} where there is none;
-- nil and a message for a line that is not "file TAB gpu TAB SMs TAB GB/s".
local manifests = {}
local function machines(dir)
  if manifests[dir] then return manifests[dir] end
  local path = dir .. "machines.txt"
  local f = io.open(path, "r")
  local m = {}
  if f then
    local n = 0
    for line in f:lines() do
      n = n + 1
      if not line:match("^#") and line:match("%S") then
        local file, gpu, sms, gbs = line:match("^([^\t]+)\t([^\t]+)\t(%d+)\t(%d+)$")
        if not file or tonumber(sms) < 1 or tonumber(sms) > 1024 or tonumber(gbs) < 1 then
          f:close()
          return nil, string.format("%s:%d: not file TAB gpu TAB SMs (1-1024) TAB DRAM GB/s (whole numbers): %q",
            path, n, line:sub(1, 120))
        end
        m[file] = { gpu = gpu, sms = tonumber(sms), mem_gbs = tonumber(gbs) }
      end
    end
    f:close()
  end
  manifests[dir] = m
  return m
end

-- One group scored on a device (dev: sms, mem_gbs): pick / best (nil where the pick was not
-- measured), the pick's name, and the first config in the rule's whole order that the group
-- measured, over best.
local function score(gr, dev)
  local list = family.auto(gr.shape, { b_layout = gr.b_layout, dtype = gr.dtype }, dev, 10)
  local pick = list[1] and rule_tools.entry_name(list[1], gr.dtype, gr.b_layout, "gemm_rule_regret")
  -- the rule's order among the measured configs: its first entry that was measured
  local first
  local ranked = gemm.ranked(gr.shape, { b_layout = gr.b_layout, dtype = gr.dtype }, dev.sms,
    family.rule_opts({ dram = gemm.dram_scale(dev) }))
  for _, s in ipairs(ranked) do
    local nm = rule_tools.entry_name(s.c, gr.dtype, gr.b_layout, "gemm_rule_regret")
    if nm and gr.times[nm] then
      first = gr.times[nm] / gr.best
      break
    end
  end
  local t = pick and gr.times[pick]
  return t and t / gr.best, pick, first
end

-- Sums of logs: pick / best over the groups whose pick was measured (n of them, missing not), and
-- the first measured in the rule's order (mn groups).
local function tally() return { lsum = 0, n = 0, missing = 0, msum = 0, mn = 0 } end
local function add(t, r, first)
  if r then t.lsum, t.n = t.lsum + math.log(r), t.n + 1 else t.missing = t.missing + 1 end
  if first then t.msum, t.mn = t.msum + math.log(first), t.mn + 1 end
end

local function report(t, prefix)
  if t.n == 0 then
    print(string.format("%sfirst pick / best measured: no group's first pick was measured; %d first pick(s) not measured",
      prefix, t.missing))
  else
    print(string.format("%sfirst pick / best measured: geomean %.4f over %d group(s); %d first pick(s) not measured",
      prefix, math.exp(t.lsum / t.n), t.n, t.missing))
  end
  if t.mn > 0 then
    print(string.format("%sfirst measured in the rule's order / best measured: geomean %.4f over %d group(s)",
      prefix, math.exp(t.msum / t.mn), t.mn))
  end
end

-- Every file's groups and its device, read once.
local files, failed = {}, false
for _, path in ipairs(paths) do
  local dir, name = path:match("^(.-)([^/]*)$")
  local m, merr = machines(dir)
  local order, why = read_groups(path)
  if not (order and m) then
    io.stderr:write("gemm_rule_regret: " .. (why or merr) .. "\n")
    failed = true
  else
    local mc = m[name]
    files[#files + 1] = { path = path, order = order, gpu = mc and mc.gpu or "the rule's default device (an H200)",
      dev = { sms = mc and mc.sms or 132, mem_gbs = mc and mc.mem_gbs },
      says = mc and string.format("%s, %d SMs, DRAM %d GB/s (%smachines.txt)", mc.gpu, mc.sms, mc.mem_gbs, dir)
        or "the rule's default device (an H200): not in a machines.txt beside it" }
  end
end
if failed then os.exit(1) end

-- Scores every file under the model as it is: per file, per device and over all, and the groups.
local function score_all()
  local all, per_gpu, gpus, rows = tally(), {}, {}, {}
  for _, f in ipairs(files) do
    f.t = tally()
    if not per_gpu[f.gpu] then per_gpu[f.gpu] = tally(); gpus[#gpus + 1] = f.gpu end
    for _, gr in ipairs(f.order) do
      local r, pick, first = score(gr, f.dev)
      add(f.t, r, first)
      add(per_gpu[f.gpu], r, first)
      add(all, r, first)
      local id = #paths > 1 and f.path:match("[^/]*$") .. "  " .. gr.id or gr.id
      rows[#rows + 1] = r and { id = id, r = r, pick = pick }
        or { id = id, r = math.huge, pick = tostring(pick) .. " (not measured)" }
    end
  end
  return all, per_gpu, gpus, rows
end

for _, f in ipairs(files) do print(string.format("%s: %s", f.path, f.says)) end
if scan then
  for _, v in ipairs(scan.values) do
    gemm.MODEL[scan.name] = v
    local all, per_gpu, gpus = score_all()
    local prefix = string.format("%s=%s: ", scan.name, tostring(v))
    if #gpus > 1 then for _, g in ipairs(gpus) do report(per_gpu[g], prefix .. g .. ": ") end end
    report(all, prefix)
  end
  os.exit(0)
end
local all, per_gpu, gpus, rows = score_all()
table.sort(rows, function(x, y) return x.r > y.r end)
for i = 1, math.min(worst_n, #rows) do
  local w = rows[i]
  print(string.format("%s  %s  %s", w.r == math.huge and "   -" or string.format("%.3f", w.r), w.id, w.pick))
end
if #paths > 1 then
  for _, f in ipairs(files) do report(f.t, f.path .. ": ") end
  if #gpus > 1 then
    for _, g in ipairs(gpus) do
      print(string.format("every group on %s:", g))
      report(per_gpu[g], "")
    end
  end
  print(string.format("every group of the %d files:", #paths))
end
report(all, "")
