-- tests/lua/test_generate.lua: gen/weft.lua end to end: examples, determinism, kernel names that
-- encode every parameter, rendered sources and manifests consistent with their configs.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local weft = require("gen.weft")
local json = require("gen.json")
local common = require("gen.common")

local INT_MAX = 2147483647
local SRC = T.source_dir()

local function gen(cfg_text, file, overrides)
  return weft.generate(cfg_text, file or "cfg.lua", overrides or {}, weft_read)
end

-- A Lua table -> config text (keys sorted; strings, numbers, booleans, nested tables).
local function lua_text(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = string.format("[%q] = %s", k, lua_text(v[k])) end
  return "{ " .. table.concat(parts, ", ") .. " }"
end
local function cfg_text(cfg) return "return " .. lua_text(cfg) .. "\n" end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
  return c
end

-- ---- manifest and source checks ------------------------------------------------------------

local function token(f, v)
  if f.kind == "custom" then
    local nv = assert(f.check(v))
    if type(nv) == "table" then return nv.tag end
    v = nv
  end
  if type(v) == "boolean" then return v and "1" or "0" end
  return (tostring(v):gsub("_", ""))
end

-- cfg: the config as given (all fields set explicitly), m: its manifest
local function check_manifest(m, cfg, file, where)
  local fam = weft.family_module(cfg.family)
  where = where or m.name
  -- name: weft_<family>_<tag><value>_... in schema order
  T.eq(m.family, fam.name, where .. " family")
  T.eq(m.entry, m.name, where .. " entry")
  local prefix = "weft_" .. fam.name .. "_"
  T.eq(m.name:sub(1, #prefix), prefix, where .. " name prefix")
  T.ok(m.name:match("^[%a_][%w_]*$"), where .. " name is a C identifier")
  local toks = {}
  for t in m.name:sub(#prefix + 1):gmatch("[^_]+") do toks[#toks + 1] = t end
  T.eq(#toks, #fam.fields, where .. " one name token per field")
  for i, f in ipairs(fam.fields) do
    T.eq(toks[i], f.tag .. token(f, cfg[f.name]), where .. " name token for " .. f.name)
  end
  T.eq(m.arch, weft.ARCH, where .. " arch")
  T.eq(m.weft_version, weft.VERSION, where .. " version")
  T.eq(m.config_file, file, where .. " config_file")
  local has_arch = false
  for _, o in ipairs(m.options) do has_arch = has_arch or o == "--gpu-architecture=" .. weft.ARCH end
  T.ok(has_arch, where .. " options name the arch")

  -- families that talk to other ranks: one block shape, a grid split by the runtime, a comm section
  if m.comm then
    T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
    T.deq(m.cluster, { 1, 1, 1 }, where .. " cluster")
    T.ok(#m.comm.signals >= 1 and m.comm.halves == 2, where .. " comm: signals, two halves")
    T.eq(m.grid[1].arg, "n", where .. " grid from n")
    T.eq(m.grid[1].cap, "coresident", where .. " every block resident")
    for _, a in ipairs(m.args) do
      T.ok(a.type == "ptr" and a.dtype == cfg.dtype or a.type == "i64" and a.role == "size", where .. " arg " .. a.name)
    end
    return
  end
  -- launch shape
  T.deq(m.block, { cfg.threads, 1, 1 }, where .. " block")
  T.deq(m.cluster, { cfg.cluster, 1, 1 }, where .. " cluster")
  T.eq(m.nonportable_cluster, cfg.nonportable == true, where .. " nonportable_cluster")
  T.eq(math.type(m.smem), "integer", where .. " smem")
  T.ok(m.smem >= 0 and m.smem <= common.SMEM_LIMIT, where .. " smem in range")

  -- args
  local args = {}
  for i, a in ipairs(m.args) do
    T.ok(type(a.name) == "string" and a.name:match("^[%a_][%w_]*$"), where .. " arg " .. i .. " name")
    T.ok(not args[a.name], where .. " arg " .. a.name .. " unique")
    args[a.name] = a
    T.ok(a.type == "ptr" or a.type == "i32", where .. " arg " .. a.name .. " type " .. tostring(a.type))
    if a.type == "ptr" then
      T.ok(common.ESIZE[a.dtype], where .. " arg " .. a.name .. " dtype " .. tostring(a.dtype))
      T.ok(a.role == "in" or a.role == "out", where .. " arg " .. a.name .. " role")
    else
      T.eq(a.role, "size", where .. " arg " .. a.name .. " role")
    end
    if a.congruent then T.ok(args[a.congruent] or true, where .. " congruent") end
  end
  for _, a in ipairs(m.args) do
    if a.congruent then
      T.ok(args[a.congruent] and args[a.congruent].type == "ptr", where .. " " .. a.name .. " congruent to a pointer")
    end
  end
  local n_out = 0
  for _, a in ipairs(m.args) do if a.role == "out" then n_out = n_out + 1 end end
  T.ok(n_out >= 1, where .. " has an output")
  if args.x then T.eq(args.x.dtype, cfg.dtype, where .. " x dtype") end

  -- grid: x = items * cluster, y = z = 1
  T.eq(#m.grid, 3, where .. " grid dims")
  local gx = m.grid[1]
  T.ok(args[gx.arg] and args[gx.arg].role == "size", where .. " grid.x arg is a size")
  T.eq(gx.per, 1, where .. " grid.x per")
  T.eq(gx.times, cfg.cluster, where .. " grid.x times == cluster")
  T.eq(gx.cap, cfg.persistent and "coresident" or nil, where .. " grid.x cap (persistent)")
  for k in pairs(gx) do
    T.ok(k == "arg" or k == "per" or k == "times" or k == "cap", where .. " grid.x key " .. tostring(k))
  end
  for d = 2, 3 do
    T.eq(m.grid[d].arg, nil, where .. " grid " .. d .. " arg")
    T.eq(m.grid[d].per, 1, where .. " grid " .. d .. " per")
    T.eq(m.grid[d].times, 1, where .. " grid " .. d .. " times")
  end

  -- limits: every size arg bounded, grid.x cannot overflow
  local lim = {}
  for _, l in ipairs(m.limits) do
    T.ok(args[l.arg] and args[l.arg].role == "size", where .. " limit on a size arg " .. tostring(l.arg))
    T.ok(not lim[l.arg], where .. " one limit per arg")
    lim[l.arg] = l
    T.ok(math.type(l.min) == "integer" and math.type(l.max) == "integer", where .. " limit integers")
    T.ok(l.min >= 1 and l.max >= l.min and l.max <= INT_MAX, where .. " limit range " .. l.arg)
  end
  for _, a in ipairs(m.args) do
    if a.role == "size" then T.ok(lim[a.name], where .. " size arg " .. a.name .. " has a limit") end
  end
  T.ok(lim[gx.arg].max * gx.times <= INT_MAX, where .. " grid.x fits an int")
  T.eq(lim[gx.arg].max, INT_MAX // cfg.cluster, where .. " grid arg max")
  if cfg.family == "row_softmax" then
    local v = 16 // common.ESIZE[cfg.dtype]
    if cfg.mode == "stream" then
      T.eq(lim.cols.max, INT_MAX, where .. " stream cols max")
    else   -- the modes that hold a row slice on chip take rows up to max_cols (rounded up)
      T.ok(lim.cols.max >= cfg.max_cols, where .. " " .. cfg.mode .. " cols max >= max_cols")
      T.eq(lim.cols.max % (cfg.cluster * v), 0, where .. " cols max: whole vectors per CTA")
      T.ok(lim.cols.max - cfg.max_cols < cfg.cluster * cfg.threads * v, where .. " cols max: rounded up once")
      if cfg.mode == "onchip" then
        T.eq(lim.cols.max % (cfg.cluster * cfg.threads * v), 0, where .. " onchip cols max: whole vectors per thread")
      end
    end
    if cfg.mode == "tma" then   -- two stages of each CTA's slice in dynamic shared memory
      local slice = (cfg.max_cols + cfg.cluster - 1) // cfg.cluster * common.ESIZE[cfg.dtype]
      T.ok(m.smem >= 2 * slice, where .. " tma smem holds two slices")
    end
  end

  -- params: sorted, family plus every field
  local params = {}
  for i, p in ipairs(m.params) do
    if i > 1 then T.ok(m.params[i - 1].key < p.key, where .. " params sorted") end
    params[p.key] = p.value
  end
  T.eq(params.family, fam.name, where .. " params.family")
  for _, f in ipairs(fam.fields) do
    local v = cfg[f.name]
    if f.kind == "custom" then
      local op = assert(f.check(v))
      T.eq(params[f.name], op.name, where .. " params." .. f.name)
      T.eq(params[f.name .. ".combine"], op.combine, where .. " params." .. f.name .. ".combine")
      T.eq(params[f.name .. ".identity"], op.identity, where .. " params." .. f.name .. ".identity")
    else
      T.eq(params[f.name], tostring(v), where .. " params." .. f.name)
    end
  end

  -- json: the manifest table, minus source and json
  local ok, j = pcall(T.json_decode, m.json)
  T.ok(ok, where .. " json decodes: " .. tostring(j))
  T.eq(j.source, nil, where .. " json has no source")
  T.eq(j.json, nil, where .. " json has no json")
  for k, v in pairs(m) do
    if k ~= "source" and k ~= "json" then T.deq(j[k], v, where .. " json." .. k) end
  end
  for k in pairs(j) do T.ok(m[k] ~= nil, where .. " json key " .. k .. " in the manifest") end
  T.eq(json.encode(j), m.json, where .. " json round trip")

  -- source
  local s = m.source
  T.eq(s:sub(1, #('#line 1 "' .. fam.template .. '"')), '#line 1 "' .. fam.template .. '"', where .. " source starts")
  T.eq(s:sub(1, 19), '#line 1 "templates/', where .. " source starts with #line 1 \"templates/")
  T.not_contains(s, "${", where .. " source")
  T.not_contains(s, '#include "weft/', where .. " source (headers inlined)")
  T.eq(s:sub(-1), "\n", where .. " source ends with a newline")
  for l in s:gmatch("[^\n]*") do
    if l:match("^#line") then
      T.ok(l:match('^#line %d+ "templates/[%w_/]+%.cuh?"$'), where .. " #line shape: " .. l)
    end
  end
  T.ok(s:find('extern "C" __global__', 1, true), where .. " has an extern C kernel")
  T.ok(s:find(" " .. m.name .. "(", 1, true), where .. " defines " .. m.name)
  local op = cfg.op and assert(weft.family_module(cfg.family).fields and require("gen.ops").check(cfg.op))
  if op then
    T.contains(s, op.combine, where .. " combine in source")
    T.contains(s, op.identity, where .. " identity in source")
  end
end

-- ---- examples ----------------------------------------------------------------------------

local function list_examples()
  local p = io.popen('ls "' .. SRC .. '/examples"')
  local out = {}
  for l in p:lines() do if l:match("%.lua$") then out[#out + 1] = l end end
  p:close()
  table.sort(out)
  return out
end

-- complete a config with every field's value (the generator's view) for checks
local function complete(cfg)
  local fam = weft.family_module(cfg.family)
  local c = copy(cfg)
  for _, f in ipairs(fam.fields) do if c[f.name] == nil then c[f.name] = f.default end end
  return c
end

T.test("every family's examples generate, consistent with their configs", function()
  local files = list_examples()
  T.ok(#files >= #weft.FAMILIES, "examples found in " .. SRC .. "/examples")
  local covered = {}
  for _, f in ipairs(files) do
    local path = "examples/" .. f
    local text = assert(weft_read(path))
    local m, err = gen(text, path)
    T.ok(m, path .. ": " .. tostring(err))
    local cfg = assert(load(text, "@" .. path, "t", { math = math, string = string, table = table }))()
    check_manifest(m, complete(cfg), path, path)
    covered[m.family] = true
  end
  for _, fam in ipairs(weft.FAMILIES) do T.ok(covered[fam], "an example of " .. fam) end
end)

T.test("determinism: the same config twice gives byte-identical source and json", function()
  for _, f in ipairs(list_examples()) do
    local path = "examples/" .. f
    local text = assert(weft_read(path))
    local a = assert(gen(text, path))
    local b = assert(gen(text, path))
    T.eq(a.source, b.source, path .. " source")
    T.eq(a.json, b.json, path .. " json")
    T.eq(a.name, b.name, path .. " name")
  end
end)

T.test("determinism: key order, comments and equal --set overrides change nothing", function()
  local a = assert(gen('return { family = "row_reduce", op = "max", threads = 128, cluster = 4 }'))
  local b = assert(gen('-- a comment\nlocal t = 64 * 2\nreturn { cluster = 2 * 2, threads = t, op = "max", family = "row_reduce" }'))
  local c = assert(gen('return { family = "row_reduce", op = "sum", threads = 256, cluster = 1 }', nil,
    { "op=max", "threads=128", "cluster=4" }))
  T.eq(b.source, a.source); T.eq(b.json, a.json)
  T.eq(c.source, a.source); T.eq(c.json, a.json)
end)

T.test("the config file's path is recorded, and only in the manifest", function()
  local text = 'return { family = "row_reduce", op = "sum" }'
  local a = assert(gen(text, "a/one.lua"))
  local b = assert(gen(text, "b/two.lua"))
  T.eq(a.source, b.source, "source does not depend on the path")
  T.contains(a.json, '"config_file": "a/one.lua"')
end)

-- ---- every parameter is in the name ------------------------------------------------------

local BASE = {
  row_reduce = { dtype = "f32", op = "sum", cluster = 2, nonportable = false, threads = 256, unroll = 4,
                 min_blocks = 1 },
  row_softmax = { dtype = "f32", mode = "onchip", max_cols = 4096, cluster = 2, nonportable = false,
                  threads = 256, unroll = 4, min_blocks = 1 },
  cluster_reduce = { dtype = "f32", op = "sum", width = 1, cluster = 2, nonportable = false, threads = 128,
                     need_tail_sync = true, iters = 1 },
}

local CUSTOM_OPS = {
  { combine = "fmaxf(fabsf(a), fabsf(b))", identity = "0.0f" },
  { combine = "a + b", identity = "0.0f" },   -- the same text as sum, still a different kernel
  { combine = "a + b", identity = "-0.0f" },
}

local function base_config(fam)
  local cfg = { family = fam.name }
  for _, f in ipairs(fam.fields) do
    local v = (BASE[fam.name] or {})[f.name]
    if v == nil then v = f.default end   -- fields added since these tests were written
    cfg[f.name] = v
  end
  return cfg
end

local function candidates(f, base)
  local out, seen = {}, {}
  local function add(v)
    local key = type(v) == "table" and lua_text(v) or tostring(v) .. type(v)
    if v ~= base and not seen[key] then seen[key] = true; out[#out + 1] = v end
  end
  if f.kind == "bool" then add(not base)
  elseif f.kind == "enum" then for _, v in ipairs(f.values) do add(v) end
  elseif f.kind == "int" and f.values then for _, v in ipairs(f.values) do add(v) end
  elseif f.kind == "int" then
    if f.max - f.min <= 64 then
      for v = f.min, f.max do add(v) end
    else
      for _, v in ipairs({ f.min, f.min + 1, base - 1, base + 1, base // 2, base * 2, base * 3, f.max - 1, f.max }) do
        if v >= f.min and v <= f.max then add(v) end
      end
    end
  elseif f.kind == "custom" and f.name == "op" then
    for _, n in ipairs(require("gen.ops").names) do add(n) end
    for _, o in ipairs(CUSTOM_OPS) do add(o) end
  elseif f.kind == "string" then add(base .. "x")
  end
  return out
end

local THREADS = { 64, 128, 256, 512, 1024 }

-- Set the companions a varied field needs (the families' cross-field rules).
local function fixup(cfg, field)
  if field == "cluster" and cfg.cluster > common.PORTABLE_CLUSTER then cfg.nonportable = true end
  if cfg.min_blocks and cfg.threads * cfg.min_blocks > 2048 then
    if field == "min_blocks" then
      local t = 64
      for _, x in ipairs(THREADS) do if x * cfg.min_blocks <= 2048 then t = x end end
      cfg.threads = t
    else
      cfg.min_blocks = math.max(1, 2048 // cfg.threads)
    end
  end
  if cfg.family == "cluster_reduce" and cfg.exchange == "push" then cfg.need_tail_sync = false end
  if cfg.family == "allreduce" then   -- multimem is two_shot, and only it has a fallback
    if field == "comm" and cfg.comm == "multimem" then cfg.algo = "two_shot" end
    if field == "fallback" and cfg.fallback ~= "none" then cfg.comm = "multimem"; cfg.algo = "two_shot" end
  end
  if cfg.family == "row_softmax" then
    if field == "mode" and cfg.mode == "stream" then cfg.max_cols = 0 end
    if field == "unroll" then cfg.mode = "stream"; cfg.max_cols = 0 end
    if field == "max_cols" and cfg.max_cols == 0 then cfg.mode = "stream" end
  end
  return cfg
end

T.test("the kernel name changes when any single parameter changes", function()
  local report = {}
  for _, fname in ipairs(weft.FAMILIES) do
    local fam = weft.family_module(fname)
    local base = base_config(fam)
    local bm, err = gen(cfg_text(base), "base.lua")
    T.ok(bm, fname .. " base config: " .. tostring(err))
    check_manifest(bm, base, "base.lua", fname .. " base")
    local names = { [bm.name] = "base" }
    local configs = { [lua_text(base)] = "base" }
    local accepted, rejected, fixed = 0, 0, 0
    for _, f in ipairs(fam.fields) do
      local cands = candidates(f, base[f.name])
      local ok_for_field = 0
      for _, v in ipairs(cands) do
        local cfg = copy(base)
        cfg[f.name] = v
        local before = lua_text(cfg)
        fixup(cfg, f.name)
        if lua_text(cfg) ~= before then fixed = fixed + 1 end
        local what = string.format("%s: %s = %s", fname, f.name, T.show(v))
        local m, e
        if configs[lua_text(cfg)] then
          -- the companions made it a config already tried (max_cols = 0 is mode = "stream")
          ok_for_field = ok_for_field + 1
        else
          configs[lua_text(cfg)] = what
          m, e = gen(cfg_text(cfg), "variant.lua")
        end
        if configs[lua_text(cfg)] ~= what then -- a duplicate, done above
        elseif m then
          accepted = accepted + 1
          ok_for_field = ok_for_field + 1
          T.ne(m.name, bm.name, what .. ": name differs from the base")
          T.ok(not names[m.name], what .. ": name " .. m.name .. " already used by " .. tostring(names[m.name]))
          names[m.name] = what
          T.ne(m.source, bm.source, what .. ": source differs from the base")
          check_manifest(m, cfg, "variant.lua", what)
        else
          -- only a deliberate rule on this very field may refuse a value
          rejected = rejected + 1
          T.contains(e, "variant.lua: " .. f.name .. " = " .. require("gen.schema").show(v) .. ": ", what .. " rejected")
        end
      end
      if #cands > 0 then
        T.ok(ok_for_field > 0, fname .. "." .. f.name .. ": no accepted variant")
      else
        report[#report + 1] = fname .. "." .. f.name .. " has a single allowed value"
      end
    end
    report[#report + 1] = string.format("%s: %d variants, %d with companions set, %d refused by rules",
      fname, accepted, fixed, rejected)
  end
  for _, r in ipairs(report) do io.write("  ", r, "\n") end
end)

T.test("names across families and examples are all distinct", function()
  local names = {}
  for _, fname in ipairs(weft.FAMILIES) do
    local m = assert(gen(cfg_text(base_config(weft.family_module(fname)))))
    T.ok(not names[m.name], m.name); names[m.name] = true
  end
end)

-- ---- configs the generator completes -----------------------------------------------------

T.test("a config with only family (plus required companions) generates", function()
  local minimal = {
    row_reduce = 'return { family = "row_reduce" }',
    cluster_reduce = 'return { family = "cluster_reduce" }',
    row_softmax = 'return { family = "row_softmax", max_cols = 1024 }',
  }
  local bad = {}
  for _, fname in ipairs(weft.FAMILIES) do
    local text = minimal[fname] or ('return { family = "' .. fname .. '" }')
    local m, err = gen(text, "min.lua")
    if m then
      check_manifest(m, complete(assert(load(text, "=min", "t", {}))()), "min.lua", fname .. " minimal")
    else
      bad[#bad + 1] = fname .. ": " .. tostring(err)
    end
  end
  T.eq(#bad, 0, "minimal configs refused:\n    " .. table.concat(bad, "\n    "))
end)

T.test("a custom op's ref function is allowed and does not change the kernel", function()
  local a = assert(gen('return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "-1e30f" } }'))
  local b = assert(gen('return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "-1e30f", ' ..
    'ref = function(a, b) return math.max(a, b) end } }'))
  T.eq(a.name, b.name); T.eq(a.source, b.source)
  -- the manifest says a host reference exists (the runtime checks with it); nothing else differs
  T.ok(b.json:find('"op.ref"', 1, true) and not a.json:find('"op.ref"', 1, true), "op.ref param")
end)

T.test("--set through generate: applies, validates, names the file", function()
  local text = assert(weft_read("examples/row_reduce.lua"))
  local m = assert(gen(text, "examples/row_reduce.lua", { "threads=128", "op=max" }))
  T.deq(m.block, { 128, 1, 1 })
  T.contains(m.name, "_max_")
  local _, e = gen(text, "examples/row_reduce.lua", { "threads=100" })
  T.contains(e, "examples/row_reduce.lua: threads = 100: must be one of 64, 128, 256, 512, 1024")
  _, e = gen(text, "examples/row_reduce.lua", { "threads" })
  T.contains(e, "examples/row_reduce.lua")
  T.contains(e, "expected key=value")
  _, e = gen(text, "examples/row_reduce.lua", { "cluster=16" })
  T.contains(e, "examples/row_reduce.lua: cluster = 16: must be at most 8; up to 16 needs nonportable = true")
  m = assert(gen(text, "examples/row_reduce.lua", { "cluster=16", "nonportable=true" }))
  T.deq(m.cluster, { 16, 1, 1 })
  T.eq(m.nonportable_cluster, true)
end)

T.test("family errors name the file, the value and the families", function()
  local all = '"cluster_reduce", "row_reduce", "row_softmax", "allreduce"'
  local _, e = gen('return { threads = 256 }', "x.lua")
  T.eq(e, "x.lua: family = nil: must be one of " .. all)
  _, e = gen('return { family = "row_reduc" }', "x.lua")
  T.eq(e, 'x.lua: family = "row_reduc": must be one of ' .. all)
  _, e = gen('return { family = 3 }', "x.lua")
  T.eq(e, "x.lua: family = 3: must be one of " .. all)
  _, e = gen('return { family = "config" }', "x.lua")
  T.eq(e, 'x.lua: family = "config": must be one of ' .. all)
end)

T.test("every config error message starts with the file", function()
  local cases = {
    'return { family = "row_reduce", thread = 256 }',
    'return { family = "row_reduce", threads = 100, op = "avg", cluster = 0 }',
    'return { family = "row_softmax" }',
    'return { family = "row_softmax", max_cols = 4000000, cluster = 1, threads = 256 }',
    'return { family = "row_softmax", mode = "stream", max_cols = 5 }',
    'return { family = "cluster_reduce", dtype = "f16" }',
    'return 5',
    'return {',
  }
  for _, text in ipairs(cases) do
    local m, e = gen(text, "dir/c.lua")
    T.eq(m, nil, text)
    for _, l in ipairs(T.lines(e)) do T.eq(l:sub(1, 10), "dir/c.lua:", text .. " -> " .. l) end
  end
end)

T.test("row_softmax: the register rule's message names the numbers and stream", function()
  local _, e = gen('return { family = "row_softmax", max_cols = 4000000, cluster = 1, threads = 256 }', "s.lua")
  T.contains(e, "s.lua: max_cols = 4000000: ")
  T.contains(e, "cluster = 1, threads = 256")
  T.contains(e, "(max_cols <= 32768)")
  T.contains(e, 'mode = "stream"')
  -- the bound it names is exact: 32768 is accepted, 32769 is not
  T.ok(gen('return { family = "row_softmax", max_cols = 32768, cluster = 1, threads = 256 }'), "32768 fits")
  T.eq(gen('return { family = "row_softmax", max_cols = 32769, cluster = 1, threads = 256 }'), nil, "32769")
end)

-- ---- json ---------------------------------------------------------------------------------

T.test("json.encode: sorted keys, arrays, escapes, empty tables", function()
  T.eq(json.encode({ b = 1, a = { 1, "x", true }, c = {} }),
    '{\n  "a": [\n    1,\n    "x",\n    true\n  ],\n  "b": 1,\n  "c": []\n}\n')
  T.eq(json.encode('q"\\\n\t\1'), '"q\\"\\\\\\n\\t\\u0001"\n')
  T.eq(json.encode(0.5), "0.5\n")
  T.ok(not pcall(json.encode, 0 / 0), "NaN refused")
  T.ok(not pcall(json.encode, { [1] = 1, x = 2, [true] = 3 }), "non-string key refused")
  T.ok(not pcall(json.encode, print), "function refused")
end)

T.done("test_generate")
