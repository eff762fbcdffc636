-- tests/lua/test_ops.lua: gen/core/ops.lua's parser for custom operators (op.combine, op.identity):
-- what it accepts (every expression the repository uses, the grammar's corners), what it refuses
-- and how it says so (field, position, what is allowed), its limits (nesting depth, length,
-- time), and that it never throws.  The accepted expressions were checked against NVRTC when the
-- parser was written (every one compiles in the four families' templates); the refused ones that
-- NVRTC rejects are noted "NVRTC:".
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local ops = require("gen.core.ops")
local schema = require("gen.core.schema")
local common = require("gen.core.common")

local function combine(e) return ops.check({ combine = e, identity = "0.0f" }) end
local function identity(e) return ops.check({ combine = "a + b", identity = e }) end

local function accepts(check, e, what)
  local op, why = check(e)
  T.ok(op, (what or "accepted") .. ": " .. T.show(e) .. " -> " .. tostring(why))
end

-- refuses(check, e, field, pos, ...): refused, the message names the field ("combine" or
-- "identity") and "at character <pos>" (pos nil: no position asserted), and holds each of ...
local function refuses(check, e, field, pos, ...)
  local op, why = check(e)
  T.ok(not op, "refused: " .. T.show(e))
  T.eq(type(why), "string", "message for " .. T.show(e))
  T.contains(why, "custom op " .. field .. " ", T.show(e))
  if pos then T.contains(why, "at character " .. pos, T.show(e)) end
  for _, s in ipairs({ ... }) do T.contains(why, s, T.show(e)) end
  return why
end

-- ---- what the repository uses ------------------------------------------------------------------

-- the op of a config file, loaded as the generator would (ref functions may use math)
local function config_op(path)
  local cfg = assert(load(assert(weft_read(path)), "@" .. path, "t", { math = math }))()
  return cfg.op
end

T.test("every custom operator in examples/ and tests/ configs is accepted", function()
  for _, path in ipairs({ "examples/custom_op.lua", "tests/configs/allreduce_custom.lua",
                          "tests/configs/cluster_custom.lua", "tests/configs/reduce_scatter_custom.lua",
                          "tests/fails/allreduce_multimem_custom.lua", "tests/fails/reduce_scatter_multimem_custom.lua" }) do
    local op = config_op(path)
    T.eq(type(op), "table", path .. " has a custom op")
    local got, why = ops.check(op)
    T.ok(got, path .. ": " .. tostring(why))
    T.eq(got and got.name, "custom", path)
  end
end)

T.test("the builtins' own texts parse (combine over a, b; identity constant)", function()
  for _, n in ipairs(ops.names) do
    local b = ops.builtin[n]
    T.ok(ops.parse(b.combine, { a = true, b = true }), n .. " combine " .. b.combine)
    T.ok(ops.parse(b.identity, {}), n .. " identity " .. b.identity)
    accepts(function(e) return ops.check({ combine = b.combine, identity = e }) end, b.identity, n)
  end
end)

T.test("every expression the docs and other tests use is accepted", function()
  local combines = {
    -- README, ops.lua's header, test_schema, test_generate, test_auto, test_config, test_sweep, test_core.py
    "fmaxf(a, b)", "fmaxf(a, b) + 0.0f", "fmaxf(b, a)", "a + b", "a * b", "fminf(a, b)", "a",
    "fmaxf(fabsf(a), fabsf(b))", "fabsf(a) > fabsf(b) ? a : b", "fminf(a + b, 1e30f)",
    "fmaxf(fabsf(a),  fabsf(b)) + 0.0f * (a - b)", "a > b ? a : b", "(a * 2.0f) - (b / 3)",
    "fabsf(a) + fabsf(b)", "__int_as_float(__float_as_int(a) & 0x7fffffff) + b", "a * 1e-3f + b * .5f",
    "-a + !b", "fmaf(a, 2.f, b)", "(a < b) && (b >= 0.0f) ? b : a", "a +\tb",
  }
  for _, e in ipairs(combines) do accepts(combine, e) end
  for _, e in ipairs({ "0.0f", "-0.0f", "1.0f", "-1.5", "-1e30f", "-3.0e38", "1.0f / 0.0f",
                       "__int_as_float(0xff800000)", "__int_as_float(0x7f800000)" }) do
    accepts(identity, e, "identity")
  end
end)

-- ---- the grammar ---------------------------------------------------------------------------------

T.test("grammar: operators, precedence, ?:, unary chains, every function at its arity", function()
  for _, e in ipairs({
    "a+b*a-b/a", "a - -b", "a - - b", "a-+b", "-(a)", "+a", "!a + b", "!!a + b", "- - - a", "!-~__float_as_int(a) + b",
    "a < b == b > a ? a : b", "a <= b != (a >= b) ? a : b", "a && b || !a ? a : b", "a ? b : a ? a : b",
    "(a ? b : a) ? a : b",
    "a > b ? a < b ? a : b : b", "a || b ? a : b", "a ? a + b : a - b",
    "((a))", "(((a + b)))", "fmaxf((a), (b))", "fmaxf(a,b)", "fmaxf( a , b )",
    "__int_as_float(__float_as_int(a) | __float_as_int(b))", "__int_as_float(__float_as_int(a) ^ 0x80000000)",
    "__int_as_float(__float_as_int(a) & ~0x80000000u) + b", "((__float_as_int(a) >> 23) & 0xff) + b",
    "__int_as_float(1 << 30) * a + b", "(a < b) & (b < a) ? a : b",
    "max(a, b)", "min(a, 1.0f)", "max(a, 1.5)", "max(1, 2) + a", "__int_as_float(min(__float_as_int(a), 0xff800000u)) + b",
    "max(a < b, 1) + a",
    "fmaxf(a, 0)", "fmaxf(a, 1u)", "powf(a, 2) + b",
  }) do accepts(combine, e) end
  -- every function, at its arity, with f32 arguments (integer ones where it reinterprets bits)
  for f, sig in pairs(ops.FUNCTIONS) do
    local args = {}
    for k, kind in ipairs(sig) do args[k] = kind == "i" and "__float_as_int(a)" or (k % 2 == 1 and "a" or "b") end
    local call = f .. "(" .. table.concat(args, ", ") .. ")"
    -- (a bit pattern is no number: __float_as_int's is reinterpreted back)
    accepts(combine, (sig.result == "i" and "__int_as_float(" .. call .. ")" or call) .. " + b", f)
  end
  for f, n in pairs({ fmaxf = 2, fminf = 2, fabsf = 1, fmaf = 3, sqrtf = 1, expf = 1, logf = 1, powf = 2,
                      copysignf = 2, __int_as_float = 1, __float_as_int = 1, max = 2, min = 2 }) do
    T.eq(#ops.FUNCTIONS[f], n, f .. " arity")
  end
end)

T.test("grammar: numbers", function()
  for _, e in ipairs({ "0", "7", "255u", "255U", "0xff", "0XFF", "0xffffffff", "0xFFFFFFFFu", "4294967295u",
                       "2147483647", "2147483648u", "1.0f", "1.0F", "1.", "1.f", ".5", ".5f", "1e3", "1E3F", "1e-3f", "1.5e+3", "0e99999f",
                       "3.4028235e38f", "1.4e-45f", "1e-40f", "1.7976931348623157e308", "4.9e-324", "0x0" }) do
    -- an integer is an identity only as a bit pattern (an integer result is refused: below)
    accepts(identity, ops.parse(e, {}) == "i" and "__int_as_float(" .. e .. ")" or e, "number")
    -- (a hex literal from 0x00800000 up is a bit pattern: reinterpreted, not added as a number)
    local bits = e:match("^0[xX]") and tonumber(e:match("^0[xX](%x+)"), 16) >= 0x00800000
    accepts(combine, bits and "__int_as_float(" .. e .. ") + a" or "a + " .. e, "number in combine")
  end
  local cases = {
    { "08", 1, "octal" }, { "010", 1, "octal number; write 10" }, { "00", 1, "write 0" }, -- NVRTC: 08 "invalid octal digit"
    { "1e39f", 1, "out of the range of float" }, { "1e-50f", 1, "out of the range of float" },   -- NVRTC: out of range
    { "3.4028236e38f", 1, "range of float" }, { "7e-46f", 1, "range of float" },
    { "1e400", 1, "out of the range of double" }, { "1e-400", 1, "range of double" },
    { "4294967296", 1, "at most 32 bits" }, { "0x100000000", 1, "at most 32 bits" },
    -- past INT_MAX a decimal is a long: max(1, 3000000000) is an ambiguous overload in NVRTC
    { "3000000000", 1, "is a long in C; write it unsigned (3000000000u), in hex (0xb2d05e00)" },
    { "2147483648", 1, "INT_MIN is (-2147483647 - 1)" }, { "4294967295", 1, "is a long in C" },
    { "__int_as_float(0x000000001)", nil, nil }, -- leading hex zeros are fine
    { "0x1p3f", 1, "malformed number" }, { "1f", 1, "malformed number" }, { "1.0L", 1, "malformed number" },
    { "1ul", 1, "malformed number" }, { "0b101", 1, "malformed number" }, { "1.2.3", 1, "malformed number" },
    { "1e", 1, "exponent needs digits" }, { "1e+f", 1, "exponent needs digits" }, { "0x", 1, "malformed number" },
    { "1.0ff", 1, "malformed number" }, { "1_000", 1, "malformed number" },
  }
  for _, c in ipairs(cases) do
    if c[3] then refuses(identity, c[1], "identity", c[2], c[3])
    else accepts(identity, c[1]) end
  end
end)

-- ---- what the review found: each refused, with the field and the position ------------------------

T.test("review cases: refused in combine with the position and what is allowed", function()
  local ALLOWED = "one C expression of the f32 values a and b"
  local cases = {
    -- text, position, what the message says (all of these NVRTC refuses for f32, or they mean nothing)
    { "a % b", 3, 'has "%"', "no remainder", ALLOWED },
    { "a b", 3, 'has "b"', 'after "a"', "an operator", ALLOWED },
    { "(a)(b)", 4, 'has "(" after ")"', "not a function", "fmaxf(x, y)" },
    { "fmaf(a, b)", 1, "calls fmaf with 2 arguments", "takes 3, fmaf(x, y, z)" },
    { "fmaxf(a,b,a)", 1, "calls fmaxf with 3 arguments", "takes 2, fmaxf(x, y)" },
    { "sqrtf()", 1, "calls sqrtf with 0 arguments", "takes 1, sqrtf(x)" },
    { "~a", 1, "applies ~ to an f32 value", "take integers" },
    { "a << 1", 3, "applies << to an f32 value (on its left)", "take integers" },
    { "a--b", 2, 'has "--"', "no increments or decrements", "a - -b" },
    { "expf(a)(b)", 8, 'has "(" after ")"', "not a function" },
    { "a*b*", 5, "ends", 'after "*"', "an operand", ALLOWED },
    { "a++", 2, 'has "++"', "no increments" },
    { "a, b", 2, "has a comma", "one expression", ALLOWED },
    { "a---b", 2, 'has "--"' },
  }
  for _, c in ipairs(cases) do
    refuses(combine, c[1], "combine", c[2], table.unpack(c, 3))
  end
end)

T.test("review cases: the same refused in identity, named as the identity", function()
  for _, c in ipairs({ { "1 % 2", 3, 'has "%"' }, { "1 2", 3, 'has "2"' }, { "(1)(2)", 4, 'has "("' },
                       { "fmaf(1, 2)", 1, "calls fmaf with 2" }, { "sqrtf()", 1, "with 0 arguments" },
                       { "~1.0f", 1, "applies ~ to an f32" }, { "1.0f << 1", 6, "applies <<" },
                       { "1--2", 2, 'has "--"' }, { "1*2*", 5, "ends" }, { "1, 2", 2, "has a comma" } }) do
    local why = refuses(identity, c[1], "identity", c[2], c[3])
    if why:find("one C", 1, true) then T.contains(why, "one constant C expression (no a or b)", c[1]) end
  end
end)

T.test("more refusals: structure, types, names", function()
  local cases = {
    { "a + b) + (a", 6, ") without its (" }, { "(a + b", 1, "( without its )" }, { "fmaxf(a, (b)", 6, "( without its )", "the call of fmaxf" },
    { "fmaxf(a, b", 6, "( without its )", "the call of fmaxf" }, { "fmaxf(a b)", 9, '"," or ")"' },
    { "a ? b", 3, "? without its :" }, { "a : b", 3, ": without its ?" }, { "a ? b , a : b", 7, "comma" },
    { "(a, b)", 3, "comma" }, { "fmaxf(a,)", 9, 'has ")" at character 9 after ","', "an operand" }, { "fmaxf(,a)", 7, 'has ","' },
    { "a ?: b", 4, 'has ":"', "operand" }, { "a + * b", 5, 'has "*"' }, { "a+*b", 3, 'has "*"' },
    { "&a", 1, 'has "&"' }, { "*a", 1, 'has "*"' }, { "a & & b", 5, 'has "&"' },
    { "()", 2, 'has ")"', "operand" }, { "a ! b", 3, 'has "!"' }, { "a ~ b", 3, 'has "~"' },
    { "a = b", 3, 'holds "="', "no assignment" }, { "a += b", 4, 'holds "="' }, { "a <<= 1", 5, 'holds "="' },
    { "a == b = a", 8, 'holds "="' }, { "a[0]", 2, 'holds "["' }, { "a->b", 3, 'has ">"' },
    { "a.x", 2, "malformed number", "no member access" }, { "a . b", 3, "malformed number" },
    { "(int)a", nil, "uses int" }, { "(float)a", nil, "uses float" }, { "sizeof a", nil, "uses sizeof" },
    { "a + c", nil, "uses c" }, { "printf(a)", nil, "uses printf: an expression may name only a, b and the math functions" },
    { "fmaxf + a", 1, "calls fmaxf without parentheses", "fmaxf(x, y)" }, { "max", 1, "calls max without parentheses" },
    { "__int_as_float(a)", 1, "calls __int_as_float with an f32 argument", "reinterprets" },
    { "__float_as_int(1)", 1, "calls __float_as_int with an integer argument" },
    { "max(a, 1)", 1, "calls max with an f32 and an integer", "fmaxf(x, y)" },  -- NVRTC: ambiguous overload
    { "min(__float_as_int(a), b)", 1, "calls min with an f32 and an integer", "fminf(x, y)" },
    { "a & 1", 3, "applies & to an f32 value (on its left)" }, { "1 | b", 3, "applies | to an f32 value (on its right)" },
    { "__float_as_int(a) ^ 1.0f", 19, "applies ^" }, { "__float_as_int(a) >> b", 19, "applies >>" },
    -- a shift's count: an integer literal 0..31 (C leaves the rest undefined)
    { "__int_as_float(__float_as_int(a) >> 40)", 34, 'shifts by "40"', "an integer literal 0..31" },
    { "__int_as_float(__float_as_int(a) >> 32)", 34, 'shifts by "32"' },
    { "__int_as_float(1 << -1) * a", 18, "shifts by an expression", "an integer literal 0..31" },
    { "__int_as_float(__float_as_int(a) >> (1 + 2)) + b", 34, "shifts by an expression" },
    { "__int_as_float(__float_as_int(a) << __float_as_int(b))", 34, "shifts by an expression" },
    { "__int_as_float(__float_as_int(a) >> 0x1f) + b", nil, nil }, { "__int_as_float(1u << 31) * a + b", nil, nil },
    { "~(a + b)", 1, "applies ~" }, { "__int_as_float(__float_as_int(a + 1) + 1)", nil, nil },
    { "0.0f", nil, "names neither a nor b" }, { "fmaxf(1.0f, 2.0f)", nil, "names neither a nor b" },
  }
  for _, c in ipairs(cases) do
    if c[3] then refuses(combine, c[1], "combine", c[2], table.unpack(c, 3))
    else accepts(combine, c[1]) end
  end
end)

T.test("lexical refusals keep their messages, now with the position", function()
  refuses(combine, "a + b; return 0", "combine", 6, "must be a single expression: no ; { } # \\ or newlines")
  refuses(identity, "0.0f } float evil() { return 1.0f", "identity", 6, "must be a single expression")
  refuses(combine, "a\n+ b", "combine", 2, "no ; { } #")
  refuses(combine, "a\r+b", "combine", 2, "no ; { } #")
  refuses(combine, "#define X", "combine", 1, "no ; { } #")
  refuses(combine, "a \\\n b", "combine", 3, "no ; { } #")
  refuses(combine, "a + b /* ", "combine", 7, "must not hold comments (/* or //)")
  refuses(combine, "a // b", "combine", 3, "must not hold comments")
  refuses(combine, "a + b %> float evil() <% return 1.0f", "combine", 7,
    "must not hold digraphs (<% %> <: :> %:): it is one expression, not a block")
  refuses(combine, "a <:b", "combine", 3, "digraphs")
  refuses(combine, 'a + "b"', "combine", 5, 'holds "\\"')
  refuses(combine, "a + 'b'", "combine", 5, "holds \"'\"")
  refuses(combine, "a + b\0", "combine", 6, 'holds "\\0"')
  refuses(combine, "a + b\xc3\xa9", "combine", 6, 'holds "\\195"')
  for _, s in ipairs({ "", "   ", "\t" }) do refuses(combine, s, "combine", nil, "must be a non-empty string") end
  for _, v in ipairs({ 5, true, {} }) do
    local op, why = ops.check({ combine = v, identity = "0.0f" })
    T.ok(not op and why:find("combine must be a non-empty string", 1, true), T.show(v))
    op, why = ops.check({ combine = "a", identity = v })
    T.ok(not op and why:find("identity must be a non-empty string", 1, true), T.show(v))
  end
end)

T.test("identity: a constant expression, without a and b", function()
  for _, e in ipairs({ "0.0f", "-1e30f", "__int_as_float(0xff800000)", "-__int_as_float(0x7f800000)",
                       "1.0f / 0.0f", "-(1.0f / 0.0f)", "fmaxf(1.0f, 2.0f)", "1 ? 2.0f : 3.0f", "-1.0f", "2.0f",
                       "__int_as_float(0x7fffffff & 0xff800000)", "max(1.0f, 2.0f)" }) do
    accepts(identity, e, "identity")
  end
  refuses(identity, "a", "identity", 1, "uses a: an expression may name only the math functions")
  refuses(identity, "-b", "identity", 2, "uses b:")
  refuses(identity, "fmaxf(a, 0.0f)", "identity", 7, "uses a:")
  local why = refuses(identity, "-INFINITY", "identity", 2, "uses INFINITY", "__int_as_float(0xff800000)")
  T.not_contains(why, "may name only a, b", "the identity's names are not a and b")
  refuses(identity, "FLT_MAX", "identity", 1, "3.4028235e38f")
  refuses(identity, "1 % 2", "identity", 3, "one constant C expression (no a or b)")
end)

T.test("an integer result is refused, in combine and identity, with where it comes from", function()
  local C = "a combine of f32 values gives an f32: choose an operand with ?: (a < b ? a : b), or reinterpret a bit " ..
    "pattern with __int_as_float(...)"
  for _, c in ipairs({
    { "a < b", 3, 'gives an integer: the comparison "<" at character 3, which C converts to f32 by value' },
    { "(a < b)", 4, 'the comparison "<"' }, { "a >= b", 3, 'the comparison ">="' }, { "a == b", 3, 'the comparison "=="' },
    { "a && b", 3, 'the logical operator "&&"' }, { "a < b || b < a", 7, 'the logical operator "||"' },
    { "!a", 1, 'the logical operator "!"' }, { "-!a", 2, 'the logical operator "!"' },
    { "__float_as_int(a)", 1, "the call of __float_as_int" },
    { "__float_as_int(a) + __float_as_int(b)", 19, 'the integer arithmetic "+"' },
    { "__float_as_int(a) & __float_as_int(b)", 19, 'the bit operator "&"' },
    { "~__float_as_int(a)", 1, 'the bit operator "~"' },
    { "max(__float_as_int(a), __float_as_int(b))", 1, "the call of max" },
    { "a < b ? 1 : 0", 7, "the ?: of two integers" },
  }) do
    refuses(combine, c[1], "combine", c[2], c[3], C)
  end
  -- an integer inside, an f32 as a whole: accepted
  for _, e in ipairs({ "a < b ? a : b", "(a < b) * a + (a >= b) * b", "__int_as_float(__float_as_int(a) & __float_as_int(b))",
                       "fabsf(a < b) + b", "a + 1", "(a < b) + 0.0f", "a < b ? 1.0f : 0" }) do
    accepts(combine, e)
  end
  local I = "the identity is an f32: write a float literal (0.0f, 1.0f), or reinterpret a bit pattern with " ..
    "__int_as_float(0xff800000)"
  for _, c in ipairs({
    { "0", 1, 'gives an integer: the integer literal "0" at character 1, which C converts to f32 by value' },
    { "-1", 2, 'the integer literal "1"' }, { "2u", 1, 'the integer literal "2u"' },
    { "0xff800000", 1, 'the integer literal "0xff800000"' }, { "max(1, 2)", 1, "the call of max" },
    { "1 < 2", 3, 'the comparison "<"' }, { "1 + 2", 3, 'the integer arithmetic "+"' },
    { "(0x7f800000)", 2, 'the integer literal "0x7f800000"' },
  }) do
    refuses(identity, c[1], "identity", c[2], c[3], I)
  end
  -- the builtins' identities (max: __int_as_float(0xff800000)) stay f32
  for _, n in ipairs(ops.names) do accepts(identity, ops.builtin[n].identity, n) end
  -- the message names the position of a long expression's integer part, with the text near it
  local long = string.rep("1 + ", 20) .. "(1 < 2)"
  refuses(identity, long, "identity", 79, 'the integer arithmetic "+" at character 79 (near ..."+ 1 + 1 + 1 + 1 + 1 + (1 < 2)")')
end)

T.test("/ of two integers is refused (truncation, 1/0), with a float literal as the fix", function()
  local D = "divides an integer by an integer"
  local FIX = "C truncates that (1/2 is 0, and 1/0 is undefined); write a float literal on either side, e.g. 1.0f/2"
  refuses(identity, "1/0", "identity", 2, D, FIX)
  refuses(identity, "1.0f * (1 / 2)", "identity", 11, D, FIX)
  refuses(identity, "__int_as_float(0xff800000 / 2)", "identity", 27, D)
  refuses(combine, "a + 1/0", "combine", 6, D, FIX)
  refuses(combine, "__float_as_int(a) / 2 + b", "combine", 19, D)
  refuses(combine, "a * (-1 / -2)", "combine", 9, D)
  for _, e in ipairs({ "1.0f/0.0f", "1.0f/2", "1/2.0f", "1./2", "-1/-2.5" }) do accepts(identity, e) end
  for _, e in ipairs({ "a / 2", "2 / a", "a / b", "(a < b) / a", "a / (b < a) + b" }) do accepts(combine, e) end
end)

T.test("a bit pattern converted to f32 by value inside is refused, where it is and in what", function()
  local FIX = "C converts an integer as a number (0xff800000 becomes 4286578688.0f, not -inf); reinterpret the bits " ..
    "with __int_as_float(...), or write a number as a float literal (1.0f)"
  local W = "converts a bit pattern to f32 by value: "
  for _, c in ipairs({
    -- -inf's bits as a ?: branch: the mistake op_identity_integer refuses as the whole identity
    { "a != a ? 0xff800000 : fmaxf(a, b)", 10, W .. 'the hex literal "0xff800000" at character 10 (a branch of the ?: ' ..
      "at character 8, beside an f32 branch)" },
    { "a < b ? a : __float_as_int(b)", 13, "the call of __float_as_int at character 13 (a branch of the ?: at character 7" },
    { "a < b ? a : (-0x7f800000)", 15, 'the hex literal "0x7f800000"' },
    { "a + 0xff800000", 5, 'the hex literal "0xff800000" at character 5 (an operand of the "+" at character 3, beside an f32)' },
    { "__float_as_int(a) * 1.0f + b", 1, 'the call of __float_as_int at character 1 (an operand of the "*" at character 19' },
    { "fmaxf(a, 0xff800000) + b", 10, 'the hex literal "0xff800000" at character 10 (an argument of fmaxf at character 1)' },
    { "fabsf(__float_as_int(a)) + b", 7, "(an argument of fabsf at character 1)" },
    { "max(__float_as_int(a), __float_as_int(b)) + 0.0f", 1, "the max of a bit pattern at character 1" },
  }) do
    refuses(combine, c[1], "combine", c[2], c[3], FIX)
  end
  refuses(identity, "1 ? 0xff800000 : 0.0f", "identity", 5, W .. 'the hex literal "0xff800000" at character 5', FIX)
  refuses(identity, "-fabsf(0x7f800000)", "identity", 8, "(an argument of fabsf at character 2)", FIX)
  -- a bit pattern reinterpreted, a number made of one (a field), decimal and small hex literals: accepted
  for _, e in ipairs({ "a != a ? __int_as_float(0xff800000) : fmaxf(a, b)", "((__float_as_int(a) >> 23) & 0xff) + b",
                       "(__float_as_int(a) < 0) ? b : a", "__float_as_int(a) < 0.0f ? b : a", "a + 0xff", "a * 0x10 + b",
                       "a < b ? 1.0f : 0", "fmaxf(a, 0)", "__int_as_float(a < b ? __float_as_int(a) : 0xff800000) + b",
                       "__int_as_float(-__float_as_int(a)) + b" }) do
    accepts(combine, e)
  end
  accepts(identity, "1 ? __int_as_float(0xff800000) : 0.0f")
end)

T.test("kinds: f32 and integer, as M.parse reports them", function()
  local V = { a = true, b = true }
  for e, kind in pairs({ a = "f", ["1"] = "i", ["1.0f"] = "f", ["1.5"] = "f", ["a < b"] = "i", ["!a"] = "i",
                         ["a && b"] = "i", ["__float_as_int(a)"] = "i", ["__int_as_float(1)"] = "f",
                         ["max(1, 2)"] = "i", ["max(a, b)"] = "f", ["1 + 2"] = "i", ["1 + a"] = "f",
                         ["a ? 1 : 2"] = "i", ["a ? 1 : b"] = "f", ["-1u"] = "i", ["~1"] = "i", ["fabsf(1)"] = "f" }) do
    T.eq(ops.parse(e, V), kind, e)
  end
end)

-- ---- messages through the schema: the file, the field, the value, the position, what is allowed ----

T.test("messages through validate name the file, the value and the field", function()
  local fields = { common.op() }
  local _, msg = schema.validate({ family = "fam", op = { combine = "a b", identity = "0.0f" } }, fields, "cfg.lua")
  T.contains(msg, 'cfg.lua: op = { combine = "a b", identity = "0.0f" }: custom op combine has "b" at character 3 ' ..
    'after "a" where an operator (+ - * / < == && ?: ...) or the end belongs; one C expression of the f32 values a and b: ')
  T.contains(msg, "fmaf(x, y, z)")
  -- a long value: the schema cuts it at 160 bytes, the message shows the text near the position
  local long = string.rep("a + ", 200) .. "b b"
  _, msg = schema.validate({ family = "fam", op = { combine = long, identity = "0.0f" } }, fields, "cfg.lua")
  T.contains(msg, "(803 bytes in all)")
  T.contains(msg, 'has "b" at character 803 (near ..."+ a + a + a + a + b b") after "b" where an operator')
  T.ok(#msg < 1600, "a long value's message stays short: " .. #msg)
end)

T.test("the position is right and inside the text, for every refusal", function()
  local bad = { "a b", "a*b*", "((a)", "a))", "fmaf(a)", "a ? b", "~a", "a %b", "1e99f+a", "a+08", "a = b",
                "  a  b", "\ta @ b", "a +\t* b", "fmaxf(fabsf(a), fabsf(b), 1)" }
  for _, s in ipairs(bad) do
    local _, why = combine(s)
    local p = tonumber(why:match("at character (%d+)"))
    T.ok(p and p >= 1 and p <= #s + 1, s .. " -> " .. why)
  end
  T.contains(select(2, combine("  a  b")), 'has "b" at character 6')
  T.contains(select(2, combine("\ta @ b")), 'holds "@" at character 4')
  T.contains(select(2, combine("a +\t* b")), 'has "*" at character 5')
end)

-- ---- limits -----------------------------------------------------------------------------------

T.test("nesting: up to MAX_DEPTH levels, deeper refused without overflowing the stack", function()
  T.eq(ops.MAX_DEPTH, 64)
  local function parens(n) return string.rep("(", n) .. "a" .. string.rep(")", n) .. " + b" end
  local function calls(n) return string.rep("fabsf(", n) .. "a" .. string.rep(")", n) .. " + b" end
  local function ternaries(n) return "a" .. string.rep(" ? b : a", n) end
  accepts(combine, parens(64)); accepts(combine, calls(64)); accepts(combine, ternaries(64))
  refuses(combine, parens(65), "combine", 66, "nests deeper than 64 levels")
  refuses(combine, calls(65), "combine", 391, "nests deeper than 64 levels")
  refuses(combine, ternaries(65), "combine", nil, "nests deeper than 64 levels")
  refuses(combine, "fmaxf(a, " .. parens(64) .. ")", "combine", nil, "nests deeper")
  -- far deeper than any stack: refused at level 65, quickly
  for _, s in ipairs({ parens(2000), calls(600), string.rep("(", 4096), ternaries(500) }) do
    local ok, op, why = pcall(combine, s)
    T.ok(ok, "no error thrown: " .. tostring(op))
    T.ok(not op and (why:find("nests deeper", 1, true) or why:find("at most 4096", 1, true)), tostring(why):sub(1, 200))
  end
  -- long flat chains are not nesting
  accepts(combine, string.rep("- ", 2000) .. "a + b")
  accepts(combine, string.rep("!", 4000) .. "a + b")
  accepts(combine, "a" .. string.rep(" + b", 1000))
end)

-- Inputs of about n characters, each a different way to end or fail late in the text.
local function long_inputs(n)
  local h = n // 2
  return {
    "a" .. string.rep("+b", h - 1),                         -- valid, n - 1 characters
    "a" .. string.rep("*1.0f", n // 5 - 1),                 -- valid
    string.rep("- ", h - 1) .. "a",                         -- valid
    "a" .. string.rep("+b", h - 2) .. "+",                  -- ends where an operand belongs
    string.rep("(", n),                                     -- nests too deep
    string.rep("fabsf(a)+", n // 9 - 1) .. "fabsf(a",       -- unclosed call
    "a" .. string.rep(" ", n - 2) .. "b",                   -- two operands
    string.rep("9", n),                                     -- a huge integer
    string.rep("1", n - 96) .. ".5f",                       -- a huge float
    "a+" .. string.rep("x", n - 2),                         -- a long unknown name
    string.rep("a?", h),                                    -- ends
  }
end

T.test("long inputs: refused, or answered in time linear in their length", function()
  T.eq(ops.MAX_EXPR, 4096)
  refuses(combine, string.rep("a + ", 25000) .. "b", "combine", nil, "is 100001 characters: at most 4096")
  refuses(identity, string.rep("1", 100000), "identity", nil, "at most 4096")
  refuses(combine, string.rep("a + ", 1100) .. "b", "combine", nil, "at most 4096")
  local inputs = long_inputs(4096)
  for _, s in ipairs(inputs) do
    T.ok(#s <= 4096, "length " .. #s)
    local ok, op, why = pcall(combine, s)
    T.ok(ok, "no error thrown")
    T.ok(op or #why < 1600, "message is short: " .. #tostring(why))
  end
  T.ok(combine(inputs[1]) and combine(inputs[2]) and combine(inputs[3]), "the valid long ones")
  T.contains(select(2, combine(inputs[9])), "out of the range of float")
  T.contains(select(2, combine(inputs[8])), "at most 32 bits")
  T.contains(select(2, combine(inputs[10])), "uses xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...:")
  -- No quadratic behaviour: eight times the length costs about eight times the time (64 if
  -- quadratic).  A ratio, not a time limit, so a slow or loaded machine (sanitizers, parallel
  -- tests) does not fail it; the fastest of several trials drops the noise.  Linear measured
  -- 6.1-8.4 (ASan, six at once); a quadratic term as large as the linear one at 4096 characters
  -- measured 14.9.
  local function cost(list)
    local best = math.huge
    for _ = 1, 5 do
      local t0 = os.clock()
      for _ = 1, 4 do for _, s in ipairs(list) do combine(s) end end
      best = math.min(best, os.clock() - t0)
    end
    return best
  end
  local short, long = cost(long_inputs(512)), cost(inputs)
  T.ok(long < 12 * short, string.format("512 characters %.4f s, 4096 characters %.4f s: ratio %.1f, at most 12",
                                       short, long, long / short))
end)

T.test("never throws: random bytes and random token soups get an answer", function()
  local seed = 12345
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
  local TOKS = { "a", "b", "1", "0x7f", "1.5f", "1e", ".", "+", "-", "*", "/", "%", "(", ")", ",", "?", ":", "!",
                 "~", "&", "&&", "|", "||", "^", "<<", ">>", "<", ">=", "==", "=", " ", "fmaxf", "fmaf", "max",
                 "__int_as_float", "__float_as_int", "c", "\t", "[", "]", "'", "\"", "\0" }
  for _ = 1, 3000 do
    local parts = {}
    if rnd(2) == 0 then
      for k = 1, 1 + rnd(20) do parts[k] = string.char(rnd(256)) end
    else
      for k = 1, 1 + rnd(30) do parts[k] = TOKS[1 + rnd(#TOKS)] end
    end
    local s = table.concat(parts)
    for _, check in ipairs({ combine, identity }) do
      local ok, op, why = pcall(check, s)
      T.ok(ok, "threw on " .. T.show(s) .. ": " .. tostring(op))
      T.ok(op or type(why) == "string", "a message for " .. T.show(s))
      -- what the message quotes of the text is printable ASCII (the schema echoes the value itself)
      T.ok(op or not why:find("[%z\1-\8\10-\31\127-\255]"), "a plain message for " .. T.show(s) .. ": " .. T.show(why))
    end
  end
end)

T.done("test_ops")
