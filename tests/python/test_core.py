"""weft's Python core without a GPU: loading, generation, overrides, errors, compile, launch checks."""
import ctypes
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import weft
from conftest import EXAMPLES, REPO, assert_close_waits

FAMILIES = ["ag_gemm", "all_gather", "allreduce", "allreduce_norm", "cluster_reduce", "gemm", "reduce_scatter", "rmsnorm", "row_reduce", "row_softmax"]



def join_all(threads, timeout):
    """Starts the threads, then joins each within timeout seconds (none may hang)."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
        assert not t.is_alive()

def header_version():
    text = (REPO / "runtime/core/weft.h").read_text()
    m = re.search(r'#define\s+WEFT_VERSION\s+"([^"]+)"', text)
    if m:
        return m.group(1)
    # Before weft.h carried WEFT_VERSION, the project's version was the one source.
    return re.search(r"project\(weft\s+VERSION\s+([0-9.]+)", (REPO / "CMakeLists.txt").read_text()).group(1)


def test_version_matches_header():
    assert weft.version() == header_version()
    assert weft.__version__ == weft.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", weft.version())


# ---- generate from a path and from a dict -------------------------------------------------------

def test_generate_from_path(softmax):
    m = weft.generate(softmax, cluster=4)
    assert m.family == "row_softmax"
    assert [(a.name, a.type, a.role) for a in m.args] == [
        ("y", "ptr", "out"), ("x", "ptr", "in"), ("rows", "i32", "size"), ("cols", "i32", "size")]
    assert m.args[0].dtype == "f32"
    assert m.params["cluster"] == "4" and m.params["family"] == "row_softmax"
    assert m.cluster[0] == 4 and m.block[0] == int(m.params["threads"])
    assert {l["arg"] for l in m.limits} == {"rows", "cols"}
    cols = next(l for l in m.limits if l["arg"] == "cols")
    assert cols["max"] == int(m.params["max_cols"])
    assert m.run["sizes"] == ["rows", "cols"] and m.run["metric"] == "bytes"
    assert m.kernels == [m.name] and "_c4_" in m.name
    assert "extern \"C\"" in m.source and m.entry in m.source
    # os.PathLike works as well as str
    assert weft.generate(EXAMPLES / "row_softmax.lua", cluster=4).name == m.name


def test_generate_from_dict_equals_file(softmax):
    # The example as a dict equals the file with the same values as overrides.
    d = {"family": "row_softmax", "dtype": "bf16", "mode": "onchip", "max_cols": 32768, "cluster": 2,
         "nonportable": False, "threads": 256}
    m = weft.generate(d)
    assert m.params["dtype"] == "bf16" and m.params["threads"] == "256" and m.params["nonportable"] == "false"
    f = weft.generate(softmax, dtype="bf16", cluster=2, threads=256)
    assert m.name == f.name and m.source == f.source


def test_generate_dict_nested_and_floats():
    m = weft.generate({"family": "gemm", "dtype": "bf16", "tile": {"m": 128, "n": 128, "k": 64},
                       "cluster": {"m": 2, "n": 1}, "pdl": True})
    assert (m.params["tile.m"], m.params["tile.n"], m.params["cluster.m"], m.params["pdl"]) == ("128", "128", "2", "true")
    r = weft.generate({"family": "rmsnorm", "dtype": "f32", "eps": 1e-5, "max_cols": 4096})
    assert float(r.params["eps.value"]) == pytest.approx(1e-5, rel=1e-6)
    r2 = weft.generate({"family": "rmsnorm", "dtype": "f32", "eps": 2.5e-3, "max_cols": 4096})
    assert r2.name != r.name


def test_generate_dict_list_value():
    # A list reaches the generator as a Lua sequence: the schema then says what it allows there.
    with pytest.raises(weft.ConfigError) as e:
        weft.generate({"family": "row_softmax", "dtype": ["f32", "bf16"]})
    assert 'dtype = { 1 = "f32", 2 = "bf16" }' in str(e.value)
    text = weft.lua_config({"family": "x", "l": [1, 2.5, True, "s", [3]], "d": {}})
    assert text == 'return {family = "x", l = {1, 2.5, true, "s", {3}}, d = {}}\n'


def test_custom_op_from_dict_roundtrips_text():
    combine = "fmaxf(fabsf(a),  fabsf(b)) + 0.0f * (a - b)"
    m = weft.generate({"family": "row_reduce", "dtype": "bf16", "op": {"combine": combine, "identity": "0.0f"}})
    assert m.params["op"] == "custom" and m.params["op.combine"] == combine and m.params["op.identity"] == "0.0f"


def test_gather_then_gemm_parts():
    m = weft.generate(EXAMPLES / "ag_gemm.lua", variant="gather_then_gemm")
    parts = m.parts()
    assert len(parts) == 2 and parts[0] is m
    assert m.kernels == [p.name for p in parts]
    gather, gemm = parts
    assert gather.family == "ag_gemm" and gemm.family == "gemm"
    assert [a.name for a in gather.args] == ["ag", "a", "m", "k"] and gather.comm is not None
    assert [a.name for a in gemm.args] == ["c", "a", "b", "m", "n", "k"] and gemm.comm is None
    assert gemm.params["tile.n"] == "256"
    # a single-kernel config has one part
    assert len(weft.generate(EXAMPLES / "gemm.lua").parts()) == 1


def test_check_size(softmax):
    m = weft.generate(softmax)
    cap = int(m.params["max_cols"])
    assert m.check_size("cols", cap) is None and m.check_size("cols", 1) is None
    why = m.check_size("cols", cap + 1)
    assert "cols = %d" % (cap + 1) in why and "1..%d" % cap in why
    assert "rows = 0" in m.check_size("rows", 0)
    with pytest.raises(ValueError, match="no size argument 'colz'.*rows, cols"):
        m.check_size("colz", 5)
    with pytest.raises(TypeError):
        m.check_size("cols", 5.5)
    assert "64 bits" in m.check_size("rows", 1 << 70)


# ---- overrides ---------------------------------------------------------------------------------

def test_overrides_nested_equal_dotted():
    assert weft.overrides({"tile": {"m": 128, "n": 64}, "dtype": "bf16", "pdl": True, "eps": 0.5}) == [
        "tile.m=128", "tile.n=64", 'dtype="bf16"', "pdl=true", "eps=0.5"]
    g = EXAMPLES / "gemm.lua"
    a = weft.generate(g, tile={"n": 128})
    b = weft.context().generate_source(g.read_text(), name=str(g), **{"tile": {"n": 128}})
    assert a.params["tile.n"] == "128" and a.params["tile.m"] == "128" and a.name == b.name
    # the same values written into the config give the same kernel
    c = weft.generate({"family": "gemm", "dtype": "bf16", "b_layout": "row", "tile": {"m": 128, "n": 128, "k": 64},
                       "stages": 3, "consumers": 2, "epilogue": "tma"})
    assert c.name == a.name


def test_override_str_stays_str(softmax):
    # bare "true"/"4" would read as a bool/number in the generator: a str must stay a str
    with pytest.raises(weft.ConfigError, match='cluster = "4"'):
        weft.generate(softmax, cluster="4")
    with pytest.raises(weft.ConfigError, match='dtype = "true"'):
        weft.generate(softmax, dtype="true")
    assert weft.generate(softmax, dtype="bf16").params["dtype"] == "bf16"


@pytest.mark.parametrize("kw, words", [
    ({"bogus": 3}, ["bogus = 3", "unknown key", "row_softmax"]),
    ({"threads": 100}, ["threads = 100", "must be one of"]),
    ({"cluster": float("nan")}, ["override cluster", "nan", "finite"]),
    ({"cluster": float("inf")}, ["override cluster", "inf", "finite"]),
    ({"cluster": None}, ["override cluster = None", "NoneType"]),
    ({"cluster": [1]}, ["override cluster = [1]", "list"]),
    ({"cluster": 1 << 64}, ["override cluster", str(1 << 64), "64 bits"]),
    ({"tile": {}}, ["override tile = {}", "empty"]),
    ({"tile": {"m x": 1}}, ["override key 'tile.m x'", "name"]),
    ({"dtype": "f32\0x"}, ["override dtype", "NUL"]),
    ({"tile": {"m": 128}}, ["tile = { m = 128 }", "unknown key"]),
])
def test_override_errors(softmax, kw, words):
    with pytest.raises(weft.ConfigError) as e:
        weft.generate(softmax, **kw)
    assert e.value.status_name == "CONFIG"
    for w in words:
        assert w in str(e.value)


# ---- bad configs -------------------------------------------------------------------------------

def bad(config, *words, cls=weft.ConfigError):
    with pytest.raises(cls) as e:
        weft.generate(config)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    return e.value


def test_bad_dict_values():
    bad({"family": "row_softmax", "dtype": b"f32"}, "dtype", "bytes", "allowed are")
    bad({"family": "row_softmax", "dtype": None}, "dtype = None", "NoneType")
    bad({"family": "row_softmax", "tile": {"m": object()}}, "tile.m", "object")
    bad({"family": "row_softmax", "threads": float("nan")}, "threads", "nan", "finite")
    bad({"family": "rmsnorm", "eps": float("-inf")}, "eps", "-inf", "finite")
    bad({"family": "row_softmax", "l": [1, float("inf")]}, "l[2]", "finite")
    bad({"family": "row_softmax", "threads": -(1 << 63) - 1}, "threads", "64 bits")
    bad({"family": "row_softmax", 3: 4}, "key 3", "int", "strings")
    bad({"family": "row_softmax", "threads": 100}, "threads = 100")
    cyc = {"family": "row_softmax"}
    cyc["me"] = cyc
    bad(cyc, "me", "refers back")
    deep = v = {}
    for _ in range(40):
        v["a"] = {}
        v = v["a"]
    bad({"family": "row_softmax", "deep": deep}, "nested more than 32")


@pytest.mark.parametrize("key", ["not an identifier", "1x", "a.b", "end", "function", "nil", "x-y"])
def test_bad_dict_keys_are_named(key):
    e = bad({"family": "row_softmax", key: 1}, "unknown key")
    assert key in str(e)


def test_unknown_family_and_missing_family():
    bad({"family": "no_such_family"}, 'family = "no_such_family"', *FAMILIES)
    bad({}, "family = nil", "row_softmax")
    bad({"family": 7}, "family = 7")


def test_bad_paths(tmp_path):
    missing = tmp_path / "nope.lua"
    e = bad(missing, str(missing), cls=weft.WeftError)
    assert e.status_name == "IO"
    e = bad(tmp_path, str(tmp_path), "directory", cls=weft.WeftError)
    assert e.status_name == "IO"
    with pytest.raises(ValueError, match="NUL"):
        weft.generate(str(tmp_path) + "/x\0.lua")
    with pytest.raises(TypeError, match="path .* or a dict, not int"):
        weft.generate(42)
    broken = tmp_path / "broken.lua"
    broken.write_text("return { family = \n")
    bad(broken, str(broken))


ATTACKS = ['he said "hi"', "back\\slash\\", "two\nlines\r\n", "]]", "]==]", "[[", "a\0b", '"), os.exit(3), ("',
           "\"..os.exit(3)..\"", "\\\"); os.exit(3) --", "héllo wörld 中文 \U0001F600", "\t\x01\x7f", "%q %s %d"]


def lua_q(s):
    """Lua 5.4's string.format("%q") of s's UTF-8 with a newline as \\n, decoded back: what the
    generator's messages show (gen/core/schema.lua's quote)."""
    b, out = s.encode("utf-8"), []
    for i, c in enumerate(b):
        ch = bytes([c])
        if ch in (b'"', b"\\"):
            out.append(b"\\" + ch)
        elif ch == b"\n":   # (on one line: %q's backslash and newline shown as \n)
            out.append(b"\\n")
        elif ch == b"\0":
            out.append(b"\\0" if not (i + 1 < len(b) and chr(b[i + 1]).isdigit()) else b"\\000")
        elif c < 32 or c == 127:
            out.append(("\\%d" % c if not (i + 1 < len(b) and chr(b[i + 1]).isdigit()) else "\\%03d" % c).encode())
        else:
            out.append(ch)
    return '"' + b"".join(out).decode("utf-8") + '"'


@pytest.mark.parametrize("attack", ATTACKS)
def test_attacker_strings_are_data(tmp_path, monkeypatch, attack):
    # A value reaches the config as the same text (the message quotes it back exactly); a key is named
    # as an unknown field; nothing runs as Lua (an os.exit would end this process, and the generator's
    # sandbox has no os or io: a created file would show it).
    monkeypatch.chdir(tmp_path)
    e = bad({"family": "row_softmax", "dtype": attack}, "dtype = " + lua_q(attack))
    assert e.status_name == "CONFIG"
    bad({"family": "row_softmax", "op": {"combine": attack}}, "op")
    if "\0" in attack:   # C strings would cut the generator's message short: refused before it
        bad({"family": "row_softmax", attack: 1}, "NUL", "key")
    else:
        e = bad({"family": "row_softmax", "mode": "onchip", attack: 1}, "unknown key")
        assert weft.core.printable(attack) in str(e)   # (its control characters shown escaped)
    with pytest.raises(weft.ConfigError):
        weft.generate(EXAMPLES / "row_softmax.lua", **({"dtype": attack}))
    assert list(tmp_path.iterdir()) == []


def test_attacker_strings_in_a_subprocess(tmp_path):
    # The same, where an os.exit(3) that got through would be seen as the exit status.
    code = ("import weft\n"
            "for a in %r:\n"
            "    for cfg in ({'family': 'row_softmax', 'dtype': a}, {'family': a}, {a: a}):\n"
            "        try:\n"
            "            weft.generate(cfg)\n"
            "        except weft.ConfigError:\n"
            "            pass\n"
            "        else:\n"
            "            raise SystemExit('accepted %%r' %% (cfg,))\n"
            "print('survived')\n" % (ATTACKS,))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "survived"
    assert list(tmp_path.iterdir()) == []


def test_lua_source_text():
    c = weft.context()
    m = c.generate_source('return { family = "row_softmax", dtype = "f16", max_cols = 1024 }', name="mine.lua")
    assert m.params["dtype"] == "f16" and m.params["max_cols"] == "1024"
    with pytest.raises(weft.ConfigError, match='mine.lua: dtype = "f64"'):
        c.generate_source('return { family = "row_softmax", dtype = "f64", max_cols = 1024 }', name="mine.lua")
    with pytest.raises(ValueError, match="NUL"):
        c.generate_source('return { family = "row_softmax" }\0 os.exit(3)')
    with pytest.raises(weft.ConfigError):
        c.generate_source('os.exit(3)')


# ---- compile -----------------------------------------------------------------------------------

def test_compile_and_cache(ctx, tmp_path, softmax):
    k = ctx.compile(softmax, cluster=2)
    assert not k.cache_hit
    ptx = k.ptx
    assert ".entry " + k.manifest.entry in ptx or ".entry\t" + k.manifest.entry in ptx or k.manifest.entry in ptx
    assert re.search(r"\.entry\s+%s\b" % re.escape(k.manifest.entry), ptx)
    assert ".target sm_90a" in ptx
    cubin = k.cubin
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    assert k.compile_ms >= 0
    assert any((tmp_path / "cache").rglob("*")), "nothing written to the private cache"
    k2 = ctx.compile(softmax, cluster=2)
    assert k2.cache_hit and k2.ptx == ptx and k2.cubin == cubin
    k3 = ctx.compile(softmax, cluster=4)
    assert not k3.cache_hit and k3.manifest.name != k.manifest.name
    # a fresh context on the same folder finds it too
    other = weft.Context(cache_dir=str(tmp_path / "cache"))
    assert other.compile(softmax, cluster=2).cache_hit
    other.close()


def test_compile_parts(ctx):
    k = ctx.compile(EXAMPLES / "ag_gemm.lua", variant="gather_then_gemm")
    parts = k.parts()
    assert len(parts) == 2 and parts[0] is k
    names = [p.manifest.name for p in parts]
    assert names == k.manifest.kernels
    for p in parts:
        assert re.search(r"\.entry\s+%s\b" % re.escape(p.manifest.entry), p.ptx)
    assert [a.name for a in parts[1].manifest.args] == ["c", "a", "b", "m", "n", "k"]
    assert parts[1].manifest.check_size("k", 64) is None
    assert parts[0].ptx != parts[1].ptx
    k.close()
    with pytest.raises(ValueError, match="closed"):
        parts[1].ptx
    with pytest.raises(ValueError, match="freed"):
        parts[1].manifest.check_size("k", 64)


def test_compile_manifest_ownership(ctx, softmax):
    m = ctx.generate(softmax)
    part_view = m.parts()[0]
    k = ctx.compile_manifest(m)
    assert k.manifest.name == m.name and m.name == part_view.name   # Python fields stay readable
    with pytest.raises(ValueError, match="already compiled"):
        ctx.compile_manifest(m)
    with pytest.raises(ValueError, match="handed to a kernel"):
        m.check_size("cols", 5)
    with pytest.raises(ValueError):
        m.parts()
    assert k.manifest.check_size("cols", 5) is None
    # a part of a multi-kernel config is not a first kernel
    g = ctx.generate(EXAMPLES / "ag_gemm.lua", variant="gather_then_gemm")
    with pytest.raises(ValueError):
        ctx.compile_manifest(g.parts()[1])
    with pytest.raises(TypeError):
        ctx.compile_manifest("row_softmax.lua")


def test_manifest_calls_wait_for_a_close_under_way(ctx, softmax):
    """parts() and check_size() hold the lock under which the C manifest is freed, from the check
    that it is alive to their C call: a close() on another thread came between the two, and an
    AddressSanitizer run read freed memory.  So a call made while a close() holds that lock waits,
    then says the manifest is gone."""
    def run(f, out):
        try:
            out.append(f())
        except ValueError as e:
            out.append(e)
    k = ctx.compile(softmax)
    m, out = k.manifest, []
    with ctx.lock:   # as Kernel.close() holds it while it frees
        t = threading.Thread(target=run, args=(lambda: m.check_size("cols", 5), out))
        t.start()
        time.sleep(0.2)
        assert t.is_alive(), "check_size() did not wait for the lock close() frees under"
        k.close()
    t.join(10)
    assert len(out) == 1 and isinstance(out[0], ValueError) and "freed" in str(out[0])
    # a first manifest: compile_manifest hands it over under its own lock, which parts() holds
    g, out = ctx.generate(softmax), []
    with g._lock:
        t = threading.Thread(target=run, args=(lambda: ctx.compile_manifest(g), out))
        t.start()
        time.sleep(0.2)
        assert t.is_alive(), "compile_manifest() did not wait for the manifest's lock"
        assert g.parts()[0] is g
    t.join(10)
    assert len(out) == 1 and isinstance(out[0], weft.Kernel)
    out[0].close()


def test_closed_context_and_kernel(tmp_path, softmax):
    c = weft.Context(cache_dir=tmp_path)
    k = c.compile(softmax)
    c.close()
    c.close()
    with pytest.raises(ValueError, match="closed"):
        c.generate(softmax)
    with pytest.raises(ValueError, match="closed"):
        k.ptx
    with pytest.raises(ValueError, match="closed"):
        k.launch(1 << 40, 1 << 40, 1, 1)


def test_contexts_per_device():
    assert weft.context(0) is weft.context(0)
    c1 = weft.context(1)   # a context needs no device until something launches
    assert c1 is not weft.context(0) and c1.device == 1 and weft.context(0).device == 0
    with pytest.raises(TypeError):
        weft.context("0")


def test_compile_from_threads(ctx, softmax):
    # one context, 4 threads compiling at once (distinct kernels, then the same ones again)
    results, errors = {}, []

    def work(i):
        try:
            for dt in ("f32", "f16", "bf16"):
                k = ctx.compile(softmax, cluster=(1, 2, 4, 8)[i], dtype=dt)
                results[(i, dt)] = (k.manifest.name, k.cache_hit, len(k.ptx))
        except BaseException as e:  # noqa: B902 (reported below)
            errors.append(e)

    join_all([threading.Thread(target=work, args=(i,)) for i in range(4)], 300)
    assert not errors, errors
    assert len(results) == 12 and len({v[0] for v in results.values()}) == 12
    assert all(v[2] > 0 for v in results.values())
    again = [ctx.compile(softmax, cluster=c, dtype=dt) for c in (1, 2, 4, 8) for dt in ("f32", "f16", "bf16")]
    assert all(k.cache_hit for k in again)


# ---- teardown order ----------------------------------------------------------------------------
# weft_kernel_destroy reads its context (on a GPU: the driver table that unloads the kernel's
# CUlibrary), so a kernel must be destroyed before its context, whatever order Python finalizes
# them in.  A Kernel is in a cycle with its Manifest, so a context and the kernels still open on
# it are collected together, at the latest at interpreter exit (bench/gemm_llm.py's end), and the
# collector clears the context's weak set of kernels before running any __del__.

_DESTROYS = ("weft_ctx_destroy", "weft_kernel_destroy")


class _Recorder:
    """weft.core's lib, recording (function, handle) for weft_ctx_destroy and weft_kernel_destroy."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def __getattr__(self, name):
        f = getattr(self.real, name)
        if name not in _DESTROYS:
            return f

        def call(h):
            self.calls.append((name, h.value))
            return f(h)
        return call


def check_teardown(calls, ctx_h, kernel_hs):
    kernels = [h for n, h in calls if n == "weft_kernel_destroy"]
    assert sorted(kernels) == sorted(kernel_hs), "each kernel destroyed once"
    assert [n for n, h in calls if h == ctx_h] == ["weft_ctx_destroy"], "the context destroyed once"
    assert calls[-1] == ("weft_ctx_destroy", ctx_h), "a kernel destroyed after its context: %s" % calls


@pytest.mark.parametrize("drop", ["context first", "kernels first", "one cycle"])
def test_collector_destroys_kernels_before_their_context(tmp_path, softmax, monkeypatch, drop):
    import gc
    from weft import core
    rec = _Recorder(core.lib)
    monkeypatch.setattr(core, "lib", rec)
    c = weft.Context(cache_dir=tmp_path / "cache")
    ks = [c.compile(softmax, cluster=n) for n in (1, 2)]
    ks.append(c.compile(EXAMPLES / "ag_gemm.lua", variant="gather_then_gemm"))
    ks[-1].parts()   # Kernel objects over its second kernel, which the first owns
    ctx_h, kernel_hs = c._h.value, [k.handle.value for k in ks]
    if drop == "context first":
        del c
        del ks
    elif drop == "kernels first":
        del ks
        del c
    else:
        junk = [c, ks]
        junk.append(junk)
        del c, ks, junk
    gc.collect()
    check_teardown(rec.calls, ctx_h, kernel_hs)


def test_close_and_collector_mixed(tmp_path, softmax, monkeypatch):
    import gc
    from weft import core
    rec = _Recorder(core.lib)
    monkeypatch.setattr(core, "lib", rec)
    c = weft.Context(cache_dir=tmp_path / "cache")
    k1, k2 = c.compile(softmax, cluster=1), c.compile(softmax, cluster=2)
    ctx_h, kernel_hs = c._h.value, [k1.handle.value, k2.handle.value]
    k1.close()
    k1.close()
    del c, k1, k2
    gc.collect()
    check_teardown(rec.calls, ctx_h, kernel_hs)
    # an explicit close still closes the kernels still open, then the context, at once
    rec.calls.clear()
    c = weft.Context(cache_dir=tmp_path / "cache")
    k = c.compile(softmax)
    ctx_h, kernel_hs = c._h.value, [k.handle.value]
    c.close()
    check_teardown(rec.calls, ctx_h, kernel_hs)
    with pytest.raises(ValueError, match="closed"):
        k.ptx
    k.close()
    c.close()
    assert len(rec.calls) == 2


EXIT_SCRIPT = r"""
import os, sys
import weft
from weft import core

write = os.write   # at exit, print and sys.stderr may be gone
class Recorder:
    def __init__(self, real):
        self.real = real
    def __getattr__(self, name):
        f = getattr(self.real, name)
        if name not in ("weft_ctx_destroy", "weft_kernel_destroy"):
            return f
        def call(h, f=f, name=name, write=write):
            write(2, b"%s %d\n" % (name.encode(), h.value))
            return f(h)
        return call
core.lib = Recorder(core.lib)

class Bench:   # bench/gemm_llm.py's: a context and its kernels, left open for the exit
    def __init__(self):
        self.ctx = weft.Context()
        self.kernels = {n: self.ctx.compile(sys.argv[1], cluster=n) for n in (1, 2, 4)}
        write(2, b"made %d %s\n" % (self.ctx._h.value, b" ".join(b"%d" % k.handle.value for k in self.kernels.values())))

def main():
    B = Bench()
    return 0

sys.exit(main())
"""


def test_interpreter_exit_destroys_kernels_before_their_context(tmp_path, softmax):
    script = tmp_path / "leave_open.py"
    script.write_text(EXIT_SCRIPT)
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(script), softmax], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stderr.splitlines() if ln.startswith(("made ", "weft_"))]
    assert lines and lines[0][0] == "made", r.stderr
    ctx_h, kernel_hs = int(lines[0][1]), [int(x) for x in lines[0][2:]]
    check_teardown([(n, int(h)) for n, h in lines[1:]], ctx_h, kernel_hs)


# ---- close() from several threads ----------------------------------------------------------------
# close() reads the handle, clears it and frees it.  CPython may switch threads between the read
# and the clearing, so two threads closing one object at once (threads sharing an Auto or a
# kernel, a context's close() closing its kernels while another thread closes one) both freed it.
# The tests widen that window: the handle's read sleeps, which lets every other thread run.

_FREES = ("weft_auto_free", "weft_kernel_destroy", "weft_ctx_destroy", "weft_world_destroy")


class _OnceRecorder:
    """weft.core's lib, recording each free / destroy call and passing on only the first for a
    handle (a second would be the double free itself, and abort the test run)."""

    def __init__(self, real):
        self.real, self.calls, self.lock = real, [], threading.Lock()

    def __getattr__(self, name):
        f = getattr(self.real, name)
        if name not in _FREES:
            return f

        def call(h):
            with self.lock:
                first = (name, h.value) not in self.calls
                self.calls.append((name, h.value))
            if first:
                f(h)
        return call


class _SlowHandle:
    """_h as a data descriptor whose read sleeps (releasing the GIL) before it answers."""

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        v = obj.__dict__["_slow_h"]
        time.sleep(0.02)
        return v

    def __set__(self, obj, v):
        obj.__dict__["_slow_h"] = v


def slow(obj):
    obj.__dict__["_slow_h"] = obj.__dict__.pop("_h")
    obj.__class__ = type("Slow" + type(obj).__name__, (type(obj),), {"_h": _SlowHandle()})
    return obj


def at_once(*fns):
    barrier, errors = threading.Barrier(len(fns)), []

    def run(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as e:  # noqa: B902 (reported below)
            errors.append(e)

    join_all([threading.Thread(target=run, args=(fn,)) for fn in fns], 60)
    assert not errors, errors


def test_close_from_threads_frees_once(tmp_path, softmax, monkeypatch):
    from weft import core
    rec = _OnceRecorder(core.lib)
    monkeypatch.setattr(core, "lib", rec)
    c = weft.Context(cache_dir=tmp_path / "cache")
    ctx_h = c._h.value
    a = c.auto({"family": "row_softmax", "dtype": "f32"}, {"rows": 64, "cols": 1024})
    k1, k2 = c.compile(softmax, cluster=1), c.compile(softmax, cluster=2)
    hs = [("weft_auto_free", a._h.value), ("weft_kernel_destroy", k1.handle.value),
          ("weft_kernel_destroy", k2.handle.value)]
    slow(a)
    at_once(a.close, a.close, a.close)          # threads sharing an Auto
    slow(k1)
    at_once(k1.close, k1.close, k1.close)       # ... a kernel
    slow(k2)
    at_once(c.close, k2.close)                  # the context's close() and the kernel's own
    assert [x for x in rec.calls if rec.calls.count(x) > 1] == [], "freed more than once: %s" % rec.calls
    assert sorted(rec.calls) == sorted(hs + [("weft_ctx_destroy", ctx_h)])
    assert rec.calls[-1] == ("weft_ctx_destroy", ctx_h), "a kernel destroyed after its context: %s" % rec.calls
    assert c._open == 0 and c._closing_h is None
    a.close(), k1.close(), k2.close(), c.close()
    assert len(rec.calls) == 4

def test_close_waits_for_a_read_on_another_thread(tmp_path, softmax, monkeypatch):
    # close() took no lock: a thread reading k.cubin (or launching k) read the kernel after another
    # thread freed it (a segfault, or another kernel's bytes; an attack review of the package)
    from weft import core
    events, entered, release = [], threading.Event(), threading.Event()
    real = core.lib

    class Lib:
        def __getattr__(self, name):
            f = getattr(real, name)
            if name == "weft_kernel_cubin":
                def cubin(h, n):
                    events.append("read")
                    entered.set()
                    release.wait(10)
                    r = f(h, n)
                    events.append("read done")
                    return r
                return cubin
            if name == "weft_kernel_destroy":
                def destroy(h):
                    events.append("destroy")
                    return f(h)
                return destroy
            return f

    monkeypatch.setattr(core, "lib", Lib())
    c = weft.Context(cache_dir=tmp_path / "cache")
    k = c.compile(softmax)
    got = []
    assert_close_waits(lambda: got.append(k.cubin), k.close, entered, release, "the read")
    assert events == ["read", "read done", "destroy"], events
    assert got and got[0] and got[0][:4] == b"\x7fELF"
    c.close()


def test_kernel_close_refused_under_an_open_comm(tmp_path, softmax):
    # a Comm keeps its kernel (comm.c's c->k): closing the kernel first left the Comm's launch,
    # check and epoch to read a freed kernel.  (A real Comm needs a GPU: a stand-in is registered.)
    c = weft.Context(cache_dir=tmp_path / "cache")
    k = c.compile(softmax)

    class OpenComm:
        _h, kernel = object(), k

    comm = OpenComm()
    c._comms.add(comm)
    with pytest.raises(ValueError, match=r"kernel \S+ has 1 open communicator\(s\) over it: close them first"):
        k.close()
    assert k.handle is not None
    comm._h = None   # (closed)
    k.close()
    assert k.handle is None
    c.close()


def test_context_close_checks_for_comms_under_its_lock(tmp_path, softmax):
    # A Comm registers itself under its context's lock.  close() checked for open ones before
    # taking the lock: a Comm made on another thread between that check and the lock went unseen,
    # and close() went on to free the context's other kernels before its kernel refused (a context
    # half closed, with a kernel's message).  The check is now under the lock: nothing is freed.
    c = weft.Context(cache_dir=tmp_path / "cache")
    k, other = c.compile(softmax), c.compile(softmax)
    assert k.handle is not None and other.handle is not None and k is not other

    class OpenComm:
        _h, kernel = object(), k

    comm, said = OpenComm(), []

    def close():
        try:
            c.close()
        except ValueError as e:
            said.append(str(e))
    with c.lock:   # a Comm being made: it holds the lock until it is registered
        t = threading.Thread(target=close)
        t.start()
        time.sleep(0.2)   # (close() is now at the lock, or before: either way it must see the Comm)
        c._comms.add(comm)
    t.join(10)
    assert not t.is_alive()
    assert said and said[0].startswith("weft: this context still has 1 open communicator(s): close them first"), said
    assert k.handle is not None and other.handle is not None   # (nothing freed)
    comm._h = None   # (closed)
    c.close()
    assert k.handle is None and other.handle is None


def test_world_close_from_threads_frees_once(monkeypatch):
    from weft import dist
    rec = _OnceRecorder(dist.lib)
    monkeypatch.setattr(dist, "lib", rec)
    w = weft.World(0, 1, 0, 1, lambda data: data)
    h = w.handle.value
    slow(w)
    at_once(w.close, w.close, w.close)
    w.close()
    assert rec.calls == [("weft_world_destroy", h)]


# ---- launch (no GPU here) ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    c = weft.Context(cache_dir=tmp_path_factory.mktemp("cache"))
    k = c.compile(EXAMPLES / "row_softmax.lua")
    yield k
    c.close()


P = 1 << 40   # a plausible device address


def test_launch_argument_count(kernel):
    with pytest.raises(TypeError, match=r"takes 4 arguments \(y, x, rows, cols\), got 3"):
        kernel.launch(P, P, 1)
    with pytest.raises(TypeError, match="got 5"):
        kernel.launch(P, P, 1, 1, 1)


@pytest.mark.parametrize("args, name, what", [
    (("p", P, 1, 1), "y", "pointer"), ((P, 1.5, 1, 1), "x", "pointer"), ((P, None, 1, 1), "x", "pointer"),
    ((P, P, 1.0, 1), "rows", "size"), ((P, P, 1, "8"), "cols", "size"), ((P, P, True, 1), "rows", "size"),
])
def test_launch_argument_types(kernel, args, name, what):
    with pytest.raises(TypeError, match="argument %s is a %s" % (name, what)):
        kernel.launch(*args)


@pytest.mark.parametrize("args, name", [((P, P, 1 << 32 | 5, 1), "rows"), ((P, P, 1, -(1 << 31) - 1), "cols"),
                                        ((-1, P, 1, 1), "y"), ((P, 1 << 64, 1, 1), "x")])
def test_launch_values_that_do_not_fit(kernel, args, name):
    with pytest.raises(weft.WeftError) as e:
        kernel.launch(*args)
    assert e.value.status_name == "LAUNCH" and "argument %s = " % name in str(e.value)


@pytest.mark.parametrize("eps", [float("nan"), float("inf"), -float("inf"), 1e300, -3.5e38])
def test_launch_scalar_not_a_finite_f32(tmp_path, eps):
    # ctypes made 1e300 an inf, and NaN and inf went to the kernel as they were
    c = weft.Context(cache_dir=tmp_path / "cache")
    k = c.compile(EXAMPLES / "rmsnorm.lua", eps="arg")
    vals = {"ptr": P, "i32": 64, "f32": eps}
    args = [vals[a.type] for a in k.manifest.args]
    assert [a.name for a in k.manifest.args if a.type == "f32"] == ["eps"]
    with pytest.raises(weft.WeftError, match=r"argument eps = %s is not a finite f32" % re.escape(repr(eps))) as e:
        k.launch(*args)
    assert e.value.status_name == "LAUNCH"
    c.close()


@pytest.mark.parametrize("stream", [1 << 64, (1 << 64) + 5, -1])
def test_launch_stream_out_of_range(kernel, stream):
    # an int the C handle cannot hold (ctypes passed 2**64 + 5 as stream 5, and 2**64 as NULL)
    with pytest.raises(ValueError, match="stream = %d is not a CUstream handle" % stream):
        kernel.launch(P, P, 1, 1, stream=stream)


def _unbound_comm(kernel):
    c = weft.Comm.__new__(weft.Comm)   # (a Comm needs a GPU; the stream is checked before its handle)
    c.kernel, c._h = kernel, None
    return c


@pytest.mark.parametrize("stream", [1 << 64, -1, "0", 1.0])
def test_comm_launch_stream_checked_as_kernel_launch(kernel, stream):
    # Comm.launch and Kernel.launch check the stream in one place, stream_handle: the same messages
    err, what = (ValueError, "stream = %d is not a CUstream handle" % stream) if isinstance(stream, int) else \
                (TypeError, "stream is a CUstream handle as int")
    for launch in (kernel.launch, _unbound_comm(kernel).launch):
        with pytest.raises(err, match=re.escape("weft: %s: %s" % (kernel.manifest.name, what))):
            launch(P, P, 1, 1, stream=stream)
    with pytest.raises(ValueError, match="this communicator is closed"):
        _unbound_comm(kernel).launch(P, P, 1, 1, stream=(1 << 64) - 1)


@pytest.mark.parametrize("kw, what", [({"ranks": (1 << 32) + 2}, "ranks = 4294967298: a whole number in 1..65536"),
                                      ({"ranks": 0}, "ranks = 0"), ({"candidates": -1}, "candidates = -1"),
                                      ({"candidates": 17}, "candidates = 17: a whole number in 0..16")])
def test_auto_counts_checked(ctx, kw, what):
    # ctypes would cut 2**32 + 2 ranks to 2 and plan for them; 0 or -1 was "weft: invalid use"
    with pytest.raises(ValueError, match=re.escape(what)):
        ctx.auto({"family": "row_reduce", "dtype": "f32"}, "rows=8 cols=8", **kw)


@pytest.mark.parametrize("device, err", [((1 << 32) + 3, ValueError), (-7, ValueError), (True, TypeError),
                                          (1.5, TypeError)])
def test_context_device_checked(device, err):
    with pytest.raises(err, match="weft: device = "):
        weft.Context(device)


def test_record_checked(ctx):
    a = ctx.auto({"family": "row_reduce", "dtype": "f32"}, "rows=8 cols=8")
    for i, t, what in ((1 << 32, 1.0, "record: candidate = 4294967296"), (0, float("nan"), "time_us = nan"),
                       (0, -1.0, "time_us = -1.0"), (0, float("inf"), "time_us = inf")):
        with pytest.raises(ValueError, match=re.escape(what)):
            a.record(i, t)


def test_launch_null_pointer_and_limits(kernel):
    with pytest.raises(weft.WeftError) as e:
        kernel.launch(P, 0, 4, 4)
    assert e.value.status_name == "LAUNCH" and "pointer argument x is 0" in str(e.value)
    cap = int(kernel.manifest.params["max_cols"])
    with pytest.raises(weft.WeftError) as e:
        kernel.launch(P, P, 4, cap + 1)
    assert e.value.status_name == "LAUNCH" and "cols = %d" % (cap + 1) in str(e.value)


class FakeTensor:
    def __init__(self, p):
        self.p = p

    def data_ptr(self):
        return self.p


class FakeStream:
    cuda_stream = 0


def test_launch_without_gpu_is_no_gpu_error(kernel):
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU machine: the launch would run")
    for stream in (None, 0, 12345, FakeStream()):
        with pytest.raises(weft.NoGPUError) as e:
            kernel.launch(FakeTensor(P), P + 4096, 4, 4, stream=stream)
        assert e.value.status_name == "NO_DRIVER"
    for stream in ("0", b"\0", 1.0):
        with pytest.raises(TypeError, match="stream"):
            kernel.launch(P, P, 4, 4, stream=stream)


# ---- loading -----------------------------------------------------------------------------------

def run_import(env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", "import weft"], env=e, capture_output=True, text=True, timeout=60)


def test_weft_lib_pointing_nowhere(tmp_path):
    nowhere = str(tmp_path / "no" / "libweft.so.0")
    r = run_import({"WEFT_LIB": nowhere})
    assert r.returncode != 0 and "OSError" in r.stderr and nowhere in r.stderr
    notlib = tmp_path / "libweft.so.0"
    notlib.write_text("not a library")
    r = run_import({"WEFT_LIB": str(notlib)})
    assert r.returncode != 0 and "OSError" in r.stderr and "cannot load %s" % notlib in r.stderr
    r = run_import({"WEFT_LIB": str(tmp_path)})
    assert r.returncode != 0 and str(tmp_path) in r.stderr


def test_library_api_types():
    # the status names the package maps are the library's own
    from weft import core
    n = len(core.STATUS)
    assert sorted(core.STATUS) == list(range(n))
    assert all(core.text_status(code) != "unknown status" for code in core.STATUS)
    assert core.text_status(n) == "unknown status", "libweft has a status the package does not map"
    assert isinstance(weft._lib.lib.weft_version(), bytes)
    assert ctypes.sizeof(weft._lib._CtxOptions) == 24


def test_number_and_string_subclasses_render_as_their_values():
    """A subclass's own repr/encode never reaches the Lua chunk: numpy's float64 repr is
    "np.float64(1.5)", an IntEnum's is "E.A", and a hostile one could be code."""
    class F(float):
        def __repr__(self):
            return '0 } , threads = (function() os.exit(3) end)() , x = {'

    class I(int):
        def __repr__(self):
            return "os.exit(3)"

        __str__ = __repr__

    class S(str):
        def encode(self, *a, **k):
            return b'", os.exit(3), "'

    text = weft.lua_config({"family": "row_softmax", "eps": F(1.5), "max_cols": I(4096), "dtype": S("f32")})
    assert "os.exit" not in text and "1.5" in text and "4096" in text and '"f32"' in text
    assert weft.overrides({"max_cols": I(4096)}) == ["max_cols=4096"]

    # ... nor a key's or an override string's __str__ (a key's wrote 'dtype = "f16", mode' into the
    # table: an f16 kernel from a config with no dtype at all)
    class T(str):
        def __str__(self):
            return 'dtype = "f16", mode'

    text = weft.lua_config({"family": "row_softmax", "mode": "onchip", T("zzz"): "onchip"})
    assert text == 'return {family = "row_softmax", mode = "onchip", zzz = "onchip"}\n' and "f16" not in text
    assert weft.overrides({"dtype": T("f32")}) == ['dtype="f32"']

    class R(str):
        def __str__(self):
            return "rows=1 cols"

        def encode(self, *a, **k):
            return b"rows=1"

    assert weft.core.shape_text({R("cols"): 5, "rows": 7}) == "cols=5 rows=7"
    assert type(weft.core.shape_text(R("rows=7 cols=5"))) is str
    assert weft.core._dict_name({"family": R("row_softmax")}) == b"<dict row_softmax>"


def test_a_cpu_tensor_is_not_launched_as_a_device_pointer():
    class HostTensor:   # what matters of a CPU torch.Tensor: is_cuda False, a host data_ptr()
        is_cuda = False
        device = "cpu"

        def data_ptr(self):
            return 0x7f0000001000

    k = weft.compile({"family": "row_softmax", "dtype": "f32", "max_cols": 1024})
    with pytest.raises(ValueError, match="argument y is a tensor on cpu, not on a CUDA device"):
        k.launch(HostTensor(), 0x1000, 1, 8)


def test_source_dir_named_as_given(monkeypatch):
    # the context's option is named as the option (the message said WEFT_SOURCE_DIR, which was not set)
    monkeypatch.delenv("WEFT_SOURCE_DIR", raising=False)
    c = weft.Context(source_dir="/nonexistent/weft-src")
    try:
        with pytest.raises(weft.WeftError, match=r'source_dir = "/nonexistent/weft-src": not a weft source tree'):
            c.generate({"family": "row_reduce", "dtype": "f32"})
    finally:
        c.close()


def test_overrides_capped():
    # 10**6 keyword overrides took 18 s and 1.5 GB to be refused one by one
    with pytest.raises(weft.ConfigError, match="weft: 4097 overrides: at most 4096"):
        weft.core.overrides({"k%d" % i: i for i in range(4097)})


class _LazyDict(dict):
    """A dict of n keys k0..k{n-1} that makes its items only as they are asked for, and counts them."""
    def __init__(self, n):
        super().__init__()
        self.n, self.made = n, 0

    def __len__(self):
        return self.n

    def items(self):
        for i in range(self.n):
            self.made += 1
            yield "k%d" % i, i


def test_overrides_capped_nested():
    # only the top-level keys were counted: tile={10**6 keys} became 10**6 strings before Lua refused them
    big = _LazyDict(10**6)
    with pytest.raises(weft.ConfigError, match=r"weft: more than 4096 overrides \(.*\): at most 4096"):
        weft.core.overrides({"tile": big})
    assert big.made <= 4097, "refused after %d of 10**6 nested keys: not before making them all" % big.made
    # each key of a nested dict counts, whatever its depth
    two = {"t%d" % i: {"m": 1, "n": {"k": 2}} for i in range(2048)}
    assert len(weft.core.overrides(two)) == 4096
    two["t2048"] = {"m": 1}
    with pytest.raises(weft.ConfigError, match=r"weft: more than 4096 overrides \(.*\): at most 4096"):
        weft.core.overrides(two)
    with pytest.raises(weft.ConfigError, match=r"weft: more than 4096 overrides \(.*\): at most 4096"):
        weft.core.overrides({"tile": {"k%d" % i: i for i in range(10**5)}})


@pytest.mark.parametrize("call, what", [
    (lambda c: c.generate({"family": "row_reduce", "dtype": "\ud800"}), "config field dtype = '\\ud800'"),
    (lambda c: c.generate({"family": "row_reduce"}, dtype="\ud800"), "override dtype = '\\ud800'"),
    (lambda c: c.generate({"family": "row_reduce", "\ud800": 1}), "config field <config> has key '\\ud800'"),
])
def test_lone_surrogate_named(ctx, call, what):
    # str.encode("utf-8") raised a UnicodeEncodeError naming no field
    with pytest.raises(weft.ConfigError, match=re.escape(what) + ".*a lone surrogate has no UTF-8 form"):
        call(ctx)


def test_auto_compile_candidate_checked(ctx):
    # Auto.compile(0.5) raised ctypes' ArgumentError, naming neither the call nor the value
    a = ctx.auto({"family": "row_reduce", "dtype": "f32"}, "rows=8 cols=8")
    for i in (0.5, "0", True, None):
        with pytest.raises(TypeError, match=re.escape("Auto.compile: candidate = %r" % (i,))):
            a.compile(i)
    n = len(a.names)
    with pytest.raises(IndexError, match=re.escape("Auto.compile: candidate = %d: this choice has %d (0..%d)" % (n, n, n - 1))):
        a.compile(n)
    with pytest.raises(IndexError, match=re.escape("candidate = -1: this choice has %d" % n)):
        a.compile(-1)
    for t in (None, "5", True):   # (None: float()'s message; "5" and True were taken as times)
        with pytest.raises(TypeError, match=re.escape("record: time_us = %r: a number of microseconds" % (t,))):
            a.record(0, t)


def test_arguments_of_the_wrong_type_are_named(ctx, tmp_path):
    # each raised a TypeError from deep inside (os.fspath, operator.index, sorted) that named
    # neither the call nor the argument, or took the value (context(True) was device 1)
    with pytest.raises(TypeError, match=re.escape("cache_dir = 5: a path (str, bytes or os.PathLike), not int")):
        weft.Context(cache_dir=5)
    for dev in ("0", True, 1.0):
        with pytest.raises(TypeError, match=re.escape("context: device = %r" % (dev,))):
            weft.context(dev)
    m = weft.generate({"family": "row_reduce", "dtype": "f32"})
    for v in ("5", True, 2.0):
        with pytest.raises(TypeError, match=re.escape("check_size: cols = %r: a whole number" % (v,))):
            m.check_size("cols", v)
    with pytest.raises(ValueError, match="shape size name 1 is not a name"):
        weft.shape_text({1: 2, "rows": 3})


def test_messages_show_control_characters_escaped(ctx, tmp_path):
    # a file name or a chunk name with an escape sequence recoloured the terminal the error was
    # printed to (the CLI shows them escaped; so does the package)
    with pytest.raises(weft.WeftError) as e:
        weft.generate(str(tmp_path / "x\x1b[31m.lua"))
    assert "x\\x1b[31m.lua" in str(e.value) and "\x1b" not in str(e.value)
    with pytest.raises(weft.ConfigError) as e:
        ctx.generate_source("return {", name="\x1b[31mred\x9b")
    assert "\x1b" not in str(e.value) and "\x9b" not in str(e.value) and "\\x1b[31mred\\x9b" in str(e.value)
    assert weft.core.printable("a\tb\nc\x07\u00e9") == "a\tb\nc\\x07\u00e9"


def test_compile_tuned_config_must_be_a_path(ctx):
    # a dict (compile() takes one, compile_tuned does not) raised os.fspath's bare TypeError
    with pytest.raises(TypeError, match="a config path is a str, bytes or os.PathLike, not dict"):
        ctx.compile_tuned({"family": "row_reduce", "dtype": "f32"}, "rows=8 cols=8")
