-- tests/lua/test_auto_rules.lua: the shape rules (F.auto) of gemm, ag_gemm, allreduce and
-- cluster_reduce: over the GEMM issue's LLM shape set and odd shapes every candidate, merged
-- under the fixed fields, validates and takes the shape; fixed fields stay fixed; the model's
-- choices agree with what bench/RESULTS.md measured; a shape outside the limits is refused with
-- a message naming the size and the limit (through gen/core/auto.lua where it is present).
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local weft = require("gen.core.weft")
local gemm = require("gen.core.gemm")
local has_auto, auto = pcall(require, "gen.core.auto")

local H200 = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 1 }
local H100 = { sms = 132, mem_gbs = 3352 }   -- (its driver's DRAM rate: memory clock x bus width)

local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy(x) end
  return t
end

-- the candidate under the fixed fields (fixed wins; "why" is no field), validated; -> ncfg, d
local function merged(fixed, c)
  local raw = {}
  for k, v in pairs(fixed) do if v ~= "auto" then raw[k] = copy(v) end end   -- "auto": open (gen/core/auto.lua)
  for k, v in pairs(c) do if k ~= "why" and raw[k] == nil then raw[k] = copy(v) end end
  local fam, ncfg, d = weft.check(raw, "cfg.lua")
  T.ok(fam, ncfg)
  return ncfg, d, fam
end

local function takes(d, shape, what)
  for name, v in pairs(shape) do
    T.eq(weft.outside_limits(d.limits, name, v), nil, what .. ": takes " .. name .. " = " .. v)
  end
end

-- the gemm rule's choice for M x N x K (B's layout, the rest open), validated; -> ncfg
local function gemm_choice(m, n, k, b_layout)
  local fixed = { family = "gemm", b_layout = b_layout }
  return (merged(fixed, weft.family_module("gemm").auto({ m = m, n = n, k = k }, fixed, H200)[1]))
end

-- the gemm rule's first candidate for M x N x K (bf16, B column-major) on a device (dev.sms,
-- dev.mem_gbs), as the family gives it (not validated)
local function rule_first(m, n, k, dev)
  return weft.family_module("gemm").auto({ m = m, n = n, k = k }, { b_layout = "col", dtype = "bf16" }, dev)[1]
end

-- every candidate validates and takes the shape; -> the choice's ncfg, the list
-- unique: no two candidates give one kernel (the GEMM's list is deduplicated; the short fixed
-- lists of allreduce and cluster_reduce may repeat one under fixed fields: auto.lua skips repeats)
local function all_take(fam, shape, fixed, dev, what, unique)
  local list = fam.auto(copy(shape), copy(fixed), copy(dev or H200))
  T.ok(#list >= 1, what .. ": candidates")
  local first, names = nil, {}
  for i, c in ipairs(list) do
    local ncfg, d, f = merged(fixed, c)
    takes(d, shape, what .. " candidate " .. i)
    first = first or ncfg
    local name = weft.kernel_name(f, ncfg)
    T.ok(not unique or not names[name], what .. ": candidate " .. i .. " repeats " .. name)
    names[name] = true
  end
  return first, list
end

-- ---- the GEMM issue's shape set -------------------------------------------------------------
-- (N, K) of the linear layers: QKV, O, gate/up (fused where the model fuses it), down
local LAYERS = {
  llama3_8b = { { 6144, 4096 }, { 4096, 4096 }, { 14336, 4096 }, { 28672, 4096 }, { 4096, 14336 } },
  llama3_70b = { { 10240, 8192 }, { 8192, 8192 }, { 57344, 8192 }, { 8192, 28672 } },
  qwen25_72b = { { 10240, 8192 }, { 8192, 8192 }, { 59136, 8192 }, { 8192, 29568 } },
  mixtral_8x7b = { { 6144, 4096 }, { 4096, 4096 }, { 14336, 4096 }, { 4096, 14336 } },
}
local MS = { 1, 16, 64, 128, 256, 1024, 4096, 16384 }
local SQUARES = { 1024, 3072, 4096, 8192 }
local ODD = { { 1, 8, 8 }, { 3, 1000, 1000 }, { 17, 4104, 4096 }, { 255, 6152, 136 }, { 4097, 8, 4096 },
              { 1000, 1000, 1000 }, { 333, 20000, 24 }, { 65537, 128, 64 } }

T.test("gemm: every candidate validates and takes every shape of the set (bf16 and f16, B col; squares B row)", function()
  local F = weft.family_module("gemm")
  local n = 0
  for model, layers in pairs(LAYERS) do
    for _, nk in ipairs(layers) do
      for _, m in ipairs(MS) do
        for _, dt in ipairs({ "bf16", "f16" }) do
          local fixed = { family = "gemm", dtype = dt, b_layout = "col" }
          local shape = { m = m, n = nk[1], k = nk[2] }
          local what = string.format("%s %dx%dx%d %s", model, m, nk[1], nk[2], dt)
          local ncfg, list = all_take(F, shape, fixed, H200, what, true)
          T.ok(#list >= 4 and #list <= 8, what .. ": 4-8 candidates, got " .. #list)
          T.eq(ncfg.dtype, dt, what .. ": dtype fixed")
          T.eq(ncfg.b_layout, "col", what .. ": b_layout fixed")
          n = n + 1
        end
      end
    end
  end
  for _, s in ipairs(SQUARES) do
    all_take(F, { m = s, n = s, k = s }, { family = "gemm", b_layout = "row" }, H200, "square " .. s, true)
  end
  for _, o in ipairs(ODD) do
    all_take(F, { m = o[1], n = o[2], k = o[3] }, { family = "gemm" }, H200, string.format("odd %dx%dx%d", o[1], o[2], o[3]))
  end
  T.ok(n >= 40 * 2, "at least 40 shapes per dtype: " .. n)
end)

-- The model against bench/RESULTS.md's GEMM tables: each choice is the config measured best there.
-- Shapes no table was tuned for: a fixed sample (an LCG, so every run checks the same ones) of
-- M in 1..70000, N in 1..130000 (any with B column-major, multiples of 8 row-major) and K in
-- multiples of 8 up to 65536, log-uniform, bf16 and f16.  (The same sample's choices compiled
-- with NVRTC without a spill: bench/RESULTS.md, twenty-fourth session.)
T.test("gemm: every candidate validates and takes 200 shapes nobody tuned; any_n exactly where N is off 8's multiples", function()
  local F = weft.family_module("gemm")
  local x = 24
  local function uniform()   -- [0, 1)
    x = (x * 1103515245 + 12345) % 2147483648
    return x / 2147483648
  end
  local function logu(hi) return math.max(1, math.floor(math.exp(uniform() * math.log(hi)))) end
  for i = 1, 200 do
    local dt = uniform() < 0.5 and "bf16" or "f16"
    local bl = uniform() < 0.7 and "col" or "row"
    local m, n, k = logu(70000), logu(130000), 8 * logu(8192)
    if bl == "row" then n = math.max(8, n // 8 * 8) end
    local what = string.format("sample %d: %dx%dx%d %s B %s", i, m, n, k, dt, bl)
    local _, list = all_take(F, { m = m, n = n, k = k }, { family = "gemm", dtype = dt, b_layout = bl }, H200, what, true)
    for j, c in ipairs(list) do
      T.eq(c.any_n == true, n % 8 ~= 0, what .. ": candidate " .. j .. "'s any_n")
    end
  end
end)

T.test("gemm: the choices agree with the measured best configs", function()
  local choice = gemm_choice
  for _, s in ipairs({ { 4096, 4096, 4096 }, { 8192, 8192, 8192 }, { 8192, 1024, 1024 } }) do
    local c = choice(s[1], s[2], s[3])
    T.eq(c.tile.tag, "128x256x64", "128 x 256 at " .. table.concat(s, "x"))
    T.eq(c.epilogue, "tma", "the TMA epilogue at " .. table.concat(s, "x"))
  end
  local c = choice(1024, 1024, 1024)
  T.eq(c.tile.tag, "64x128x64", "64 x 128 at 1024^3")
  T.eq(c.consumers, 1, "one consumer at 1024^3")
  T.eq(c.pdl, true, "pdl at 1024^3 (~0.5 us of a 7 us launch)")
  T.eq(choice(4096, 4096, 4096).pdl, false, "no pdl at 4096^3")
  -- decode: 64-row tiles up to M = 64, and enough work units (times split_k's CTAs) to keep at least 88 (two thirds) of
  -- the 132 SMs streaming B; where N has few tiles, split_k makes them
  for _, s in ipairs({ { 1, 14336, 4096 }, { 16, 14336, 4096 }, { 64, 4096, 14336 }, { 16, 1024, 8192 },
                       { 1, 4096, 4096 }, { 128, 8192, 28672 } }) do
    local d = choice(s[1], s[2], s[3])
    local where = table.concat(s, "x")
    if s[1] <= 64 then T.eq(d.tile.m, 64, "64-row tiles at " .. where) end
    local cs = d.cluster.m * d.cluster.n * d.split_k
    local units = gemm.cdiv(s[1], d.tile.m * d.cluster.m) * gemm.cdiv(s[2], d.tile.n * d.cluster.n)
    local ctas = math.min(units, gemm.coresident(cs, 132)) * cs
    T.ok(ctas >= 88, string.format("%s: %d CTAs stream B (tile %s, split_k %d)", where, ctas, d.tile.tag, d.split_k))
  end
  T.ok(choice(64, 4096, 14336).split_k > 1, "split-K where N = 4096 has 32 tiles of 64 x 128")
  -- no split-K where an unsplit schedule fills the GPU in one round (B column-major, as nn.Linear
  -- stores it): 64 x 128 with 8 stages ran 50-55 us at 256 x 4096 x 14336, 128 x 128 split 2 57-60
  for _, s in ipairs({ { 256, 4096, 14336 }, { 128, 8192, 28672 }, { 128, 8192, 29568 } }) do
    local d = choice(s[1], s[2], s[3], "col")
    T.eq(d.tile.tag .. " split " .. d.split_k, "64x128x64 split 1", "unsplit 64 x 128 at " .. table.concat(s, "x"))
  end
  T.ok(choice(64, 4096, 14336, "col").split_k > 1, "split-K at 64 x 4096 x 14336 (B col): 64 tiles of 64 x 64 leave half the SMs idle")
  T.ok(choice(1, 4096, 14336, "col").split_k > 1, "split-K at decode (the rule is for M >= 64)")
  -- ... but a split tile as tall as M with a deep ring keeps its rank: 128 x 64 split 2 ran 36.8-37.5
  -- us at 128 x 4096 x 14336, 64 x 64 unsplit 42.4-43.1 (bench/RESULTS.md, eleventh session)
  local d = choice(128, 4096, 14336, "col")
  T.ok(d.split_k > 1 and d.tile.m >= 128 and d.stages >= gemm.MODEL.SPLIT_FULL_DEEP,
    string.format("split tile as tall as M at 128 x 4096 x 14336 (tile %s, split_k %d, %d stages)", d.tile.tag, d.split_k, d.stages))
  -- "fills" counts a unit by the rows it holds: M = 160 in 64-row tiles is not three full row
  -- blocks, so 160 x 4096 x 14336 splits a swapped whole-M tile.  (At 72 x 4096 x 4096 too, where
  -- it ran 14.9 us against 64 x 64's 23.5, the rule now takes two thin row blocks, 40 x 64: 14.4
  -- on an H100 against the swapped split's 13.3-14.2, a known 1.08 given for THIN_KB's gains.)
  T.ok(choice(72, 4096, 4096, "col").split_k == 1, "72 x 4096 x 4096: thin 40 x 64, unsplit (THIN_KB)")
  for _, s in ipairs({ { 160, 4096, 14336 } }) do
    local e = choice(s[1], s[2], s[3], "col")
    T.ok(e.swap_ab == true and e.split_k > 1 and e.tile.m >= s[1],
      string.format("a swapped whole-M split tile at %s (tile %s, split_k %d)", table.concat(s, "x"), e.tile.tag, e.split_k))
  end
  -- ... but M = 64-120 at a mid N x K goes in two thin row blocks under 64 rows: 96 x 4096 x 4096
  -- ran 48 x 64 at 15.8 us, 96 x 64 swapped 16.6 unsplit and 17.0 split 2; 96 x 2560 x 2560 48 x 48
  -- at 8.9, the swapped split 10.8 (an H100, bench/RESULTS.md, twenty-fifth session).  From M =
  -- 121 a half is 64 rows: no thin tile (three thin blocks at 130 x 5120 x 13824 would read B three
  -- times, as 64 x 160's three row blocks did there at 63.7-65.0 us, against the swapped 46.3-49.3).
  for _, s in ipairs({ { 96, 4096, 4096, "48x64x64" }, { 96, 2560, 2560, "48x48x64" }, { 80, 2560, 2560, "40x48x64" } }) do
    local e = choice(s[1], s[2], s[3], "col")
    T.eq(e.tile.tag .. " split " .. e.split_k .. " swap " .. tostring(e.swap_ab), s[4] .. " split 1 swap false",
      string.format("two thin row blocks at %dx%dx%d", s[1], s[2], s[3]))
  end
  for _, m in ipairs({ 121, 128, 160, 200 }) do
    for _, nk in ipairs({ { 2560, 2560 }, { 5120, 13824 } }) do
      local e = choice(m, nk[1], nk[2], "col")
      T.ok(e.swap_ab or e.tile.m >= 64, string.format("no thin tile at %dx%dx%d (tile %s)", m, nk[1], nk[2], e.tile.tag))
    end
  end
  -- ... and M cut in two row blocks of a swapped tile over 64 of B's rows, as cuBLASLt cuts it: 200 x
  -- 2048 x 7168 ran 104 x 64 split 2 at 18.9 us, 224 x 2048 x 7168 112 x 64 split 2 at 18.2, where
  -- the best before were 22.3 and 21.4; 130 x 4096 x 4096 72 x 64 unsplit at 14.6 (136 x 64 split 2:
  -- 15.4; bench/RESULTS.md, twelfth session)
  for _, s in ipairs({ { 200, 2048, 7168, 104 }, { 224, 2048, 7168, 112 }, { 130, 4096, 4096, 72 } }) do
    local e = choice(s[1], s[2], s[3], "col")
    T.ok(e.swap_ab == true and e.tile.m == s[4] and e.tile.n == 64,
      string.format("two swapped row blocks of %d at %dx%dx%d (tile %s, split_k %d)", s[4], s[1], s[2], s[3], e.tile.tag,
        e.split_k))
  end
  -- split rings shallower than SPLIT_FULL_DEEP rank after the unsplit ones at M >= 64 (4- and 5-stage
  -- splits ran 1.2-1.5x the best at M = 130-224)
  for _, s in ipairs({ { 160, 5120, 13824 }, { 224, 4096, 14336 }, { 256, 4096, 14336 } }) do
    local e = choice(s[1], s[2], s[3], "col")
    T.ok(e.split_k == 1 or e.stages >= gemm.MODEL.SPLIT_FULL_DEEP,
      string.format("no shallow split at %s (tile %s, split_k %d, %d stages)", table.concat(s, "x"), e.tile.tag, e.split_k, e.stages))
  end
end)

-- The thirteenth session's terms (gen/core/gemm.lua M.MODEL WASTE, PDL_FILL, MULTICAST; the numbers
-- in bench/RESULTS.md), and `ranked`, whose order the regret tool scores: its first entry that
-- validates is the rule's choice.
T.test("gemm: ragged row blocks, pdl on a partial round, B multicast; ranked leads to the choice", function()
  local F = weft.family_module("gemm")
  local choice = gemm_choice
  -- 130 x 5120 x 13824: 64 x 160 in three row blocks (2 rows in the last) ran 63.7-65.0 us, a
  -- swapped tile as tall as M 46.3-49.3
  local c = choice(130, 5120, 13824, "col")
  T.ok(c.swap_ab == true and c.tile.m >= 130, string.format("a swapped whole-M tile at 130 x 5120 x 13824 (tile %s)", c.tile.tag))
  -- one round on 80 of 132 SMs above 20 us: pdl off (53.8 us with it, 43.8 without at 72 x 5120 x
  -- 13824); a short one keeps it (96 x 2560 x 2560, 11 us: 2 % faster with it)
  c = choice(72, 5120, 13824, "col")
  T.eq(c.pdl, false, string.format("no pdl at 72 x 5120 x 13824 (tile %s, split_k %d)", c.tile.tag, c.split_k))
  c = choice(96, 2560, 2560, "col")
  T.eq(c.pdl, true, string.format("pdl at 96 x 2560 x 2560 (tile %s, split_k %d)", c.tile.tag, c.split_k))
  -- B multicast to two wide 128-row tiles over a few rounds (3072^3: 77.6-80.5 us against
  -- 79.2-86.3 without), not over many (16384 x 4096 x 4096: 1.02-1.07x slower with it) nor with
  -- narrow tiles (256 x 6144 x 4096, 128 x 96: 1.01-1.06x)
  for _, s in ipairs({ { 3072, 3072, 3072, "row", 2 }, { 1024, 4096, 4096, "col", 2 }, { 16384, 4096, 4096, "col", 1 },
                       { 256, 6144, 4096, "col", 1 } }) do
    c = choice(s[1], s[2], s[3], s[4])
    T.eq(c.cluster.m, s[5], string.format("cluster.m at %dx%dx%d (tile %s)", s[1], s[2], s[3], c.tile.tag))
  end
  for _, s in ipairs({ { 130, 5120, 13824 }, { 3072, 3072, 3072 }, { 1, 4096, 14336 }, { 777, 14336, 4096 } }) do
    local shape = { m = s[1], n = s[2], k = s[3] }
    local want = weft.kernel_name(F, (gemm_choice(s[1], s[2], s[3], "col")))
    local got
    for _, e in ipairs(gemm.ranked(copy(shape), { b_layout = "col" }, 132, F.rule_opts())) do
      local raw = { family = "gemm", b_layout = "col" }
      for k, v in pairs(e.c) do raw[k] = copy(v) end
      local fam, ncfg = weft.check(raw, "cfg.lua")
      if fam then got = weft.kernel_name(fam, ncfg); break end
    end
    T.eq(got, want, "ranked's first entry is the choice at " .. table.concat(s, "x"))
  end
end)

-- A nearest table row is a measured config for another shape: gemm never reuses one (its F.fit),
-- since the rule alone did better off the published set (bench/RESULTS.md, third session).
T.test("gemm: a row measured at another shape is not reused", function()
  local F = weft.family_module("gemm")
  local row = { family = "gemm", dtype = "bf16", b_layout = "col", tile = { m = 128, n = 256, k = 64 }, stages = 3,
                consumers = 2, mma = "cooperative", cluster = { m = 1, n = 1 }, split_k = 1, epilogue = "tma", group = 16 }
  T.eq(F.fit(row, { m = 640, n = 2048, k = 7168 }), nil, "128 x 256 at 640 x 2048 x 7168")
  T.eq(F.fit(row, { m = 4096, n = 4096, k = 4096 }), nil, "nor at 4096^3")
  if has_auto then
    -- through auto: a table row at 1 x 4096 x 14336 is used there, and the rule answers at 1 x 5120 x 13824
    local text = 'return { family = "gemm", dtype = "bf16", b_layout = "col" }'
    local known = { { source = "table", shape = "k=14336 m=1 n=4096", time_us = 32.7, where = "t.tsv",
      base = 'return { family = "gemm", dtype = "bf16", b_layout = "col" }',
      sets = { "tile.m=8", "tile.n=64", "tile.k=64", "stages=16", "consumers=1", "split_k=2", "epilogue=direct", "swap_ab=true" } } }
    local r, e = auto.choose(text, "cfg.lua", {}, "m=1 n=4096 k=14336", H200, known)
    T.eq(r and r.source, "table", "the exact row: " .. tostring(e))
    r, e = auto.choose(text, "cfg.lua", {}, "m=1 n=5120 k=13824", H200, known)
    T.eq(r and r.source, "rule", "the rule off the row's shape: " .. tostring(e))
  end
end)

T.test("gemm: the split tail costs the full waves whole and a split last one", function()
  local cfg = { tile = gemm.tile_check({ m = 128, n = 128, k = 64 }), cluster = gemm.cluster_check({ m = 1, n = 1 }),
                consumers = 2, mma = "cooperative", split_k = 2, epilogue = "tma", stages = 4, dtype = "bf16" }
  local shape = { m = 2048, n = 2304, k = 4096 }   -- 288 tiles on 132 CTAs: 2 whole waves, 24 left
  local plain = gemm.estimate(cfg, shape, 132)
  cfg.split_k_tail = true
  local tail, why = gemm.estimate(cfg, shape, 132)
  T.contains(why, "2 whole round(s) of 64 k-blocks, then 24 tile(s) split 2 ways", "the tail's rounds")
  T.ok(tail < plain, string.format("the split tail (%.1f us) beats split-K over every tile (%.1f us)", tail, plain))
  -- the rule offers the split tail only where it has whole waves and split tiles both
  local F = weft.family_module("gemm")
  for _, s in ipairs({ { 1, 4096, 4096 }, { 1024, 14336, 4096 }, { 3072, 3072, 3072 } }) do
    for _, c in ipairs(F.auto({ m = s[1], n = s[2], k = s[3] }, { family = "gemm" }, H200)) do
      if c.split_k_tail then
        local full, split = gemm.tail_split({ m = s[1], n = s[2], k = s[3] }, { c.tile.m, c.tile.n }, { 1, 1, c.split_k }, 132)
        T.ok(full > 0 and split > 0, string.format("%s: a split tail with %d whole wave(s), %d split tile(s)",
          table.concat(s, "x"), full, split))
      end
    end
  end
end)

T.test("gemm: the estimate counts waves (a partial last round costs a whole one)", function()
  local cfg = { tile = gemm.tile_check({ m = 128, n = 256, k = 64 }), cluster = gemm.cluster_check({ m = 1, n = 1 }),
                consumers = 2, mma = "cooperative", split_k = 1, epilogue = "tma", stages = 3, dtype = "bf16" }
  local a = gemm.estimate(cfg, { m = 128 * 132, n = 256, k = 4096 }, 132)       -- 132 tiles: one round
  local b = gemm.estimate(cfg, { m = 128 * 133, n = 256, k = 4096 }, 132)       -- 133: two
  T.ok(b > 1.9 * a - 2 * gemm.MODEL.LAUNCH_US, string.format("133 tiles cost two rounds: %.1f vs %.1f us", b, a))
end)

T.test("gemm: multicast counts where K's rows are not on 128-byte lines, shared-memory reads of narrow WGMMAs and tall tiles cost", function()
  local function cfg(m, n, consumers, cm)
    return { tile = gemm.tile_check({ m = m, n = n, k = 64 }), cluster = gemm.cluster_check({ m = cm, n = 1 }),
             consumers = consumers, mma = "cooperative", split_k = 1, epilogue = "tma", stages = 4, dtype = "bf16",
             b_layout = "col" }
  end
  -- K = 5000 (10000-byte rows): B's reads shared by a cluster of two along M are cheaper ...
  local odd = { m = 5000, n = 5000, k = 5000 }
  T.ok(gemm.estimate(cfg(128, 224, 2, 2), odd, 132) < gemm.estimate(cfg(128, 224, 2, 1), odd, 132), "multicast at K = 5000")
  -- ... and the rule's first pick there has the cluster (measured 425 us with it, 586 without)
  local F = weft.family_module("gemm")
  local first = F.auto(odd, { family = "gemm", b_layout = "col" }, H200)[1]
  T.eq(first.cluster.m * first.cluster.n, 2, "5000^3: a multicast cluster first")
  -- K = 5120: the same config costs the same with or without the cluster (its CTAs are paired, not fewer)
  local even = { m = 5000, n = 5000, k = 5120 }
  T.eq(gemm.estimate(cfg(128, 224, 2, 2), even, 132) >= gemm.estimate(cfg(128, 224, 2, 1), even, 132), true,
    "no multicast credit at K = 5120")
  -- B row-major: its rows are N long, so N decides B's alignment (cluster.m shares B) and K only A's
  local function row(c) c.b_layout = "row"; return c end
  local n_odd = { m = 5120, n = 5000, k = 5120 }
  T.ok(gemm.estimate(row(cfg(128, 256, 2, 2)), n_odd, 132) < gemm.estimate(row(cfg(128, 256, 2, 1)), n_odd, 132),
    "B row-major, N = 5000: B's multicast counts")
  T.eq(gemm.estimate(row(cfg(128, 256, 2, 2)), { m = 5120, n = 5120, k = 5000 }, 132)
    >= gemm.estimate(row(cfg(128, 256, 2, 1)), { m = 5120, n = 5120, k = 5000 }, 132), true,
    "B row-major, K = 5000, N = 5120: B's rows are aligned, no credit for sharing B")
  -- the WGMMA's width: 128 x 80 over two warpgroups (n = 80 each) costs more than 64 x 160 on one
  local s = { m = 200, n = 5120, k = 5120 }
  T.ok(gemm.estimate(cfg(64, 160, 1, 1), s, 132) < gemm.estimate(cfg(128, 80, 2, 1), s, 132), "64 x 160 before 128 x 80")
  local c = F.auto(s, { family = "gemm", b_layout = "col" }, H200)[1]
  T.eq(c.tile.m .. "x" .. c.tile.n, "64x160", "200 x 5120 x 5120's first pick (measured 24.3 us against 32.2)")
  -- a tall tile re-reads its B rows for every 64-row group: 256 x 128 (7 rounds at 1024 x 29568)
  -- ran 8-9 % slower than 128 x 224 (8 rounds), which the flops alone rank the other way
  local tall = { m = 1024, n = 29568, k = 8192 }
  local t256 = cfg(256, 128, 2, 1)
  t256.stages = 3
  T.ok(gemm.estimate(cfg(128, 224, 2, 1), tall, 132) < gemm.estimate(t256, tall, 132), "128 x 224 before 256 x 128")
  local p = F.auto(tall, { family = "gemm", b_layout = "col" }, H200)[1]
  T.ok(p.tile.m ~= 256, "1024 x 29568 x 8192's first pick is not 256 rows tall: " .. p.tile.m .. "x" .. p.tile.n)
end)

T.test("gemm: widths fitted to the waves, for column-major B only", function()
  -- 1024 x 14336: 176 columns make 8 x 82 = 656 tiles, 4.97 waves of 132 (cuBLASLt's own 176 x 128)
  local f = gemm.fitted_tiles({ m = 1024, n = 14336, k = 4096 }, 132)
  T.eq(f[1][1], 128); T.eq(f[1][2], 176, "the fullest last wave at 128 rows")
  for _, tl in ipairs(f) do T.ok(tl[2] % 16 == 0 and tl[2] % 64 ~= 0 and tl[2] >= 80 and tl[2] <= 240, "width " .. tl[2]) end
  local F = weft.family_module("gemm")
  local function widths(fixed)
    local w = {}
    for _, c in ipairs(F.auto({ m = 1024, n = 14336, k = 4096 }, fixed, H200)) do
      if c.tile then w[c.tile.n] = true end
    end
    return w
  end
  T.ok(widths({ family = "gemm", b_layout = "col" })[176], "B col: a 176-wide candidate")
  for n in pairs(widths({ family = "gemm", b_layout = "row" })) do T.eq(n % 64, 0, "B row: 64-column multiples only") end
  for n in pairs(widths({ family = "gemm" })) do T.eq(n % 64, 0, "B row by default") end
  -- 256-row tiles (80..160 wide) only where K leaves the rows off the 128-byte lines and M is tall
  for _, tl in ipairs(f) do T.ok(tl[1] ~= 256, "K = 4096: no 256-row fitted tile") end
  local tall = {}
  for _, tl in ipairs(gemm.fitted_tiles({ m = 5000, n = 5000, k = 5000 }, 132, true)) do
    if tl[1] == 256 then tall[#tall + 1] = tl[2]; T.eq(tl[3], 2); T.ok(tl[2] <= 160 and tl[2] % 64 ~= 0, "width " .. tl[2]) end
  end
  T.eq(#tall, 2, "5000^3, K unaligned: two 256-row widths")
  T.eq(#gemm.fitted_tiles({ m = 512, n = 5000, k = 5000 }, 132, true), 4, "M = 512: no 256-row tile")
  -- 5000^3: 256 x 160 with A multicast along N first (404 us against 128 x 224's 465 on an H100)
  local first = F.auto({ m = 5000, n = 5000, k = 5000 }, { family = "gemm", b_layout = "col" }, H200)[1]
  T.eq(string.format("%dx%d cl%dx%d", first.tile.m, first.tile.n, first.cluster.m, first.cluster.n), "256x160 cl1x2")
  -- 3000 x 5000 x 5000: the model ties it with 128 x 240; the 256-row tile is listed first (245.8
  -- us against 265.2)
  first = F.auto({ m = 3000, n = 5000, k = 5000 }, { family = "gemm", b_layout = "col" }, H200)[1]
  T.eq(string.format("%dx%d cl%dx%d", first.tile.m, first.tile.n, first.cluster.m, first.cluster.n), "256x160 cl1x2")
  first = F.auto({ m = 4096, n = 14336, k = 4096 }, { family = "gemm", b_layout = "col" }, H200)[1]
  T.ok(first.tile.m ~= 256, "4096 x 14336 x 4096 (aligned): not 256 rows tall")
  -- the 256-row widths by their shared memory, not their width: 16384 x 4096 x 3000 offers 256 x
  -- 160 (645 us on an H100; 256 x 112, which rounds x width ranked first, 802)
  local w = {}
  for _, tl in ipairs(gemm.fitted_tiles({ m = 16384, n = 4096, k = 3000 }, 132, true)) do
    if tl[1] == 256 then w[#w + 1] = tl[2] end
  end
  table.sort(w)
  T.eq(table.concat(w, " "), "144 160", "16384 x 4096 x 3000: 256-row widths")
  local names = {}
  for _, c in ipairs(F.auto({ m = 16384, n = 4096, k = 3000 }, { family = "gemm", b_layout = "col" }, H200)) do
    names[#names + 1] = string.format("%dx%d", c.tile.m, c.tile.n)
  end
  T.contains(table.concat(names, " "), "256x160", "16384 x 4096 x 3000: 256 x 160 among the candidates")
end)

T.test("gemm: where K leaves the rows off the 128-byte lines, 128 x 256 keeps the deeper ring", function()
  -- several rounds: three stages (whole C buffers) where the rows are aligned, four where they
  -- are not (16384 x 4096 x 3000 ran 604 us with four, 655 with three)
  local F = weft.family_module("gemm")
  local function first(k) return F.auto({ m = 16384, n = 4096, k = k }, { family = "gemm", b_layout = "col" }, H200)[1] end
  local a, u = first(4096), first(3000)
  T.eq(string.format("%dx%d s%d", a.tile.m, a.tile.n, a.stages), "128x256 s3")
  T.eq(string.format("%dx%d s%d", u.tile.m, u.tile.n, u.stages), "128x256 s4")
  T.eq(gemm.unaligned({ dtype = "bf16", b_layout = "col" }, { m = 16, n = 16, k = 3000 }), true)
  T.eq(gemm.unaligned({ dtype = "bf16", b_layout = "col" }, { m = 16, n = 3000, k = 4096 }), false)
  T.eq(gemm.unaligned({ dtype = "bf16", b_layout = "row" }, { m = 16, n = 3000, k = 4096 }), true, "B row-major: N")
end)

T.test("gemm: swapped tiles for M <= 256 with column-major B, beside the best unswapped ones", function()
  local F = weft.family_module("gemm")
  local function kinds(m, fixed)
    local sw, plain, rows = 0, 0, {}
    for _, c in ipairs(F.auto({ m = m, n = 8192, k = 8192 }, fixed, H200)) do
      if c.swap_ab then sw = sw + 1; rows[c.tile.m] = true elseif c.tile then plain = plain + 1 end
    end
    return sw, plain, rows
  end
  for _, m in ipairs({ 1, 16, 33, 63 }) do
    local sw, plain, rows = kinds(m, { family = "gemm", b_layout = "col" })
    T.ok(sw > 0, m .. ": a swapped candidate")
    T.ok(plain >= 2, m .. ": at least two unswapped candidates (" .. plain .. ")")
    local want = (m + 7) // 8 * 8
    for bm in pairs(rows) do T.eq(bm, want, m .. ": A's rows rounded up to 8") end
  end
  -- from 64 rows to 256: one swapped row block as tall as M (A's rows as n), B's rows in 64 on one
  -- consumer or 128 on two, for few column tiles and long K (130 x 1536 x 8960: 136 x 64 split 4);
  -- and from 64 rows on, M in 2 or 3 row blocks of 64 to 256 rows over 64 of B's
  local function blocks(m)
    local ok = { [(m + 7) // 8 * 8] = m <= 256 }
    for r = 2, gemm.SWAP_BLOCKS do
      local b = ((m + r - 1) // r + 7) // 8 * 8
      if b >= 64 and b <= 256 then ok[b] = true end
    end
    return ok
  end
  for _, m in ipairs({ 64, 130, 256, 300 }) do
    local sw, _, rows = kinds(m, { family = "gemm", b_layout = "col" })
    T.ok(sw > 0, m .. " rows: a swapped candidate")
    local ok = blocks(m)
    for bm in pairs(rows) do T.ok(ok[bm], m .. ": " .. bm .. " rows, M in one, two or three blocks rounded up to 8") end
  end
  T.eq(#gemm.swap_tiles({ m = 130, n = 4096, k = 4096 }), 3, "swap_tiles at 130 rows: 136 x 64, 136 x 128, 72 x 64")
  T.eq(#gemm.swap_tiles({ m = 300, n = 1536, k = 8960 }), 2, "swap_tiles at 300 rows: 152 x 64 and 104 x 64")
  T.eq((kinds(769, { family = "gemm", b_layout = "col" })), 0, "769 rows: no swapped tile (three blocks of 264 > 256)")
  T.eq(#gemm.swap_tiles({ m = 769, n = 1536, k = 8960 }), 0, "swap_tiles: none past 3 x 256 rows")
  -- a cluster fixed along M: the tile that gives each CTA of the cluster's column one row block
  local with4 = gemm.swap_tiles({ m = 130, n = 1536, k = 8960 }, 4)
  T.eq(#with4, 4, "swap_tiles at 130 rows, cluster.m = 4: one more tile")
  T.eq(with4[4][1], 40, "... 40 rows: 130 in four blocks rounded up to 8")
  T.eq(#gemm.swap_tiles({ m = 130, n = 1536, k = 8960 }, 2), 3, "cluster.m = 2: 72 rows, already offered")
  T.eq(#gemm.swap_tiles({ m = 16, n = 1536, k = 8960 }, 2), 5, "16 rows, cluster.m = 2: 8-row blocks besides the four widths")
  local cl = F.auto({ m = 130, n = 1536, k = 8960 },
                    { family = "gemm", b_layout = "col", swap_ab = true, cluster = { m = 4, n = 2 } }, H200)[1]
  T.eq(cl.tile.m, 40, "swap_ab with cluster 4 x 2 fixed at 130 x 1536 x 8960: 40-row tiles (measured fastest of "
       .. "the 4 x 2 clusters; 64 and 72 rows leave row blocks past M)")
  T.eq((kinds(1, { family = "gemm", b_layout = "row" })), 0, "B row-major: no swap")
  T.eq((kinds(1, { family = "gemm", b_layout = "col", swap_ab = false })), 0, "swap_ab fixed false")
  local eight = false
  local fixed_list = F.auto({ m = 1, n = 8192, k = 8192 }, { family = "gemm", b_layout = "col", swap_ab = true }, H200)
  for _, c in ipairs(fixed_list) do
    if c.tile and c.tile.m == 8 then eight = true end
  end
  T.ok(eight, "swap_ab fixed true: the 8-row swapped tiles")
  T.ok(#fixed_list >= 7, "swap_ab fixed true: no slot kept for unswapped schedules (" .. #fixed_list .. " candidates)")
  -- a fixed 8-row tile with swap_ab open: the rule swaps it
  local l = F.auto({ m = 1, n = 8192, k = 8192 }, { family = "gemm", b_layout = "col", tile = { m = 8, n = 64, k = 64 } }, H200)
  T.ok(l[1] and l[1].swap_ab == true, "a fixed 8 x 64 tile is taken swapped")
end)

T.test("gemm: thin tiles for M < 64 fit their width to the SMs (N = 10240: 16 x 80, 128 tiles)", function()
  local F = weft.family_module("gemm")
  local function thin(m, n, fixed)
    local out = {}
    for _, c in ipairs(F.auto({ m = m, n = n, k = 8192 }, fixed, H200)) do
      if c.tile and not c.swap_ab and c.tile.m < 64 then out[#out + 1] = c end
    end
    return out
  end
  local col = { family = "gemm", b_layout = "col" }
  for _, case in ipairs({ { 16, 10240, 80 }, { 1, 10240, 80 }, { 16, 14336, 112 }, { 16, 6144, 48 }, { 33, 29568, 224 } }) do
    local m, n, w = case[1], case[2], case[3]
    local got, widths = thin(m, n, col), {}
    T.ok(#got > 0, m .. " x " .. n .. ": a thin candidate")
    for _, c in ipairs(got) do
      T.eq(c.tile.m, (m + 7) // 8 * 8, m .. ": A's rows rounded up to 8")
      T.eq(c.consumers, 1, "one consumer")
      widths[c.tile.n] = true
    end
    T.ok(widths[w], string.format("%d x %d: the %d-wide thin tile (%d tiles)", m, n, w, (n + w - 1) // w))
  end
  T.eq(#thin(64, 10240, col), 0, "64 rows: no thin tile")
  T.eq(#thin(16, 10240, { family = "gemm", b_layout = "row" }), 0, "B row-major: the rule fits no thin width")
  local widths = {}
  for _, t in ipairs(gemm.thin_tiles({ m = 16, n = 10240, k = 8192 }, 132)) do widths[#widths + 1] = t[2] end
  T.deq(widths, { 80, 96, 48 }, "the widths by rounds x width: 80 (one round of 128 tiles), 96 (one of 107), 48 (two of 214)")
  widths = {}
  for _, t in ipairs(gemm.thin_tiles({ m = 1, n = 4096, k = 4096 }, 132)) do widths[#widths + 1] = t[2] end
  T.deq(widths, { 32, 48, 64 }, "N = 4096: 32 wide (128 tiles), no narrower")
end)

T.test("gemm: the device's DRAM rate scales the split's hand-over, not the copy floor; an H200's picks stay", function()
  T.eq(gemm.dram_scale(nil), 1)
  T.eq(gemm.dram_scale({}), 1)
  for _, bad in ipairs({ "4800", 0, -3, 0 / 0, true }) do T.eq(gemm.dram_scale({ mem_gbs = bad }), 1, tostring(bad)) end
  T.ok(math.abs(gemm.dram_scale({ mem_gbs = 3352 }) - 3352 / 4800) < 1e-12, "an H100: 0.698")
  T.eq(gemm.dram_scale({ mem_gbs = 2039 }), gemm.DRAM_SCALE_MIN, "an H100 PCIe: held at the H100 SXM's")
  T.eq(gemm.dram_scale({ mem_gbs = 1e9 }), gemm.DRAM_SCALE_MAX)
  T.ok(gemm.dram_scale({ mem_gbs = 4917 }) < gemm.DRAM_SCALE_MAX, "an H200 as its driver says it: inside the range")
  local function first(m, n, k, dev)
    local c = rule_first(m, n, k, dev)
    return string.format("%dx%d split %d%s", c.tile.m, c.tile.n, c.split_k, c.swap_ab and " swapped" or ""), c
  end
  -- at 3.35 TB/s the split's extra CTAs gain nothing: 64 x 6144 x 4096 ran 64 x 64 unsplit at 21.4
  -- us and the split at 23.8; 120 x 2560 x 2560 unsplit 1.11-1.13x faster (an H100,
  -- bench/data/gemm_llm_s25.tsv, gemm_midm_s25d.tsv)
  -- (since the thirty-sixth session's narrow 64-row tiles, both devices take 64 x 48 unsplit
  -- there, 128 tiles in one round: 19.8 us on an H100, bench/data/gemm_narrow_s36.tsv; the split
  -- 64 x 96 an H200 took before ran 22.3 on that H100, gemm_narrow_s36a.tsv.  The shape no
  -- longer tells the devices apart; 120 x 2560 x 2560 and 64 x 4096 x 4096 below do)
  T.eq(first(64, 6144, 4096, H200), "64x48 split 1")
  T.eq(first(64, 6144, 4096, H100), "64x48 split 1")
  T.eq(select(2, first(120, 2560, 2560, H200)).split_k, 2)
  T.eq(select(2, first(120, 2560, 2560, H100)).split_k, 1)
  -- the tree's price at d ^ 1.5 and the flat sum's at 1 / d (DRAM_RED_POWER, DRAM_FLAT_POWER):
  -- 64 x 4096 x 4096 ran unsplit 32 x 64 at 15.4-16.0 us and the split 16.4-17.1 (the set's H100
  -- miss, bench/data/gemm_llm_s27*.tsv); held out, 160 x 2048 x 2048 unsplit 64 x 64 1.11x the
  -- best where the split of 3 ran 1.24x, and 48 x 5120 x 4096 stays off the flat split of 4
  -- (1.15x; bench/data/gemm_red2_s27.tsv); at M = 48 the dearer tree alone moved picks to flat
  -- splits of 4-6 that ran 1.08-1.20x the best (gemm_red_s27.tsv)
  T.eq(first(64, 4096, 4096, H200), "64x64 split 2")
  T.eq(first(64, 4096, 4096, H100), "64x32 split 1")   -- (thin 32 x 64 before the narrow tiles: 15.5 us; this 14.4)
  T.eq(first(160, 2048, 2048, H100), "64x64 split 1")
  T.eq(first(48, 5120, 4096, H100), "48x48 split 1")
  for _, s in ipairs({ { 48, 2048, 4096 }, { 48, 3072, 4096 }, { 48, 4096, 12288 } }) do
    T.ok(select(2, first(s[1], s[2], s[3], H100)).split_k <= 2, string.format("%d x %d x %d: no flat split", s[1], s[2], s[3]))
  end
  -- the copy floor stays the H200's (scaled, it turned pdl off where the H100 ran pdl on faster):
  -- 1 x 8192 x 8192 moves 134 MB (A, B, C), 32.0 us at 4200 GB/s, and the launch
  T.ok(select(2, first(1, 8192, 8192, H100)).why:find("~33.5 us", 1, true), select(2, first(1, 8192, 8192, H100)).why)
  T.eq(select(2, first(64, 8192, 3584, H100)).pdl, true, "pdl stays on at 64 x 8192 x 3584")
  -- an H200's rate as its driver gives it (memory clock x bus width: ~4.9 TB/s) moves none of the
  -- set's picks from the rule's own (4.8): the whole kernel, pdl and stages included
  local function kernel(m, n, k, dev)
    local ncfg, _, fam = merged({ family = "gemm", b_layout = "col", dtype = "bf16" }, select(2, first(m, n, k, dev)))
    return weft.kernel_name(fam, ncfg)
  end
  for _, layers in pairs(LAYERS) do
    for _, nk in ipairs(layers) do
      for _, m in ipairs(MS) do
        T.eq(kernel(m, nk[1], nk[2], { sms = 132, mem_gbs = 4917 }), kernel(m, nk[1], nk[2], H200),
          string.format("%d x %d x %d", m, nk[1], nk[2]))
      end
    end
  end
end)

T.test("gemm: pingpong with one tile per CTA is priced as one warpgroup's main loop (PINGPONG_ALONE)", function()
  -- 256 x 8192 x 28672: 128 tiles of 128 x 128, one round; cooperative ran 2.5-6.4 % faster on the
  -- H100 and in 24 of 29 H200 bf16 groups; 20 of 20 fresh H100 groups (bench/data/gemm_pingpong_s27.tsv)
  for _, dev in ipairs({ H200, H100 }) do
    for _, k in ipairs({ 28672, 29568, 14336 }) do
      local c = rule_first(256, 8192, k, dev)
      T.eq(string.format("%dx%d %s split %d", c.tile.m, c.tile.n, c.mma, c.split_k), "128x128 cooperative split 1",
        string.format("256 x 8192 x %d, %s", k, dev.mem_gbs and "an H100" or "an H200"))
    end
  end
  -- the factor applies to one round of pingpong only: two rounds (1024 x 4096: 256 tiles) are unmoved
  local pp = { family = "gemm", dtype = "bf16", b_layout = "col", tile = { m = 128, n = 128, k = 64 }, consumers = 2,
    mma = "pingpong", cluster = { m = 1, n = 1 }, split_k = 1, epilogue = "tma", stages = 5, group = 16 }
  local function est(shape, alone)
    local keep = gemm.MODEL.PINGPONG_ALONE
    gemm.MODEL.PINGPONG_ALONE = alone
    local _, _, raw = gemm.estimate(pp, shape, 132)
    gemm.MODEL.PINGPONG_ALONE = keep
    return raw - gemm.MODEL.LAUNCH_US
  end
  local one, two = { m = 256, n = 8192, k = 28672 }, { m = 1024, n = 4096, k = 4096 }
  T.ok(math.abs(est(one, 0.03) / est(one, 0) - 1.03) < 1e-9, "one round: x 1.03")
  T.eq(est(two, 0.03), est(two, 0), "two rounds: unmoved")
end)

T.test("gemm: pdl for tiles in clusters below PDL_CLUSTER_US, as for split-K", function()
  -- 1024 x 4096 x 4096: 128 x 256 in 2 x 1 clusters, one round, ~63 us; held out at 20 fresh shapes
  -- of such tiles (25-96 us), pdl on was faster at 18 (bench/data/gemm_pdl_s27.tsv)
  for _, dev in ipairs({ H200, H100 }) do
    local c = rule_first(1024, 4096, 4096, dev)
    T.eq(c.cluster.m * c.cluster.n, 2, "1024 x 4096 x 4096: a cluster of two")
    T.eq(c.pdl, true, "1024 x 4096 x 4096: pdl on")
  end
  -- above it (4096^3, estimated ~246 us) the pairs ran pdl on 1.03x slower: off
  local big = rule_first(4096, 4096, 4096, H200)
  T.eq(big.pdl, false, "4096^3: pdl off")
  -- tiles without a cluster keep PDL_US: 128 x 8192 x 8192's 64 x 128 (estimated ~54 us) ran
  -- 45.0 us with pdl and 36-37 without (fifteenth session)
  local one = rule_first(128, 8192, 8192, H200)
  T.ok(one.cluster.m * one.cluster.n == 1 and one.pdl == false, "128 x 8192 x 8192: no cluster, pdl off")
end)

T.test("gemm: fixed fields stay fixed, and the rest is chosen around them", function()
  local F = weft.family_module("gemm")
  local cases = {
    { family = "gemm", tile = { m = 64, n = 128, k = 64 } },
    { family = "gemm", tile = { m = 128, n = 128, k = 64 }, mma = "pingpong" },
    { family = "gemm", consumers = 1 },
    { family = "gemm", stages = 4, epilogue = "direct" },
    { family = "gemm", split_k = 2 },
    { family = "gemm", cluster = { m = 2, n = 1 }, dtype = "f16", b_layout = "col" },
    { family = "gemm", tile = "auto", stages = "auto", pdl = false },
  }
  for i, fixed in ipairs(cases) do
    for _, s in ipairs({ { 16, 14336, 4096 }, { 1024, 1024, 1024 }, { 4096, 4096, 4096 } }) do
      local shape = { m = s[1], n = s[2], k = s[3] }
      local list = F.auto(copy(shape), copy(fixed), H200)
      T.ok(#list >= 1, "case " .. i)
      for j, c in ipairs(list) do
        local ncfg, d = merged(fixed, c)
        takes(d, shape, "case " .. i .. " candidate " .. j)
        for k, v in pairs(fixed) do
          if v ~= "auto" and k ~= "family" then
            local got = ncfg[k]
            if type(v) == "table" then
              for kk, vv in pairs(v) do T.eq(got[kk], vv, string.format("case %d: %s.%s stays", i, k, kk)) end
            else
              T.eq(got, v, string.format("case %d: %s stays", i, k))
            end
          end
        end
      end
    end
  end
end)

T.test("gemm: pingpong only with 128-row tiles unless the user fixes it (the only pingpong tile measured)", function()
  local F = weft.family_module("gemm")
  for _, fixed in ipairs({ { family = "gemm", tile = { m = 64, n = 128, k = 64 } }, { family = "gemm" } }) do
    for _, s in ipairs({ { 16, 14336, 4096 }, { 1024, 1024, 1024 }, { 128, 10240, 8192 } }) do
      for _, c in ipairs(F.auto({ m = s[1], n = s[2], k = s[3] }, copy(fixed), H200)) do
        local ncfg = merged(fixed, c)
        T.ok(ncfg.mma ~= "pingpong" or ncfg.tile.m == 128, "pingpong with tile " .. ncfg.tile.tag)
      end
    end
  end
  local list = F.auto({ m = 16, n = 14336, k = 4096 }, { family = "gemm", tile = { m = 64, n = 128, k = 64 }, mma = "pingpong" }, H200)
  T.eq(merged({ family = "gemm", tile = { m = 64, n = 128, k = 64 }, mma = "pingpong" }, list[1]).mma, "pingpong",
    "a fixed pingpong stays")
  -- a fixed pingpong with the tile left open gets 128 x 128 at most (wider pingpong tiles are
  -- valid in family gemm, and were slower where timed: the thirty-seventh session)
  for _, s in ipairs({ { 1024, 14336, 4096 }, { 3072, 3072, 3072 }, { 16384, 6144, 4096 }, { 1024, 6144, 4096 } }) do
    local fixed = { family = "gemm", mma = "pingpong", b_layout = "col", epilogue = "tma" }
    local cands = F.auto({ m = s[1], n = s[2], k = s[3] }, copy(fixed), H200)
    T.ok(#cands > 0, "candidates at " .. table.concat(s, "x"))
    for _, c in ipairs(cands) do
      local ncfg = merged(fixed, c)
      T.eq(ncfg.mma, "pingpong", "the fixed mma")
      T.ok(ncfg.tile.m * ncfg.tile.n <= 128 * 128, "pingpong tile " .. ncfg.tile.tag .. " at " .. table.concat(s, "x"))
    end
  end
end)

T.test("gemm: column-major B takes any N (the direct stores); row-major B and the TMA epilogue are refused with the way out", function()
  local F = weft.family_module("gemm")
  for _, shape in ipairs({ { m = 1, n = 50257, k = 4096 }, { m = 128, n = 50257, k = 4096 }, { m = 4096, n = 50257, k = 4096 },
                           { m = 2048, n = 1, k = 4096 }, { m = 16, n = 3, k = 4096 }, { m = 1000, n = 1001, k = 1000 },
                           { m = 5000, n = 5001, k = 5000 } }) do
    local what = string.format("%dx%dx%d col", shape.m, shape.n, shape.k)
    local first, list = all_take(F, shape, { family = "gemm", b_layout = "col" }, H200, what, true)
    T.eq(first.epilogue, "direct", what .. ": the choice stores C directly")
    for i, c in ipairs(list) do
      T.eq(c.epilogue, "direct", what .. ": candidate " .. i .. " stores C directly")
      T.eq(c.any_n, true, what .. ": candidate " .. i .. " takes any N")
    end
  end
  -- (N a multiple of 8 keeps the TMA epilogue among the candidates, and any_n off: the kernels of
  -- every other shape are the ones measured before it)
  local c = gemm_choice(4096, 4096, 4096, "col")
  T.eq(c.epilogue, "tma", "4096^3: the TMA epilogue")
  T.eq(c.any_n, false, "4096^3: any_n off")
  for _, c2 in ipairs(select(2, all_take(weft.family_module("gemm"), { m = 128, n = 4096, k = 4096 },
      { family = "gemm", b_layout = "col" }, H200, "128x4096x4096", true))) do
    T.ok(not c2.any_n, "128x4096x4096: no candidate with any_n")
  end
  local _, d = merged({ family = "gemm", b_layout = "row" }, {})
  local why = weft.outside_limits(d.limits, "n", 50257)
  T.contains(why or "", "a multiple of 8", "row-major B: n a multiple of 8")
  T.contains(why or "", 'b_layout = "col"', "row-major B: the message names the layout that takes any n")
  if has_auto then
    local r, msg = auto.choose('return { family = "gemm", b_layout = "col", epilogue = "tma" }', "cfg.lua", {},
      "m=128 n=50257 k=4096", H200, {}, {})
    T.eq(r, nil, "a fixed TMA epilogue refuses n = 50257")
    T.contains(msg, 'epilogue = "direct" with any_n = true takes any n', "the limit's way out")
    T.contains(msg, 'the config fixes epilogue = "tma"', "the fixed field named")
    r, msg = auto.choose('return { family = "gemm", b_layout = "col", epilogue = "tma" }', "cfg.lua", {},
      "m=128 n=4096 k=4100", H200, {}, {})
    T.eq(r, nil, "k = 4100 refused")
    T.contains(msg, "k = 4100", "names k")
    T.ok(not msg:find("the config fixes", 1, true), "no field the config fixes lets k = 4100 in: " .. msg)
    r = auto.choose('return { family = "gemm", b_layout = "col" }', "cfg.lua", {}, "m=128 n=50257 k=4096", H200, {}, {})
    T.ok(r, "column-major B, n = 50257: chosen")
    -- (another family's limit that a fixed field sets keeps naming that field)
    r, msg = auto.choose('return { family = "allreduce", algo = "one_shot_ll" }', "cfg.lua", {}, "n=4000000", H200, {}, {})
    T.eq(r, nil, "one_shot_ll refuses 4000000 elements")
    T.contains(msg or "", 'the config fixes algo = "one_shot_ll"', "the fixed field named: " .. tostring(msg))
  end
end)

T.test("gemm: n = 4 is outside every candidate's limits, and the message names the size and the limit", function()
  local F = weft.family_module("gemm")
  local shape = { m = 16, n = 4, k = 4096 }
  for _, c in ipairs(F.auto(copy(shape), { family = "gemm" }, H200)) do
    local _, d = merged({ family = "gemm" }, c)
    local why = weft.outside_limits(d.limits, "n", 4)
    T.ok(why, "n = 4 refused")
    T.contains(why, "[8, ", "the limit")
    T.contains(why, "a multiple of 8", "the multiple")
  end
  if has_auto then
    local r, msg = auto.choose('return { family = "gemm" }', "cfg.lua", {}, "m=16 n=4 k=4096", H200, {}, {})
    T.eq(r, nil, "auto.choose refuses n = 4")
    T.contains(msg, "n = 4", "names the size")
    T.contains(msg, "[8, ", "names the limit")
  end
end)

-- ---- ag_gemm --------------------------------------------------------------------------------

T.test("ag_gemm: fused and gather_then_gemm at 1, 2 and 8 ranks; scalar variants keep their defaults", function()
  local F = weft.family_module("ag_gemm")
  for _, ranks in ipairs({ 1, 2, 8 }) do
    local dev = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = ranks }
    for _, v in ipairs({ "fused", "gather_then_gemm" }) do
      for _, s in ipairs({ { 16 * ranks, 14336, 4096 }, { 1024 * ranks, 1024, 1024 }, { 4096 * ranks, 4096, 4096 } }) do
        local fixed = { family = "ag_gemm", variant = v, dtype = "f16" }
        local shape = { m = s[1], n = s[2], k = s[3] }
        local what = string.format("%s P=%d %dx%dx%d", v, ranks, s[1], s[2], s[3])
        local ncfg, list = all_take(F, shape, fixed, dev, what, true)
        T.eq(ncfg.variant, v, what .. ": variant stays")
        T.eq(ncfg.comm, "threadload", what .. ": the choice keeps the default comm")
        local push = false
        for _, c in ipairs(list) do push = push or c.comm == "multimem" end
        T.eq(push, v == "fused" and ranks > 1, what .. ": the owner push is a candidate only for fused at P > 1")
      end
    end
    local list = F.auto({ m = 1024, n = 1024, k = 1024 }, { family = "ag_gemm", comm = "tma" }, dev)
    for _, c in ipairs(list) do T.eq(c.comm, nil, "a fixed comm is not replaced") end
  end
  for _, v in ipairs({ "naive_remote", "threadload_gather", "multimem_gather" }) do
    local ncfg = all_take(F, { m = 1024, n = 1024, k = 1024 }, { family = "ag_gemm", variant = v }, H200, v)
    T.eq(ncfg.tile.tag, "32x32x16", v .. ": scalar tile")
  end
end)

-- ---- allreduce ------------------------------------------------------------------------------

T.test("allreduce: the algorithm by bytes and ranks; never multimem unless fixed; the last takes every n", function()
  local F = weft.family_module("allreduce")
  local function algo(n, ranks, fixed)
    fixed = fixed or { family = "allreduce" }
    local dev = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = ranks }
    local ncfg, list = all_take(F, { n = n }, fixed, dev, string.format("n=%d P=%d", n, ranks))
    for _, c in ipairs(list) do T.eq(c.comm, nil, "no candidate sets comm") end
    local _, d = merged(fixed, list[#list])
    T.eq(weft.outside_limits(d.limits, "n", 1 << 40), nil, "the last candidate takes n = 2^40")
    return ncfg.algo
  end
  T.eq(algo(1, 2), "one_shot_ll", "8 B")
  T.eq(algo(32768, 2), "one_shot_ll", "128 KB f32")
  T.eq(algo(65536, 8), "one_shot_ll", "256 KB f32 at P = 8")
  T.eq(algo(65537, 2), "one_shot", "just over 256 KB")
  T.eq(algo(64 << 20, 2), "one_shot", "256 MB at P = 2")
  T.eq(algo(64 << 20, 4), "one_shot", "256 MB at P = 4 (one_shot measured faster under MPS)")
  T.eq(algo(64 << 20, 8), "two_shot", "256 MB at P = 8")
  T.eq(algo(1 << 18, 8), "one_shot", "1 MB at P = 8")
  T.eq(algo(1 << 20, 8, { family = "allreduce", dtype = "bf16" }), "two_shot", "2 MB bf16 at P = 8")
  T.eq(algo(100, 2, { family = "allreduce", dtype = "bf16", comm = "multimem", fallback = "emulate" }), "two_shot",
    "fixed multimem takes two_shot")
  local ncfg = merged({ family = "allreduce", algo = "one_shot" }, F.auto({ n = 4 }, { family = "allreduce", algo = "one_shot" }, H200)[1])
  T.eq(ncfg.algo, "one_shot", "a fixed algo stays")
  -- past one_shot_ll's limit the rule still answers
  T.eq(algo(F.LL_MAX + 1, 2), "one_shot", "n past LL_MAX")
  -- past every limit: the message names n and the limit
  for _, c in ipairs(F.auto({ n = (1 << 40) + 1 }, { family = "allreduce" }, H200)) do
    local _, d = merged({ family = "allreduce" }, c)
    local why = weft.outside_limits(d.limits, "n", (1 << 40) + 1)
    T.ok(why, "n = 2^40 + 1 refused")
    T.contains(why, "limits [1, ", "names the limit")
  end
  if has_auto then
    local r, msg = auto.choose('return { family = "allreduce" }', "cfg.lua", {}, "n=" .. ((1 << 40) + 1), H200, {}, {})
    T.eq(r, nil, "auto.choose refuses n past 2^40")
    T.contains(msg, "n = " .. ((1 << 40) + 1), "names the size")
  end
end)

T.test("allreduce_norm: the algorithm by bytes and ranks, generated for the world size where it is several ranks", function()
  local F = weft.family_module("allreduce_norm")
  local function choose(rows, cols, ranks, fixed)
    fixed = fixed or { family = "allreduce_norm", dtype = "bf16" }
    local dev = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = ranks }
    local ncfg, list = all_take(F, { rows = rows, cols = cols }, fixed, dev, string.format("%dx%d P=%d", rows, cols, ranks))
    for i, c in ipairs(list) do
      if fixed.ranks == nil then
        T.eq(c.ranks, ranks > 1 and ranks or nil, string.format("candidate %d: ranks at P = %d", i, ranks))
      end
    end
    return ncfg
  end
  T.eq(choose(16, 4096, 1).ranks, "any", "one rank (also what a caller with no count passes): any world size")
  T.eq(choose(16, 4096, 2).ranks, 2, "2 ranks")
  T.eq(choose(8192, 8192, 8).ranks, 8, "8 ranks")
  T.eq(choose(16, 4096, 4).algo, "one_shot", "128 KB at P = 4")
  T.eq(choose(1024, 4096, 4).algo, "two_shot", "8 MB at P = 4")
  T.eq(choose(128, 4096, 2).algo, "one_shot", "1 MB at P = 2")
  T.eq(choose(1024, 4096, 2).algo, "one_shot", "8 MB at P = 2 (one_shot measured faster at every size)")
  T.eq(choose(256, 4096, 4).algo, "one_shot", "2 MB at P = 4")
  T.eq(choose(512, 4096, 8).algo, "two_shot", "4 MB at P = 8")
  -- several ranks: 512 threads, two blocks per SM (one_shot_ll: one); one rank: rmsnorm's layout
  local c8 = choose(16, 4096, 8)
  T.eq(c8.threads, 512, "512 threads at P = 8")
  T.eq(c8.min_blocks, 2, "two blocks per SM at P = 8")
  for _, c in ipairs(F.auto({ rows = 16, cols = 4096 }, { family = "allreduce_norm", dtype = "bf16" },
                            { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 8 })) do
    if c.algo == "one_shot_ll" then T.eq(c.min_blocks, 1, "one_shot_ll: one block per SM") end
  end
  T.eq(choose(1, 16384, 2).cluster, 2, "16384 columns: a cluster of 2 at 512 threads")
  local fixed = { family = "allreduce_norm", dtype = "bf16", ranks = "any" }
  T.eq(choose(16, 4096, 4, fixed).ranks, "any", "a fixed ranks stays")
  -- a row measured at other ranks and another shape is refitted to this world size
  local c = F.fit({ family = "allreduce_norm", dtype = "bf16", ranks = 2, threads = 512, max_cols = 4096 },
                  { rows = 16, cols = 8192 }, {}, { ranks = 4 })
  T.eq(c.ranks, 4, "refit: ranks follows the world")
  T.eq(c.max_cols, 8192, "refit: max_cols follows the row")
  c = F.fit({ family = "allreduce_norm", dtype = "bf16", ranks = "any", threads = 512 }, { rows = 16, cols = 4096 }, {},
            { ranks = 4 })
  T.eq(c.ranks, "any", "refit: any stays any")
end)

for _, fam in ipairs({ "gemm_rs", "gemm_ar" }) do
  T.test(fam .. ": every candidate validates and takes the shape; generated for the world size on several ranks", function()
    local F = weft.family_module(fam)
    for _, ranks in ipairs({ 1, 2, 4, 8 }) do
      for _, s in ipairs({ { 1024, 1024, 1024 }, { 8192, 8192, 1024 }, { 16 * ranks, 4096, 512 }, { 1000 * ranks, 1000, 1000 } }) do
        local shape = { m = s[1], n = s[2], k = s[3] }
        local dev = { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = ranks }
        local what = string.format("%s %dx%dx%d P=%d", fam, s[1], s[2], s[3], ranks)
        local first, list = all_take(F, shape, { family = fam, dtype = "bf16" }, dev, what)
        T.eq(first.ranks, ranks > 1 and ranks or "any", what .. ": ranks")
        for i, c in ipairs(list) do T.eq(c.ranks, ranks > 1 and ranks or nil, what .. " candidate " .. i .. ": ranks") end
      end
    end
    local _, list = all_take(F, { m = 1024, n = 1024, k = 1024 }, { family = fam, dtype = "bf16", ranks = 1 },
                             { gpu = "NVIDIA H200", sms = 132, sm = 90, ranks = 1 }, "fixed ranks = 1")
    for _, c in ipairs(list) do T.eq(c.ranks, nil, "a fixed ranks is left to the config") end
  end)
end

-- ---- cluster_reduce -------------------------------------------------------------------------

T.test("cluster_reduce: push first at every cluster size; key fields and fixed fields stay", function()
  local F = weft.family_module("cluster_reduce")
  for _, cl in ipairs({ 1, 2, 4, 8, 16 }) do
    for _, w in ipairs({ 1, 2, 8 }) do
      local fixed = { family = "cluster_reduce", cluster = cl, width = w, iters = 4, nonportable = cl > 8 or nil }
      local ncfg = all_take(F, { clusters = 264 }, fixed, H200, "cluster " .. cl)
      T.eq(ncfg.exchange, "push", "push first")
      T.eq(ncfg.cluster, cl, "cluster stays")
      T.eq(ncfg.width, w, "width stays")
    end
  end
  local ncfg = all_take(F, { clusters = 1 }, { family = "cluster_reduce", exchange = "pull" }, H200, "pull fixed")
  T.eq(ncfg.exchange, "pull", "a fixed exchange stays")
  local keys = {}
  for _, k in ipairs(F.key) do keys[k] = true end
  T.ok(keys.cluster and keys.threads and keys.width and keys.iters, "cluster, threads, width, iters are key fields")
end)

T.test("through gen/core/auto.lua: the rule answers the GEMM set, and the sets give the chosen kernel", function()
  if not has_auto then return end
  local text = 'return { family = "gemm", dtype = "bf16", b_layout = "col" }'
  for _, layers in pairs(LAYERS) do
    for _, nk in ipairs(layers) do
      for _, m in ipairs(MS) do
        local shape = string.format("m=%d n=%d k=%d", m, nk[1], nk[2])
        local r, err = auto.choose(text, "cfg.lua", {}, shape, H200, {}, { candidates = 7 })
        T.ok(r, err)
        T.eq(r.source, "rule", shape)
        T.ok(#r.choices >= 4, shape .. ": the choice and at least 3 candidates, got " .. #r.choices)
        for i, ch in ipairs(r.choices) do
          local m2, e2 = weft.generate(text, "cfg.lua", ch.sets, weft_read)
          T.ok(m2, e2)
          T.eq(m2.name, ch.name, shape .. ": choice " .. i .. "'s sets give its kernel")
          for _, kv in ipairs(ch.sets) do
            T.ok(not kv:match("^dtype=") and not kv:match("^b_layout="), shape .. ": key fields are never set: " .. kv)
          end
        end
      end
    end
  end
  -- allreduce and cluster_reduce through the same path
  local r = assert(auto.choose('return { family = "allreduce", dtype = "bf16" }', "cfg.lua", {}, "n=64", H200, {}, {}))
  T.contains(table.concat(r.choices[1].sets, " "), "algo=one_shot_ll", "128 B: one_shot_ll")
  r = assert(auto.choose('return { family = "cluster_reduce", cluster = 4 }', "cfg.lua", {}, "clusters=264", H200, {}, {}))
  T.contains(table.concat(r.choices[1].sets, " "), "exchange=push", "push")
end)

-- ---- reduce_scatter, all_gather ----------------------------------------------------------------
T.test("reduce_scatter, all_gather: the unmeasured rule's candidates validate, take every n, keep fixed fields", function()
  for _, name in ipairs({ "reduce_scatter", "all_gather" }) do
    local F = weft.family_module(name)
    for _, n in ipairs({ 1, 7, 4097, 1 << 20, 1 << 37 }) do
      for _, fixed in ipairs({ { family = name }, { family = name, dtype = "bf16", comm = "multimem", fallback = "emulate" },
                               { family = name, pdl = false, threads = 128 } }) do
        local first, list = all_take(F, { n = n }, fixed, H200, name .. " n=" .. n)
        T.ok(first.comm == (fixed.comm or "threadload"), name .. ": comm stays " .. tostring(fixed.comm))
        if fixed.threads then T.eq(first.threads, fixed.threads, name .. ": threads stay fixed") end
        T.contains(list[1].why, "not measured yet", name .. ": the rule says it has no measurements")
      end
    end
    local r = weft.run_spec(weft.check({ family = name }, "cfg.lua"))
    T.deq(r.sizes, F.sizes, name .. ": sizes")
    T.deq(r.key, F.key, name .. ": key")
  end
  local _, ncfg, d = weft.check({ family = "reduce_scatter" }, "cfg.lua")
  T.eq(d.comm.per_rank, true, "reduce_scatter stages P chunks per half")
  _, ncfg, d = weft.check({ family = "all_gather" }, "cfg.lua")
  T.eq(d.comm.per_rank, false, "threadload all_gather stages its own chunk only")
  _, ncfg, d = weft.check({ family = "all_gather", comm = "multimem", fallback = "emulate" }, "cfg.lua")
  T.eq(d.comm.per_rank, true, "multimem all_gather: a slot per sender")
end)

T.test("F.sizes is each run spec's list of sizes", function()
  for _, name in ipairs({ "gemm", "ag_gemm", "allreduce", "cluster_reduce" }) do
    local fam, ncfg, d = weft.check({ family = name }, "cfg.lua")
    T.ok(fam, ncfg)
    local r = weft.run_spec(fam, ncfg, d)
    T.deq(r.sizes, fam.sizes, name .. ": sizes")
    T.deq(r.key, fam.key, name .. ": key")
  end
end)

T.done("test_auto_rules")
