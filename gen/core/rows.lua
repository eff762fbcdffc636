-- gen/core/rows.lua: the shape rule shared by the row families (row_softmax, row_reduce,
-- rmsnorm): the launch shape (cluster, threads, min_blocks, persistent, exchange) for a
-- rows x cols problem.  A row goes to one cluster of CTAs; each CTA holds its slice of the row
-- in registers (onchip) or streams it.
--
-- The rule, read off the sweeps of bench/auto/ on the H200 (bench/RESULTS.md, "auto"):
--   1. cluster: the fewest CTAs whose registers hold the row at most PT_MAX 16-byte vectors per
--      thread (the family says what fits), then more while the grid is short of TARGET_WAVES
--      CTAs per SM and each CTA keeps at least `min_slice` bytes of the row (few rows spread
--      over clusters; a slice smaller than that costs more in the cluster combine than it saves);
--   2. threads: the fewest whose slice is at most PT_T vectors per thread (a CTA of more threads
--      than its slice needs waits on its own reduction);
--   3. persistent for every grid but the long ones of single-CTA rows (there the plain grid is as
--      fast, and a short row's loop is pure overhead); push across a cluster once the grid has a
--      wave of rows, pull (one barrier, no mbarrier set-up) while it has less;
--   4. min_blocks 1 for the onchip families (their registers are the budget); a streaming one
--      keeps about 1024 threads per SM.
-- The candidates after the first are its neighbours (cluster and threads halved and doubled,
-- persistence and exchange flipped): what first-use tuning times beside it.

local M = {}

M.PT_MAX = 16        -- vectors per thread that still leave the loads' latency hidden
M.PT_T = 8           -- vectors per thread a CTA aims for when choosing its threads
M.PT_T_FEW = 8       -- ... when rows are fewer than FEW_ROWS (latency, not bandwidth, is the cost)
M.TARGET_WAVES = 1   -- CTAs per SM the cluster choice tries to reach when rows are few
M.TARGET_FEW = 2     -- ... when they are fewer than FEW_ROWS (a single row or a few: two clusters per SM)
M.FEW_ROWS = 64
M.PLAIN_ROWS = 4     -- single-CTA rows: a plain grid from this many rows per SM
M.MIN_BLOCKS = 2     -- onchip: CTAs per SM the compiler must fit, where the row still fits

local THREADS = { 128, 256, 512, 1024 }
local CLUSTERS = { 1, 2, 4, 8, 16 }

local function cdiv(a, b) return (a + b - 1) // b end

-- Registers per thread a kernel may hold its row data in: the register file shared by
-- min_blocks CTAs, less what the kernel itself needs, at most `most` (the spill margin).
function M.data_budget(threads, min_blocks, overhead, most)
  local cap = math.min(255, 65536 // (threads * min_blocks)) - overhead
  return math.max(0, math.min(most, cap - cap % 4))
end

local function floor_pow2(x, list)
  local best = list[1]
  for _, v in ipairs(list) do if v <= x then best = v end end
  return best
end

-- choose(shape, dev, fixed, p) -> list of candidates (field tables), best first.
-- p: { bytes_row (of one row in memory), fits(cluster, threads, min_blocks) -> vectors per thread or nil when
--      the row does not fit (onchip; nil function: streaming, every layout fits), min_slice
--      (bytes), stream (true: a streaming kernel: min_blocks keeps 1024 threads per SM),
--      fields(cluster, threads) -> the family's own fields for that layout }
-- fixed: the user's config; a field it fixes is taken as it is.
function M.choose(shape, dev, fixed, p)
  local sms = dev.sms or 132
  local rows, row = shape.rows, p.bytes_row
  local function fits(c, t, m) if not p.fits then return 1 end return p.fits(c, t, m) end
  local function axis(name, all) return fixed[name] ~= nil and { fixed[name] } or all end
  local clusters, threads = axis("cluster", CLUSTERS), axis("threads", THREADS)
  local function ok(c, t)
    return math.type(c) == "integer" and math.type(t) == "integer" and c >= 1 and c <= 16 and t >= 64 and t <= 1024
      and fits(c, t) ~= nil
  end
  -- 1. cluster
  local need
  for _, c in ipairs(clusters) do
    for _, t in ipairs(threads) do
      local pt = ok(c, t) and fits(c, t)
      if pt and pt <= M.PT_MAX and not need then need = c end
    end
  end
  if not need then   -- nothing within PT_MAX: the fewest CTAs that hold the row at all
    for _, c in ipairs(clusters) do
      for _, t in ipairs(threads) do if not need and ok(c, t) then need = c end end
    end
  end
  if not need then return {} end
  local want = (rows < M.FEW_ROWS and M.TARGET_FEW or M.TARGET_WAVES) * sms / rows
  local c = need
  for _, x in ipairs(clusters) do
    if x > c and x <= want + 1e-9 and row / x >= p.min_slice then
      local any = false
      for _, t in ipairs(threads) do any = any or ok(x, t) end
      if any then c = x end
    end
  end
  -- the candidates: the choice, then its neighbours
  local out, seen = {}, {}
  local function add(cl, t, pers, x, why)
    if not ok(cl, t) then return end
    local mb = fixed.min_blocks
    if mb == nil and p.stream then mb = math.max(1, math.min(8, 1024 // t)) end
    if mb == nil then   -- onchip: the most CTAs per SM (up to MIN_BLOCKS) that still hold the row
      mb = 1
      for m = 2, M.MIN_BLOCKS do if t * m <= 2048 and fits(cl, t, m) then mb = m end end
    end
    if math.type(mb) ~= "integer" or t * mb > 2048 then mb = 1 end
    local key = table.concat({ cl, t, tostring(pers), x, mb }, "/")
    if seen[key] then return end
    seen[key] = true
    local v = p.fields(cl, t)
    v.cluster, v.threads, v.min_blocks, v.persistent = cl, t, mb, pers
    if cl > 1 then v.exchange = x end
    if cl > 8 then v.nonportable = true end
    v.why = why or string.format("cluster %d x %d threads%s%s (gen/core/rows.lua)", cl, t,
      pers and ", persistent" or "", cl > 1 and (", " .. x) or "")
    out[#out + 1] = v
  end
  local function pick_threads(cl)
    local best
    for _, t in ipairs(threads) do
      local pt = ok(cl, t) and fits(cl, t)
      if pt and pt <= (rows < M.FEW_ROWS and M.PT_T_FEW or M.PT_T) and not best then best = t end
    end
    if not best then   -- none reaches PT_T: the most threads that fit
      for _, t in ipairs(threads) do if ok(cl, t) then best = t end end
    end
    if p.stream and best and fixed.threads == nil then   -- a stream kernel: 256 or 512 threads, by the slice
      local vecs = cdiv(row // cl, 16)
      best = math.max(256, math.min(512, floor_pow2(vecs // 16, threads)))
    end
    return best
  end
  local function persistent(cl)
    if fixed.persistent ~= nil then return fixed.persistent end
    return not (cl == 1 and rows >= M.PLAIN_ROWS * sms)
  end
  local function exchange(cl)
    if fixed.exchange ~= nil then return fixed.exchange end
    return rows * cl > sms and "push" or "pull"
  end
  local t = pick_threads(c)
  if t then add(c, t, persistent(c), exchange(c)) end
  -- neighbours (only where the config leaves cluster and threads open)
  local function open(list, v) for _, x in ipairs(list) do if x == v then return true end end return false end
  for _, cl in ipairs({ c, c * 2, c // 2 }) do
    for _, tt in ipairs({ pick_threads(cl) or 0, (t or 0) * 2, (t or 0) // 2, t or 0 }) do
      if cl >= 1 and tt > 0 and open(clusters, cl) and open(threads, tt) then
        add(cl, tt, persistent(cl), exchange(cl))
        add(cl, tt, not persistent(cl), exchange(cl))
        if cl > 1 and fixed.exchange == nil then add(cl, tt, persistent(cl), exchange(cl) == "push" and "pull" or "push") end
      end
    end
  end
  return out
end

M.cdiv = cdiv
return M
