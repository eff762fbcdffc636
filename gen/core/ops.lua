-- gen/core/ops.lua: reduction operators.  An operator is a combine expression of two f32 values
-- `a` and `b` plus an identity; the templates turn it into a functor type (weft/ops.cuh).
-- Builtins are a small table (name -> code); a custom operator is given in Lua:
--   op = { combine = "fmaxf(a, b) + 0.0f", identity = "-1e30f" }
-- Its text is CUDA C pasted into the kernel (`return <combine>;` in a function of float a, b;
-- `return <identity>;` in one of no arguments), so it is parsed here, by a small recursive-descent
-- parser for the C that compiles there and means something, and refused otherwise with the
-- position and what is allowed (the grammar: below).  `ref = function(a, b) ... end` optionally
-- gives the host a reference for checks.

local schema = require("gen.core.schema")

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

-- ---- the expression language -------------------------------------------------------------------
--
-- A combine is one C expression of the f32 values a and b; an identity is one of no names (a
-- constant).  The grammar, C's precedence and associativity, loosest first:
--
--   expr    := binary [ "?" expr ":" expr ]                   (right-associative)
--   binary  := unary { OP unary }   OP, loosest first: ||   &&   |   ^   &   == !=   < > <= >=
--                                                      << >>   + -   * /            (left-associative)
--   unary   := { "+" | "-" | "!" | "~" } primary
--   primary := NUMBER | "a" | "b" | FUNCTION "(" [ expr { "," expr } ] ")" | "(" expr ")"
--
--   NUMBER  := an integer: 0, 7, 255u, 0xff800000 (decimal without a leading 0, or hex; at most
--              32 bits; suffix u or U), or a float: 1.0f, .5f, 2.f, 1e-3f, 1.5 (digits with a point
--              and/or an exponent; suffix f or F, or none for a double); in range (a literal that
--              rounds to infinity or, nonzero, to zero does not compile)
--
-- Values have one of two kinds: "f" (f32, or a double literal) and "i" (an integer: a literal,
-- a comparison, ! && ||, a bit pattern from __float_as_int).  ~ & | ^ << >> take integers only
-- (C has none of them for floats); max and min take two of one kind (CUDA's overloads are
-- ambiguous for a mix); __int_as_float takes an integer and __float_as_int an f32 (the other way
-- round would convert by value first, then reinterpret: never what is meant); / of two integers
-- is refused (C truncates it, 1/2 is 0, and 1/0 is undefined).  A combine or an identity is of
-- kind "f" as a whole: an integer result (a < b, 0, 0xff800000) would be converted to f32 by
-- value, which is a 0/1 or a number where a value or a bit pattern was meant; a function that
-- returns f32 (__int_as_float(0xff800000), fabsf(...)) makes one an f32.  Nor is a bit pattern
-- (a hex literal from 0x00800000, the bits of the smallest normal float, up; __float_as_int(...))
-- converted to f32 by value inside: as an operand of + - * / beside an f32, a branch of ?: beside
-- an f32, or an argument of a math function (a < b ? a : 0xff800000 is 4286578688.0f, not -inf);
-- what a bit operator or arithmetic made of one is a number (the exponent field,
-- (__float_as_int(a) >> 23) & 0xff).  Everything else
-- is refused: assignment, ++ --, the comma operator, %, casts, member access, indexing, address
-- and dereference, calls of anything but the functions below, and a call of a call's result.
-- Nesting (parentheses, arguments, ?: branches) is at most MAX_DEPTH deep, and a combine must
-- name a or b (a constant would be no reduction).

-- The functions an expression may call: name -> the kinds of its arguments ("x": f32 or an integer,
-- converted by value; "f": f32 only; "i": integer only; "same": f32 or integer, all of one kind)
-- and of its result ("same": the arguments' kind).
M.FUNCTIONS = {
  fmaxf = { "x", "x" }, fminf = { "x", "x" }, fabsf = { "x" }, sqrtf = { "x" }, rsqrtf = { "x" },
  expf = { "x" }, exp2f = { "x" }, __expf = { "x" }, logf = { "x" }, log2f = { "x" }, __logf = { "x" },
  powf = { "x", "x" }, fmaf = { "x", "x", "x" }, copysignf = { "x", "x" }, floorf = { "x" },
  ceilf = { "x" }, truncf = { "x" }, roundf = { "x" }, rintf = { "x" }, __saturatef = { "x" },
  __fadd_rn = { "x", "x" }, __fmul_rn = { "x", "x" },
  __int_as_float = { "i" }, __float_as_int = { "f", result = "i" },
  max = { "same", "same", result = "same" }, min = { "same", "same", result = "same" },
}
M.MAX_EXPR = 4096   -- characters
M.MAX_DEPTH = 64    -- nested parentheses, arguments and ?: branches

local PARAM_NAMES = { "x", "y", "z" }

local function signature(f)
  local sig = M.FUNCTIONS[f]
  return f .. "(" .. table.concat(PARAM_NAMES, ", ", 1, #sig) .. ")"
end

function M.function_list()
  local names = {}
  for f in pairs(M.FUNCTIONS) do names[#names + 1] = f end
  table.sort(names)
  for i, f in ipairs(names) do names[i] = signature(f) end
  return table.concat(names, ", ")
end

-- What an expression may be, for messages: vars is the set of names (a, b; none for a constant).
local function grammar(vars)
  local what = vars.a and "one C expression of the f32 values a and b: " or "one constant C expression (no a or b): "
  return what .. "numbers (2, 0xff800000u, 0.5f, 1e-3f), " .. (vars.a and "a, b, " or "") ..
    "+ - * / ! < > <= >= == != && || ?: and parentheses, ~ & | ^ << >> on integers (bit patterns from " ..
    "__float_as_int), and calls of the math functions " .. M.function_list()
end

-- Binary operators: precedence (higher binds tighter) and the kind of operands and result.
local BINARY = {
  ["||"] = { 1, "logic" }, ["&&"] = { 2, "logic" }, ["|"] = { 3, "bits" }, ["^"] = { 4, "bits" },
  ["&"] = { 5, "bits" }, ["=="] = { 6, "logic" }, ["!="] = { 6, "logic" }, ["<"] = { 7, "logic" },
  [">"] = { 7, "logic" }, ["<="] = { 7, "logic" }, [">="] = { 7, "logic" }, ["<<"] = { 8, "bits" },
  [">>"] = { 8, "bits" }, ["+"] = { 9, "arith" }, ["-"] = { 9, "arith" }, ["*"] = { 10, "arith" },
  ["/"] = { 10, "arith" },
}
-- Punctuation the lexer knows, longest first.  "%", "++" and "--" are known only to be refused
-- by name; "=" and the compound assignments are not known (they are refused as what they hold).
local PUNCT = { "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
                "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^", "?", ":", ",", "(", ")" }

local FLT_OVERFLOW = 3.4028235677973366e38   -- FLT_MAX plus half an ulp: a float literal from here rounds to inf
local FLT_UNDERFLOW = 2.0 ^ -150             -- half the smallest subnormal: a nonzero literal up to here rounds to 0

-- t quoted on one line in ASCII (schema.quote), cut after max bytes.
local function quote(t, max)
  max = max or 24
  return schema.quote(#t > max and t:sub(1, max) or t, true) .. (#t > max and "..." or "")
end

-- A message about position p of s: "<what> at character p", with the text near p when s is long
-- (the config's value is echoed before the message, but cut at 160 bytes).
local function at(s, p, what)
  local m = what .. " at character " .. p
  if #s > 60 then
    local from = math.max(1, p - 20)
    m = m .. " (near " .. (from > 1 and "..." or "") .. quote(s:sub(from, p + 20), 41) ..
      (p + 20 < #s and "..." or "") .. ")"
  end
  return m
end

-- A number at s[i]: its token or nil, why.
local function lex_number(s, i)
  local hex = s:match("^0[xX]%x+", i)
  local text, kind, j
  if hex then
    j = i + #hex
    local u = s:match("^[uU]", j)
    text, kind = hex .. (u or ""), "i"
    j = j + #(u or "")
  else
    local int = s:match("^%d*", i)
    local frac = s:match("^%.%d*", i + #int) or ""
    j = i + #int + #frac   -- (a digit is here: lex calls this at a digit, or at a point before one)
    local exp = s:match("^[eE][+-]?%d+", j)
    if not exp and s:match("^[eE]", j) then
      return nil, at(s, i, "has a malformed number " .. quote(s:sub(i, j + 2))) .. ": an exponent needs digits (1e-3f)"
    end
    exp = exp or ""
    j = j + #exp
    if frac ~= "" or exp ~= "" then
      local f = s:match("^[fF]", j) or ""
      text, kind, j = s:sub(i, j - 1) .. f, "f", j + #f
      local v, nonzero = tonumber(int .. frac .. exp), (int .. frac):find("[1-9]") ~= nil
      if f ~= "" and (v >= FLT_OVERFLOW or (nonzero and v <= FLT_UNDERFLOW)) then
        return nil, at(s, i, "has " .. quote(text)) .. ", out of the range of float (at most 3.4028235e38f; " ..
          "nonzero at least 1.4e-45f)"
      elseif f == "" and (v == math.huge or (nonzero and v == 0)) then
        return nil, at(s, i, "has " .. quote(text)) .. ", out of the range of double (at most 1.7976931348623157e308; " ..
          "nonzero at least 4.9e-324)"
      end
    else
      local u = s:match("^[uU]", j) or ""
      text, kind, j = int .. u, "i", j + #u
      if #int > 1 and int:sub(1, 1) == "0" then
        local plain = int:gsub("^0+", "")
        return nil, at(s, i, "has " .. quote(text)) .. ": a leading 0 makes C read an octal number; write " ..
          (plain == "" and "0" or plain) .. u
      end
    end
  end
  if s:match("^[%w_.]", j) then
    return nil, at(s, i, "has a malformed number " .. quote(s:sub(i, j + 5))) ..
      ": numbers are integers (7, 255u, 0xff800000) or floats (1.0f, .5f, 1e-3f, 2.5)"
  end
  if kind == "i" then
    local digits = hex and hex:sub(3):gsub("^0+", "") or text:gsub("[uU]$", ""):gsub("^0+", "")
    if (hex and #digits > 8) or (not hex and (#digits > 10 or (tonumber(digits) or 0) > 0xffffffff)) then
      return nil, at(s, i, "has " .. quote(text)) .. ": an integer has at most 32 bits (up to 0xffffffff or " ..
        "4294967295); write a larger number as a float (1e10f)"
    end
    -- a decimal past INT_MAX without u is a long in C: max / min of it and an int are ambiguous
    -- overloads (NVRTC refuses them), so such a literal is written unsigned or in hex
    if not hex and not text:match("[uU]$") and (tonumber(digits) or 0) > 0x7fffffff then
      return nil, at(s, i, "has " .. quote(text)) .. ": a decimal integer past 2147483647 is a long in C; write it " ..
        "unsigned (" .. digits .. "u), in hex (" .. string.format("0x%x", tonumber(digits)) .. "), or as a float (" ..
        digits .. ".0f); INT_MIN is (-2147483647 - 1)"
    end
  end
  return { k = "num", kind = kind, v = text, p = i }, j
end

-- lex(s, vars) -> tokens | nil, why.  Tokens: { k = "num" | "var" | "fn" | "op" | "end", v = text,
-- p = position, kind = "f" | "i" for numbers }.
local function lex(s, vars)
  local toks, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    local two = s:sub(i, i + 1)
    if c == " " or c == "\t" then
      i = i + 1
    elseif c:match("[%s;{}#\\]") then
      return nil, "must be a single expression: no ; { } # \\ or newlines (" .. at(s, i, quote(c)) .. ")"
    elseif two == "/*" or two == "//" then
      return nil, "must not hold comments (/* or //) (" .. at(s, i, quote(two)) .. ")"
    elseif two == "<%" or two == "%>" or two == "<:" or two == ":>" or two == "%:" then
      return nil, "must not hold digraphs (<% %> <: :> %:): it is one expression, not a block (" ..
        at(s, i, quote(two)) .. ")"
    elseif c:match("[%a_]") then
      local id = s:match("^[%w_]+", i)
      if M.FUNCTIONS[id] then
        toks[#toks + 1] = { k = "fn", v = id, p = i }
      elseif vars[id] then
        toks[#toks + 1] = { k = "var", v = id, p = i }
      else
        local names = {}
        for v in pairs(vars) do names[#names + 1] = v end
        table.sort(names)
        local hint = ""
        if id == "INFINITY" or id == "HUGE_VALF" or id == "CUDART_INF_F" then
          hint = " (no math constants are defined there: +inf is __int_as_float(0x7f800000), -inf __int_as_float(0xff800000))"
        elseif id == "FLT_MAX" then
          hint = " (no math constants are defined there: FLT_MAX is 3.4028235e38f)"
        end
        return nil, "uses " .. (#id > 32 and id:sub(1, 32) .. "..." or id) ..
          ": an expression may name only " .. (#names > 0 and table.concat(names, ", ") .. " and " or "") ..
          "the math functions " .. M.function_list() .. hint .. " (" .. at(s, i, "the name") .. ")"
      end
      i = i + #id
    elseif c:match("%d") or (c == "." and s:match("^%.%d", i)) then
      local tok, j = lex_number(s, i)
      if not tok then return nil, j end
      toks[#toks + 1] = tok
      i = j
    elseif c == "." then
      return nil, at(s, i, "has a malformed number " .. quote(s:sub(i, i + 5))) .. ": a . starts a number (.5f); no member access"
    else
      local op
      for _, o in ipairs(PUNCT) do
        if s:sub(i, i + #o - 1) == o then op = o; break end
      end
      if op == "++" or op == "--" then
        return nil, at(s, i, "has " .. quote(op)) .. ": no increments or decrements (to subtract a negation, " ..
          "write a - -b, with a space); " .. grammar(vars)
      elseif op == "%" then
        return nil, at(s, i, "has \"%\"") .. ": no remainder (C has no % for floats); " .. grammar(vars)
      elseif not op then
        local what = c == "=" and "no assignment; " or ""
        return nil, at(s, i, "holds " .. quote(c)) .. ": " .. what .. grammar(vars)
      end
      toks[#toks + 1] = { k = "op", v = op, p = i }
      i = i + #op
    end
  end
  toks[#toks + 1] = { k = "end", v = "", p = n + 1 }
  return toks
end

local function show_tok(t)
  if t.k == "end" then return "the end" end
  return quote(t.v)
end

-- parse(s, vars) -> "f" | "i" (the expression's kind), the set of names used, and for kind "i"
-- where = { p = position, what = the token that made it an integer }; or nil, why.  vars: the names
-- it may use.
function M.parse(s, vars)
  if type(s) ~= "string" or s:match("^%s*$") then return nil, "must be a non-empty string of CUDA C" end
  if #s > M.MAX_EXPR then return nil, string.format("is %d characters: at most %d", #s, M.MAX_EXPR) end
  local toks, why = lex(s, vars)
  if not toks then return nil, why end
  local pos, used = 1, {}
  local function peek() return toks[pos] end
  local function take() pos = pos + 1; return toks[pos - 1] end
  local function fail(msg) error({ why = msg }, 0) end
  local OPERAND = "an operand (a number, " .. (vars.a and "a, b, " or "") .. "a math function's call, - ! ~ or a parenthesis)"
  local OPERATOR = "an operator (+ - * / < == && ?: ...) or the end"
  -- t is where an operand or an operator was wanted and is not.
  local function unexpected(t, wanted)
    if t.v == "," and t.k == "op" and wanted ~= OPERAND then
      fail(at(s, t.p, "has a comma") .. ": one expression (commas only separate a math function's arguments); " ..
        grammar(vars))
    end
    local after = pos > 1 and (" after " .. show_tok(toks[pos - 1])) or ""
    if t.k == "end" then
      fail(at(s, t.p, "ends") .. after .. " where " .. wanted .. " belongs; " .. grammar(vars))
    end
    fail(at(s, t.p, "has " .. show_tok(t)) .. after .. " where " .. wanted .. " belongs; " .. grammar(vars))
  end

  -- bits (a bit pattern: a hex literal, __float_as_int(...)) converted to f32 by value, in context.
  local function by_value(bits, context)
    fail(at(s, bits.p, "converts a bit pattern to f32 by value: " .. bits.what) .. " (" .. context .. ")" ..
      ": C converts an integer as a number (0xff800000 becomes 4286578688.0f, not -inf); reinterpret the bits " ..
      "with __int_as_float(...), or write a number as a float literal (1.0f)")
  end

  local expr
  local function primary(d)
    local t = take()
    if t.k == "num" then
      local bits = t.kind == "i" and t.v:match("^0[xX]") and tonumber(t.v:match("^0[xX](%x+)"), 16) >= 0x00800000
      return t.kind, { p = t.p, what = "the integer literal " .. quote(t.v) },
        bits and { p = t.p, what = "the hex literal " .. quote(t.v) } or nil
    end
    if t.k == "var" then used[t.v] = true; return "f" end
    if t.k == "fn" then
      local sig = M.FUNCTIONS[t.v]
      if peek().v ~= "(" or peek().k ~= "op" then
        fail(at(s, t.p, "calls " .. t.v .. " without parentheses") .. ": write " .. signature(t.v))
      end
      local open = take()
      local args, argbits = {}, {}
      if peek().v == ")" then
        take()
      else
        while true do
          local k, _, b = expr(d + 1)
          args[#args + 1], argbits[#args + 1] = k, b
          local sep = peek()
          if sep.k == "op" and sep.v == ")" then take(); break end
          if sep.k == "op" and sep.v == "," then
            take()
          elseif sep.k == "end" then
            fail(at(s, open.p, "has a ( without its )") .. " (the call of " .. t.v .. ")")
          else
            unexpected(sep, "\",\" or \")\" (the call of " .. t.v .. " at character " .. t.p .. ")")
          end
        end
      end
      if #args ~= #sig then
        fail(at(s, t.p, "calls " .. t.v .. " with " .. #args .. " argument" .. (#args == 1 and "" or "s")) ..
          ": it takes " .. #sig .. ", " .. signature(t.v))
      end
      local kind, where = "f", { p = t.p, what = "the call of " .. t.v }
      for k, want in ipairs(sig) do
        if want == "i" and args[k] ~= "i" then
          fail(at(s, t.p, "calls " .. t.v .. " with an f32 argument") .. ": it reinterprets the bits of an " ..
            "integer (an integer literal such as 0xff800000, or __float_as_int(...)); an f32 would be converted by " ..
            "value first")
        elseif want == "f" and args[k] ~= "f" then
          fail(at(s, t.p, "calls " .. t.v .. " with an integer argument") .. ": it takes the bits of an f32 " ..
            "(a, b, a float literal such as 1.0f, or f32 math); an integer would be converted by value first")
        elseif want == "x" and args[k] == "i" and argbits[k] then
          by_value(argbits[k], "an argument of " .. t.v .. " at character " .. t.p)
        end
      end
      local bits
      if sig.result == "i" then bits = { p = t.p, what = "the call of " .. t.v } end
      if sig.result == "i" then kind = "i" end
      if sig.result == "same" then
        if args[1] ~= args[2] then
          fail(at(s, t.p, "calls " .. t.v .. " with an f32 and an integer") .. ": CUDA's " .. t.v ..
            " takes two f32 or two integers (a mix matches several overloads); for f32 use f" .. t.v .. "f(x, y)")
        end
        kind = args[1]
        if kind == "i" and (argbits[1] or argbits[2]) then bits = { p = t.p, what = "the " .. t.v .. " of a bit pattern" } end
      end
      return kind, where, bits
    end
    if t.k == "op" and t.v == "(" then
      local kind, where, bits = expr(d + 1)
      local close = peek()
      if close.k == "op" and close.v == ")" then take(); return kind, where, bits end
      if close.k == "end" then fail(at(s, t.p, "has a ( without its )")) end
      unexpected(close, "an operator (+ - * / < == && ?: ...) or the \")\" of the ( at character " .. t.p)
    end
    pos = pos - 1
    unexpected(t, OPERAND)
  end

  local function unary(d)
    local prefix = {}   -- a loop, not recursion: a long run of - ! is no nesting
    while peek().k == "op" and (peek().v == "-" or peek().v == "+" or peek().v == "!" or peek().v == "~") do
      prefix[#prefix + 1] = take()
    end
    local kind, where, bits = primary(d)
    for k = #prefix, 1, -1 do
      local o = prefix[k]
      if o.v == "~" or o.v == "!" then bits = nil end   -- (- and + keep a bit pattern one)
      if o.v == "~" then
        if kind ~= "i" then
          fail(at(s, o.p, "applies ~ to an f32 value") .. ": ~ & | ^ << >> take integers (bit patterns: " ..
            "__float_as_int(a), integer literals)")
        end
        where = { p = o.p, what = "the bit operator \"~\"" }
      elseif o.v == "!" then
        kind, where = "i", { p = o.p, what = "the logical operator \"!\"" }
      end
    end
    return kind, where, bits
  end

  -- What a binary operator of class c ("bits", "logic", "arith") is called when it gives an integer.
  local INT_RESULT = { bits = "the bit operator ", arith = "the integer arithmetic " }

  local function binary(minprec, d)
    local lk, where, lbits = unary(d)
    while true do
      local t = peek()
      if t.k == "op" and t.v == "(" then
        fail(at(s, t.p, "has \"(\" after " .. show_tok(toks[pos - 1])) .. ", a call of something that is not a " ..
          "function: only the math functions are called, by name (" .. M.function_list() .. ")")
      end
      local b = t.k == "op" and BINARY[t.v]
      if not b or b[1] < minprec then return lk, where, lbits end
      take()
      local first = pos
      local rk, _, rbits = binary(b[1] + 1, d)
      if t.v == "/" and lk == "i" and rk == "i" then
        fail(at(s, t.p, "divides an integer by an integer") .. ": C truncates that (1/2 is 0, and 1/0 is " ..
          "undefined); write a float literal on either side, e.g. 1.0f/2 (a bit pattern: shift it, x >> 1)")
      end
      if b[2] == "arith" and lk ~= rk then
        local bits = lk == "i" and lbits or rk == "i" and rbits
        if bits then by_value(bits, "an operand of the \"" .. t.v .. "\" at character " .. t.p .. ", beside an f32") end
      end
      lbits = nil
      if b[2] == "bits" then
        if lk ~= "i" or rk ~= "i" then
          fail(at(s, t.p, "applies " .. t.v .. " to an f32 value (on its " .. (lk ~= "i" and "left" or "right") ..
            ")") .. ": ~ & | ^ << >> take integers (bit patterns: __float_as_int(a), integer literals)")
        end
        if t.v == "<<" or t.v == ">>" then   -- (C leaves a count below 0 or of 32 and more undefined)
          local c = toks[first]
          local n = pos == first + 1 and c.k == "num" and tonumber((c.v:gsub("[uUlL]+$", "")))
          if not n or n < 0 or n > 31 then
            fail(at(s, t.p, "shifts by " .. (pos == first + 1 and quote(c.v) or "an expression")) .. ": the count " ..
              "of << and >> is an integer literal 0..31 (C leaves a shift by a negative count, or by 32 or more, " ..
              "undefined)")
          end
        end
        lk = "i"
      elseif b[2] == "logic" then
        lk = "i"
      else
        lk = (lk == "f" or rk == "f") and "f" or "i"
      end
      if lk == "i" then
        local what = INT_RESULT[b[2]] or (BINARY[t.v][1] >= 6 and "the comparison " or "the logical operator ")
        where = { p = t.p, what = what .. quote(t.v) }
      end
    end
  end

  function expr(d)
    if d > M.MAX_DEPTH then
      fail(at(s, peek().p, "nests deeper than " .. M.MAX_DEPTH .. " levels") ..
        " (parentheses, arguments and ?: branches)")
    end
    local kind, where, bits = binary(1, d)
    local q = peek()
    if q.k == "op" and q.v == "?" then
      take()
      local x, _, xbits = expr(d + 1)
      local colon = peek()
      if colon.k ~= "op" or colon.v ~= ":" then
        if colon.k == "end" then fail(at(s, q.p, "has a ? without its :")) end
        unexpected(colon, "an operator or the \":\" of the ? at character " .. q.p)
      end
      take()
      local y, _, ybits = expr(d + 1)
      kind = (x == "f" or y == "f") and "f" or "i"
      where = { p = q.p, what = "the ?: of two integers" }
      local ib = x ~= y and (x == "i" and xbits or y == "i" and ybits)
      if ib then by_value(ib, "a branch of the ?: at character " .. q.p .. ", beside an f32 branch") end
      bits = kind == "i" and (xbits or ybits) or nil
    end
    return kind, where, bits
  end

  local where
  local ok, res = pcall(function()
    local kind
    kind, where = expr(0)
    local t = peek()
    if t.k ~= "end" then
      if t.k == "op" and t.v == ")" then fail(at(s, t.p, "has a ) without its (")) end
      if t.k == "op" and t.v == ":" then fail(at(s, t.p, "has a : without its ?")) end
      unexpected(t, OPERATOR)
    end
    return kind
  end)
  if not ok then
    if type(res) == "table" and res.why then return nil, res.why end
    error(res, 0)
  end
  return res, used, where
end

-- nil if s is a valid combine (vars a, b) or identity (no vars), else what is wrong.
local function bad_expr(s, vars)
  local kind, used, where = M.parse(s, vars)
  if not kind then return used end
  if vars.a and not (used.a or used.b) then
    return "names neither a nor b: it must be an expression of the operands; " .. grammar(vars)
  end
  if kind == "i" then
    local m = at(s, where.p, "gives an integer: " .. where.what)
    if vars.a then
      return m .. ", which C converts to f32 by value (a comparison to 0 or 1, a bit pattern to a number); " ..
        "a combine of f32 values gives an f32: choose an operand with ?: (a < b ? a : b), or reinterpret a bit " ..
        "pattern with __int_as_float(...)"
    end
    return m .. ", which C converts to f32 by value; the identity is an f32: write a float literal (0.0f, " ..
      "1.0f), or reinterpret a bit pattern with __int_as_float(0xff800000)"
  end
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
