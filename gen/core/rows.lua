-- gen/core/rows.lua: the shape rule shared by the row families (row_softmax, row_reduce,
-- rmsnorm): which launch shape (cluster, threads, min_blocks, persistent, exchange) moves a
-- rows x cols problem fastest.
--
-- A row goes to one cluster; each CTA holds (onchip) or streams its slice.  The estimate for a
-- candidate, in microseconds, is a small model of an H100/H200-class memory system:
--   - bandwidth needs bytes in flight: an SM reaches the copy rate with about INFLIGHT bytes of
--     loads outstanding; fewer, proportionally less (Little's law: ~4 TB/s x ~1.2 us over 132 SMs);
--   - the work comes in waves of the co-resident CTAs: a partial last wave costs a whole one;
--   - every row pays a combine: a block reduction, plus a cluster barrier round when cluster > 1
--     (push is cheaper than pull: one st.async instead of a barrier and a load round);
--   - each launch and each non-persistent CTA costs a little.
-- The constants are fitted to the sweeps of bench/auto/ (bench/RESULTS.md, "auto"); the model ranks
-- candidates, so only its ordering matters.  Its inputs are the shape, the element size, the
-- registers a thread needs (the family says) and dev.sms.

local M = {}

M.COPY_GBS = 4200        -- the H200's device copy rate (bench/RESULTS.md: copy baselines 4198-4261 GB/s)
M.INFLIGHT = 40 * 1024   -- bytes of loads in flight per SM for the full rate
M.ROW_US = 0.9           -- a block reduction round per row (two for softmax: the family says how many)
M.CLUSTER_US = { pull = 1.6, push = 0.9 }   -- a cluster combine round
M.CTA_US = 0.05          -- launching one CTA (spread over the SMs)
M.LAUNCH_US = 2.5        -- one kernel launch

local THREADS = { 128, 256, 512, 1024 }
local CLUSTERS = { 1, 2, 4, 8, 16 }

local function cdiv(a, b) return (a + b - 1) // b end

-- CTAs of `threads` that fit on an SM with `regs` registers per thread (the 64K register file,
-- 2048 threads, 32 blocks; registers are allocated per warp in units of 256).
function M.ctas_per_sm(threads, regs)
  regs = math.max(24, cdiv(regs, 8) * 8)
  local by_regs = 65536 // (cdiv(regs * 32, 256) * 256 * (threads // 32))
  return math.max(0, math.min(2048 // threads, by_regs, 32))
end

-- est(p) -> microseconds.  p: rows, bytes_row (bytes moved per row, read + written), load_row
-- (bytes read per row: what is in flight), cluster, threads, regs, inflight_thread (bytes of
-- loads a thread has outstanding), rounds (combine rounds per row), exchange, persistent, sms.
function M.estimate(p)
  local per_sm = M.ctas_per_sm(p.threads, p.regs)
  if per_sm == 0 then return math.huge end
  local ctas = p.rows * p.cluster
  local slots = p.sms * per_sm - (p.sms * per_sm) % p.cluster   -- clusters are placed whole
  local active = math.min(ctas, slots)
  local waves = cdiv(ctas, slots)
  -- in flight per SM: the resident threads' outstanding loads, at most the row slices they hold
  local resident_per_sm = active / p.sms
  local slice = p.load_row / p.cluster
  local inflight = resident_per_sm * math.min(p.threads * p.inflight_thread, slice)
  local rate = M.COPY_GBS * math.min(1, inflight / M.INFLIGHT) * 1e3   -- bytes per us
  local bytes = p.rows * p.bytes_row
  -- a partial last wave costs a whole one
  local quant = waves * active / ctas
  local t = bytes / rate * quant
  local combine = p.rounds * M.ROW_US + (p.cluster > 1 and p.rounds * M.CLUSTER_US[p.exchange or "pull"] or 0)
  t = t + waves * combine
  if not p.persistent then t = t + ctas * M.CTA_US / p.sms end
  return t + M.LAUNCH_US
end

-- The candidates of a row family, best first (at most `keep`).  variants: a list of functions
-- at(cluster, threads, min_blocks) -> nil (does not fit) or { regs (per thread), inflight (bytes
-- a thread has outstanding), rows (units of work: rows, or groups of rows a CTA takes), bytes_row
-- and load_row (per unit: moved, and read), rounds (combines per unit), fields (the family's
-- own values: mode, max_cols, unroll, ...) }.  fixed: the user's config; a field it fixes is
-- not varied (cluster, threads, min_blocks, persistent, exchange).  A cluster exchanges by push
-- unless the config fixes pull: push was faster in every row loop measured (bench/RESULTS.md,
-- "Run 4: exchange = push in the row loops").
function M.candidates(shape, dev, fixed, variants, keep)
  local out = {}
  local sms = dev.sms or 132
  local function axis(name, all) return fixed[name] ~= nil and { fixed[name] } or all end
  for _, c in ipairs(axis("cluster", CLUSTERS)) do
    for _, t in ipairs(axis("threads", THREADS)) do
      for _, mb in ipairs(axis("min_blocks", { 1, 2 })) do
        for _, at in ipairs(variants) do
          local w = math.type(c) == "integer" and math.type(t) == "integer" and math.type(mb) == "integer"
            and t * mb <= 2048 and at(c, t, mb)
          if w then
            for _, x in ipairs(axis("exchange", c > 1 and { "push" } or { "pull" })) do
              for _, pers in ipairs(axis("persistent", { false, true })) do
                local us = M.estimate({ rows = w.rows, bytes_row = w.bytes_row, load_row = w.load_row,
                  cluster = c, threads = t, regs = w.regs, inflight_thread = w.inflight, rounds = w.rounds,
                  exchange = x, persistent = pers == true, sms = sms })
                local v = {}
                for k, f in pairs(w.fields or {}) do v[k] = f end
                v.cluster, v.threads, v.min_blocks, v.persistent = c, t, mb, pers
                if c > 1 then v.exchange = x end
                if c > 8 then v.nonportable = true end
                v.why = string.format("%scluster %d x %d threads%s%s%s: estimated %.1f us (gen/core/rows.lua's model)",
                  w.fields and w.fields.mode and (w.fields.mode .. ", ") or "", c, t, mb > 1 and (", min_blocks " .. mb) or "",
                  pers == true and ", persistent" or "", c > 1 and (", " .. tostring(x)) or "", us)
                out[#out + 1] = { us = us, v = v, order = #out }
              end
            end
          end
        end
      end
    end
  end
  table.sort(out, function(a, b)
    if a.us ~= b.us then return a.us < b.us end
    return a.order < b.order
  end)
  local list = {}
  for i = 1, math.min(keep or 8, #out) do list[i] = out[i].v end
  return list
end

-- Registers per thread a kernel may hold its row data in: the register file shared by
-- min_blocks CTAs, less what the kernel itself needs, at most `most` (the spill margin).
function M.data_budget(threads, min_blocks, overhead, most)
  local cap = math.min(255, 65536 // (threads * min_blocks)) - overhead
  return math.max(0, math.min(most, cap - cap % 4))
end

M.cdiv = cdiv
return M
