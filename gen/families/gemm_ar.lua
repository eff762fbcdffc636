-- gen/families/gemm_ar.lua: GEMM + allreduce, the row-parallel linear layer whose output every
-- rank keeps whole.  Rank r of P holds A_r (M x k, its K shard of A: k = K / P) and B_r (k x N);
-- every rank ends with all M x N of sum_p A_p . B_p (f32 accumulation, folded in rank order by
-- the rank that owns the rows, rounded once: the same bits on every rank and every run).
-- gemm_rs (gen/families/gemm_rs.lua) plus a gather: its fields, checks, manifest and rule, with
-- multimem for the second phase.  Device side: templates/weft/gemm_ar.cuh.
local common = require("gen.core.common")
local gemm = require("gen.core.gemm")
local rs = require("gen.families.gemm_rs")

local F = {
  name = "gemm_ar",
  template = "templates/gemm_ar.cu",
  doc = "sum over ranks of A_r . B_r on every rank, the same bits everywhere; launch with weft_comm_launch",
}

local COMM = {
  name = "comm", kind = "enum", values = { "threadload", "multimem" }, default = "threadload", tag = "",
  doc = "threadload: f32 tiles pushed to their owners with 8-byte stores, the rounded rows read back from the "
    .. "owners; multimem: every partial stays home, the owner's multimem.ld_reduce sums them and multimem.st "
    .. "hands every rank the rounded rows (fallback = \"emulate\": the unicast twin, folded in rank order)",
}

F.fields = {}
for _, f in ipairs(rs.fields) do
  if f.name == "comm" then
    F.fields[#F.fields + 1] = COMM
  elseif f.name == "reduce" then
    F.fields[#F.fields + 1] = { name = "reduce", kind = "enum", values = { "ordered" }, default = "ordered", tag = "",
      doc = "ordered: the owner of each row block folds the P f32 partials in rank order and rounds once, and every "
        .. "rank copies those bits (multimem: the switch's order, the same bits on every rank)" }
  elseif f.name == "reducer" then
    F.fields[#F.fields + 1] = { name = "reducer", kind = "enum", values = { "consumers" }, default = "consumers",
      tag = "rd", doc = "consumers: each own tile folded by its warpgroup (fold = \"tiles\"), or every warp once the "
        .. "GEMM is done (fold = \"after\"); gemm_rs's reducer = \"producer\" is not built here" }
  elseif f.name == "fold" then
    F.fields[#F.fields + 1] = { name = "fold", kind = "enum", values = { "after", "tiles" }, default = "after",
      tag = "fd", doc = "after: every CTA folds its share of the rank's rows once every rank's tiles are in; tiles "
        .. "(threadload): each own tile folded in its epilogue as gemm_rs's fold = \"tiles\"; then the gather" }
  else
    F.fields[#F.fields + 1] = f
  end
end

-- gemm_rs's checks: among them a fallback only with multimem, and multimem only with fold = "after"
F.check = rs.check

-- c: all M x N rows of the sum; a: this rank's M x k block of A; b: its k x N block of B.
-- The data area per half: the m x n f32 partials (threadload: P slots of this rank's rows, one per
-- source rank; multimem: this rank's own partial of all rows), then m x n of T, the rounded sum
-- (elem_bytes: 4 + the dtype's size per element of m x n).
-- fold = "tiles": gemm_rs's flags (a region of their own) and no DONE.
function F.derive(cfg)
  local mm, tiles = cfg.comm == "multimem", cfg.fold == "tiles"
  return rs.derive_as(cfg, { struct = "GemmArCfg", body = "gemm_ar_wgmma",
    lines = { "static constexpr bool MULTIMEM = " .. tostring(mm) .. ";",
              "static constexpr bool FOLD_TILES = " .. tostring(tiles) .. ";" },
    comm = { signals = { tiles and "tile" or "done", "folded" }, halves = 2, elem_bytes = 4 + common.ESIZE[cfg.dtype],
             elems = { "m", "n" }, divide = "m", multimem = mm, emulate = cfg.fallback == "emulate",
             flag_div = tiles and 2 or nil } })
end

F.sizes = gemm.SIZES   -- m: all rows; k: this rank's share of K
F.key = gemm.KEY

-- gemm_rs's rule (the GEMM's wave model for the per-rank problem, the world size where several).
F.auto = rs.auto_for("gemm_ar")

F.run = rs.run

return F
