-- gen/core/config.lua: loading a config in a sandbox, and --set overrides.
--
-- A config is a Lua chunk that returns a table.  It runs with no io, os, require, load or
-- debug: only pure functions (math, string, table, utf8, pairs, ...), so a config cannot touch
-- the machine, and its result depends on nothing but its text (no addresses, no hash order).
-- It is bounded in instructions (a count hook), wall-clock time and memory (the C side's
-- allocator), and what it returns must be a tree of bounded depth.

local M = {}

M.MAX_INSTRUCTIONS = 10000000
M.HOOK_STEP = 1000             -- instructions between the hook's looks at the count and the clock
M.MAX_DEPTH = 32               -- nested tables in what a config returns
M.MAX_VALUES = 1000000         -- values in it, a shared table counted at every place it appears
M.PATTERN_STEPS = 1e9          -- the worst case a pattern call may have inside a config
M.MAX_MOVE = 1 << 24           -- elements one table.move may copy inside a config

-- The caps the C side read from the environment (WEFT_CONFIG_MEMORY_MB, WEFT_CONFIG_SECONDS).
local function caps()
  if weft_sandbox_caps then return weft_sandbox_caps() end
  return 256, 10
end

-- The sandboxed calls in progress, innermost last: the string guards and pcall read the
-- innermost one's deadline and verdict.
local active = {}

local clock = weft_clock or function() return 0 end
local is_active = weft_sandbox_active or function() return #active > 0 end

-- Raised at level 3: the config's line that called the guarded library function.
local function check_time(level)
  local st = active[#active]
  if st and clock() > st.deadline then
    st.why = st.time_msg
    error(st.why, level + 1)
  end
end

-- ---- guards on the string library ------------------------------------------------------------
--
-- The count hook sees Lua instructions only, not the time spent inside one C function.  Lua
-- patterns have no alternation, so a match's worst case is (length + 1) ^ (repetition items)
-- per start position: a call whose bound passes PATTERN_STEPS would run for hours, and is
-- refused before it starts.  string.rep("", n) loops n times allocating nothing, so the memory
-- cap never sees it.  These guards hold while a config's code runs (the generator's own
-- template work is trusted, and larger), and every string reaches them: the string
-- metatable's __index is this table.

local byte, format, find, match, gmatch, gsub, rep = string.byte, string.format, string.find,
  string.match, string.gmatch, string.gsub, string.rep

local function skip_set(p, i, n)   -- p[i] is '[': the index after its ']'
  i = i + 1
  if byte(p, i) == 94 then i = i + 1 end
  repeat
    if i > n then return n + 1 end
    local c = byte(p, i)
    i = i + (c == 37 and 2 or 1)
  until byte(p, i) == 93 or i > n
  return i + 1
end

-- -> repetition items (* + - %b), optional items (?), anchored
local function pattern_shape(p)
  local n, i, q, o = #p, 1, 0, 0
  local anchored = byte(p, 1) == 94
  if anchored then i = 2 end
  while i <= n do
    local c, single = byte(p, i), true
    if c == 40 or c == 41 then i, single = i + 1, false
    elseif c == 37 then
      local d = byte(p, i + 1)
      if d == 98 then q, i, single = q + 1, i + 4, false
      elseif d == 102 then i, single = skip_set(p, i + 2, n), false
      elseif d and d >= 48 and d <= 57 then i, single = i + 2, false
      else i = i + 2 end
    elseif c == 91 then i = skip_set(p, i, n)
    else i = i + 1 end
    if single and i <= n then
      local e = byte(p, i)
      if e == 42 or e == 43 or e == 45 then q, i = q + 1, i + 1
      elseif e == 63 then o, i = o + 1, i + 1 end
    end
  end
  return q, o, anchored
end

local function guard_pattern(name, s, p, init, every_start)
  check_time(3)
  if type(p) ~= "string" or (type(s) ~= "string" and type(s) ~= "number") then return end
  local n = #tostring(s)
  local q, o, anchored = pattern_shape(p)
  local starts = anchored and 1 or (every_start and n + 1 or math.max(n - (math.tointeger(init) or 1) + 2, 1))
  local steps = starts * (n + 1.0) ^ q * 2.0 ^ o
  if steps > M.PATTERN_STEPS then
    error(format("string.%s: the pattern %q on a %d-byte string could take %.3g steps (%d repetition items): " ..
      "at most %.0e inside a config: simplify the pattern or shorten the string", name, p, n, steps, q,
      M.PATTERN_STEPS), 3)
  end
end

-- The library's own errors ("bad argument", "resulting string too large") are raised again at
-- the config's line, not at the guard's; a limit's or the memory cap's error passes unchanged.
local function relay(ok, ...)
  if ok then return ... end
  local e = ...
  local st = active[#active]
  if type(e) ~= "string" or e == "not enough memory" or (st and st.why) then error(e, 0) end
  error((gsub(e, "^gen/core/config%.lua:%d+: ", "")), 2)   -- 2: the wrappers tail-call relay
end

function string.find(s, p, init, plain)
  if not is_active() then return find(s, p, init, plain) end
  if not plain then guard_pattern("find", s, p, init, false) end
  return relay(pcall(find, s, p, init, plain))
end
function string.match(s, p, init)
  if not is_active() then return match(s, p, init) end
  guard_pattern("match", s, p, init, false)
  return relay(pcall(match, s, p, init))
end
function string.gmatch(s, p, init)
  if not is_active() then return gmatch(s, p, init) end
  guard_pattern("gmatch", s, p, init, true)
  return relay(pcall(gmatch, s, p, init))
end
function string.gsub(s, p, r, n)
  if not is_active() then return gsub(s, p, r, n) end
  guard_pattern("gsub", s, p, 1, true)
  return relay(pcall(gsub, s, p, r, n))
end
function string.rep(s, n, sep)
  if not is_active() then return rep(s, n, sep) end
  check_time(2)
  if (type(s) == "string" and #s == 0) and (sep == nil or sep == "") and math.type(n) then return "" end
  return relay(pcall(rep, s, n, sep))
end

-- A table's or a function's address would make a config's output depend on where the
-- allocator put it: inside a config they print as their type alone.
local function safe_tostring(v)
  local t = type(v)
  if t == "table" or t == "function" or t == "thread" or t == "userdata" then return t end
  return tostring(v)
end
M.safe_tostring = safe_tostring

function string.format(fmt, ...)
  if not is_active() then return format(fmt, ...) end
  check_time(2)
  if type(fmt) == "string" and find(gsub(fmt, "%%%%", ""), "%%[-+ #0]*%d*%.?%d*p") then
    error("string.format: %p prints an address, which would make the config's output differ from run to run", 2)
  end
  local args = table.pack(...)
  for i = 1, args.n do
    local t = type(args[i])
    if t ~= "string" and t ~= "number" then args[i] = safe_tostring(args[i]) end
  end
  return relay(pcall(format, fmt, table.unpack(args, 1, args.n)))
end

-- ---- a deterministic traversal ---------------------------------------------------------------
--
-- next's order follows the hash of the keys, and Lua seeds string hashes per process: pairs
-- inside a config walks keys sorted instead (numbers, then strings, then false, true; keys
-- of other types last, in table order), so its output is the same in every run.

local function sorted_keys(t)
  local nums, strs, rest = {}, {}, {}
  for k in next, t do
    local ty = type(k)
    if ty == "number" then nums[#nums + 1] = k
    elseif ty == "string" then strs[#strs + 1] = k
    elseif ty ~= "boolean" then rest[#rest + 1] = k end
  end
  table.sort(nums)
  table.sort(strs)
  for _, k in ipairs(strs) do nums[#nums + 1] = k end
  if rawget(t, false) ~= nil then nums[#nums + 1] = false end
  if rawget(t, true) ~= nil then nums[#nums + 1] = true end
  for _, k in ipairs(rest) do nums[#nums + 1] = k end
  return nums
end

local function sandbox_pairs(t)
  if type(t) ~= "table" then error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ")", 2) end
  local keys, i = sorted_keys(t), 0
  return function()
    repeat
      i = i + 1
      local k = keys[i]
      if k == nil then return nil end
      local v = rawget(t, k)
      if v ~= nil then return k, v end
    until false
  end, t, nil
end

local function sandbox_next(t, k)
  if type(t) ~= "table" then error("bad argument #1 to 'next' (table expected, got " .. type(t) .. ")", 2) end
  local keys = sorted_keys(t)
  local i = 1
  if k ~= nil then
    i = nil
    for j, x in ipairs(keys) do if rawequal(x, k) then i = j + 1 break end end
    if not i then error("invalid key to 'next'", 2) end
  end
  local key = keys[i]
  if key == nil then return nil end
  return key, rawget(t, key)
end

-- ---- the environment -------------------------------------------------------------------------

local function sandbox()
  -- pcall would swallow the limits' errors: once a limit is hit, re-raise it.
  local function guarded_pcall(f, ...)
    local r = table.pack(pcall(f, ...))
    local st = active[#active]
    if st and not st.why and r[1] == false and r[2] == "not enough memory" then st.why = st.mem_msg end
    if st and st.why then error(st.why, 2) end
    return table.unpack(r, 1, r.n)
  end
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = sandbox_next, pairs = sandbox_pairs,
    select = select, tonumber = tonumber, tostring = safe_tostring, type = type,
    pcall = guarded_pcall, rawequal = rawequal, rawget = rawget, rawlen = rawlen,
    math = {}, string = {}, table = {}, utf8 = {},
  }
  for k, v in pairs(math) do if k ~= "random" and k ~= "randomseed" then env.math[k] = v end end
  for k, v in pairs(string) do if k ~= "dump" then env.string[k] = v end end
  for k, v in pairs(table) do
    -- the C loops of the table library see no hook: the clock is read before each, and
    -- table.move (which need not allocate) is bounded by its count
    env.table[k] = function(...)
      check_time(2)
      return relay(pcall(v, ...))
    end
  end
  local move = table.move
  env.table.move = function(a, f, e, t, b)
    check_time(2)
    if math.type(f) and math.type(e) and e - f >= M.MAX_MOVE then
      error(format("table.move: %.0f elements: at most %d inside a config", e - f + 1.0, M.MAX_MOVE), 2)
    end
    return relay(pcall(move, a, f, e, t, b))
  end
  for k, v in pairs(utf8) do env.utf8[k] = v end
  return env
end

-- run(f, file, what, budget, ...) -> true, f's first result | nil, message, the error f raised
-- (a string; nil when a limit stopped it).
-- Runs a config's code (its chunk, or a function it returned) inside the limits: at most
-- MAX_INSTRUCTIONS instructions, budget.seconds of wall-clock time (the sandbox's cap when
-- budget is nil; a sweep shares one budget over all its calls), and the memory cap.
function M.run(f, file, what, budget, ...)
  local memory_mb, seconds = caps()
  budget = budget or { seconds = seconds }
  local src = "@" .. file
  local start = clock()
  local st = {
    deadline = start + budget.seconds,
    limit_msg = string.format("%s ran for more than %d instructions: does it loop forever?", what, M.MAX_INSTRUCTIONS),
    time_msg = string.format("%s ran for more than %d s (the cap on a config's time; WEFT_CONFIG_SECONDS raises it): " ..
      "does it loop forever?", what, seconds),
    mem_msg = string.format("%s used more than %d MB of memory (the cap on a config; WEFT_CONFIG_MEMORY_MB raises it)",
      what, memory_mb),
  }
  local co = coroutine.create(f)
  local count = 0
  debug.sethook(co, function()
    count = count + M.HOOK_STEP
    if count >= M.MAX_INSTRUCTIONS then st.why = st.limit_msg
    elseif clock() > st.deadline then st.why = st.time_msg
    else return end
    -- and on every later instruction of the config itself (not of weft's pcall wrapper)
    debug.sethook(co, function()
      if debug.getinfo(2, "S").source == src then error(st.why, 2) end
    end, "", 1)
    -- now only if the config's own code is running: inside one of weft's guards (a busy machine
    -- can cross the deadline there) the message would name the guard's line, not the config's;
    -- the hook above raises it at the config's next instruction
    if debug.getinfo(2, "S").source == src then error(st.why, 2) end
  end, "", M.HOOK_STEP)
  active[#active + 1] = st
  local token, hit_before = true, false
  if weft_sandbox_enter then token, hit_before = weft_sandbox_enter() end
  local ok, result = coroutine.resume(co, ...)
  local hit = false
  if weft_sandbox_leave then hit = weft_sandbox_leave(token, hit_before) end
  active[#active] = nil
  budget.seconds = budget.seconds - (clock() - start)
  if not ok then
    if hit and not st.why then
      -- "not enough memory" carries no position: the config's line is still on the dead
      -- coroutine's stack
      st.why = st.mem_msg
      for level = 0, 20 do
        local info = debug.getinfo(co, level, "Sl")
        if not info then break end
        if info.source == src and info.currentline > 0 then
          st.why = file .. ":" .. info.currentline .. ": " .. st.mem_msg
          break
        end
      end
    end
    local raw = not st.why and type(result) == "string" and result or nil
    if st.why and (type(result) ~= "string" or not result:find(st.why, 1, true)) then result = st.why end
    if type(result) ~= "string" then
      return nil, string.format("%s: %s raised an error whose value is a %s, not a message", file, what, type(result))
    end
    if not result:find(file, 1, true) then result = file .. ": " .. result end
    -- an error raised through nested library calls (a gsub whose function recurses until the C
    -- stack overflows) gets the same position once per level: said once, with the count
    local pos = result:match("^([^\n]-:%d+: )")
    if pos then
      local n, at = 0, 1
      while result:sub(at, at + #pos - 1) == pos do n, at = n + 1, at + #pos end
      if n > 2 then result = pos .. string.format("(%d nested calls) ", n) .. result:sub(at) end
    end
    return nil, result, raw
  end
  if coroutine.status(co) ~= "dead" then return nil, file .. ": " .. what .. " yielded" end
  return true, result
end

local function is_name(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

local function key_path(path, k)
  local kp
  if is_name(k) then kp = k
  elseif math.type(k) == "integer" then return (path or "") .. "[" .. k .. "]"
  elseif type(k) == "string" then return (path or "") .. string.format("[%q]", k)
  else return (path or "") .. "[a " .. type(k) .. " key]" end
  return path and (path .. "." .. kp) or kp
end

-- check_tree(v, file, path) -> nil | message.  What a config returns is walked by the
-- generator's recursive functions: a cycle, or nesting without end, would overflow their
-- stack and read as weft's bug.  A shared table is fine, but counted at each place.
function M.check_tree(v, file, path)
  local on_path, memo = {}, {}
  local function walk(x, p, depth)   -- -> height, values | nil, message
    if type(x) ~= "table" then return 0, 1 end
    if on_path[x] then
      return nil, string.format("%s: %s refers back to %s (a cyclic table): a config must be a tree of values",
        file, p or "the config", on_path[x] == true and "the config" or on_path[x])
    end
    local m = memo[x]
    if m then
      if depth + m[1] > M.MAX_DEPTH then
        return nil, string.format("%s: %s: tables nested %d deep: at most %d", file, p or "the config",
          depth + m[1], M.MAX_DEPTH)
      end
      return m[1], m[2]
    end
    if depth >= M.MAX_DEPTH then
      return nil, string.format("%s: %s: tables nested more than %d deep: at most %d", file, p or "the config",
        M.MAX_DEPTH, M.MAX_DEPTH)
    end
    on_path[x] = p or true
    local height, values = 0, 1
    for k, y in next, x do
      local h, n = walk(k, key_path(p, "(key)"), depth + 1)
      if not h then return nil, n end
      local h2, n2 = walk(y, key_path(p, k), depth + 1)
      if not h2 then return nil, n2 end
      height = math.max(height, h + 1, h2 + 1)
      values = values + n + n2
      if values > M.MAX_VALUES then
        return nil, string.format("%s: %s holds more than %d values (a shared table counts at every place " ..
          "it appears): at most %d", file, p or "the config", M.MAX_VALUES, M.MAX_VALUES)
      end
    end
    on_path[x] = nil
    memo[x] = { height, values }
    return height, values
  end
  local ok, e = walk(v, path, 0)
  if not ok then return e end
  return nil
end

-- A config tree copied (configs are trees: config.check_tree refuses cycles), so a caller may
-- change the copy and keep the original (sweeps, auto's candidates).
function M.deep_copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = M.deep_copy(x) end
  return c
end

-- load(text, file) -> table | nil, message
function M.load(text, file)
  -- a UTF-8 byte-order mark, as some editors save files, is not Lua: dropped (Lua's own loadfile does)
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  if text:byte(1) == 27 then
    return nil, file .. ": is a compiled Lua chunk (bytecode): a config must be Lua source text"
  end
  local chunk, err = load(text, "@" .. file, "t", sandbox())
  if not chunk then
    if not err:find(file, 1, true) then err = file .. ": " .. err end
    return nil, err
  end
  local ok, result = M.run(chunk, file, "config")
  if not ok then return nil, result end
  if type(result) ~= "table" then
    return nil, string.format("%s: the config must return a table, it returned %s", file,
      result == nil and "nothing" or type(result))
  end
  local bad = M.check_tree(result, file)
  if bad then return nil, bad end
  return result
end

-- "true"/"false" -> boolean, numbers -> number, anything else -> string (quotes stripped)
function M.parse_value(s)
  if s == "true" then return true end
  if s == "false" then return false end
  local n = math.tointeger(tonumber(s)) or tonumber(s)
  if n then return n end
  local q = s:match('^"(.*)"$') or s:match("^'(.*)'$")
  return q or s
end

-- apply(cfg, overrides, file) -> cfg | nil, message.  overrides: list of "a.b.c=value".
M.MAX_OVERRIDES = 4096   -- a config has some dozens of fields: more is a mistake, not a config

function M.apply(cfg, overrides, file)
  if #(overrides or {}) > M.MAX_OVERRIDES then
    return nil, string.format("%s: %d overrides (--set): at most %d", file, #overrides, M.MAX_OVERRIDES)
  end
  for _, o in ipairs(overrides or {}) do
    local key, value = o:match("^([^=]+)=(.*)$")
    local well_formed = key ~= nil
    if key then
      for part in (key .. "."):gmatch("([^.]*)%.") do
        if not part:match("^[%a_][%w_]*$") then well_formed = false end
      end
    end
    if not well_formed then
      return nil, string.format('%s: --set %q: expected key=value, with key a name or dotted path (tile.m=128)', file, o)
    end
    local t, parts = cfg, {}
    for p in key:gmatch("[^.]+") do parts[#parts + 1] = p end
    for i = 1, #parts - 1 do
      if t[parts[i]] == nil then t[parts[i]] = {} end
      if type(t[parts[i]]) ~= "table" then
        return nil, string.format("%s: --set %s: %s is a %s, not a table", file, o,
          table.concat(parts, ".", 1, i), type(t[parts[i]]))
      end
      t = t[parts[i]]
    end
    t[parts[#parts]] = M.parse_value(value)
  end
  return cfg
end

return M
