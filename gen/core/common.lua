-- gen/core/common.lua: schema fields and rules shared by several families.
local ops = require("gen.core.ops")

local M = {}

M.SMEM_LIMIT = 232448            -- sm_90: 227 KB of shared memory per block (opt-in)
M.PORTABLE_CLUSTER = 8
M.MAX_CLUSTER = 16               -- with the non-portable cluster size attribute
M.CTYPE = { f32 = "f32", f16 = "f16", bf16 = "bf16" }
M.ESIZE = { f32 = 4, f16 = 2, bf16 = 2 }

function M.dtype(values, default)
  return { name = "dtype", kind = "enum", values = values or { "f32", "f16", "bf16" },
           default = default or "f32", tag = "", doc = "element type in memory; arithmetic is f32" }
end

function M.op()
  return { name = "op", kind = "custom", check = ops.check, default = "sum", tag = "",
           doc = 'sum | max | min | prod | { combine = "<CUDA expr of a, b>", identity = "<expr>" }' }
end

function M.cluster(default)
  return { name = "cluster", kind = "int", min = 1, max = M.MAX_CLUSTER, default = default or 1, tag = "c",
           doc = "CTAs per thread-block cluster (1..8; 16 with nonportable = true)" }
end

function M.nonportable()
  return { name = "nonportable", kind = "bool", default = false, tag = "np",
           doc = "allow cluster sizes above 8 (the non-portable cluster size attribute)" }
end

function M.threads(default)
  return { name = "threads", kind = "int", values = { 64, 128, 256, 512, 1024 }, default = default or 256,
           tag = "t", doc = "threads per CTA" }
end

function M.min_blocks()
  return { name = "min_blocks", kind = "int", min = 1, max = 8, default = 1, tag = "mb",
           doc = "CTAs per SM the compiler must fit (__launch_bounds__): caps registers per thread" }
end

function M.check_min_blocks(cfg, errs)
  if cfg.threads * cfg.min_blocks > 2048 then
    errs.add("min_blocks", cfg.min_blocks, string.format(
      "with threads = %d at most %d CTAs fit on an SM (2048 threads)", cfg.threads, 2048 // cfg.threads))
  end
end

function M.check_cluster(cfg, errs)
  if cfg.cluster > M.PORTABLE_CLUSTER and not cfg.nonportable then
    errs.add("cluster", cfg.cluster, string.format(
      "must be at most %d; up to %d needs nonportable = true", M.PORTABLE_CLUSTER, M.MAX_CLUSTER))
  end
end

-- The manifest's grid when each row (or item) gets one cluster: x = items * cluster.  With
-- persistent, the number of clusters is capped at what the device can hold at once
-- (cap = "coresident": the runtime asks the driver's occupancy calculator), and each cluster
-- loops over items; every cluster is then resident together, which also makes a grid-wide
-- wait safe.
function M.grid_per_cluster(arg, cluster, persistent)
  return { { arg = arg, per = 1, times = cluster, cap = persistent and "coresident" or nil },
           { per = 1, times = 1 }, { per = 1, times = 1 } }
end

function M.exchange()
  return { name = "exchange", kind = "enum", values = { "pull", "push" }, default = "pull", tag = "x",
           doc = "cluster combine: pull (publish, cluster barrier, mapa + ld.shared::cluster) or push (st.async into every peer + mbarrier)" }
end

function M.persistent()
  return { name = "persistent", kind = "bool", default = false, tag = "p",
           doc = "launch only co-resident clusters, each looping over rows (fewer launches of CTAs)" }
end

-- The world size a communicating kernel is generated for: "any" (its folds keep room for 8 ranks'
-- vectors) or 1..8, which the runtime then requires of the world (weft_comm_create).  A known
-- count keeps only that many peers' loads in flight (fewer registers, more co-resident blocks),
-- and one rank compiles no exchange at all.
M.MAX_RANKS = 8
local function ranks_check(v)
  if v == "any" then return v end
  local iv = math.type(v) == "integer" and v or (type(v) == "number" and math.tointeger(v))
  if iv and iv >= 1 and iv <= M.MAX_RANKS then return iv end
  return nil, string.format('must be "any" or an integer in 1..%d (the world size the kernel is generated for)', M.MAX_RANKS)
end
function M.ranks()
  return { name = "ranks", kind = "custom", check = ranks_check, default = "any", tag = "rk",
           doc = '"any", or the world size 1..8 the kernel is generated for (the runtime refuses another): '
             .. "its folds then keep only that many ranks' vectors in registers" }
end
function M.ranks_value(cfg) return cfg.ranks == "any" and 0 or cfg.ranks end

-- comm = "multimem" reduces on the switch, in its own order: only two_shot, where one rank
-- reduces each `unit` and multimem.st hands every rank those bits; fallback only with multimem.
function M.check_multimem(cfg, errs, unit)
  if cfg.comm == "multimem" then
    if cfg.algo ~= "two_shot" then
      errs.add("algo", cfg.algo, 'comm = "multimem" needs algo = "two_shot": the switch reduces in its own order, ' ..
        "so only one rank may reduce each " .. unit .. " (then multimem.st gives every rank those bits)")
    end
  elseif cfg.fallback ~= "none" then
    errs.add("fallback", cfg.fallback, 'only comm = "multimem" has a fallback; leave it "none"')
  end
end

M.INT_MAX = 2147483647

return M
