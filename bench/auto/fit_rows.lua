-- bench/auto/fit_rows.lua: how good gen/core/rows.lua's rule is on measured sweeps, and which of
-- its constants rank best.  Runs on the host (no GPU) over the CSVs `weft tune` wrote:
--
--   build/tests/weft-lua . bench/auto/fit_rows.lua [--fit] DIR/tune-*.csv ...
--
-- For every (family, key fields, shape) swept it asks the rule (gen/core/auto.lua, no database,
-- no table) for its choice and looks the choice up among the measured candidates: the ratio is
-- the sweep's best time over the choice's time (1.0: the rule found the best).  Kernel names are
-- compared without max_cols and nonportable (the rule rounds max_cols up to the kernel's
-- capacity; a sweep sets it to the row; nonportable changes only the name for clusters <= 8).
-- With --fit it also searches the model's constants for the best worst-case ratio (then mean).
local auto = require("gen.core.auto")
local rows = require("gen.core.rows")

local files, fit = {}, false
for _, a in ipairs(arg) do
  if a == "--fit" then fit = true else files[#files + 1] = a end
end

local function csv_fields(line)
  local out, i = {}, 1
  while i <= #line + 1 do
    if line:sub(i, i) == '"' then
      local j, buf = i + 1, {}
      while true do
        local c = line:sub(j, j)
        if c == "" then break end
        if c == '"' then
          if line:sub(j + 1, j + 1) == '"' then buf[#buf + 1] = '"'; j = j + 2 else j = j + 1; break end
        else buf[#buf + 1] = c; j = j + 1 end
      end
      out[#out + 1] = table.concat(buf)
      i = j + 1
    else
      local j = line:find(",", i, true) or (#line + 1)
      out[#out + 1] = line:sub(i, j - 1)
      i = j + 1
    end
  end
  return out
end

local function norm(name) return (name:gsub("_mc%d+", ""):gsub("_np[01]", "")) end

-- groups[key] = { family, text (config fixing the key fields), shape, best, times[normalized name] }
local groups, order = {}, {}
for _, path in ipairs(files) do
  local f = assert(io.open(path))
  local header = true
  for line in f:lines() do
    if header then header = false else
      local c = csv_fields(line)
      local shape, us, kernel = c[1], tonumber(c[4]), c[10]
      local fam, dtype, rest = kernel:match("^weft_(row_softmax)_(%w+)_(.*)$")
      if not fam then fam, dtype, rest = kernel:match("^weft_(row_reduce)_(%w+)_(.*)$") end
      if not fam then fam, dtype, rest = kernel:match("^weft_(rmsnorm)_(%w+)_(.*)$") end
      if fam and us then
        local text
        if fam == "row_softmax" then
          text = string.format('return { family = "row_softmax", dtype = %q }', dtype)
        elseif fam == "row_reduce" then
          text = string.format('return { family = "row_reduce", dtype = %q, op = %q }', dtype, rest:match("^(%w+)_"))
        else
          local res, eps = rest:match("^res(%d)_e([%w]+)_")
          text = string.format('return { family = "rmsnorm", dtype = %q, residual = %s, eps = %s }', dtype,
            res == "1" and "true" or "false", eps == "arg" and '"arg"' or (eps:gsub("p", "."):gsub("m", "-")))
        end
        local key = text .. " @ " .. shape
        local g = groups[key]
        if not g then
          g = { family = fam, text = text, shape = shape, best = math.huge, times = {} }
          groups[key] = g
          order[#order + 1] = key
        end
        local n = norm(kernel)
        if not g.times[n] or us < g.times[n] then g.times[n] = us end
        if us < g.best then g.best = us end
      end
    end
  end
  f:close()
end

local DEV = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 1 }

local function evaluate(show)
  local worst, sum, n, missing = math.huge, 0, 0, 0
  for _, key in ipairs(order) do
    local g = groups[key]
    local r, err = auto.choose(g.text, "fit", {}, g.shape, DEV, {}, {})
    local ratio, note
    if not r then
      note = "rule failed: " .. tostring(err)
    else
      local t = g.times[norm(r.choices[1].name)]
      if t then ratio = g.best / t else note = "choice not measured: " .. r.choices[1].name; missing = missing + 1 end
    end
    if ratio then
      worst = math.min(worst, ratio)
      sum = sum + math.log(ratio)
      n = n + 1
    end
    if show then
      print(string.format("%-80s %-28s %s", g.text:gsub("return ", ""), g.shape,
        ratio and string.format("%.3f  %s", ratio, r.choices[1].name) or note))
    end
  end
  return worst, n > 0 and math.exp(sum / n) or 0, n, missing
end

if fit then
  local best
  for _, inflight in ipairs({ 16, 24, 32, 48, 64, 96 }) do
    for _, row_us in ipairs({ 0.3, 0.6, 0.9, 1.5 }) do
      for _, push in ipairs({ 0.3, 0.6, 0.9, 1.5, 2.5 }) do
        for _, cta in ipairs({ 0.01, 0.03, 0.05, 0.1 }) do
          rows.INFLIGHT, rows.ROW_US, rows.CLUSTER_US.push, rows.CTA_US = inflight * 1024, row_us, push, cta
          local worst, geo, n, missing = evaluate(false)
          local score = { worst - missing, geo }
          if not best or score[1] > best.score[1] + 1e-9 or (math.abs(score[1] - best.score[1]) < 1e-9 and score[2] > best.score[2]) then
            best = { score = score, p = { inflight, row_us, push, cta }, worst = worst, geo = geo, missing = missing }
          end
        end
      end
    end
  end
  print(string.format("best constants: INFLIGHT = %d KB, ROW_US = %.2f, CLUSTER_US.push = %.2f, CTA_US = %.2f: worst %.3f, geomean %.3f, %d choices unmeasured",
    best.p[1], best.p[2], best.p[3], best.p[4], best.worst, best.geo, best.missing))
  rows.INFLIGHT, rows.ROW_US, rows.CLUSTER_US.push, rows.CTA_US = best.p[1] * 1024, best.p[2], best.p[3], best.p[4]
end
local worst, geo, n, missing = evaluate(true)
print(string.format("%d shapes: worst %.3f, geomean %.3f of the sweep's best; %d choices not among the measured", n, worst, geo, missing))
