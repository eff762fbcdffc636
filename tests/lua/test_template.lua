-- tests/lua/test_template.lua: gen/core/template.lua, the ${hole} engine and #include inliner.
local T = load(weft_read("tests/lua/testlib.lua"), "@tests/lua/testlib.lua")()
local template = require("gen.core.template")

local function render(files, values, path)
  return template.render(path or "templates/t.cu", values, T.reader(files))
end

local function joined(lines) return table.concat(lines, "\n") .. "\n" end

T.test("fills holes: strings, integers, floats, booleans", function()
  local src = assert(render({ ["templates/t.cu"] = "int a = ${x}; // ${name}\nbool b = ${flag}, c = ${off};\nfloat f = ${f};\n" },
    { x = 42, name = "k_1", flag = true, off = false, f = 0.5 }))
  T.eq(src, joined({ '#line 1 "templates/t.cu"', "int a = 42; // k_1", "bool b = true, c = false;", "float f = 0.5;" }))
end)

T.test("a hole may repeat and sit at line start or end", function()
  local src = assert(render({ ["templates/t.cu"] = "${a}${a} x ${b}" }, { a = "p", b = 7 }))
  T.eq(src, joined({ '#line 1 "templates/t.cu"', "pp x 7" }))
end)

T.test("text without holes passes through unchanged, trailing newline or not", function()
  local a = assert(render({ ["templates/t.cu"] = "x\n\ny {}\n" }, {}))
  local b = assert(render({ ["templates/t.cu"] = "x\n\ny {}" }, {}))
  T.eq(a, joined({ '#line 1 "templates/t.cu"', "x", "", "y {}" }))
  T.eq(b, a, "no trailing newline")
end)

T.test("unknown name fails, naming file:line and the hole", function()
  local msg = T.fails("render", render, { ["templates/t.cu"] = "ok ${a}\nbad ${nope}\n" }, { a = 1 })
  T.contains(msg, "templates/t.cu:2")
  T.contains(msg, "${nope}")
  T.not_contains(msg, "templates/t.cu:1")
end)

T.test("every unknown hole is reported, not just the first", function()
  local msg = T.fails("render", render, { ["templates/t.cu"] = "${p}\n${q} ${r}\n" }, {})
  T.contains(msg, "templates/t.cu:1: no value for ${p}")
  T.contains(msg, "templates/t.cu:2: no value for ${q}")
  T.contains(msg, "templates/t.cu:2: no value for ${r}")
end)

T.test("a table value fails (and a function value)", function()
  local msg = T.fails("render", render, { ["templates/t.cu"] = "a\nx = ${v};\n" }, { v = { 1, 2 } })
  T.contains(msg, "templates/t.cu:2")
  T.contains(msg, "${v}")
  T.contains(msg, "table")
  msg = T.fails("render", render, { ["templates/t.cu"] = "x = ${v};\n" }, { v = print })
  T.contains(msg, "${v}")
  T.contains(msg, "function")
end)

T.test("bad hole names fail", function()
  for _, hole in ipairs({ "${1x}", "${a-b}", "${}", "${ x }", "${a.b}", "${x y}" }) do
    local msg = T.fails("render " .. hole, render, { ["templates/t.cu"] = "int v = " .. hole .. ";\n" },
      { x = 1, a = 1, ["1x"] = 1, ["a-b"] = 1, [" x "] = 1, ["a.b"] = 1, ["x y"] = 1, [""] = 1 })
    T.contains(msg, "templates/t.cu:1", hole)
    T.contains(msg, hole, hole)
  end
end)

T.test("an unclosed ${ is an error, never left in the output", function()
  local src, msg = render({ ["templates/t.cu"] = "int v = ${oops;\n" }, { oops = 1 })
  T.eq(src, nil, "rendered source (must not contain '${')")
  T.contains(msg, "templates/t.cu:1")
end)

T.test("a multi-line value is followed by a #line resync", function()
  local src = assert(render({ ["templates/t.cu"] = "a\nb ${v} c\nd\ne ${w}\n" }, { v = "x\ny\nz", w = 1 }))
  T.eq(src, joined({ '#line 1 "templates/t.cu"', "a", "b x", "y", "z c", '#line 3 "templates/t.cu"', "d", "e 1" }))
end)

T.test("a single-line value emits no #line", function()
  local src = assert(render({ ["templates/t.cu"] = "a ${v}\nb\n" }, { v = "x" }))
  local n = 0
  for _ in src:gmatch("#line") do n = n + 1 end
  T.eq(n, 1, "#line count")
end)

T.test('#include "weft/..." is inlined once, with #line before and after', function()
  local files = {
    ["templates/t.cu"] = '// t\n#include "weft/h.cuh"\n#include "weft/h.cuh"\nint v = ${x};\n#  include "weft/g.cuh"\nend\n',
    ["templates/weft/h.cuh"] = '#pragma once\n#include "weft/g.cuh"\nint h;\n',
    ["templates/weft/g.cuh"] = "int g;",
  }
  local src = assert(render(files, { x = 3 }))
  T.eq(src, joined({
    '#line 1 "templates/t.cu"',
    "// t",
    '#line 1 "templates/weft/h.cuh"',
    "#pragma once",
    '#line 1 "templates/weft/g.cuh"',
    "int g;",
    '#line 3 "templates/weft/h.cuh"',
    "int h;",
    '#line 3 "templates/t.cu"',
    '#line 4 "templates/t.cu"',
    "int v = 3;",
    '#line 6 "templates/t.cu"',
    "end",
  }))
  local function count(s, pat) local n = 0; for _ in s:gmatch(pat) do n = n + 1 end; return n end
  T.eq(count(src, "int g;"), 1, "g.cuh inlined once")
  T.eq(count(src, "int h;"), 1, "h.cuh inlined once")
  T.eq(count(src, "#include"), 0, "no weft include left")
end)

T.test("includes outside weft/ are left alone", function()
  local src = assert(render({ ["templates/t.cu"] = "#include <cuda_fp16.h>\n#include \"other.h\"\n" }, {}))
  T.eq(src, joined({ '#line 1 "templates/t.cu"', "#include <cuda_fp16.h>", '#include "other.h"' }))
end)

T.test("a missing include or template fails with its path", function()
  local msg = T.fails("render", render, { ["templates/t.cu"] = '#include "weft/nope.cuh"\n' }, {})
  T.contains(msg, "templates/weft/nope.cuh")
  msg = T.fails("render", render, {}, {}, "templates/absent.cu")
  T.contains(msg, "templates/absent.cu")
end)

T.test("headers containing ${} are rejected, naming header:line", function()
  local files = {
    ["templates/t.cu"] = '#include "weft/h.cuh"\nint v = ${x};\n',
    ["templates/weft/h.cuh"] = "int ok;\nint bad = ${x};\n",
  }
  local msg = T.fails("render", render, files, { x = 1 })
  T.contains(msg, "templates/weft/h.cuh:2")
  T.contains(msg, "${")
  T.not_contains(msg, "templates/t.cu", "the template itself is fine")
end)

T.test("includes nested too deep fail", function()
  local files = { ["templates/t.cu"] = '#include "weft/h1.cuh"\n' }
  for i = 1, 20 do files["templates/weft/h" .. i .. ".cuh"] = '#include "weft/h' .. (i + 1) .. '.cuh"\n' end
  files["templates/weft/h21.cuh"] = "int end_;\n"
  local msg = T.fails("render", render, files, {})
  T.contains(msg, "nested more than")
end)

T.test("stops after 20 errors (one per line)", function()
  local lines = {}
  for i = 1, 30 do lines[i] = "int v" .. i .. " = ${u" .. i .. "};" end
  local msg = T.fails("render", render, { ["templates/t.cu"] = table.concat(lines, "\n") .. "\n" }, {})
  local n = 0
  for _ in msg:gmatch("no value for") do n = n + 1 end
  T.eq(n, 20, "errors reported")
  T.contains(msg, "templates/t.cu:20: no value for ${u20}")
  T.not_contains(msg, "${u21}")
  T.contains(msg, "stopped after 20 errors")
end)

T.test("stops after 20 errors (many on one line)", function()
  local holes = {}
  for i = 1, 30 do holes[i] = "${u" .. i .. "}" end
  local msg = T.fails("render", render, { ["templates/t.cu"] = table.concat(holes, " ") .. "\n" }, {})
  local n = 0
  for _ in msg:gmatch("no value for") do n = n + 1 end
  T.ok(n <= 20, "at most 20 errors reported, got " .. n)
  T.contains(msg, "stopped after 20 errors")
end)

T.test("fewer than 20 errors: no 'stopped' note", function()
  local msg = T.fails("render", render, { ["templates/t.cu"] = "${a}\n${b}\n" }, {})
  T.not_contains(msg, "stopped")
end)

T.test("fill() fills snippets without #line or includes", function()
  T.eq(assert(template.fill("a ${x}\nb ${y}", { x = 1, y = "z" })), "a 1\nb z")
  T.eq(assert(template.fill('#include "weft/ops.cuh"\n${x}', { x = true })), '#include "weft/ops.cuh"\ntrue')
  local out, msg = template.fill("ok\n${nope}", {}, "snippet.cu")
  T.eq(out, nil)
  T.contains(msg, "snippet.cu:2")
  T.contains(msg, "${nope}")
  out, msg = template.fill("${t}", { t = {} })
  T.eq(out, nil)
  T.contains(msg, "${t}")
end)

T.test("the real templates: every hole is named and reported when values are missing", function()
  for _, fam in ipairs({ "row_reduce", "row_softmax", "cluster_reduce" }) do
    local path = "templates/" .. fam .. ".cu"
    local msg = T.fails(path, template.render, path, {}, weft_read)
    T.contains(msg, path .. ":", path)
    T.contains(msg, "${name}", path)
    T.not_contains(msg, "templates/weft/", path .. ": headers are hole-free")
  end
end)

T.done("test_template")
