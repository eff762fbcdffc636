-- gen/core/auto.lua: choosing the config for a shape ("auto").
--
-- A config fixes some fields and leaves the others open (absent, or the string "auto").  For a
-- shape, the open fields are chosen from, in this order:
--   1. "database"          the tuning database, exact key (GPU, driver, NVRTC, ranks, family, dtype, shape);
--   2. "database-nearest"  the database's nearest shape on the same GPU and rank count;
--   3. "table"             the table shipped in the repo (tune/h200.tsv), exact shape;
--   4. "table-nearest"     its nearest shape;
--   5. "rule"              the family's rule (F.auto in its module).
-- The host (runtime/core/auto.c) reads the database and the table and passes their rows, already
-- filtered to this GPU, rank count, family and dtype.  A measured row is used only if it fits
-- the user's config: every fixed field and every key field (the run spec's key: what changes the
-- result, as op or eps) equal to the user's, so a database never swaps what was asked for.
--
-- Distance between two shapes of one family: the sum over its sizes of |log2(a / b)|; a row
-- counts as near only when every size is within a factor of NEAR (4) of the asked one.  Ties go
-- to the faster row.  A row measured at another shape is refitted, F.fit(cfg, shape, raw, dev)
-- (the onchip kernels' max_cols follows the row length; the GEMM drops a row the wave model puts
-- well behind its best), and must then take the shape.
--
-- F.auto(shape, fixed, dev) returns candidates, best first: tables of field values (nested
-- tables for the GEMM's tile and cluster) and an optional `why`.  Each is merged under the fixed
-- fields, validated and checked against the shape's limits; the first that passes is the rule's
-- choice, the next ones are what first-use tuning times beside it.  A family without F.auto
-- gets its config as given (its defaults).

local config = require("gen.core.config")
local schema = require("gen.core.schema")
local weft = require("gen.core.weft")

local M = {}

M.NEAR = 4                 -- a near row has every size within this factor
M.MAX_CANDIDATES = 16      -- the most rule candidates a caller may ask for
M.TRIED_CONFIGS = 4096     -- distinct table configs choose() remembers the check of (a bound on its memory)
local LOG2_NEAR = math.log(M.NEAR, 2)

local copy = config.deep_copy

-- ---- the user's config -------------------------------------------------------------------------

-- The raw config (after --set), its family module and the names of its fixed fields.
local function load_raw(text, file, overrides)
  local cfg, err = config.load(text, file)
  if not cfg then return nil, err end
  cfg, err = config.apply(cfg, overrides, file)
  if not cfg then return nil, err end
  local fam = type(cfg.family) == "string" and weft.family_module(cfg.family)
  if not fam then
    return nil, string.format("%s: family = %s: must be one of %s", file, schema.show(cfg.family),
      schema.list(weft.families()))
  end
  if type(fam.sizes) ~= "table" then
    error("gen/families/" .. fam.name .. ".lua: declares no F.sizes (a bug in the family module)", 0)
  end
  local raw, autos = {}, {}
  for k, v in pairs(cfg) do
    if v ~= "auto" then raw[k] = v   -- "auto": open, as if absent
    else autos[#autos + 1] = k end
  end
  table.sort(autos, function(a, b) return tostring(a) < tostring(b) end)
  return raw, fam, autos
end

local function field_default(fam, name)
  for _, f in ipairs(fam.fields) do if f.name == name then return f.default end end
end

-- The family's key fields: F.key, else what its run spec says for a config that validates.
local function key_fields(fam, ncfg, d)
  local list = fam.key
  if not list and fam.run and ncfg then list = (fam.run(ncfg, d) or {}).key end
  local set = {}
  for _, k in ipairs(list or { "dtype" }) do set[k] = true end
  return set
end

-- ---- shapes ------------------------------------------------------------------------------------

-- The start of a message about shape s, and what a shape of these sizes may be.  Built only for a
-- message: parse_shape runs once per measured row (a table can hold many thousands).
local function shape_where(s, file) return string.format("%s: shape %s", file, schema.show(s)) end
local function shape_allowed(sizes)
  return "sizes " .. table.concat(sizes, ", ") .. " as name=value (" .. table.concat(sizes, "=N ") ..
    "=N) or positional (" .. string.rep("N", #sizes, "x") .. ")"
end

-- A size's value (1..2^62, as the C side's shape parser takes them: runtime/core/autotable.c).
local function shape_int(name, text, s, file)
  local v = text:match("^%d+$") and #text <= 19 and math.tointeger(tonumber(text))
  if not v or v < 1 or v > 1 << 62 then
    return nil, string.format("%s: %s = %s: must be a whole number in 1..%d", shape_where(s, file), name,
      text:match("^[-+]?%d+$") and #text <= 40 and text or schema.show(text), 1 << 62)
  end
  return v
end

local function is_size(sizes, name)
  for _, n in ipairs(sizes) do if n == name then return true end end
  return false
end

-- "rows=4096 cols=50257", "rows=4096,cols=50257" or "4096x50257" (in F.sizes order) -> table.
function M.parse_shape(s, sizes, file)
  if type(s) ~= "string" or s == "" then return nil, shape_where(s, file) .. ": give " .. shape_allowed(sizes) end
  local out = {}
  if s:find("=", 1, true) then
    for item in s:gmatch("[^%s,]+") do
      local name, text = item:match("^([%a_][%w_]*)=(.*)$")
      if not name then
        return nil, string.format("%s: %s: expected name=value; %s", shape_where(s, file), schema.show(item),
          shape_allowed(sizes))
      end
      if not is_size(sizes, name) then
        return nil, string.format("%s: %s is not a size of this family; %s", shape_where(s, file), name,
          shape_allowed(sizes))
      end
      if out[name] then return nil, string.format("%s: %s is given twice", shape_where(s, file), name) end
      local v, err = shape_int(name, text, s, file)
      if not v then return nil, err end
      out[name] = v
    end
  else
    local i = 0
    for text in (s .. "x"):gmatch("([^x]*)x") do
      i = i + 1
      if i > #sizes then
        return nil, string.format("%s: %d sizes; the family has %d: %s", shape_where(s, file), i, #sizes,
          shape_allowed(sizes))
      end
      local v, err = shape_int(sizes[i], text, s, file)
      if not v then return nil, err end
      out[sizes[i]] = v
    end
  end
  for _, n in ipairs(sizes) do
    if not out[n] then return nil, string.format("%s: %s is missing; %s", shape_where(s, file), n, shape_allowed(sizes)) end
  end
  return out
end

function M.shape_text(shape, sizes)
  local names = { table.unpack(sizes) }
  table.sort(names)
  local parts = {}
  for i, n in ipairs(names) do parts[i] = n .. "=" .. shape[n] end
  return table.concat(parts, " ")
end

local function distance(a, b, sizes)
  local d = 0
  for _, n in ipairs(sizes) do
    local l = math.abs(math.log(a[n] / b[n], 2))
    if l > LOG2_NEAR + 1e-9 then return nil end
    d = d + l
  end
  return d
end

-- ---- serialising a config ----------------------------------------------------------------------

local function lua_value(v, indent)
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do
      -- (a function -- a custom op's Lua reference -- has no text: said where it stood, so that a
      -- config saved from this text does not lose its host check unnoticed)
      parts[#parts + 1] = tostring(k) .. " = " .. (type(v[k]) == "function"
        and "nil --[[ a Lua function (" .. tostring(k) .. "): copy it from the config you gave ]]"
        or lua_value(v[k], indent))
    end
    return "{ " .. table.concat(parts, ", ") .. " }"
  end
  return "nil --[[ a " .. t .. " ]]"
end

-- The whole config as Lua text, fields in schema order (family first).
local function config_text(fam, cfg)
  local lines = { "return {", string.format("  family = %q,", fam.name) }
  for _, f in ipairs(fam.fields) do
    if cfg[f.name] ~= nil then lines[#lines + 1] = "  " .. f.name .. " = " .. lua_value(cfg[f.name]) .. "," end
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

-- v as --set strings under key (tables become dotted keys), appended to out.
local function set_strings(key, v, out)
  if type(v) == "table" then
    local keys = {}
    for k in pairs(v) do if k ~= "tag" then keys[#keys + 1] = k end end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do set_strings(key .. "." .. tostring(k), v[k], out) end
  elseif type(v) == "function" then
    return   -- a custom operator's Lua reference has no --set form
  elseif type(v) == "string" then
    out[#out + 1] = key .. "=" .. v
  else
    out[#out + 1] = key .. "=" .. tostring(v)
  end
end

-- ---- trying one candidate ----------------------------------------------------------------------

-- The user's raw config with the candidate's values for the open fields (and never for a key
-- field).  -> { sets, cfg (raw, merged), ncfg, name } | nil, why
local function attempt(fam, raw, keys, values, shape, file)
  local merged = copy(raw)
  local sets = {}
  for _, f in ipairs(fam.fields) do
    local v = values[f.name]
    if v ~= nil and v ~= "auto" and raw[f.name] == nil and not keys[f.name] then
      merged[f.name] = copy(v)
      set_strings(f.name, v, sets)
    end
  end
  local fam2, ncfg, d = weft.check(copy(merged), file)
  if not fam2 then return nil, ncfg end
  for _, n in ipairs(fam.sizes) do
    local why, l = weft.outside_limits(d.limits, n, shape[n])
    -- (is_limit: "intrinsic" where no config of the family takes the size)
    if why then return nil, string.format("%s: shape %s = %d: %s", file, n, shape[n], why), l.intrinsic and "intrinsic" or true end
  end
  for _, part in ipairs(fam.parts and fam.parts(ncfg) or {}) do
    local pf, pc, pd = weft.check(part, file)
    if not pf then return nil, pc end
    for _, n in ipairs(pf.sizes or {}) do
      local why = shape[n] and weft.outside_limits(pd.limits, n, shape[n])
      if why then return nil, string.format("%s: shape %s = %d: %s (kernel %s of the config)", file, n, shape[n], why,
        pf.name), true end
    end
  end
  return { sets = sets, cfg = merged, ncfg = ncfg, name = weft.kernel_name(fam, ncfg), d = d }
end

-- A measured row (base text + its --set lines) as raw values, refitted to the shape.
-- A key field the family lists in F.same_speed (rmsnorm's eps: a constant or an argument) changes
-- the result but not the time, so a row measured with another value is used with the user's.
local function row_values(fam, row, shape, file, refit, raw, dev)
  local cfg, err = config.load(row.base or "", row.where or file)
  if not cfg then return nil, err end
  cfg, err = config.apply(cfg, row.sets or {}, row.where or file)
  if not cfg then return nil, err end
  if cfg.family ~= fam.name then return nil, "another family" end
  for _, f in ipairs(fam.same_speed or {}) do cfg[f] = copy(raw[f]) end
  local fam2, ncfg = weft.check(copy(cfg), row.where or file)
  if not fam2 then return nil, ncfg end
  local measured_name = weft.kernel_name(fam, ncfg)
  if refit and fam.fit then
    cfg = fam.fit(cfg, shape, raw, dev)
    if not cfg then return nil, "does not refit to this shape" end
  end
  return cfg, measured_name, ncfg
end

-- ---- the entry points --------------------------------------------------------------------------

-- prepare(text, file, overrides) -> { family, dtype, sizes } | nil, message: what the host needs to
-- fetch database and table rows.
function M.prepare(text, file, overrides)
  local raw, fam = load_raw(text, file, overrides)
  if not raw then return nil, fam end
  local dtype = raw.dtype
  if dtype == nil then dtype = field_default(fam, "dtype") end
  return { family = fam.name, dtype = dtype ~= nil and tostring(dtype) or "", sizes = { table.unpack(fam.sizes) } }
end

local SOURCES = { database = true, table = true }

-- choose(text, file, overrides, shape, dev, known, opts) -> result | nil, message (see the header,
-- and runtime/core/auto.c for the result's use).
function M.choose(text, file, overrides, shape_s, dev, known, opts)
  local raw, fam, autos = load_raw(text, file, overrides)
  if not raw then return nil, fam end
  local shape, err = M.parse_shape(shape_s, fam.sizes, file)
  if not shape then return nil, err end
  dev = dev or {}
  opts = opts or {}
  local want = math.max(0, math.min(M.MAX_CANDIDATES, math.tointeger(opts.candidates or 0) or 0))

  -- the rule's candidates, first: they also tell the key fields (from the first that validates)
  local rule, rule_err = { { why = "no rule: the config as given" } }, nil
  if fam.auto then rule, rule_err = fam.auto(copy(shape), copy(raw), copy(dev)) end
  if not rule then return nil, string.format("%s: shape %s: %s", file, M.shape_text(shape, fam.sizes), rule_err) end
  local keys = fam.key and key_fields(fam) or nil
  if not keys then
    for _, c in ipairs(rule) do
      local merged = copy(raw)
      for k, v in pairs(c) do if k ~= "why" and merged[k] == nil and k ~= "dtype" then merged[k] = copy(v) end end
      local f2, ncfg, d = weft.check(merged, file)
      if f2 then keys = key_fields(fam, ncfg, d); break end
    end
    keys = keys or key_fields(fam)
  end
  -- a key set to "auto" that the family does not have, or a key field (auto never chooses what
  -- changes the result): refused, as weft gen refuses them (read as left out, they went unheeded)
  local errs, unknown = schema.errors(file), { family = fam.name }
  for _, k in ipairs(autos) do unknown[k] = "auto" end
  schema.unknown_keys(unknown, fam.fields, errs)
  if not errs.ok() then return nil, errs.text() end
  for _, k in ipairs(autos) do
    if keys[k] then
      return nil, string.format('%s: %s = "auto": %s', file, tostring(k), schema.auto_key_why(tostring(k), field_default(fam, k)))
    end
  end

  local tried, last_err, limit_err, intrinsic = {}, nil, nil, false
  local choices, names = {}, {}
  local function add(r)
    if names[r.name] then return false end
    names[r.name] = true
    -- the key fields as --set strings (dtype aside: the tune key has it), for a recorded row
    local ks = {}
    for _, f in ipairs(fam.fields) do
      if keys[f.name] and f.name ~= "dtype" then
        local v = r.cfg[f.name]
        if v == nil then v = f.default end
        set_strings(f.name, v, ks)
      end
    end
    choices[#choices + 1] = { sets = r.sets, keys = ks, text = config_text(fam, r.cfg), name = r.name }
    return true
  end

  -- measured rows, in the order of the sources
  local result
  local ranked = {}
  for i, row in ipairs(known or {}) do
    local t = tonumber(row.time_us)
    if SOURCES[row.source] and t and t > 0 and t < math.huge then
      local at = M.parse_shape(row.shape or "", fam.sizes, row.where or file)
      local d = at and distance(at, shape, fam.sizes)
      if d then
        local exact = d == 0 and (row.source ~= "database" or row.exact_env ~= false)
        local rank = (row.source == "database" and 0 or 2) + (exact and 0 or 1)
        ranked[#ranked + 1] = { row = row, at = at, d = exact and 0 or d, rank = rank, i = i }
      end
    end
  end
  table.sort(ranked, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    if a.d ~= b.d then return a.d < b.d end
    local ta, tb = tonumber(a.row.time_us) or math.huge, tonumber(b.row.time_us) or math.huge
    if ta ~= tb then return ta < tb end
    return a.i < b.i
  end)
  -- A row's config made the user's: r, or nil, whether its own config does not check, and why.
  -- Rows repeat configs (a table has one row per shape, a few configs among them), and the answer
  -- depends only on the config (and on whether it is refitted): each is worked out once, so that
  -- many rows of a config that does not check cost one check, not one each.  At most
  -- TRIED_CONFIGS are kept (a table of as many distinct configs as rows gains nothing from it, and
  -- would hold every key and message until the choice is made).
  local tried_configs, n_tried = {}, 0
  local function try_row(row, refit)
    local key = { refit and "refit" or "" }   -- (each part with its length: no two configs share a key)
    local function part(v) v = tostring(v); key[#key + 1] = #v .. ":" .. v end
    part(row.where or file)
    part(row.base or "")
    for _, v in ipairs(row.sets or {}) do part(v) end
    key = table.concat(key, " ")
    local t = tried_configs[key]
    if t then return t.r, t.bad, t.why end
    t = {}
    local values, why = row_values(fam, row, shape, file, refit, raw, dev)
    if values then
      -- the measured kernel (refitted to the shape), and nothing of it overridden by the user's
      -- fixed fields nor by its key fields: the user's config with the row's open values is the
      -- row's config, or the row is not used
      local r = attempt(fam, raw, keys, values, shape, file)
      if r then
        local measured = attempt(fam, { family = fam.name }, {}, values, shape, file)
        if measured and measured.name == r.name then t.r = r end
      end
    else
      t.bad, t.why = true, why
    end
    if n_tried < M.TRIED_CONFIGS then tried_configs[key], n_tried = t, n_tried + 1 end
    return t.r, t.bad, t.why
  end

  local SOURCE_OF = { [0] = "database", [1] = "database-nearest", [2] = "table", [3] = "table-nearest" }
  local unused = {}   -- rows at this very shape whose config no longer checks: said, not skipped silently
  for _, k in ipairs(ranked) do
    local r, bad, why = try_row(k.row, k.d > 0)
    if bad and k.d == 0 and why ~= "another family" and #unused < 4 then
      local line = (k.row.line or 0) > 0 and (":" .. k.row.line) or ""
      -- (why: the generator's messages, a line each; here one line, so the warning stays one)
      unused[#unused + 1] = string.format("%s%s: its %s row for %s is not used: %s", k.row.where or "?", line,
        k.row.source, M.shape_text(k.at, fam.sizes), (tostring(why):gsub("\n", "; ")))
    end
    if r then
      add(r)
      local src = SOURCE_OF[k.rank]
      -- (by: the sweep, or the table's command line, which can run to kilobytes: its start)
      local by = k.row.by or ""
      if #by > 100 then by = schema.cut(by, 100) .. "..." end
      result = { source = src, time_us = tonumber(k.row.time_us), at = M.shape_text(k.at, fam.sizes),
        detail = string.format("%s: %s measured %.2f us at %s%s", src, k.row.where or "?",
          tonumber(k.row.time_us) or -1, M.shape_text(k.at, fam.sizes), by ~= "" and (" (" .. by .. ")") or "") }
      break
    end
  end

  -- the rule
  local rule_why
  for _, c in ipairs(rule) do
    if #choices >= 1 + want and result then break end
    local r, why, is_limit = attempt(fam, raw, keys, c, shape, file)
    if r then
      if add(r) and not result then
        rule_why = c.why
        result = { source = "rule", detail = "rule: gen/families/" .. fam.name .. ".lua" ..
          (c.why and (": " .. c.why) or "") }
      end
    else
      tried[#tried + 1] = why
      if is_limit then
        if not limit_err then limit_err, intrinsic = why, is_limit == "intrinsic" end
      else
        last_err = why
      end
    end
  end
  if not result then
    local fixed = {}
    for _, f in ipairs(fam.fields) do
      if raw[f.name] ~= nil and not keys[f.name] then fixed[#fixed + 1] = f.name .. " = " .. schema.show(raw[f.name]) end
    end
    local hint = #fixed > 0 and string.format(" (the config fixes %s: leave a field out, or set it to \"auto\", for weft to choose it)",
      table.concat(fixed, ", ")) or ""
    -- a size over a limit says the most: the rule's choice itself failed there (the fixed fields
    -- are named unless no config takes the size: K off 8's multiples, for a GEMM)
    if limit_err then return nil, limit_err .. (intrinsic and "" or hint) end
    return nil, string.format("%s: no config of family %s takes shape %s with the fields this config fixes%s:\n%s",
      file, fam.name, M.shape_text(shape, fam.sizes), hint, last_err or limit_err or "(the rule has no candidates)")
  end
  while #choices > 1 + want do choices[#choices] = nil end
  result.choices = choices
  result.shape = M.shape_text(shape, fam.sizes)
  result.family = fam.name
  result.rule_why = rule_why
  if #unused > 0 then result.unused = table.concat(unused, "; ") end
  return result
end

return M
