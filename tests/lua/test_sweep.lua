-- tests/lua/test_sweep.lua: gen/core/sweep.lua, the search space of `weft tune`: counts, order,
-- determinism, dotted keys, candidates that round-trip through base_text + --set, messages for
-- bad sweeps, and the example sweeps.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local sweep = require("gen.core.sweep")
local weft = require("gen.core.weft")
local config = require("gen.core.config")

local function expand(text, file, overrides)
  return sweep.expand(text, file or "s.lua", overrides or {})
end

local function concat(a, b)
  local out = {}
  for _, x in ipairs(a) do out[#out + 1] = x end
  for _, x in ipairs(b) do out[#out + 1] = x end
  return out
end

local function labels(shape)
  local out = {}
  for i, c in ipairs(shape.candidates) do out[i] = c.label end
  return out
end

-- Every candidate generated from base_text + shape.sets + candidate.sets, as the C side does,
-- must be the kernel the expansion named.
local function check_round_trip(r, file)
  local n = 0
  for _, s in ipairs(r.shapes) do
    for _, c in ipairs(s.candidates) do
      local m, err = weft.generate(r.base_text, file, concat(s.sets, c.sets), weft_read)
      T.ok(m, "candidate " .. c.label .. " of " .. s.name .. " generates: " .. tostring(err))
      T.eq(m.name, c.kernel, "kernel of " .. c.label .. " for " .. s.name)
      n = n + 1
    end
  end
  return n
end

-- every candidate is accounted for exactly once
local function check_accounts(s)
  T.eq(s.pruned_where + s.pruned_check + s.duplicates + s.accepted, s.total, s.name .. " accounts")
  T.eq(#s.candidates, s.accepted, s.name .. " accepted")
end

local SMALL = [[
return {
  base = { family = "row_softmax", dtype = "f32", mode = "onchip" },
  space = { threads = { 256, 1024 }, cluster = { 1, 2 }, min_blocks = { 1, 2, 4 } },
  where = function(c) return not (c.cluster == 2 and c.min_blocks == 4) end,
  shapes = { { rows = 8, cols = 65536 } },
  per_shape = function(s) return { max_cols = s.cols } end,
}
]]

-- ---- counts ---------------------------------------------------------------------------------

T.test("counts of a small sweep, computed by hand", function()
  -- 2 x 2 x 3 = 12; where drops cluster = 2 with min_blocks = 4 (2).  Of the other 10, with
  -- max_cols = 65536 f32 (4 per vector):
  --   cluster 1, threads 256: 64 vectors per thread > 32 (any min_blocks): 3 rejected by max_cols
  --   cluster 1, threads 1024: 16 vectors, but min_blocks 1/2 leave 40/8 registers: 2 by
  --     max_cols; min_blocks = 4 by min_blocks alone (4 x 1024 threads > 2048, so no register
  --     budget is computed for it)
  --   cluster 2, threads 256: 32 vectors fit with min_blocks = 1 (128 registers), not 2 (104)
  --   cluster 2, threads 1024: 8 vectors fit with min_blocks = 1 (40 registers), not 2 (8)
  local r = assert(expand(SMALL))
  T.eq(r.family, "row_softmax", "family")
  T.eq(r.file, "s.lua", "file")
  T.deq(r.keys, { "cluster", "min_blocks", "threads" }, "keys, sorted")
  T.eq(#r.shapes, 1, "shapes")
  local s = r.shapes[1]
  T.eq(s.name, "cols=65536 rows=8", "shape name")
  T.deq(s.size, { rows = 8, cols = 65536 }, "shape size")
  T.deq(s.sets, { "max_cols=65536" }, "per_shape sets")
  T.eq(s.total, 12, "total")
  T.eq(s.pruned_where, 2, "pruned by where")
  T.eq(s.pruned_check, 8, "rejected by the generator")
  T.eq(s.duplicates, 0, "duplicates")
  T.eq(s.accepted, 2, "accepted")
  check_accounts(s)
  T.eq(#s.pruned, 2, "two rules")
  local max_cols, min_blocks = s.pruned[1], s.pruned[2]
  T.eq(max_cols.rule, 'max_cols: needs N 16-byte vectors (N registers) per thread with cluster = N, ' ..
    'threads = N; at most N fit (max_cols <= N): raise cluster or threads, or use mode = "stream"', "rule 1")
  T.eq(max_cols.count, 7, "rule 1 count")
  T.eq(max_cols.example, 's.lua: max_cols = 65536: needs 64 16-byte vectors (256 registers) per thread ' ..
    'with cluster = 1, threads = 256; at most 32 fit (max_cols <= 32768): raise cluster or threads, or use ' ..
    'mode = "stream"', "rule 1 example")
  T.eq(min_blocks.rule, "min_blocks: with threads = N at most N CTAs fit on an SM (N threads)", "rule 2")
  T.eq(min_blocks.count, 1, "rule 2 count")
  T.eq(min_blocks.example, "s.lua: min_blocks = 4: with threads = 1024 at most 2 CTAs fit on an SM (2048 threads)",
    "rule 2 example")
  T.deq(labels(s), { "cluster=2 min_blocks=1 threads=256", "cluster=2 min_blocks=1 threads=1024" }, "accepted")
  T.deq(s.candidates[1].sets, { "cluster=2", "min_blocks=1", "threads=256" }, "sets")
  T.eq(s.candidates[1].kernel, "weft_row_softmax_f32_onchip_mc65536_c2_np0_t256_mb1_p0_xpull_pf0_u4", "kernel")
  check_round_trip(r, "s.lua")
end)

T.test("the product's order: keys sorted, the first slowest, values as listed", function()
  local r = assert(expand([[
return {
  base = { family = "row_reduce" },
  space = { threads = { 512, 256 }, cluster = { 2, 1 }, exchange = { "push", "pull" } },
  shapes = { { rows = 4, cols = 100 }, { cols = 7, rows = 3 } },
}
]]))
  T.deq(r.keys, { "cluster", "exchange", "threads" }, "keys")
  T.eq(r.shapes[2].name, "cols=7 rows=3", "name: keys sorted")
  for _, s in ipairs(r.shapes) do
    T.deq(labels(s), {
      "cluster=2 exchange=push threads=512", "cluster=2 exchange=push threads=256",
      "cluster=2 exchange=pull threads=512", "cluster=2 exchange=pull threads=256",
      "cluster=1 exchange=push threads=512", "cluster=1 exchange=push threads=256",
      "cluster=1 exchange=pull threads=512", "cluster=1 exchange=pull threads=256" }, s.name .. " order")
    T.eq(s.total, 8, "total")
    T.deq(s.sets, {}, "no per_shape")
    check_accounts(s)
  end
  T.deq(r.shapes[1].candidates[1].sets, { "cluster=2", 'exchange="push"', "threads=512" }, "strings quoted")
end)

T.test("an empty space: the base alone, one candidate per shape", function()
  local r = assert(expand([[
return { base = { family = "row_reduce", cluster = 2 }, space = {}, shapes = { { rows = 1, cols = 1 } } }
]]))
  T.deq(r.keys, {}, "keys")
  T.eq(r.shapes[1].total, 1, "total")
  T.eq(r.shapes[1].accepted, 1, "accepted")
  T.eq(r.shapes[1].candidates[1].label, "base", "label")
  T.deq(r.shapes[1].candidates[1].sets, {}, "sets")
  check_round_trip(r, "s.lua")
end)

T.test("duplicates: candidates that normalize to the same kernel are counted once", function()
  -- 256 listed twice, and 2^8 (the float 256.0) is the same integer field; the first is kept
  local r = assert(expand([[
return { base = { family = "row_reduce" }, space = { threads = { 256, 512, 2^8, 256 } },
         shapes = { { rows = 1, cols = 1 } } }
]]))
  local s = r.shapes[1]
  T.eq(s.total, 4, "total")
  T.eq(s.duplicates, 2, "duplicates")
  T.deq(labels(s), { "threads=256", "threads=512" }, "kept")
  check_accounts(s)
end)

-- ---- determinism ----------------------------------------------------------------------------

T.test("expanding twice gives identical results", function()
  for _, f in ipairs({ "examples/sweeps/row_softmax.lua", "examples/sweeps/row_reduce.lua" }) do
    local text = assert(weft_read(f))
    local a, b = assert(expand(text, f)), assert(expand(text, f))
    T.ok(T.same(a, b), f .. " twice")
  end
  T.ok(T.same(assert(expand(SMALL)), assert(expand(SMALL))), "small twice")
end)

-- ---- base_text ------------------------------------------------------------------------------

T.test("base_text: sorted, typed, nested, and reads back to the base", function()
  local r = assert(expand([[
return {
  base = { family = "row_reduce", threads = 512, nonportable = false, dtype = "f16",
           op = { identity = "0.0f", combine = "a + b" } },
  space = { cluster = { 1 } }, shapes = { { rows = 1, cols = 1 } },
}
]]))
  T.eq(r.base_text, 'return { dtype = "f16", family = "row_reduce", nonportable = false, ' ..
    'op = { combine = "a + b", identity = "0.0f" }, threads = 512 }\n', "base_text")
  local back = assert(config.load(r.base_text, "b.lua"))
  T.deq(back, { family = "row_reduce", threads = 512, nonportable = false, dtype = "f16",
                op = { identity = "0.0f", combine = "a + b" } }, "reads back")
  T.eq(math.type(back.threads), "integer", "integers stay integers")
  -- awkward strings and keys survive too
  r = assert(expand([==[
return { base = { family = "row_reduce", op = { combine = "a\n\"b\"\\", identity = "1" }, ["odd key"] = 1.0 },
         space = { cluster = { 1 } }, shapes = { { rows = 1, cols = 1 } }, where = function() return false end }
]==]))
  back = assert(config.load(r.base_text, "b.lua"))
  T.eq(back.op.combine, "a\n\"b\"\\", "escaped string")
  T.eq(back.op.identity, "1", "a string that looks like a number stays a string")
  T.eq(math.type(back["odd key"]), "float", "a float stays a float")
end)

-- ---- dotted keys, quoting, overrides --------------------------------------------------------

T.test("dotted keys set nested fields; number-like strings are quoted in sets", function()
  local r = assert(expand([[
return {
  base = { family = "row_reduce", op = { combine = "a + b", identity = "0.0f" } },
  space = { ["op.combine"] = { "a + b", "fmaxf(a, b)" }, ["op.identity"] = { "0.0", "0.0f" } },
  shapes = { { rows = 16, cols = 1000 } },
}
]]))
  T.deq(r.keys, { "op.combine", "op.identity" }, "keys")
  local s = r.shapes[1]
  T.eq(s.accepted, 4, "accepted")
  T.deq(s.candidates[1].sets, { 'op.combine="a + b"', 'op.identity="0.0"' }, "sets")
  T.eq(s.candidates[1].label, "op.combine=a + b op.identity=0.0", "label")
  local names = {}
  for _, c in ipairs(s.candidates) do
    T.ok(not names[c.kernel], "distinct kernels: " .. c.kernel)
    names[c.kernel] = true
  end
  T.eq(check_round_trip(r, "s.lua"), 4, "round trips")
  -- set_text -> parse_value round trips for every kind of scalar
  r = assert(expand([[
return { base = { family = "row_reduce" }, space = { threads = { 256 } },
         per_shape = function(s) return { dtype = "bf16", op = { combine = "true", identity = "-1.5" } } end,
         shapes = { { rows = 1, cols = 1 } } }
]]))
  s = r.shapes[1]
  T.deq(s.sets, { 'dtype="bf16"', 'op.combine="true"', 'op.identity="-1.5"' }, "per_shape sets, nested")
  for _, set in ipairs(s.sets) do
    local v = set:match("=(.*)$")
    T.eq(type(config.parse_value(v)), "string", set .. " parses back as a string")
  end
end)

T.test("--set overrides apply to the sweep table", function()
  local r = assert(expand(SMALL, "s.lua", { "base.dtype=bf16" }))
  T.contains(r.base_text, 'dtype = "bf16"', "base_text")
  T.ok(r.shapes[1].accepted > 0, "bf16 candidates")
  for _, c in ipairs(r.shapes[1].candidates) do T.contains(c.kernel, "_bf16_", c.label) end
  check_round_trip(r, "s.lua")
  local e = T.fails("malformed", expand, SMALL, "s.lua", { "base" })
  T.contains(e, 's.lua: --set "base": expected key=value', "message")
  e = T.fails("space key to a scalar", expand, SMALL, "s.lua", { "space.threads=256" })
  T.contains(e, "s.lua: space.threads = 256: must be a non-empty list of values", "message")
end)

T.test("where sees a copy, and cannot change the candidate", function()
  local r = assert(expand([[
return { base = { family = "row_reduce" }, space = { cluster = { 1, 2 } },
         where = function(c) c.cluster = 8; c.threads = 64; return true end,
         shapes = { { rows = 1, cols = 1 } } }
]]))
  T.deq(labels(r.shapes[1]), { "cluster=1", "cluster=2" }, "labels")
  T.eq(r.shapes[1].candidates[1].kernel, "weft_row_reduce_f32_sum_c1_np0_t256_mb1_p0_xpull_u4", "unchanged")
end)

-- ---- rules ----------------------------------------------------------------------------------

T.test("rules: no file, no value, numbers as N, words with digits kept", function()
  T.eq(sweep.rule('f.lua: threads = 100: must be one of 64, 128', "f.lua"), "threads: must be one of N, N", "int")
  T.eq(sweep.rule('f.lua: op = "a: b": must be one of "sum"', "f.lua"), 'op: must be one of "sum"', "string value")
  T.eq(sweep.rule('f.lua: op = { combine = "x: {" }: custom op 1', "f.lua"), "op: custom op N", "table value")
  T.eq(sweep.rule("f.lua: max_cols is required (the longest row)", "f.lua"), "max_cols is required (the longest row)",
    "raw")
  T.eq(sweep.rule("f.lua: x = 1: at most -2 fit, in 1..16, 16-byte, sm_90, 1.5", "f.lua"),
    "x: at most N fit, in N..N, 16-byte, sm_90, N", "numbers")
end)

-- ---- bad sweeps -----------------------------------------------------------------------------

local function bad(text, want, what)
  local e = T.fails(what or want, expand, text, "bad.lua")
  T.contains(e, want, what)
  for _, line in ipairs(T.lines(e)) do T.eq(line:sub(1, 8), "bad.lua:", "every line names the file: " .. line) end
  return e
end

local OK_SPACE = "space = { threads = { 256 } }"
local OK_SHAPES = "shapes = { { rows = 1, cols = 1 } }"
local OK_BASE = 'base = { family = "row_reduce" }'
local function sw(...) return "return { " .. table.concat({ ... }, ", ") .. " }" end

T.test("bad sweeps: base", function()
  bad(sw(OK_SPACE, OK_SHAPES), "bad.lua: base = nil: required")
  bad(sw('base = "row_reduce"', OK_SPACE, OK_SHAPES), 'bad.lua: base = "row_reduce": must be a config table')
  bad(sw("base = { threads = 256 }", OK_SPACE, OK_SHAPES),
    'bad.lua: base.family = nil: must be one of "ag_gemm", "all_gather", "allreduce", "allreduce_norm", "cluster_reduce"')
  bad(sw('base = { family = "row_sum" }', OK_SPACE, OK_SHAPES), 'bad.lua: base.family = "row_sum": must be one of')
  bad(sw('base = { family = "row_reduce", op = { combine = "a + b", identity = "0.0f", ' ..
         'ref = function(a, b) return a + b end } }', OK_SPACE, OK_SHAPES),
    "bad.lua: base.op.ref = function: a sweep's base reaches each candidate as config text, so it cannot hold functions")
end)

T.test("bad sweeps: space", function()
  bad(sw(OK_BASE, OK_SHAPES), "bad.lua: space = nil: required")
  bad(sw(OK_BASE, "space = 3", OK_SHAPES), "bad.lua: space = 3: must be a table")
  bad(sw(OK_BASE, "space = { threads = 256 }", OK_SHAPES),
    "bad.lua: space.threads = 256: must be a non-empty list of values: numbers, strings or booleans")
  bad(sw(OK_BASE, "space = { threads = {} }", OK_SHAPES), "bad.lua: space.threads = {  }: must be a non-empty list")
  bad(sw(OK_BASE, "space = { threads = { { 256 } } }", OK_SHAPES), "bad.lua: space.threads = { 1 = { 1 = 256 } }: must be")
  bad(sw(OK_BASE, "space = { threads = { 256, x = 512 } }", OK_SHAPES), "bad.lua: space.threads = ")
  bad(sw(OK_BASE, "space = { threads = { 256, 0/0 } }", OK_SHAPES), "bad.lua: space.threads = ")
  bad(sw(OK_BASE, "space = { threadz = { 256 } }", OK_SHAPES),
    'bad.lua: space.threadz = { 1 = 256 }: unknown key for family "row_reduce"; known keys: dtype, op,')
  bad(sw(OK_BASE, 'space = { family = { "row_softmax" } }', OK_SHAPES), "bad.lua: space.family = ")
  bad(sw(OK_BASE, 'space = { ["op..x"] = { 1 } }', OK_SHAPES), 'bad.lua: space["op..x"] = { 1 = 1 }: the key must be')
  bad(sw(OK_BASE, 'space = { op = { "sum" }, ["op.combine"] = { "a + b" } }', OK_SHAPES),
    "bad.lua: space.op.combine = { 1 = \"a + b\" }: conflicts with space.op")
  local ten = "{ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }"
  bad(sw(OK_BASE, "space = { threads = " .. ten .. ", unroll = " .. ten .. ", cluster = " .. ten ..
         ", min_blocks = " .. ten .. ", dtype = " .. ten .. ", exchange = " .. ten .. " }", OK_SHAPES),
    "bad.lua: space = 1000000 combinations: at most 100000 per shape")
  -- and over all shapes: 9600 candidates x 30 shapes
  local shapes30 = {}
  for r = 1, 30 do shapes30[r] = "{ rows = " .. r .. ", cols = 1 }" end
  local space = "space = { unroll = { 1, 2, 4, 8 }, threads = { 64, 128, 256, 512, 1024 }, " ..
    "cluster = { 1, 2, 4, 8, 16 }, persistent = { true, false }, exchange = { 'pull', 'push' }, " ..
    "dtype = { 'f32', 'f16', 'bf16' }, op = { 'sum', 'max', 'min', 'prod' }, nonportable = { true, false } }"
  bad(sw('base = { family = "row_reduce" }', space, "shapes = { " .. table.concat(shapes30, ", ") .. " }"),
    "bad.lua: space = 9600 combinations x 30 shapes = 288000 candidates: at most 200000 in all")
  -- through a string: op.combine when the base's op is a name
  bad(sw('base = { family = "row_reduce", op = "sum" }', 'space = { ["op.combine"] = { "a + b" } }', OK_SHAPES),
    'bad.lua: --set op.combine="a + b": op is a string, not a table (space, candidate op.combine=a + b)')
end)

T.test("bad sweeps: shapes", function()
  bad(sw(OK_BASE, OK_SPACE), "bad.lua: shapes = nil: required: a non-empty list of problem sizes")
  bad(sw(OK_BASE, OK_SPACE, "shapes = {}"), "bad.lua: shapes = {  }: must be a non-empty list of problem sizes")
  bad(sw(OK_BASE, OK_SPACE, "shapes = 5"), "bad.lua: shapes = 5: must be")
  bad(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 0, cols = 1 } }"), "bad.lua: shapes[1].rows = 0: must be a positive integer")
  bad(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 1, cols = 1 }, { rows = 2, cols = 1.5 } }"),
    "bad.lua: shapes[2].cols = 1.5: must be a positive integer")
  bad(sw(OK_BASE, OK_SPACE, 'shapes = { { rows = "8", cols = 1 } }'), 'bad.lua: shapes[1].rows = "8": must be a positive')
  bad(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 1, cols = 2^31 } }"), "bad.lua: shapes[1].cols = 2147483648.0: must be")
  bad(sw(OK_BASE, OK_SPACE, "shapes = { {} }"), "bad.lua: shapes[1] = {  }: must be a non-empty table of sizes")
  bad(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 1, cols = 2 }, { cols = 2, rows = 1 } }"),
    "bad.lua: shapes[2] = { cols = 2, rows = 1 }: the same as shapes[1]")
  bad(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 1, colz = 2 } }"),
    "bad.lua: shapes[1] = { colz = 2, rows = 1 }: row_reduce kernels take the sizes cols, rows")
  -- integral floats are integers
  local r = assert(expand(sw(OK_BASE, OK_SPACE, "shapes = { { rows = 2^3, cols = 2^20 } }")))
  T.eq(r.shapes[1].name, "cols=1048576 rows=8", "name")
  T.eq(math.type(r.shapes[1].size.cols), "integer", "size")
end)

T.test("bad sweeps: top-level keys, where, per_shape", function()
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "wher = function() return true end"),
    "bad.lua: wher = function: unknown key for a sweep; known keys: base, space, where, shapes, per_shape")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = true"),
    "bad.lua: where = true: must be a function(config) returning true or false")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = { max_cols = 1 }"),
    "bad.lua: per_shape = { max_cols = 1 }: must be a function(shape) returning a table")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = function(s) end"),
    "bad.lua: per_shape(cols=1 rows=1) = nil: must return a table of overrides")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = function(s) return s.cols end"),
    "bad.lua: per_shape(cols=1 rows=1) = 1: must return a table")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = function(s) return { op = { ref = function() end } } end"),
    "bad.lua: per_shape(cols=1 rows=1).op.ref = function: must be a number, string, boolean or table of them")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, 'per_shape = function(s) return { family = "row_softmax" } end'),
    "bad.lua: per_shape(cols=1 rows=1).family = \"row_softmax\": the family is fixed by base.family")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = function(c) return 1 end"),
    "bad.lua: where = 1: must return true or false (candidate threads=256, shape cols=1 rows=1)")
  bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = function(c) end"), "bad.lua: where = nil: must return true or false")
  -- several problems at once, each on its own line
  local e = bad(sw("space = 1", "shapes = {}", "where = 2", "extra = 3"), "bad.lua: base = nil: required")
  T.contains(e, "bad.lua: extra = 3: unknown key for a sweep", "several")
  T.contains(e, "bad.lua: space = 1: must be a table", "several")
  T.contains(e, "bad.lua: shapes = {  }: must be", "several")
  T.contains(e, "bad.lua: where = 2: must be a function", "several")
  T.eq(#T.lines(e), 5, "five lines")
end)

T.test("a where or per_shape that fails names the file", function()
  local e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = function(c) return c.cluster > 1 end"),
    "bad.lua: where(threads=256) for cols=1 rows=1 failed: bad.lua:1: attempt to compare")
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, 'where = function(c) error("no such luck") end'), "no such luck")
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = function(c) error({}) end"),
    "bad.lua: where(threads=256) for cols=1 rows=1 raised an error whose value is a table")
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = function(s) return s.x.y end"),
    "bad.lua: per_shape(cols=1 rows=1) failed: bad.lua:1: attempt to index")
  -- loops forever: stopped, also through the sandbox's pcall
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "where = function(c) while true do end end"),
    "ran for more than 10000000 instructions: does it loop forever?")
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES,
    "where = function(c) while true do pcall(function() while true do end end) end end"),
    "ran for more than 10000000 instructions")
  e = bad(sw(OK_BASE, OK_SPACE, OK_SHAPES, "per_shape = function(s) local n = 0; while true do n = n + 1 end end"),
    "bad.lua:1: per_shape(cols=1 rows=1) ran for more than 10000000 instructions")
  -- the sweep's own load: same sandbox as a config
  bad("return { base = io.open('x') }", "bad.lua:1: attempt to index a nil value")
  bad("return 5", "bad.lua: the config must return a table")
end)

-- ---- the examples ---------------------------------------------------------------------------

T.test("the example sweeps expand, and their candidates round-trip", function()
  local counts = {}
  for _, ex in ipairs({ { "examples/sweeps/row_softmax.lua", "row_softmax", 3 },
                        { "examples/sweeps/row_reduce.lua", "row_reduce", 2 } }) do
    local f = ex[1]
    local r, err = expand(assert(weft_read(f)), f)
    T.ok(r, f .. ": " .. tostring(err))
    T.eq(r.family, ex[2], f .. " family")
    T.eq(#r.shapes, ex[3], f .. " shapes")
    local total = 0
    for _, s in ipairs(r.shapes) do
      T.ok(s.accepted > 0, f .. " " .. s.name .. " has candidates")
      T.ok(s.total < 150, f .. " " .. s.name .. " total " .. s.total .. " is modest")
      check_accounts(s)
      total = total + s.accepted
    end
    counts[ex[2]] = total
    T.eq(check_round_trip(r, f), total, f .. " round trips")
  end
  T.ok(counts.row_softmax > 32, "row_softmax: " .. counts.row_softmax .. " candidates")
end)

T.test("row_softmax example: per_shape streams the longest rows", function()
  local f = "examples/sweeps/row_softmax.lua"
  local r = assert(expand(assert(weft_read(f)), f))
  T.deq(r.shapes[1].sets, { "max_cols=32768" }, "short rows")
  T.deq(r.shapes[2].sets, { "max_cols=262144" }, "long rows")
  T.deq(r.shapes[3].sets, { "max_cols=0", 'mode="stream"' }, "very long rows")
  for _, c in ipairs(r.shapes[3].candidates) do T.contains(c.kernel, "_stream_", c.label) end
  local has16 = false
  for _, c in ipairs(r.shapes[2].candidates) do has16 = has16 or c.kernel:find("_c16_np1_", 1, true) ~= nil end
  T.ok(has16, "cluster 16 candidates for 262144 columns")
end)

T.done("test_sweep")

T.test("a shape outside a candidate's size limits is pruned by rule, not left to fail at launch", function()
  local r = assert(expand([[
return {
  base = { family = "allreduce", dtype = "f32" },
  space = { algo = { "one_shot", "one_shot_ll" } },
  shapes = { { n = 3000000 }, { n = 4096 } },
}
]]))
  local big, small = r.shapes[1], r.shapes[2]
  T.eq(big.pruned_check, 1, "one_shot_ll past its 2M elements: pruned")
  T.deq(labels(big), { "algo=one_shot" }, "one_shot stays")
  T.eq(big.pruned[1].rule, "n: outside the kernel's limits [N, N]", "rule")
  T.eq(big.pruned[1].example, "s.lua: n = 3000000: outside the kernel's limits [1, 2097152]", "example")
  check_accounts(big)
  T.eq(small.accepted, 2, "both fit 4096 elements")
  -- a GEMM shape whose k is not a multiple of 8 (TMA's 16-byte rows): every candidate pruned
  local g = assert(expand([[
return {
  base = { family = "gemm" },
  space = { stages = { 3, 4 } },
  shapes = { { m = 1024, n = 1024, k = 1001 } },
}
]])).shapes[1]
  T.eq(g.accepted, 0, "no candidate takes k = 1001")
  T.ok(g.pruned[1].example:find("^s%.lua: k = 1001: outside the kernel's limits %[8, %d+%], a multiple of 8$"),
    "example names the multiple: " .. g.pruned[1].example)
end)
