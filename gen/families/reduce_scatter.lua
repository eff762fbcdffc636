-- gen/families/reduce_scatter.lua: rank r of P gets y = op over the ranks of x[r*n .. r*n+n)
-- (x: P*n elements on every rank, y: n), folded in rank order 0..P-1 in f32 and rounded once:
-- the same bits on every run.  NCCL's ncclReduceScatter, n its recvcount.  The allreduce's first
-- phase on its own, and the unfused half of a GEMM + reduce-scatter.  Device side:
-- templates/weft/collectives.cuh (data path and protocol) and weft/signal.cuh.
local common = require("gen.core.common")
local coll = require("gen.core.collective")
local allreduce = require("gen.families.allreduce")

local F = {
  name = "reduce_scatter",
  template = "templates/reduce_scatter.cu",
  doc = "y = op over ranks of x[rank*n .. rank*n+n); launched with weft_comm_launch",
}

F.fields = { common.dtype(), common.op() }
for _, f in ipairs(coll.fields("threadload: every rank stages its P chunks, the owner folds its chunk from every rank "
  .. "with 16-byte loads; multimem: one multimem.ld_reduce of the own chunk")) do F.fields[#F.fields + 1] = f end

function F.check(cfg, errs)
  coll.check_fallback(cfg, errs)
  allreduce.check_switch_op(cfg, errs)
end

function F.derive(cfg)
  return coll.derive(cfg, { op_identity = cfg.op.identity, op_combine = cfg.op.combine, op_name = cfg.op.name,
                            mop = allreduce.switch_op(cfg) }, true)
end

F.sizes = { "n" }
F.key = { "dtype", "op" }
F.auto = coll.auto
function F.run(cfg, d) return coll.run(cfg, d, F.key) end

return F
