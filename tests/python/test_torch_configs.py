"""weft.torch's config-from-shape rules (python/weft/torch/configs.py), without torch or a GPU.

Every config a rule picks is compiled with weft (NVRTC, no GPU needed) and its manifest must take
every shape of the class: the rule never hands the op a kernel that its family refuses, and a
shape class (the key the op caches kernels by) never mixes configs.  Run:
    PYTHONPATH=build/python python3 -m pytest tests/python/test_torch_configs.py
"""
import importlib.util
import os

import pytest

import weft

# configs.py is loaded by path: importing the package weft.torch would import torch
_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "python", "weft", "torch", "configs.py")
_spec = importlib.util.spec_from_file_location("weft_torch_configs", _PATH)
C = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(C)

_kernels = {}


def kernel(cfg):
    key = repr(sorted(cfg.items()))
    if key not in _kernels:
        _kernels[key] = weft.compile(cfg)
    return _kernels[key]


def admits(kern, **sizes):
    for name, value in sizes.items():
        why = kern.manifest.check_size(name, value)
        assert why is None, "%s: %s = %d refused: %s" % (kern, name, value, why)


def classes(rule, shapes):
    """{key: (config, [shapes])}; a key seen twice must give the same config."""
    out = {}
    for s in shapes:
        key, cfg = rule(*s)
        if key in out:
            assert out[key][0] == cfg, "key %r gave two configs: %r and %r" % (key, out[key][0], cfg)
            out[key][1].append(s)
        else:
            out[key] = (cfg, [s])
    return out


COLS = [1, 3, 8, 100, 511, 512, 513, 1000, 4096, 4099, 5120, 7168, 8192, 16384, 32000, 32768, 32769,
        65536, 100003, 131072, 262144, 262145, 524288, 1048576]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_softmax_configs_compile_and_take_their_shapes(dtype):
    got = classes(lambda r, c: C.softmax(dtype, r, c), [(rows, c) for c in COLS for rows in (1, 4096)])
    modes = set()
    for key, (cfg, shapes) in got.items():
        k = kernel(cfg)
        modes.add(cfg["mode"])
        for rows, cols in shapes:
            admits(k, rows=rows, cols=cols)
    assert modes == {"onchip", "stream"}
    # the measured rows of RESULTS.md "Rows" run 4 are what the rule picks at those shapes
    assert C.softmax("f32", 8192, 32768)[1] == {"family": "row_softmax", "dtype": "f32", "mode": "onchip",
                                                "max_cols": 32768, "cluster": 1, "threads": 1024}
    assert C.softmax("f32", 32, 1048576)[1]["mode"] == "stream"


def test_softmax_vocab_row_is_onchip_on_one_cta():
    key, cfg = C.softmax("bf16", 4096, 32000)
    assert cfg["mode"] == "onchip" and cfg["cluster"] == 1 and cfg["max_cols"] >= 32000
    assert C.softmax("bf16", 16, 32001)[0] == key   # the class is the bucket, not the exact size


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("residual", [False, True])
def test_rms_norm_configs_compile_and_take_their_shapes(dtype, residual):
    cols = [c for c in COLS if c <= C.rms_norm_max_cols(dtype, residual)]
    got = classes(lambda r, c: C.rms_norm(dtype, r, c, residual), [(rows, c) for c in cols for rows in (1, 8192)])
    assert len(got) >= 4
    for key, (cfg, shapes) in got.items():
        k = kernel(cfg)
        assert [a.name for a in k.manifest.args] == (["y", "x", "w"] + (["r"] if residual else []) +
                                                     ["eps", "rows", "cols"])
        for rows, c in shapes:
            admits(k, rows=rows, cols=c)


def test_rms_norm_tuned_rows_of_results():
    # RESULTS.md "rmsnorm": the tuned configs are the rule's at their shapes
    cfg = C.rms_norm("bf16", 8192, 4096, False)[1]
    assert (cfg["threads"], cfg["rows_per_cta"], cfg["min_blocks"], cfg["cluster"]) == (128, 1, 2, 1)
    cfg = C.rms_norm("f16", 2048, 5120, True)[1]
    assert (cfg["threads"], cfg["rows_per_cta"], cfg["cluster"]) == (128, 1, 1)
    cfg = C.rms_norm("f32", 4096, 16384, False)[1]
    assert (cfg["threads"], cfg["rows_per_cta"], cfg["cluster"]) == (256, 1, 1)


@pytest.mark.parametrize("residual", [False, True])
def test_rms_norm_longest_row_compiles_and_one_more_is_refused(residual):
    top = C.rms_norm_max_cols("f32", residual)
    cfg = C.rms_norm("f32", 4, top, residual)[1]
    admits(kernel(cfg), rows=4, cols=top)
    with pytest.raises(C.SizeError) as e:
        C.rms_norm("f32", 4, top + 1, residual)
    msg = str(e.value)
    for part in ("weft.torch.rms_norm", "x has %d columns" % (top + 1), "at most %d" % top, "torch.nn.functional"):
        assert part in msg, msg


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_row_reduce_configs_compile_and_take_their_shapes(dtype, op):
    shapes = [(rows, c) for c in (1, 3, 100, 2048, 4097, 32768, 65537, 262144, 1048576) for rows in (1, 32, 2048)]
    got = classes(lambda r, c: C.row_reduce(dtype, op, r, c), shapes)
    assert {k[-1] for k in got} == {"short", "row", "long", "few"}
    for key, (cfg, sh) in got.items():
        k = kernel(cfg)
        assert k.manifest.params["op"] == op
        for rows, c in sh:
            admits(k, rows=rows, cols=c)
    with pytest.raises(ValueError, match="op = 'mean'; allowed: sum, max, min, prod"):
        C.row_reduce(dtype, "mean", 4, 4)


GEMM_SHAPES = [(1, 8, 8), (1, 14336, 4096), (16, 14336, 4096), (7, 200, 72), (100, 1000, 1000), (1000, 1024, 1000),
               (1024, 1024, 1024), (8192, 1024, 1024), (4096, 4096, 4096), (8192, 14336, 4096), (333, 136, 4104)]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_gemm_configs_compile_and_take_their_shapes(dtype, b_layout):
    got = classes(lambda m, n, k: C.gemm("matmul", dtype, b_layout, m, n, k), GEMM_SHAPES)
    assert {k[-1] for k in got} == {"small", "wide", "large"}
    for key, (cfg, sh) in got.items():
        kern = kernel(cfg)
        assert kern.manifest.params["b_layout"] == b_layout
        for m, n, k in sh:
            admits(kern, m=m, n=n, k=k)
    # RESULTS.md: the measured winners at their shapes
    assert C.gemm_class(4096, 4096) == "large" and C.gemm_class(8192, 1024) == "wide"
    assert C.gemm_class(1024, 1024) == "small" and C.gemm_class(16, 14336) == "small"
    assert C.gemm_class(8192, 14336) == "large"


def test_gemm_refuses_what_its_family_refuses():
    with pytest.raises(C.SizeError, match=r"weft.torch.linear: K = 100 \(x's last dim\).*multiples of 8"):
        C.gemm("linear", "bf16", "col", 16, 64, 100, a="x", b="weight")
    with pytest.raises(C.SizeError, match=r"weft.torch.matmul: N = 12 \(b's last dim\)"):
        C.gemm("matmul", "bf16", "row", 16, 12, 64)
    with pytest.raises(TypeError, match="weft.torch.matmul: a has dtype f32; weft's GEMM takes float16 and bfloat16"):
        C.gemm("matmul", "f32", "row", 16, 16, 64)
    # and the family agrees that these are outside its limits
    kern = kernel(C.gemm("matmul", "bf16", "row", 16, 64, 64)[1])
    assert kern.manifest.check_size("k", 100) is not None and kern.manifest.check_size("n", 12) is not None


def test_rows_beyond_the_32_bit_count_are_refused():
    with pytest.raises(C.SizeError, match=r"weft.torch.softmax: x has 2147483647 rows.*at most 1073741823"):
        C.softmax("f32", 2**31 - 1, 40000)


def test_tuned_shape_key_matches_the_cli():
    assert C.tuned_shape(rows=8192, cols=32768) == "cols=32768 rows=8192"
    assert C.tuned_shape(m=1, n=2, k=3) == "k=3 m=1 n=2"
