-- tests/lua/test_auto.lua: gen/core/auto.lua, choosing the config from the shape: the order of
-- the sources, the nearest-shape distance, fixed and key fields, the rules of the row families
-- over the published shape grid, and the messages for shapes no kernel takes.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local auto = require("gen.core.auto")
local weft = require("gen.core.weft")

local H200 = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 1 }

local function choose(text, shape, known, opts, overrides)
  return auto.choose(text, "cfg.lua", overrides or {}, shape, H200, known, opts)
end

-- generating the user's text with its overrides, then the choice's sets, is the chosen kernel
local function generated(text, overrides, sets)
  local all = {}
  for _, o in ipairs(overrides or {}) do all[#all + 1] = o end
  for _, o in ipairs(sets) do all[#all + 1] = o end
  local m, err = weft.generate(text, "cfg.lua", all, weft_read)
  T.ok(m, err)
  return m
end

local function takes(m, shape_text)
  for item in shape_text:gmatch("[^ ]+") do
    local n, v = item:match("^(%w+)=(%d+)$")
    T.eq(weft.outside_limits(m.limits, n, tonumber(v)), nil, m.name .. " takes " .. item)
  end
end

local TOKENS = { 1, 16, 128, 1024, 4096, 16384 }
local WIDTHS = { 4096, 32000, 50257, 128256, 151936, 262144 }
local CONFIGS = {
  'return { family = "row_softmax", dtype = "%s" }',
  'return { family = "row_reduce", dtype = "%s", op = "sum" }',
  'return { family = "row_reduce", dtype = "%s", op = "max" }',
  'return { family = "rmsnorm", dtype = "%s" }',
  'return { family = "rmsnorm", dtype = "%s", residual = true, eps = "arg" }',
}

T.test("the rules answer the whole published grid, and each choice takes its shape", function()
  local n = 0
  for _, fmt in ipairs(CONFIGS) do
    for _, dt in ipairs({ "f32", "f16", "bf16" }) do
      local text = string.format(fmt, dt)
      for _, rows in ipairs(TOKENS) do
        for _, cols in ipairs(WIDTHS) do
          local shape = string.format("rows=%d cols=%d", rows, cols)
          local r, err = choose(text, shape)
          if dt == "f32" and cols == 262144 and text:find("residual") then
            -- the family's reach: x, r and w of an f32 row on 16 CTAs of 512 threads hold 229376 columns
            T.eq(r, nil, "f32 rmsnorm with the residual at 262144 columns")
            T.contains(err, "cols = 262144: no layout holds a f32 row this long in registers with the residual", err)
            goto next
          end
          T.ok(r, err)
          T.eq(r.source, "rule", shape)
          local m = generated(text, {}, r.choices[1].sets)
          T.eq(m.name, r.choices[1].name, "sets give the chosen kernel")
          
          takes(m, r.shape)
          n = n + 1
          ::next::
        end
      end
    end
  end
  T.eq(n, 5 * 3 * 36 - 6, "shapes answered")
end)

T.test("odd shapes off the grid: the rule still answers", function()
  for _, shape in ipairs({ "rows=1 cols=1", "rows=3 cols=7", "rows=777 cols=11008", "rows=48 cols=70000",
                           "rows=3000 cols=200000", "rows=2 cols=1048576", "rows=65537 cols=129" }) do
    for _, fmt in ipairs({ CONFIGS[1], CONFIGS[2] }) do
      local text = string.format(fmt, "bf16")
      local r, err = choose(text, shape)
      T.ok(r, err)
      takes(generated(text, {}, r.choices[1].sets), r.shape)
    end
  end
  -- past what a cluster of 16 holds in registers, softmax streams
  local r = choose(string.format(CONFIGS[1], "f32"), "rows=4 cols=4000000")
  T.contains(table.concat(r.choices[1].sets, " "), "mode=stream", "long rows stream")
end)

T.test("fixed fields stay fixed; only open ones (absent or \"auto\") are chosen", function()
  local text = 'return { family = "row_softmax", dtype = "f16", cluster = 2, threads = "auto" }'
  local r, err = choose(text, "rows=8192 cols=50257", nil, nil, { "min_blocks=1" })
  T.ok(r, err)
  local sets = table.concat(r.choices[1].sets, " ")
  T.not_contains(sets, "cluster=", "cluster is fixed")
  T.not_contains(sets, "min_blocks=", "min_blocks is fixed by --set")
  T.contains(sets, "threads=", "threads = \"auto\" is open")
  T.contains(r.choices[1].name, "_c2_", "the kernel has the fixed cluster")
  -- a fixed mode that cannot take the shape: the message says what the rule tried
  local bad, why = choose('return { family = "row_softmax", dtype = "f32", mode = "onchip", cluster = 1, threads = 64 }',
    "rows=4 cols=4000000")
  T.eq(bad, nil, "no config fits")
  T.contains(why, "no config of family row_softmax takes shape cols=4000000 rows=4", why)
  T.contains(why, "max_cols", "the family's own message")
end)

local function row(source, shape, time, sets, extra)
  local r = { source = source, where = source == "table" and "tune/h200.tsv" or "/db/tune.db", shape = shape,
              time_us = time, base = 'return { family = "row_softmax", dtype = "f16" }', sets = sets,
              exact_env = true, by = "sweep.lua" }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end
local SETS_A = { "mode=onchip", "max_cols=50257", "cluster=2", "threads=512" }
local SETS_B = { "mode=onchip", "max_cols=50257", "cluster=1", "threads=1024" }
local SETS_C = { "mode=onchip", "max_cols=40000", "cluster=4", "threads=256", "exchange=push" }
local F16 = 'return { family = "row_softmax", dtype = "f16" }'

T.test("detail: the command line of a row cut at 100 bytes, a character ending there kept whole", function()
  local shape = "rows=8192 cols=50257"
  local function detail(by) return choose(F16, shape, { row("table", "cols=50257 rows=8192", 200, SETS_B, { by = by }) }).detail end
  local e2 = "\195\169"   -- é
  T.contains(detail(string.rep("x", 98) .. e2 .. "tail"), "(" .. string.rep("x", 98) .. e2 .. "...)", "é ends at byte 100: kept")
  T.contains(detail(string.rep("x", 99) .. e2 .. "tail"), "(" .. string.rep("x", 99) .. "...)", "é crosses byte 100: dropped")
  T.contains(detail(string.rep("x", 100)), "(" .. string.rep("x", 100) .. ")", "100 bytes: not cut")
  T.contains(detail(string.rep("x", 101)), "(" .. string.rep("x", 100) .. "...)", "101 bytes: cut")
end)


T.test("sources in order: database, its nearest shape, the table, its nearest shape, the rule", function()
  local exact_db = row("database", "cols=50257 rows=8192", 300, SETS_A)
  local near_db = row("database", "cols=40000 rows=8192", 250, SETS_C)
  local exact_tab = row("table", "cols=50257 rows=8192", 200, SETS_B)
  local near_tab = row("table", "cols=50257 rows=4096", 150, SETS_B)
  local shape = "rows=8192 cols=50257"
  local r = choose(F16, shape, { near_tab, exact_tab, near_db, exact_db })
  T.eq(r.source, "database", "exact database row first, whatever its time")
  T.eq(r.time_us, 300, "its measured time")
  T.contains(r.detail, "/db/tune.db", "detail names the database")
  T.contains(r.choices[1].name, "_c2_", "the database's config")
  r = choose(F16, shape, { near_tab, exact_tab, near_db })
  T.eq(r.source, "database-nearest", "then the database's nearest")
  T.eq(r.at, "cols=40000 rows=8192", "measured at")
  T.contains(r.choices[1].name, "_mc57344_", "refitted: max_cols follows the row")
  r = choose(F16, shape, { near_tab, exact_tab })
  T.eq(r.source, "table", "then the table")
  r = choose(F16, shape, { near_tab })
  T.eq(r.source, "table-nearest", "then the table's nearest")
  r = choose(F16, shape, {})
  T.eq(r.source, "rule", "then the rule")
  -- a database row measured under another driver is a nearest hit, not exact
  r = choose(F16, shape, { row("database", "cols=50257 rows=8192", 300, SETS_A, { exact_env = false }) })
  T.eq(r.source, "database-nearest", "another driver")
end)

T.test("near means every size within a factor of 4; the nearest wins, ties to the faster", function()
  local shape = "rows=8192 cols=50257"
  local far = row("table", "cols=50257 rows=1024", 10, SETS_B)           -- rows 8x off
  T.eq(choose(F16, shape, { far }).source, "rule", "8x off is not near")
  local x4 = row("table", "cols=50257 rows=2048", 10, SETS_B)
  T.eq(choose(F16, shape, { x4 }).source, "table-nearest", "4x off is near")
  local closer = row("table", "cols=50257 rows=4096", 99, SETS_A)
  T.contains(choose(F16, shape, { x4, closer }).choices[1].name, "_c2_", "the nearer row wins over the faster")
  local twin = row("table", "cols=50257 rows=16384", 50, SETS_B)
  T.contains(choose(F16, shape, { closer, twin }).choices[1].name, "_c1_", "equal distance: the faster")
end)

T.test("a measured row must fit the user's fixed and key fields", function()
  local shape = "rows=8192 cols=50257"
  local db = { row("database", "cols=50257 rows=8192", 300, SETS_A) }
  -- the user fixes threads = 1024: the row (512 threads) is another kernel
  local r = choose('return { family = "row_softmax", dtype = "f16", threads = 1024 }', shape, db)
  T.eq(r.source, "rule", "fixed field differs")
  T.contains(r.choices[1].name, "_t1024_", "the fixed threads")
  -- the same threads fixed: the row is used
  r = choose('return { family = "row_softmax", dtype = "f16", threads = 512 }', shape, db)
  T.eq(r.source, "database", "fixed field agrees")
  -- key fields: a row measured with op = max never answers a sum
  local mx = { source = "database", where = "/db", shape = "cols=4096 rows=64", time_us = 5, exact_env = true,
               base = 'return { family = "row_reduce", dtype = "f32", op = "max" }', sets = { "cluster=2" } }
  r = choose('return { family = "row_reduce", dtype = "f32" }', "rows=64 cols=4096", { mx })
  T.eq(r.source, "rule", "op differs (the user's is the default, sum)")
  r = choose('return { family = "row_reduce", dtype = "f32", op = "max" }', "rows=64 cols=4096", { mx })
  T.eq(r.source, "database", "op agrees")
end)

T.test("a same_speed key field (rmsnorm's eps) takes the user's value from a measured row", function()
  local rms = { source = "table", where = "t.tsv", shape = "cols=4096 rows=64", time_us = 9,
                base = 'return { family = "rmsnorm", dtype = "bf16" }',
                sets = { "residual=true", "eps=1e-06", "max_cols=4096", "threads=128", "rows_per_cta=1" } }
  local r = choose('return { family = "rmsnorm", dtype = "bf16", residual = true, eps = "arg" }', "rows=64 cols=4096",
    { rms })
  T.eq(r.source, "table", "eps differs, the row is used")
  T.contains(r.choices[1].name, "_earg_", "with the user's eps")
  T.not_contains(table.concat(r.choices[1].sets, " "), "eps=", "eps is never chosen")
  r = choose('return { family = "rmsnorm", dtype = "bf16", residual = false, eps = "arg" }', "rows=64 cols=4096", { rms })
  T.eq(r.source, "rule", "residual differs: not used")
end)

T.test("rows that are bad are skipped, not fatal", function()
  local shape = "rows=8192 cols=50257"
  local bad = {
    row("database", "cols=50257 rows=8192", 1, { "cluster=3" }),                 -- invalid config
    row("database", "garbage", 1, SETS_A),                                       -- unparsable shape
    row("database", "cols=50257 rows=8192", 1, SETS_A, { base = "return 5" }),   -- base is no config
    row("database", "cols=50257 rows=8192", 1, SETS_A, { base = "error('x')" }),
    row("database", "cols=50257 rows=8192", 1, SETS_A,
        { base = 'return { family = "row_reduce", dtype = "f16" }' }),            -- another family
    row("database", "cols=50257", 1, SETS_A),                                    -- a size missing
    row("cache", "cols=50257 rows=8192", 1, SETS_A),                             -- unknown source
  }
  local r, err = choose(F16, shape, bad)
  T.ok(r, err)
  T.eq(r.source, "rule", "all skipped")
end)

T.test("a large table: many rows of one config that does not check cost one check, not one each", function()
  -- (an 11 MB table took seconds per choice: every near row's config was loaded and checked anew)
  local config = require("gen.core.config")
  local real, loads = config.load, 0
  config.load = function(...) loads = loads + 1; return real(...) end
  local known = {}
  for i = 1, 6 do   -- at the asked shape: said as unused (the first four), then skipped
    known[#known + 1] = row("table", "cols=50257 rows=8192", i, { "cluster=3" }, { line = 10 + i })
  end
  for i = 1, 3000 do   -- nearer than the good row: each tried before it
    known[#known + 1] = row("table", string.format("cols=%d rows=8192", 50257 - i), 1, { "cluster=3" })
  end
  known[#known + 1] = row("table", "cols=40000 rows=8192", 100, SETS_A, { line = 99 })
  local ok, r, err = pcall(choose, F16, "rows=8192 cols=50257", known)
  config.load = real
  T.ok(ok and r, tostring(r) .. " " .. tostring(err))
  T.eq(r.source, "table-nearest", "the good row, behind 3006 bad ones")
  T.contains(r.detail, "at cols=40000 rows=8192", "its shape")
  T.ok(loads < 10, "config.load ran " .. loads .. " times for 3007 rows of 2 configs")
  local unused = {}
  for line in (r.unused or ""):gmatch("tune/h200.tsv:(%d+): its table row for cols=50257 rows=8192 is not used: ") do
    unused[#unused + 1] = tonumber(line)
  end
  T.deq(unused, { 11, 12, 13, 14 }, "the first four rows at the shape, each said: " .. tostring(r.unused))
  T.contains(r.unused, "is not used: tune/h200.tsv: max_cols = 0: mode = \"onchip\" needs the longest row", "why")
end)

T.test("a table of many distinct configs: the checks remembered are bounded, the choice the same", function()
  local config = require("gen.core.config")
  local real, loads, keep = config.load, 0, auto.TRIED_CONFIGS
  config.load = function(...) loads = loads + 1; return real(...) end
  auto.TRIED_CONFIGS = 2
  local known = {}
  for i = 1, 10 do   -- ten distinct configs that do not check, nearer than the good row, each tried twice
    for _, c in ipairs({ 50257 - i, 50257 - 20 - i }) do
      known[#known + 1] = row("table", string.format("cols=%d rows=8192", c), 1, { "cluster=3", "threads=" .. (32 * i) })
    end
  end
  known[#known + 1] = row("table", "cols=40000 rows=8192", 100, SETS_A, { line = 99 })
  local ok, r, err = pcall(choose, F16, "rows=8192 cols=50257", known)
  config.load, auto.TRIED_CONFIGS = real, keep
  T.ok(ok and r, tostring(r) .. " " .. tostring(err))
  T.eq(r.source, "table-nearest", "the good row, behind 20 bad ones")
  T.contains(r.detail, "at cols=40000 rows=8192", "its shape")
  -- two configs remembered: their second rows cost nothing; the other eight configs are checked at each row
  T.ok(loads >= 18 and loads <= 22, "config.load ran " .. loads .. " times for 20 rows of 10 configs, 2 remembered")
end)

T.test("candidates for first-use tuning: distinct kernels, the choice first", function()
  local r = choose(F16, "rows=4096 cols=50257", nil, { candidates = 5 })
  T.eq(#r.choices, 6, "choice + 5")
  local seen = {}
  for _, c in ipairs(r.choices) do
    T.eq(seen[c.name], nil, "distinct " .. c.name)
    seen[c.name] = true
    local m = generated(F16, {}, c.sets)
    T.eq(m.name, c.name, "each candidate's sets give it")
    T.contains(c.text, 'family = "row_softmax"', "its text")
  end
  -- a table hit keeps the rule's candidates behind it
  r = choose(F16, "rows=8192 cols=50257", { row("table", "cols=50257 rows=8192", 9, SETS_A) }, { candidates = 2 })
  T.eq(r.source, "table", "the hit")
  T.eq(#r.choices, 3, "hit + 2 rule candidates")
  T.eq(#choose(F16, "rows=4096 cols=50257", nil, { candidates = 1000 }).choices <= 1 + auto.MAX_CANDIDATES, true, "capped")
end)

T.test("each choice carries its key fields, so a recorded row tells op = sum from op = max", function()
  local r = choose('return { family = "row_reduce", dtype = "f32", op = "max" }', "rows=64 cols=4096")
  T.eq(table.concat(r.choices[1].keys, " "), "op=max", "the user's op")
  r = choose('return { family = "row_reduce", dtype = "f32" }', "rows=64 cols=4096")
  T.eq(table.concat(r.choices[1].keys, " "), "op=sum", "the default op")
  r = choose('return { family = "rmsnorm", dtype = "bf16", residual = true, eps = "arg" }', "rows=64 cols=4096")
  T.eq(table.concat(r.choices[1].keys, " "), "residual=true eps=arg", "residual and eps")
  local custom = choose('return { family = "row_reduce", op = { combine = "fmaxf(a, b)", identity = "-3.0e38", ' ..
    'ref = function(a, b) return math.max(a, b) end } }', "rows=4 cols=40")
  T.eq(table.concat(custom.choices[1].keys, " "), "op.combine=fmaxf(a, b) op.identity=-3.0e38", "a custom op, no ref")
  -- its text says where the ref stood (a saved config would lose its host check unnoticed) and
  -- still generates the same kernel
  T.contains(custom.choices[1].text, "ref = nil --[[ a Lua function (ref): copy it from the config you gave ]]",
    "the missing ref said")
  T.eq(generated(custom.choices[1].text, {}, {}).name, custom.choices[1].name, "the text round-trips without it")
end)

T.test("the choice's text is a config that generates the same kernel", function()
  local r = choose('return { family = "rmsnorm", dtype = "bf16", residual = true }', "rows=2048 cols=5120")
  local m = generated(r.choices[1].text, {}, {})
  T.eq(m.name, r.choices[1].name, "text round-trips")
end)

T.test("same inputs, same answer", function()
  local a = choose(F16, "rows=1000 cols=30000", nil, { candidates = 4 })
  local b = choose(F16, "rows=1000 cols=30000", nil, { candidates = 4 })
  for i = 1, #a.choices do T.eq(a.choices[i].name, b.choices[i].name, "candidate " .. i) end
end)

T.test("shapes: both forms, and a message naming the size and what is allowed", function()
  local a = choose(F16, "rows=64,cols=4096")
  local b = choose(F16, "64x4096")
  T.eq(a.choices[1].name, b.choices[1].name, "name=value and positional agree")
  T.eq(a.shape, "cols=4096 rows=64", "the shape's canonical text")
  local cases = {
    { "rows=0 cols=5", "rows = 0: must be a whole number in 1..4611686018427387904" },
    { "rows=-3 cols=5", "rows = -3: must be a whole number in 1..4611686018427387904" },
    { "rows=3 colz=5", "colz is not a size of this family; sizes rows, cols" },
    { "rows=3", "cols is missing" },
    { "rows=3 rows=4 cols=1", "rows is given twice" },
    { "3x4x5", "3 sizes; the family has 2" },
    { "", "give sizes rows, cols" },
    { "rows=1.5 cols=2", 'rows = "1.5": must be a whole number in 1..' },
    { "rows=99999999999999999999999 cols=2", "rows = 99999999999999999999999: must be a whole number in 1.." },
    -- 2^62 is the C side's limit too (the shape parses; the kernel's limits then refuse it)
    { "rows=4611686018427387905 cols=2", "rows = 4611686018427387905: must be a whole number in 1..4611686018427387904" },
    { "rows=4611686018427387904 cols=2", "shape rows = 4611686018427387904: outside the kernel's limits" },
    { "rows=3000000000 cols=5", "shape rows = 3000000000: outside the kernel's limits [1, 2147483647]" },
  }
  for _, c in ipairs(cases) do
    local r, err = choose(F16, c[1])
    T.eq(r, nil, c[1])
    T.contains(err, "cfg.lua: shape", c[1] .. " names the file")
    T.contains(err, c[2], c[1])
  end
  local _, err = choose('return { family = "rmsnorm", dtype = "f32" }', "rows=4 cols=16000000")
  T.contains(err, "cols = 16000000: no layout holds a f32 row this long", "rmsnorm's reach")
  _, err = choose('return { family = "nope" }', "rows=1 cols=1")
  T.contains(err, "family = \"nope\": must be one of", "family")
end)

T.test("prepare: the family, dtype and sizes the host fetches rows for", function()
  local p = auto.prepare('return { family = "rmsnorm" }', "cfg.lua", { "dtype=bf16" })
  T.eq(p.family, "rmsnorm", "family")
  T.eq(p.dtype, "bf16", "dtype after --set")
  T.eq(table.concat(p.sizes, ","), "rows,cols", "sizes")
  T.eq(auto.prepare('return { family = "row_softmax" }', "cfg.lua", {}).dtype, "f32", "the default dtype")
  local none, err = auto.prepare('return { family = 1 }', "cfg.lua", {})
  T.eq(none, nil, "bad family")
  T.contains(err, "cfg.lua: family = 1", err)
end)

T.test("a key field set to \"auto\" is refused by name, as weft gen refuses it (it was the default, silently)", function()
  for _, c in ipairs({
    { 'return { family = "gemm", dtype = "auto", b_layout = "col" }', "m=128 n=4096 k=4096", "dtype", '"bf16"' },
    { 'return { family = "row_softmax", dtype = "auto" }', "rows=4096 cols=4096", "dtype", '"f32"' },
    { 'return { family = "row_reduce", dtype = "f32", op = "auto" }', "rows=4096 cols=4096", "op", nil },
  }) do
    local r, err = choose(c[1], c[2])
    T.eq(r, nil, c[1])
    T.contains(err or "", 'cfg.lua: ' .. c[3] .. ' = "auto": "auto" chooses no ' .. c[3], c[1])
    if c[4] then T.contains(err or "", "left out, it is " .. c[4], c[1]) end
  end
  -- a key the family does not have, set to "auto", is refused too (it went unheeded), named as
  -- weft gen names it
  local r0, err0 = choose('return { family = "row_reduce", dtype = "f32", ["we\\"ird key"] = "auto" }', "rows=64 cols=64")
  T.eq(r0, nil, "unknown key")
  T.contains(err0 or "", 'cfg.lua: we"ird key = "auto": unknown key for family "row_reduce"', err0)
  -- an open field set to "auto" is still chosen
  local r, err = choose('return { family = "gemm", dtype = "bf16", b_layout = "col", tile = "auto" }', "m=128 n=4096 k=4096")
  T.ok(r, err)
end)

T.test("every family declares its sizes, and its run spec uses them", function()
  for _, name in ipairs(weft.families()) do
    local fam = weft.family_module(name)
    T.eq(type(fam.sizes), "table", name .. " F.sizes")
  end
end)

T.done()
