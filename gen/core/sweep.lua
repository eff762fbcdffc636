-- gen/core/sweep.lua: expanding a sweep (the search space of `weft tune`) into candidate configs.
--
-- A sweep is a Lua chunk that returns a table, loaded in the same sandbox as a config:
--   base      a config (must name its family): what every candidate starts from
--   space     key -> list of values; dotted keys set nested fields ("op.combine")
--   where     optional function(config) -> boolean: keep this candidate?
--   shapes    list of problem sizes ({ rows = 8192, cols = 32768 }), positive integers
--   per_shape optional function(shape) -> table of overrides of the base for that shape
--
-- expand(text, file, overrides) gives, per shape, the candidates that pass `where` and the
-- generator's own validation (gen.core.weft.check), as "key=value" strings relative to base_text,
-- the base serialized as config text: generating base_text with shape.sets then
-- candidate.sets (as --set overrides) gives exactly the candidate.  Rejected candidates are
-- counted, grouped by rule.  No file access here: the C side reads the sweep.

local config = require("gen.core.config")
local schema = require("gen.core.schema")

local M = {}

M.KEYS = { "base", "space", "where", "shapes", "per_shape" }
M.MAX_CANDIDATES = 100000         -- per shape, before pruning
M.MAX_TOTAL = 200000              -- over all shapes: every one is checked by the generator
M.MAX_SHAPES = 256
M.MAX_INSTRUCTIONS = config.MAX_INSTRUCTIONS   -- per call of where / per_shape, as for a config's load
local INT_MAX = 2147483647

-- ---- values ---------------------------------------------------------------------------------

-- schema.show, but a function shows as `function` (not its address), so messages are stable,
-- and deep (or cyclic) tables end in "...".
local function show(v, depth)
  if type(v) == "function" then return "function" end
  if type(v) == "table" then
    depth = depth or 0
    if depth >= 4 then return "{ ... }" end
    return schema.show_table(v, function(x) return show(x, depth + 1) end)
  end
  return schema.show(v)
end

local function is_name(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

local function is_path(s)
  if type(s) ~= "string" then return false end
  for part in (s .. "."):gmatch("([^.]*)%.") do
    if not is_name(part) then return false end
  end
  return true
end

local function finite(v)
  return v == v and v ~= math.huge and v ~= -math.huge
end

-- A scalar as the value side of a --set "key=value" that gen.core.config.parse_value turns back into
-- it: strings always quoted (parse_value strips one pair of quotes, nothing else), numbers with
-- enough digits.  An integral float comes back as an integer; candidates are built through
-- config.apply from these same strings, so what the expansion checks is what C generates.
local function set_text(v)
  if type(v) == "string" then return '"' .. v .. '"' end
  if type(v) == "boolean" then return tostring(v) end
  if math.type(v) == "integer" then return string.format("%d", v) end
  return string.format("%.17g", v)
end

-- A scalar for a human (labels): strings unquoted.
local function label_text(v)
  if type(v) == "string" then return v end
  return set_text(v)
end

local deep_copy = config.deep_copy

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end   -- "number" < "string"
    return a < b
  end)
  return keys
end

-- ---- the base as config text ---------------------------------------------------------------

local function lua_number(v)
  if math.type(v) == "integer" then return string.format("%d", v) end
  if v ~= v then return "(0/0)" end
  if v == math.huge then return "1e9999" end
  if v == -math.huge then return "-1e9999" end
  local s = string.format("%.17g", v)
  if not s:find("[.eEn]") then s = s .. ".0" end   -- stays a float
  return s
end

-- serialize(v, path) -> text | nil, path of the offending value, what is wrong, the value
local function serialize(v, path, seen)
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t == "number" then return lua_number(v) end
  if t == "boolean" then return tostring(v) end
  if t ~= "table" then return nil, path, t, v end
  if seen[v] then return nil, path, "table that contains itself", v end
  seen[v] = true
  local parts = {}
  for _, k in ipairs(sorted_keys(v)) do
    local kt
    if is_name(k) then kt = k
    elseif type(k) == "string" then kt = string.format("[%q]", k)
    elseif math.type(k) == "integer" then kt = string.format("[%d]", k)
    else return nil, path .. "[" .. tostring(k) .. "]", "key of type " .. type(k), v[k] end
    local kpath = is_name(k) and (path .. "." .. k) or (path .. kt)
    local text, epath, what, bad = serialize(v[k], kpath, seen)
    if not text then return nil, epath, what, bad end
    parts[#parts + 1] = kt .. " = " .. text
  end
  seen[v] = nil
  if #parts == 0 then return "{}" end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

-- ---- running the sweep's functions ---------------------------------------------------------

-- A sweep's functions run after its load, outside config.load's limits: each call runs in
-- the same sandbox (config.run: instructions per call, the memory cap), and all of them share
-- one wall-clock budget, so 200000 calls of where cannot take 200000 times the cap.
-- -> true, first result | nil, message
local function call_bounded(f, file, what, budget, ...)
  local ok, r, raw = config.run(f, file, what, budget, ...)
  if ok then return true, r end
  if raw then return nil, string.format("%s: %s failed: %s", file, what, raw) end
  return nil, r
end

-- ---- validating the sweep -------------------------------------------------------------------

local function errors(file) return schema.errors(file, show) end

local function family_names()
  return schema.list(require("gen.core.weft").families())
end

-- -> list of { key, values } sorted by key, or nil (errors added)
local function check_space(space, fam, errs)
  if space == nil then
    errs.add("space", nil, "required: a table of key = { values... } to search (dotted keys for nested fields)")
    return nil
  end
  if type(space) ~= "table" then
    errs.add("space", space, "must be a table of key = { values... } to search (dotted keys for nested fields)")
    return nil
  end
  local known = {}
  if fam then for _, f in ipairs(fam.fields) do known[f.name] = true end end
  local dims, ok = {}, true
  for _, key in ipairs(sorted_keys(space)) do
    local list = space[key]
    local field = is_name(key) and ("space." .. key) or string.format("space[%s]", show(key))
    if not is_path(key) then
      errs.add(field, list, "the key must be a config key or a dotted path (op.combine)"); ok = false
    elseif key:match("^[^.]*") == "family" then
      errs.add(field, list, "the family is fixed by base.family; write one sweep per family"); ok = false
    elseif fam and not known[key:match("^[^.]*")] then
      local names = {}
      for _, f in ipairs(fam.fields) do names[#names + 1] = f.name end
      errs.add(field, list, "unknown key for family " .. show(fam.name) .. "; known keys: " ..
        table.concat(names, ", ")); ok = false
    else
      local n, good = 0, type(list) == "table"
      if good then
        n = #list
        for k in pairs(list) do
          if math.type(k) ~= "integer" or k < 1 or k > n then good = false end
        end
        for i = 1, n do
          local v, t = list[i], type(list[i])
          if not (t == "string" or t == "boolean" or (t == "number" and finite(v))) then good = false end
        end
      end
      if not good or n == 0 then
        errs.add(field, list, "must be a non-empty list of values: numbers, strings or booleans"); ok = false
      else
        -- (a value listed twice gives the same kernel twice: counted as duplicates)
        local vals = {}
        for i = 1, n do vals[i] = list[i] end
        dims[#dims + 1] = { key = key, values = vals }
      end
    end
  end
  -- "op" and "op.combine" together: the first would replace what the second sets
  for _, a in ipairs(dims) do
    for _, b in ipairs(dims) do
      if b.key:sub(1, #a.key + 1) == a.key .. "." then
        errs.add("space." .. b.key, space[b.key], "conflicts with space." .. a.key ..
          ", which sets the whole of " .. a.key); ok = false
      end
    end
  end
  return ok and dims or nil
end

-- -> list of { name, size } or nil (errors added)
local function check_shapes(shapes, errs)
  local what = "a non-empty list of problem sizes: { { rows = 8192, cols = 32768 }, ... }"
  if shapes == nil then errs.add("shapes", nil, "required: " .. what); return nil end
  if type(shapes) ~= "table" then errs.add("shapes", shapes, "must be " .. what); return nil end
  local n, ok = #shapes, true
  for k in pairs(shapes) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      errs.add("shapes[" .. show(k) .. "]", shapes[k], "shapes must be a list, " .. what); ok = false
    end
  end
  if n == 0 then errs.add("shapes", shapes, "must be " .. what); return nil end
  if n > M.MAX_SHAPES then errs.add("shapes", n .. " shapes", "at most " .. M.MAX_SHAPES .. ": split the sweep"); return nil end
  local out, names = {}, {}
  for i = 1, n do
    local s, field = shapes[i], "shapes[" .. i .. "]"
    if type(s) ~= "table" or next(s) == nil then
      errs.add(field, s, "must be a non-empty table of sizes: { rows = 8192, cols = 32768 }"); ok = false
    else
      local size, parts, good = {}, {}, true
      for _, k in ipairs(sorted_keys(s)) do
        local v = s[k]
        local iv = type(v) == "number" and math.tointeger(v) or nil
        if not is_name(k) then
          errs.add(field .. "[" .. show(k) .. "]", v, "size names must be names (rows, cols)"); good = false
        elseif not iv or iv < 1 or iv > INT_MAX then
          errs.add(field .. "." .. k, v, "must be a positive integer (at most " .. INT_MAX .. ")"); good = false
        else
          size[k] = iv
          parts[#parts + 1] = k .. "=" .. iv
        end
      end
      if good then
        local name = table.concat(parts, " ")
        if names[name] then
          errs.add(field, s, "the same as shapes[" .. names[name] .. "]"); good = false
        end
        names[name] = i
        out[#out + 1] = { name = name, size = size, index = i }
      end
      ok = ok and good
    end
  end
  return ok and out or nil
end

-- A per_shape result -> sorted "key=value" strings (nested tables become dotted keys)
local function shape_sets(t, file, shape_name)
  local sets = {}
  local function walk(v, path)
    for _, k in ipairs(sorted_keys(v)) do
      local x = v[k]
      local p = path and (path .. "." .. tostring(k)) or tostring(k)
      local field = "per_shape(" .. shape_name .. ")." .. p
      if not is_name(k) then
        return nil, string.format("%s: %s = %s: keys must be config keys (names)", file, field, show(x))
      end
      if p == "family" then
        return nil, string.format("%s: %s = %s: the family is fixed by base.family", file, field, show(x))
      end
      local t = type(x)
      if t == "table" then
        local ok, e = walk(x, p)
        if not ok then return nil, e end
      elseif t == "string" or t == "boolean" or (t == "number" and finite(x)) then
        sets[#sets + 1] = p .. "=" .. set_text(x)
      else
        return nil, string.format("%s: %s = %s: must be a number, string, boolean or table of them", file,
          field, show(x))
      end
    end
    return true
  end
  local ok, e = walk(t, nil)
  if not ok then return nil, e end
  table.sort(sets)
  return sets
end

-- ---- grouping rejections by rule -----------------------------------------------------------

-- The end of the value that starts at position i of s (a schema.show text): a quoted string,
-- a table in braces, or a bare word; the value is followed by ": ".
local function value_end(s, i)
  local c = s:sub(i, i)
  if c == '"' then
    local j = i + 1
    while j <= #s do
      local d = s:sub(j, j)
      if d == "\\" then j = j + 2
      elseif d == '"' then return j
      else j = j + 1 end
    end
    return nil
  elseif c == "{" then
    local depth, j, instr = 0, i, false
    while j <= #s do
      local d = s:sub(j, j)
      if instr then
        if d == "\\" then j = j + 1 elseif d == '"' then instr = false end
      elseif d == '"' then instr = true
      elseif d == "{" then depth = depth + 1
      elseif d == "}" then
        depth = depth - 1
        if depth == 0 then return j end
      end
      j = j + 1
    end
    return nil
  end
  local j = s:find(": ", i, true)
  return j and j - 1 or nil
end

-- Numbers -> N, except inside words and before a hyphen or a letter ("16-byte", "sm_90").
-- A minus sign goes with the number unless it joins two words.
local function numbers_to_n(s)
  return (s:gsub("()(%-?)(%d+%.?%d*)()", function(a, minus, num, b)
    local before, after = s:sub(a - 1, a - 1), s:sub(b, b)
    if after:match("[%a_%-]") then return nil end
    local lead = ""
    if minus == "-" then
      if before:match("[%w_]") then lead = "-" end   -- "x-1": a hyphen, not a sign
    elseif before:match("[%w_]") then
      return nil
    end
    return lead .. "N" .. (num:sub(-1) == "." and "." or "")
  end))
end

-- One line of a check() message -> its rule: without the file, the value, and numbers.
function M.rule(line, file)
  local s = line
  if s:sub(1, #file + 2) == file .. ": " then s = s:sub(#file + 3) end
  local field, rest = s:match("^([%w_%.%[%]]+) = ()")
  if field then
    local e = value_end(s, rest)
    if e and s:sub(e + 1, e + 2) == ": " then s = field .. s:sub(e + 1) end
  end
  return numbers_to_n(s)
end

-- ---- expand ---------------------------------------------------------------------------------

local function product_size(dims)
  local n = 1
  for _, d in ipairs(dims) do n = n * #d.values end
  return n
end

-- Candidate i (1-based) of the product: the first key varies slowest.
local function candidate(dims, i)
  local idx, r = {}, i - 1
  for k = #dims, 1, -1 do
    local n = #dims[k].values
    idx[k] = r % n + 1
    r = r // n
  end
  local sets, labels = {}, {}
  for k, d in ipairs(dims) do
    local v = d.values[idx[k]]
    sets[k] = d.key .. "=" .. set_text(v)
    labels[k] = d.key .. "=" .. label_text(v)
  end
  return sets, #labels > 0 and table.concat(labels, " ") or "base"
end

-- Why the candidate's kernel cannot take this shape (a size outside its manifest's limits, as
-- the runtime would refuse it at launch), or nil.
local function outside_limits(weft, d, shape, file)
  for _, name in ipairs(sorted_keys(shape.size)) do
    local why = weft.outside_limits(d.limits, name, shape.size[name])
    if why then return string.format("%s: %s = %d: %s", file, name, shape.size[name], why) end
  end
end

local function expand_shape(sw, shape, file, weft, check_sizes)
  local out = { name = shape.name, size = shape.size, sets = {}, candidates = {}, accepted = 0,
                pruned_where = 0, pruned_check = 0, pruned = {}, duplicates = 0, total = sw.total }
  local with_shape = deep_copy(sw.base)
  if sw.per_shape then
    local ok, r = call_bounded(sw.per_shape, file, "per_shape(" .. shape.name .. ")", sw.budget, deep_copy(shape.size))
    if not ok then return nil, r end
    if type(r) ~= "table" then
      return nil, string.format("%s: per_shape(%s) = %s: must return a table of overrides of the base " ..
        "(key = value, e.g. { max_cols = shape.cols })", file, shape.name, show(r))
    end
    local bad = config.check_tree(r, file, "per_shape(" .. shape.name .. ")")
    if bad then return nil, bad end
    local sets, err = shape_sets(r, file, shape.name)
    if not sets then return nil, err end
    out.sets = sets
    local c, e = config.apply(with_shape, sets, file)
    if not c then return nil, e .. " (per_shape for " .. shape.name .. ")" end
  end

  local by_rule, seen_names = {}, {}
  for i = 1, sw.total do
    local sets, label = candidate(sw.dims, i)
    local merged, err = config.apply(deep_copy(with_shape), sets, file)
    if not merged then return nil, err .. " (space, candidate " .. label .. ")" end
    local keep = true
    if sw.where then
      local ok, r = call_bounded(sw.where, file, "where(" .. label .. ") for " .. shape.name, sw.budget,
        deep_copy(merged))
      if not ok then return nil, r end
      if type(r) ~= "boolean" then
        return nil, string.format("%s: where = %s: must return true or false (candidate %s, shape %s)", file,
          show(r), label, shape.name)
      end
      keep = r
    end
    if not keep then
      out.pruned_where = out.pruned_where + 1
    else
      local ok, fam, ncfg, d = pcall(weft.check, merged, file)
      if not ok then
        return nil, string.format("%s: the generator failed on candidate %s for %s (a bug in weft): %s", file,
          label, shape.name, tostring(fam))
      end
      local too_big = fam and outside_limits(weft, d, shape, file)   -- e.g. one_shot_ll past its 2M elements
      if too_big then fam, ncfg = nil, too_big end
      if not fam then
        out.pruned_check = out.pruned_check + 1
        local msg = ncfg
        for line in (msg .. "\n"):gmatch("([^\n]*)\n") do
          if line ~= "" then
            local rule = M.rule(line, file)
            local g = by_rule[rule]
            if not g then
              g = { rule = rule, count = 0, example = line, label = label }
              by_rule[rule] = g
              out.pruned[#out.pruned + 1] = g
            end
            g.count = g.count + 1
          end
        end
      else
        local name = weft.kernel_name(fam, ncfg)
        if seen_names[name] then
          out.duplicates = out.duplicates + 1
        else
          seen_names[name] = true
          if check_sizes then
            local e = check_sizes(ncfg, d, shape)
            if e then return nil, e end
            check_sizes = nil
          end
          out.candidates[#out.candidates + 1] = { sets = sets, label = label, kernel = name }
          out.accepted = #out.candidates
        end
      end
    end
  end
  return out
end

-- expand(text, file, overrides) -> expansion | nil, message   (see the top of this file)
function M.expand(text, file, overrides)
  local weft = require("gen.core.weft")
  local sw, err = config.load(text, file)
  if not sw then return nil, err end
  sw, err = config.apply(sw, overrides, file)
  if not sw then return nil, err end

  local errs = errors(file)
  local allowed = {}
  for _, k in ipairs(M.KEYS) do allowed[k] = true end
  for _, k in ipairs(sorted_keys(sw)) do
    if not allowed[k] then
      errs.add(tostring(k), sw[k], "unknown key for a sweep; known keys: " .. table.concat(M.KEYS, ", "))
    end
  end

  local base, fam, base_text = sw.base, nil, nil
  if base == nil then
    errs.add("base", nil, "required: the config every candidate starts from, e.g. { family = \"row_softmax\", ... }")
  elseif type(base) ~= "table" then
    errs.add("base", base, "must be a config table, e.g. { family = \"row_softmax\", ... }")
  else
    fam = type(base.family) == "string" and weft.family_module(base.family) or nil
    if not fam then errs.add("base.family", base.family, "must be one of " .. family_names()) end
    local t, path, what, bad = serialize(base, "base", {})
    if t then
      base_text = "return " .. t .. "\n"
    elseif what == "function" then
      errs.add(path, bad, "a sweep's base reaches each candidate as config text, so it cannot hold " ..
        "functions; leave it out of the sweep")
    else
      errs.add(path, bad, "cannot be written as config text (a " .. what .. ")")
    end
  end
  local dims = check_space(sw.space, fam, errs)
  local shapes = check_shapes(sw.shapes, errs)
  for _, k in ipairs({ "where", "per_shape" }) do
    if sw[k] ~= nil and type(sw[k]) ~= "function" then
      errs.add(k, sw[k], k == "where" and "must be a function(config) returning true or false"
        or "must be a function(shape) returning a table of overrides of the base")
    end
  end
  if dims then
    local n = 1.0
    for _, d in ipairs(dims) do n = n * #d.values end
    if n > M.MAX_CANDIDATES then
      errs.items[#errs.items + 1] = string.format("%s: space = %.0f combinations: at most %d per shape " ..
        "(the product of the lists' lengths): shorten the lists, or split the sweep", file, n, M.MAX_CANDIDATES)
    elseif shapes and n * #shapes > M.MAX_TOTAL then
      errs.items[#errs.items + 1] = string.format("%s: space = %.0f combinations x %d shapes = %.0f candidates: " ..
        "at most %d in all: shorten the lists, or split the sweep", file, n, #shapes, n * #shapes, M.MAX_TOTAL)
    end
  end
  if not errs.ok() then return nil, errs.text() end

  -- The shape's sizes must be the family's (its run spec), or no tool can run it.
  local function check_sizes(ncfg, d, shape)
    local want = {}
    local spec = weft.run_spec(fam, ncfg, d)
    if spec then
      for _, n in ipairs(spec.sizes) do want[#want + 1] = n end
    else   -- a family without a run spec: its kernel's size arguments
      for _, a in ipairs(d.args) do if a.role == "size" then want[#want + 1] = a.name end end
    end
    table.sort(want)
    local have = sorted_keys(shape.size)
    if table.concat(want, ",") ~= table.concat(have, ",") then
      return string.format("%s: shapes[%d] = %s: %s kernels take the sizes %s", file, shape.index,
        show(shape.size), fam.name, table.concat(want, ", "))
    end
  end

  local keys = {}
  for i, d in ipairs(dims) do keys[i] = d.key end
  -- Every candidate starts from base_text itself, as the C side will: what the sweep reports is
  -- what base_text + the sets generate.
  local base_copy, e = config.load(base_text, file)
  if not base_copy then return nil, file .. ": base cannot be read back from its text (a bug in weft): " .. e end
  local state = { base = base_copy, dims = dims, total = product_size(dims),
                  where = sw.where, per_shape = sw.per_shape, budget = { seconds = select(2, weft_sandbox_caps()) } }
  local out = { family = fam.name, file = file, base_text = base_text, keys = keys, shapes = {} }
  for i, shape in ipairs(shapes) do
    local s, e = expand_shape(state, shape, file, weft, check_sizes)
    if not s then return nil, e end
    out.shapes[i] = s
  end
  return out
end

return M
