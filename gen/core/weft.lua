-- gen/core/weft.lua: the generator's entry point.
--
--   config text ─► sandboxed load ─► --set overrides ─► validate (family schema + rules)
--               ─► derive (grid, block, smem, args) ─► name ─► render ─► manifest
--
-- The manifest is the only contract with runtime/: the runtime launches from it and never
-- re-derives what the generator decided.  Same config -> byte-identical source and manifest.

local config = require("gen.core.config")
local schema = require("gen.core.schema")
local template = require("gen.core.template")
local common = require("gen.core.common")
local json = require("gen.core.json")

local M = {}

M.VERSION = "0.1.0"
M.ARCH = "sm_90a"
-- Custom operators' host references (op.ref, Lua functions) for the runtime's checks
-- (bridge_fold), by a key the kernel's manifest carries (ref_key), not by its name: two configs
-- that differ only in op.ref make one kernel name.  The runtime drops a key when the manifest
-- holding it is freed (runtime/core/bridge.h).
M.refs, M.last_ref = {}, 0

-- The families are the modules in gen/families/ (the host lists them: weft_families), so a new
-- family is a new file.
function M.families() return weft_families() end

local function family_module(name)
  for _, f in ipairs(M.families()) do
    if f == name then return require("gen.families." .. name) end
  end
  return nil
end
M.family_module = family_module

-- The kernel name encodes every parameter, in schema order: weft_<family>_<tag><value>_...
function M.kernel_name(fam, cfg)
  local parts = { "weft", fam.name }
  for _, f in ipairs(fam.fields) do
    local v = cfg[f.name]
    local tok
    if type(v) == "table" then tok = v.tag
    elseif type(v) == "boolean" then tok = v and "1" or "0"
    else tok = tostring(v):gsub("_", "") end   -- "one_shot" -> "oneshot": one token per field
    parts[#parts + 1] = f.tag .. tok
  end
  return table.concat(parts, "_")
end

-- Flatten the validated config to sorted "key" = "value" strings for the C side.
local function flatten(cfg, fam)
  local out = { { key = "family", value = fam.name } }
  for _, f in ipairs(fam.fields) do
    local v = cfg[f.name]
    if type(v) == "table" and not v.combine then   -- a table of numbers (tile = { m, n, k })
      for key, x in pairs(v) do
        if key ~= "tag" then out[#out + 1] = { key = f.name .. "." .. key, value = tostring(x) } end
      end
    elseif type(v) == "table" then   -- an operator
      out[#out + 1] = { key = f.name, value = v.name }
      out[#out + 1] = { key = f.name .. ".combine", value = v.combine }
      out[#out + 1] = { key = f.name .. ".identity", value = v.identity }
      if v.ref then out[#out + 1] = { key = f.name .. ".ref", value = "lua" } end
    else
      out[#out + 1] = { key = f.name, value = tostring(v) }
    end
  end
  table.sort(out, function(a, b) return a.key < b.key end)
  return out
end

-- The family's run spec (F.run), for the tools that check and time its kernels (runtime/cli/,
-- weft tune): the size arguments in order, the shapes checked and timed by default, the metric
-- and baseline, and whether every rank of an MPI job runs it.  Shapes become lists in size
-- order; a shape must give every size, each a positive integer within the kernel's limits.
M.METRICS = { "bytes", "flops", "latency", "busbw" }

-- The generator's one test of a size against a kernel's limits (the runtime's twin is
-- weft_manifest_check_size): nil if allowed, else what is allowed and the limit (its `hint`,
-- where the family gives one: which other config takes the size; `intrinsic`: none does).
function M.outside_limits(limits, name, v)
  for _, l in ipairs(limits or {}) do
    if l.arg == name and (v < l.min or v > l.max or (l.multiple and l.multiple > 1 and v % l.multiple ~= 0)) then
      return string.format("outside the kernel's limits [%d, %d]%s%s", l.min, l.max,
        l.multiple and l.multiple > 1 and string.format(", a multiple of %d", l.multiple) or "",
        l.hint and " (" .. l.hint .. ")" or ""), l
    end
  end
end

M.BASELINES = { "copy", "cublaslt", "nccl", "none" }
local function run_spec(fam, cfg, d)
  if not fam.run then return nil end
  local r = fam.run(cfg, d)
  local where = "gen/families/" .. fam.name .. ".lua: run"
  local function bad(what) error(where .. ": " .. what .. " (a bug in the family module)", 0) end
  if type(r.sizes) ~= "table" or #r.sizes < 1 or #r.sizes > 4 then bad("sizes must list 1 to 4 size arguments") end
  local is_size = {}
  for _, name in ipairs(r.sizes) do   -- (a size of the run, which a multi-launch variant's first kernel may lack)
    if type(name) ~= "string" or not name:match("^[a-z_][a-z0-9_]*$") then bad("sizes: " .. tostring(name) .. " is not a name") end
    is_size[name] = true
  end
  local function shapes(list, what)
    local out = {}
    for i, sh in ipairs(list or {}) do
      local row = {}
      for key in pairs(sh) do if not is_size[key] then bad(what .. "[" .. i .. "]." .. tostring(key) .. " is not in sizes") end end
      for j, name in ipairs(r.sizes) do
        local v = sh[name]
        if math.type(v) ~= "integer" or v < 1 then bad(what .. "[" .. i .. "]." .. name .. " must be a positive integer") end
        local why = M.outside_limits(d.limits, name, v)
        if why then bad(what .. "[" .. i .. "]." .. name .. " = " .. v .. ": " .. why) end
        row[j] = v
      end
      out[i] = row
    end
    return out
  end
  local function one_of(v, list, what)
    for _, x in ipairs(list) do if x == v then return v end end
    bad(what .. " = " .. tostring(v) .. ": must be one of " .. table.concat(list, ", "))
  end
  local cap, alias = {}, {}
  for j, name in ipairs(r.sizes) do
    cap[j] = (r.check_cap or {})[name] or 0
    alias[j] = (r.aliases or {})[name] or ""
  end
  -- key: the fields a tuned config must share with the user's (what changes the result, not the
  -- speed): weft run --tuned never swaps them.  Absent: every field the sweep did not set.
  local key = {}
  for i, f in ipairs(r.key or {}) do
    local known = false
    for _, field in ipairs(fam.fields) do known = known or field.name == f end
    if not known then bad("key[" .. i .. "] = " .. tostring(f) .. " is not a field of the family") end
    key[i] = f
  end
  return { sizes = r.sizes, aliases = alias, check_cap = cap, key = key, check = shapes(r.check, "check"),
           time = shapes(r.time, "time"), metric = one_of(r.metric, M.METRICS, "metric"),
           baseline = one_of(r.baseline, M.BASELINES, "baseline"), ranks = r.ranks == true }
end
M.run_spec = run_spec

local function nvrtc_options()
  return { "--gpu-architecture=" .. M.ARCH, "--std=c++17", "--generate-line-info",
           "--extra-device-vectorization", "--ptxas-options=--verbose" }
end

-- check(cfg, file) -> family module, validated config, derivation | nil, message
-- Everything generate() decides before rendering: schema, the family's rules, derived limits.
-- Sweeps use it to prune candidates without rendering them.
function M.check(cfg, file)
  local fam = type(cfg.family) == "string" and family_module(cfg.family)
  if not fam then
    return nil, string.format("%s: family = %s: must be one of %s", file, schema.show(cfg.family),
      schema.list(M.families()))
  end
  local ncfg, err = schema.validate(cfg, fam.fields, file, fam.key)
  if not ncfg then return nil, err end
  local errs = schema.errors(file)
  fam.check(ncfg, errs)
  if not errs.ok() then return nil, errs.text() end
  local d = fam.derive(ncfg)
  local smem_total = d.smem + (d.static_smem or 0)
  if smem_total > common.SMEM_LIMIT then
    local f = d.smem_field or "tile"
    return nil, string.format("%s: %s = %s: needs %d bytes of shared memory per block, at most %d (227 KB) on sm_90; %s",
      file, f, schema.show(ncfg[f]), smem_total, common.SMEM_LIMIT, d.smem_hint or "use smaller tiles or fewer stages")
  end
  return fam, ncfg, d
end

-- The kernel's C parameter list, rendered from what the runtime passes (api_launch): the args in
-- manifest order, then one tensor map per tmap (by value), then the communicator when the kernel
-- has a comm section.  Templates write ${params} instead of a signature of their own, so the
-- signature and the manifest cannot disagree.  Nil and a message for a type it has no C for (a
-- bug in a family's derive).
local PTR_CTYPE = { f32 = "float", f16 = "weft::f16", bf16 = "weft::bf16", fp8_e4m3 = "weft::fp8e4m3" }
local SCALAR_CTYPE = { i32 = "int", i64 = "long long", f32 = "float" }
function M.render_params(args, tmaps, comm, workspace)
  local out = {}
  for i, a in ipairs(args or {}) do
    local decl
    if a.type == "ptr" then
      local ct = PTR_CTYPE[a.dtype]
      if not ct or (a.role ~= "in" and a.role ~= "out" and a.role ~= "inout") then
        return nil, string.format("args[%d] (%s): a pointer needs dtype f32, f16, bf16 or fp8_e4m3 and role in, out or inout, not %s, %s",
          i, tostring(a.name), tostring(a.dtype), tostring(a.role))
      end
      decl = (a.role == "in" and "const " or "") .. ct .. " *" .. a.name
    elseif SCALAR_CTYPE[a.type] then
      decl = SCALAR_CTYPE[a.type] .. " " .. a.name
    else
      return nil, string.format("args[%d] (%s): type %s has no C type (ptr, i32, i64, f32)", i, tostring(a.name),
        tostring(a.type))
    end
    out[#out + 1] = decl
  end
  for _, t in ipairs(tmaps or {}) do out[#out + 1] = "const __grid_constant__ weft::TensorMap " .. t.name end
  if workspace then out[#out + 1] = "void *ws" end
  if comm then out[#out + 1] = "const __grid_constant__ weft::Comm comm" end
  return table.concat(out, ", ")
end

-- One kernel's manifest (no json yet: generate adds it once every kernel's name is known).
local function render_kernel(fam, ncfg, d, file, read)
  local name = M.kernel_name(fam, ncfg)
  local ref_key   -- (M.refs)
  for _, f in ipairs(fam.fields) do
    local v = ncfg[f.name]
    if type(v) == "table" and v.ref then
      M.last_ref = M.last_ref + 1
      ref_key = M.last_ref
      M.refs[ref_key] = v.ref
    end
  end
  local values = { name = name }
  for k, v in pairs(d.values) do values[k] = v end
  if values.params ~= nil then
    error(fam.name .. ": derive's values.params is the generator's (rendered from args, tmaps and comm)")
  end
  local params, err = M.render_params(d.args, d.tmaps, d.comm, d.workspace)
  if not params then error(name .. ": " .. err .. " (a bug in gen/families/" .. fam.name .. ".lua)") end
  values.params = params
  local source
  source, err = template.render(fam.template, values, read)
  if not source then return nil, err end
  return {
    weft_version = M.VERSION,
    family = fam.name,
    name = name,
    entry = name,
    arch = M.ARCH,
    options = nvrtc_options(),
    block = d.block,
    cluster = d.cluster,
    smem = d.smem,
    smem_layout = d.layout,   -- the family's shared-memory offsets where it has a layout (gen/core/gemm.lua)
    nonportable_cluster = ncfg.nonportable == true,
    pdl = d.pdl == true,   -- launched with programmatic stream serialisation (the kernel waits itself)
    args = d.args,
    grid = d.grid,
    limits = d.limits,
    tmaps = d.tmaps, -- tensor maps the runtime builds at each launch (TMA), nil if none
    -- a scratch area the runtime keeps per stream and passes after the tensor maps (stream-K's
    -- partial tiles, runtime/core/workspace.h): the runtime's `header` bytes, `flags` u32 that
    -- start at zero and that every launch leaves at zero, then per_cta bytes per CTA of the grid;
    -- nil if none
    workspace = d.workspace,
    comm = d.comm,   -- nil unless the kernel talks to other ranks (weft_comm_launch)
    params = flatten(ncfg, fam),
    run = run_spec(fam, ncfg, d),
    config_file = file,
  }, source, ref_key
end

-- generate(text, file, overrides, read) -> manifest | nil, message
--   read(path) -> text | nil, message: the host's access to templates/ (embedded or on disk)
-- The manifest is the config's first kernel.  A multi-launch variant (a family's parts(cfg)
-- returns the configs of the kernels launched after it) has the others in manifest.parts, in
-- launch order, each a whole manifest of its own; every kernel's `kernels` lists all their
-- names, so each .json says what it belongs to.
function M.generate(text, file, overrides, read)
  local cfg, err = config.load(text, file)
  if not cfg then return nil, err end
  cfg, err = config.apply(cfg, overrides, file)
  if not cfg then return nil, err end

  local fam, ncfg, d = M.check(cfg, file)
  if not fam then return nil, ncfg end
  local todo = { { fam, ncfg, d } }
  for _, part in ipairs(fam.parts and fam.parts(ncfg) or {}) do
    local pfam, pcfg, pd = M.check(part, file)
    if not pfam then return nil, pcfg end
    todo[#todo + 1] = { pfam, pcfg, pd }
  end
  local kernels, sources, names, keys = {}, {}, {}, {}
  for i, t in ipairs(todo) do
    kernels[i], sources[i], keys[i] = render_kernel(t[1], t[2], t[3], file, read)
    if not kernels[i] then return nil, sources[i] end
    for j = 1, i - 1 do
      if names[j] == kernels[i].name then error(kernels[i].name .. ": two kernels of one config share a name") end
    end
    names[i] = kernels[i].name
  end
  for i, m in ipairs(kernels) do
    m.kernels = names
    m.json = json.encode(m)   -- everything but the source, which goes next to it as <name>.cu
    m.source = sources[i]
    m.ref_key = keys[i]       -- (after the json: it differs from one generate to the next)
  end
  local m = kernels[1]
  m.parts = { table.unpack(kernels, 2) }
  return m
end

return M
