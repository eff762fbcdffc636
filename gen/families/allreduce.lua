-- gen/families/allreduce.lua: y = op over the ranks of x, the same bits on every rank.
-- Device side: templates/weft/allreduce.cuh (the data path) and weft/signal.cuh (the
-- protocol).  The runtime (weft_comm, runtime/comm.c) owns the symmetric buffer, the epochs
-- and the timeout record; this module tells it what the kernel needs through manifest.comm.
local common = require("gen.core.common")

local F = {
  name = "allreduce",
  template = "templates/allreduce.cu",
  doc = "y[i] = op over ranks of x[i]; launched with weft_comm_launch",
}

-- What the switch reduces (multimem.ld_reduce): add on every type; min/max on 16-bit types.
local SWITCH_OPS = { f32 = { sum = 0 }, f16 = { sum = 0, min = 1, max = 2 }, bf16 = { sum = 0, min = 1, max = 2 } }

local function blocks_check(v)
  if v == "auto" then return v end
  local iv = math.type(v) == "integer" and v or (type(v) == "number" and math.tointeger(v))
  if iv and iv >= 1 and iv <= 1024 then return iv end
  return nil, '"auto" or an integer in 1..1024 (capped at run time so every block of every rank is resident)'
end

F.fields = {
  common.dtype(),
  common.op(),
  { name = "algo", kind = "enum", values = { "one_shot", "two_shot", "one_shot_ll" }, default = "one_shot", tag = "",
    doc = "one_shot: every rank reads every rank's data; two_shot: reduce-scatter, then all-gather; "
      .. "one_shot_ll: small messages, each word sent with its epoch, no signal round (n <= 2M)" },
  { name = "comm", kind = "enum", values = { "threadload", "multimem" }, default = "threadload", tag = "",
    doc = "threadload: 16-byte loads from peers' memory; multimem: multimem.ld_reduce + multimem.st" },
  { name = "fallback", kind = "enum", values = { "none", "emulate" }, default = "none", tag = "fb",
    doc = "comm = multimem where multicast is unavailable: none (fail) or emulate (unicast fan-out twin)" },
  { name = "threads", kind = "int", values = { 64, 128, 256, 512 }, default = 512, tag = "t",
    doc = "threads per block (at most 512: the rank-order fold keeps 8 ranks' vectors in registers)" },
  { name = "blocks", kind = "custom", check = blocks_check, default = "auto", tag = "b",
    doc = '"auto" (one per threads x 16 bytes of a chunk) or at most this many blocks' },
  { name = "pdl", kind = "bool", default = false, tag = "pdl",
    doc = "programmatic dependent launch: the kernel may be scheduled while the previous one in its stream "
      .. "finishes; it waits for it before touching memory, and lets the next one be scheduled once its own "
      .. "waits on other ranks are over" },
}

-- comm = "multimem": the operator must be one the switch reduces (reduce_scatter shares this).
function F.check_switch_op(cfg, errs)
  if cfg.comm == "multimem" then
    local ok = SWITCH_OPS[cfg.dtype][cfg.op.name]
    if ok == nil then
      local names = {}
      for k in pairs(SWITCH_OPS[cfg.dtype]) do names[#names + 1] = k end
      table.sort(names)
      errs.add("op", cfg.op.name, string.format('comm = "multimem" with dtype = "%s": multimem.ld_reduce has no %s; '
        .. "it reduces %s (use comm = \"threadload\" for this operator)", cfg.dtype,
        cfg.op.name == "custom" and "custom operator" or cfg.op.name, table.concat(names, ", ")))
    end
  end
end

-- multimem.ld_reduce's operator code for cfg (-1: not multimem)
function F.switch_op(cfg)
  return cfg.comm == "multimem" and SWITCH_OPS[cfg.dtype][cfg.op.name] or -1
end

function F.check(cfg, errs)
  common.check_multimem(cfg, errs, "element")
  F.check_switch_op(cfg, errs)
end

F.LL_MAX = 1 << 21   -- one_shot_ll: at most this many elements (each half of its buffer: 8 ranks x 8 bytes per 4 bytes of data)

function F.derive(cfg)
  local esize = common.ESIZE[cfg.dtype]
  local ll = cfg.algo == "one_shot_ll"
  local vec = 16 // esize
  local mop = F.switch_op(cfg)
  return {
    values = { op_identity = cfg.op.identity, op_combine = cfg.op.combine, threads = cfg.threads,
               ctype = common.CTYPE[cfg.dtype], algo = ({ one_shot = 1, two_shot = 2, one_shot_ll = 3 })[cfg.algo],
               multimem = cfg.comm == "multimem", mop = mop, op_name = cfg.op.name,
               -- __launch_bounds__: one_shot_ll states "at least 1 block per SM", because ptxas left
               -- to itself squeezed it to 40 registers and spilled (with it: 53-56, no spill, still
               -- 2 blocks of 512 per SM).  The others keep ptxas's choice (54-72 registers, no spill,
               -- 2 blocks per SM); a stated minimum of 1 would give them 80-113 and halve the
               -- co-resident grid, and 2 (64 registers) makes the 8-rank fold spill.
               bounds = ll and (cfg.threads .. ", 1") or tostring(cfg.threads), pdl = cfg.pdl },
    block = { cfg.threads, 1, 1 },
    cluster = { 1, 1, 1 },
    smem = 0,
    pdl = cfg.pdl,
    args = {
      { name = "y", type = "ptr", dtype = cfg.dtype, role = "out", align = 16 },   -- 16-byte vectors
      { name = "x", type = "ptr", dtype = cfg.dtype, role = "in", align = 16 },
      { name = "n", type = "i64", role = "size" },
    },
    -- one block per threads x 16 bytes of a chunk (two_shot: a rank's share), capped so that
    -- every block of every rank on a GPU is resident at once (they wait on each other)
    grid = { { arg = "n", per = cfg.threads * (ll and 4 // esize or vec), times = 1, cap = "coresident",
               split = cfg.algo == "two_shot" and "ranks" or nil,
               max = cfg.blocks ~= "auto" and cfg.blocks or nil },
             { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = { { arg = "n", min = 1, max = ll and F.LL_MAX or 1 << 40 } },
    -- elem_bytes: bytes of each half of the data area per element (LL: a slot per sender, 8
    -- bytes per 4 bytes of data)
    comm = { signals = { "ready", "reduced", "data" }, halves = 2, elem_bytes = ll and 16 * esize or esize,
             multimem = cfg.comm == "multimem", emulate = cfg.fallback == "emulate" },
  }
end

F.sizes = { "n" }
F.key = { "dtype", "op" }

-- The rule (gen/core/auto.lua): the algorithm by message bytes and rank count.  Thresholds, from
-- bench/RESULTS.md:
--   one_shot_ll up to LL_BYTES: on two H200s it took 4.8-5.9 us up to 128 KB against one_shot's
--     6.7-7.2, and the two met at 512 KB (8.27 / 8.30 us); LL_BYTES is between (and n <= LL_MAX).
--   two_shot from TWO_SHOT_RANKS ranks and TWO_SHOT_BYTES: one_shot moves (3 + P) N bytes per
--     rank, two_shot 5 N plus one more signal round.  Under MPS, 256 MB, one_shot / two_shot
--     took 1204 / 1577 us at P = 4 and 3660 / 3173 at P = 8; read against the traffic ratio
--     (7/5, 11/5) the two cross near P = 6.5, so two_shot from 7 ranks.  Its extra round cost
--     ~4 us at P = 8 (8 B: 13.9 / 18.1 us), which 6 N more bytes at the one-GPU rate pay back
--     from ~1 MB: TWO_SHOT_BYTES = 2 MB.  P = 4 and 8 on real GPUs were never lent: first-use
--     tuning times the other algorithm beside the choice.
--   threads 512 and blocks "auto" everywhere: every measured row used them.  comm stays
--     threadload (multicast is off on the machines here); pdl, which the user's stream decides,
--     is a neighbour: 0.4-0.9 us faster for one_shot_ll on two GPUs.
F.LL_BYTES = 256 << 10
F.TWO_SHOT_RANKS = 7
F.TWO_SHOT_BYTES = 2 << 20
function F.auto(shape, fixed, dev)
  local es = common.ESIZE[fixed.dtype or "f32"] or 4
  local bytes, ranks = shape.n * es, math.max(1, dev and dev.ranks or 1)
  local algo, why
  if fixed.comm == "multimem" then
    algo, why = "two_shot", "comm = multimem reduces on the switch: two_shot"
  elseif bytes <= F.LL_BYTES and shape.n <= F.LL_MAX then
    algo, why = "one_shot_ll", string.format("%d bytes <= %d: one_shot_ll (no signal round)", bytes, F.LL_BYTES)
  elseif ranks >= F.TWO_SHOT_RANKS and bytes >= F.TWO_SHOT_BYTES then
    algo, why = "two_shot", string.format("%d ranks, %d bytes: two_shot moves 5 N bytes, one_shot (3 + P) N", ranks, bytes)
  else
    algo, why = "one_shot", string.format("%d ranks, %d bytes: one_shot (one signal round fewer than two_shot)", ranks, bytes)
  end
  local base = { algo = algo, threads = 512, blocks = "auto", why = why }
  local list = { base }
  local function add(t)
    local c = {}
    for k, v in pairs(base) do c[k] = v end
    for k, v in pairs(t) do c[k] = v end
    list[#list + 1] = c
  end
  if fixed.pdl == nil then add({ pdl = true, why = "the choice with pdl" }) end
  for _, other in ipairs({ "one_shot", "two_shot" }) do
    if other ~= algo and fixed.comm ~= "multimem" then add({ algo = other, why = "the neighbour algorithm " .. other }) end
  end
  add({ threads = 256, why = "the choice with 256 threads" })
  -- last: one_shot takes every n the kernel takes (one_shot_ll stops at LL_MAX; multimem needs two_shot)
  list[#list + 1] = { algo = fixed.comm == "multimem" and "two_shot" or "one_shot", threads = 512, blocks = "auto",
                      why = "takes every n" }
  return list
end

-- What the tools need (gen/core/weft.lua's run_spec): n, the elements per rank (`--elems N`, or
-- `--n N`); odd sizes to check, and 8 B .. 256 MB per rank to time (x4, then x2 past 128 MB),
-- as far as the kernel's limit on n goes.
function F.run(cfg, d)
  local es = common.ESIZE[cfg.dtype]
  local max_n = d.limits[1].max
  local time, bytes = {}, 8
  while bytes <= 256 << 20 do
    local n = bytes // es
    if n >= 1 and n <= max_n then time[#time + 1] = { n = n } end
    bytes = bytes < 128 << 20 and bytes * 4 or bytes * 2
  end
  local check = {}
  for _, n in ipairs({ 1, 3, 7, 8, 9, 31, 1000, 4097, 65537, 1048579 }) do
    if n <= max_n then check[#check + 1] = { n = n } end
  end
  return { sizes = F.sizes, aliases = { n = "elems" }, check = check, time = time, metric = "busbw",
           baseline = "nccl", ranks = true, key = F.key }
end

return F
