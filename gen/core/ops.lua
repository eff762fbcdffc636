-- gen/core/ops.lua: reduction operators.  An operator is a combine expression of two f32 values
-- `a` and `b` plus an identity; the templates turn it into a functor type (weft/ops.cuh).
-- Builtins are a small table (name -> code); a custom operator is given in Lua:
--   op = { combine = "fmaxf(a, b) + 0.0f", identity = "-1e30f" }
-- Its text is CUDA C inserted into the kernel, so it must be one expression: a small tokenizer
-- admits identifiers (a and b in combine, and an allowlist of math functions), numbers,
-- operators and balanced parentheses, and nothing else -- no statements, braces, digraphs,
-- comments, strings or preprocessor.  `ref = function(a, b) ... end` optionally gives the host
-- a reference for checks.

local M = {}

M.builtin = {
  sum  = { combine = "a + b",        identity = "0.0f" },
  prod = { combine = "a * b",        identity = "1.0f" },
  max  = { combine = "fmaxf(a, b)",  identity = "__int_as_float(0xff800000)" },  -- -inf
  min  = { combine = "fminf(a, b)",  identity = "__int_as_float(0x7f800000)" },  -- +inf
}
M.names = { "sum", "max", "min", "prod" }

-- FNV-1a, 64-bit: a stable short tag for custom operators in kernel names.
function M.fnv1a(s)
  local h = -3750763034362895579   -- 0xcbf29ce484222325
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = h * 1099511628211          -- 0x100000001b3, wraps like uint64
  end
  return string.format("%016x", h)
end

-- What an operator expression may call (float math the kernels' headers provide).
M.FUNCTIONS = {}
for _, f in ipairs({ "fmaxf", "fminf", "fabsf", "sqrtf", "rsqrtf", "expf", "exp2f", "__expf", "logf", "log2f",
                     "__logf", "powf", "fmaf", "copysignf", "floorf", "ceilf", "truncf", "roundf", "rintf",
                     "__int_as_float", "__float_as_int", "__fadd_rn", "__fmul_rn", "__saturatef", "max", "min" }) do
  M.FUNCTIONS[f] = true
end
M.MAX_EXPR = 4096   -- characters

-- The punctuation an expression may hold, longest first: C's arithmetic, comparison, logical,
-- bitwise and conditional operators.
local OPERATORS = { "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
                    "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^", "?", ":", "," }

-- nil if s is one expression over the identifiers `vars` (a set), else what is wrong.
local function bad_expr(s, vars)
  if type(s) ~= "string" or s:match("^%s*$") then return "must be a non-empty string of CUDA C" end
  if #s > M.MAX_EXPR then return string.format("is %d characters: at most %d", #s, M.MAX_EXPR) end
  local i, depth, n = 1, 0, #s
  while i <= n do
    local c = s:sub(i, i)
    if c:match("%s") then
      if c ~= " " and c ~= "\t" then return "must be a single expression: no ; { } # \\ or newlines" end
      i = i + 1
    elseif c:match("[%a_]") then
      local id = s:match("^[%w_]+", i)
      local after = s:match("^%s*(.?)", i + #id)
      if M.FUNCTIONS[id] then
        if after ~= "(" then return "calls " .. id .. " without parentheses" end
      elseif not vars[id] then
        local names = {}
        for v in pairs(vars) do names[#names + 1] = v end
        table.sort(names)
        return "uses " .. id .. ": an expression may name only " ..
          (#names > 0 and table.concat(names, ", ") .. " and " or "") .. "the math functions " .. M.function_list()
      end
      i = i + #id
    elseif c:match("[%d.]") then
      local num = s:match("^0[xX]%x+[uU]?", i) or s:match("^%d*%.?%d+[eE][+-]?%d+[fF]?", i) or
                  s:match("^%d+%.?%d*[eE][+-]?%d+[fF]?", i) or s:match("^%d*%.%d+[fF]?", i) or
                  s:match("^%d+%.%d*[fF]?", i) or s:match("^%d+[uU]?", i)
      if not num then return "has a malformed number at " .. s:sub(i, i + 10) end
      if s:sub(i + #num, i + #num):match("[%w_.]") then return "has a malformed number at " .. s:sub(i, i + #num + 5) end
      i = i + #num
    elseif c == "(" then depth = depth + 1; i = i + 1
    elseif c == ")" then
      depth = depth - 1
      if depth < 0 then return "has a ) without its (" end
      i = i + 1
    elseif c:match("[;{}#\\]") then
      return "must be a single expression: no ; { } # \\ or newlines"
    else
      if s:sub(i, i + 1) == "/*" or s:sub(i, i + 1) == "//" then return "must not hold comments (/* or //)" end
      if s:sub(i, i + 1) == "<%" or s:sub(i, i + 1) == "%>" or s:sub(i, i + 1) == "<:" or s:sub(i, i + 1) == ":>" or
         s:sub(i, i + 1) == "%:" then
        return "must not hold digraphs (<% %> <: :> %:): it is one expression, not a block"
      end
      local op
      for _, o in ipairs(OPERATORS) do
        if s:sub(i, i + #o - 1) == o then op = o; break end
      end
      if not op then
        return string.format("holds %q: an expression is names, numbers, operators (+ - * / %% < > == && || ! ? : ...) and parentheses", c)
      end
      i = i + #op
    end
  end
  if depth > 0 then return "has a ( without its )" end
  return nil
end

function M.function_list()
  local names = {}
  for f in pairs(M.FUNCTIONS) do names[#names + 1] = f end
  table.sort(names)
  return table.concat(names, ", ")
end

local allowed = 'must be one of "sum", "max", "min", "prod", or a table ' ..
  '{ combine = "<CUDA expression of a, b>", identity = "<CUDA expression>" }'

-- check(v) -> normalised op | nil, what is allowed   (the schema's custom checker)
function M.check(v)
  if type(v) == "string" then
    local b = M.builtin[v]
    if not b then return nil, allowed end
    return { name = v, combine = b.combine, identity = b.identity, tag = v }
  end
  if type(v) ~= "table" then return nil, allowed end
  for k in pairs(v) do
    if k ~= "combine" and k ~= "identity" and k ~= "ref" then
      return nil, "custom op has unknown key " .. tostring(k) .. "; keys are combine, identity, ref"
    end
  end
  if v.combine == nil then return nil, "custom op needs combine = \"<CUDA expression of a, b>\"" end
  if v.identity == nil then
    return nil, "custom op needs identity = \"<CUDA expression>\", the value x with combine(x, a) == a"
  end
  local e = bad_expr(v.combine, { a = true, b = true })
  if e then return nil, "custom op combine " .. e end
  e = bad_expr(v.identity, {})
  if e then return nil, "custom op identity " .. e end
  if v.ref ~= nil and type(v.ref) ~= "function" then
    return nil, "custom op ref must be a Lua function(a, b) returning a number"
  end
  return { name = "custom", combine = v.combine, identity = v.identity, ref = v.ref,
           tag = "cx" .. M.fnv1a(v.combine .. "\0" .. v.identity):sub(1, 10) }
end

return M
