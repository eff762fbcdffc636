-- gen/core/collective.lua: what the reduce_scatter and all_gather families share (their fields
-- beside dtype and op, the fallback rule, the manifest's launch shape and comm section, the run
-- spec and the rule).  The device side is templates/weft/collectives.cuh; the fields threads,
-- blocks and pdl are the allreduce family's own entries.
local common = require("gen.core.common")
local allreduce = require("gen.families.allreduce")

local M = {}

local function ar_field(name)
  for _, f in ipairs(allreduce.fields) do if f.name == name then return f end end
  error("gen/core/collective.lua: the allreduce family has no field " .. name)
end

-- comm (its doc per family), fallback, threads, blocks, pdl, ranks
function M.fields(comm_doc)
  return {
    { name = "comm", kind = "enum", values = { "threadload", "multimem" }, default = "threadload", tag = "", doc = comm_doc },
    ar_field("fallback"), ar_field("threads"), ar_field("blocks"), ar_field("pdl"), common.ranks(),
  }
end

function M.check_fallback(cfg, errs)
  if cfg.comm ~= "multimem" and cfg.fallback ~= "none" then
    errs.add("fallback", cfg.fallback, 'only comm = "multimem" has a fallback; leave it "none"')
  end
end

-- The manifest's launch shape and comm section.  One block per threads x 16 bytes of a chunk (n
-- elements), capped so that every block of every rank on a GPU is resident at once (they wait on
-- each other).  per_rank: a data half holds P chunks of n (comm.c sizes it P x max_elems).
function M.derive(cfg, values, per_rank)
  local vec = 16 // common.ESIZE[cfg.dtype]
  values.threads, values.ctype, values.pdl = cfg.threads, common.CTYPE[cfg.dtype], cfg.pdl
  values.multimem = cfg.comm == "multimem"
  values.np = common.ranks_value(cfg)
  return {
    values = values,
    block = { cfg.threads, 1, 1 },
    cluster = { 1, 1, 1 },
    smem = 0,
    pdl = cfg.pdl,
    args = {
      { name = "y", type = "ptr", dtype = cfg.dtype, role = "out" },   -- any element alignment (odd n, in place)
      { name = "x", type = "ptr", dtype = cfg.dtype, role = "in" },
      { name = "n", type = "i64", role = "size" },
    },
    grid = { { arg = "n", per = cfg.threads * vec, times = 1, cap = "coresident",
               max = cfg.blocks ~= "auto" and cfg.blocks or nil },
             { per = 1, times = 1 }, { per = 1, times = 1 } },
    limits = { { arg = "n", min = 1, max = 1 << 37 } },
    comm = { signals = { "ready" }, halves = 2, elem_bytes = common.ESIZE[cfg.dtype], per_rank = per_rank,
             multimem = cfg.comm == "multimem", emulate = cfg.fallback == "emulate", ranks = common.ranks_value(cfg) },
  }
end

-- What the tools need: n, the elements of a chunk (reduce_scatter's recvcount, all_gather's
-- sendcount; `--elems N` or `--n N`); odd sizes to check, and chunks of 8 B .. 32 MB to time (x4),
-- which at 8 ranks are 256 MB per rank.  busbw as nccl-tests: the P chunks' bytes over the time,
-- times (P - 1) / P; NCCL's collective the baseline where every rank has a GPU of its own.
function M.run(cfg, d, key)
  local es = common.ESIZE[cfg.dtype]
  local time, bytes = {}, 8
  while bytes <= 32 << 20 do
    time[#time + 1] = { n = math.max(1, bytes // es) }
    bytes = bytes * 4
  end
  local check = {}
  for _, n in ipairs({ 1, 3, 7, 8, 9, 31, 1000, 4097, 65537, 1048579 }) do check[#check + 1] = { n = n } end
  return { sizes = { "n" }, aliases = { n = "elems" }, check = check, time = time, metric = "busbw",
           baseline = "nccl", ranks = true, key = key }
end

-- The rule.  No thresholds: nothing of these two families has been measured yet, on one GPU or
-- several, so the rule is the allreduce's measured defaults (512 threads, blocks "auto",
-- threadload: multicast is off on every machine here) with no size dependence, and its
-- neighbours for first-use tuning to time: pdl (which the caller's stream decides) and 256
-- threads.  The last entry takes every n the kernel takes.  Generated for the world size where
-- that is several ranks (allreduce_norm's rule: one rank is also what a caller with no count
-- passes, and a kernel for one rank refuses a larger world).
function M.auto(shape, fixed, dev)
  local ranks = math.max(1, dev and dev.ranks or 1)
  local np = (fixed.ranks == nil or fixed.ranks == "auto") and ranks > 1 and ranks or nil
  local base = { threads = 512, blocks = "auto", ranks = np,
                 why = "not measured yet: the allreduce's defaults (512 threads, blocks auto, threadload)" }
  local list = { base }
  if fixed.pdl == nil then
    list[#list + 1] = { threads = 512, blocks = "auto", pdl = true, ranks = np, why = "the choice with pdl" }
  end
  list[#list + 1] = { threads = 256, blocks = "auto", ranks = np, why = "the choice with 256 threads" }
  list[#list + 1] = { threads = 512, blocks = "auto", ranks = np, why = "takes every n" }
  return list
end

return M
