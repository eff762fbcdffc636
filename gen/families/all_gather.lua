-- gen/families/all_gather.lua: every rank gets y[p*n + i] = x_p[i] (x: n elements on every rank,
-- y: P*n), bit-exact and the same on every rank.  NCCL's ncclAllGather, n its sendcount.  The
-- allreduce's second phase on its own.  Device side: templates/weft/collectives.cuh (data path
-- and protocol) and weft/signal.cuh.
local common = require("gen.core.common")
local coll = require("gen.core.collective")

local F = {
  name = "all_gather",
  template = "templates/all_gather.cu",
  doc = "y[p*n + i] = x_p[i] on every rank; launched with weft_comm_launch",
}

F.fields = { common.dtype() }
for _, f in ipairs(coll.fields("threadload: every rank stages x, every rank reads the others' with 16-byte loads; "
  .. "multimem: one multimem.st of x into every rank's buffer, then local reads")) do F.fields[#F.fields + 1] = f end

function F.check(cfg, errs) coll.check_fallback(cfg, errs) end

-- threadload stages n elements per half (x, read by the others); multimem P*n (a chunk per sender)
function F.derive(cfg) return coll.derive(cfg, {}, cfg.comm == "multimem") end

F.sizes = { "n" }
F.key = { "dtype" }
F.auto = coll.auto
function F.run(cfg, d) return coll.run(cfg, d, F.key) end

return F
