-- gen/core/ops.lua: reduction operators.  An operator is a combine expression of two f32 values
-- `a` and `b` plus an identity; the templates turn it into a functor type (weft/ops.cuh).
-- Builtins are a small table (name -> code); a custom operator is given in Lua:
--   op = { combine = "fmaxf(a, b) + 0.0f", identity = "-1e30f" }
-- Its text is CUDA C inserted into the kernel, so it must be one expression: no ; { } # or
-- newlines.  `ref = function(a, b) ... end` optionally gives the host a reference for checks.

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

local function bad_expr(s)
  if type(s) ~= "string" or s:match("^%s*$") then return "must be a non-empty string of CUDA C" end
  if s:find("[;{}#\n\r\\]") then return "must be a single expression: no ; { } # \\ or newlines" end
  return nil
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
  local e = bad_expr(v.combine)
  if e then return nil, "custom op combine " .. e end
  e = bad_expr(v.identity)
  if e then return nil, "custom op identity " .. e end
  if v.ref ~= nil and type(v.ref) ~= "function" then
    return nil, "custom op ref must be a Lua function(a, b) returning a number"
  end
  return { name = "custom", combine = v.combine, identity = v.identity, ref = v.ref,
           tag = "cx" .. M.fnv1a(v.combine .. "\0" .. v.identity):sub(1, 10) }
end

return M
