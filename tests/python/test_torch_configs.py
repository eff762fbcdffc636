"""What weft.torch asks weft for (python/weft/torch/configs.py) and what weft.auto answers, without
torch or a GPU.

configs.py fixes only what an op means; weft.auto chooses the launch shape.  Every choice for
the ops' shapes is compiled (NVRTC, no GPU needed) and its manifest must take the shape; a shape
no kernel takes is refused with the family's message.  Run:
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


@pytest.fixture(autouse=True)
def no_table_no_db(monkeypatch, tmp_path):
    # the rule alone, and no user database: the answers below must not depend on this machine
    monkeypatch.setenv("WEFT_AUTO_TABLE", "none")
    monkeypatch.setenv("WEFT_TUNE_DB", str(tmp_path / "tune.db"))


def chosen(ctx, cfg, shape):
    a = ctx.auto(cfg, shape)
    k = a.compile(0)
    for name, value in shape.items():
        why = k.manifest.check_size(name, value)
        assert why is None, "%s: %s = %d refused: %s" % (k, name, value, why)
    assert k.manifest.name == a.names[0]
    return a, k


ROWS = [1, 16, 4096]
COLS = [1, 3, 100, 4096, 5120, 32000, 50257, 128256, 262144, 1048576]


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_softmax_choices_compile_and_take_their_shapes(ctx, dtype):
    for cols in COLS:
        cfg, shape = C.softmax(dtype, ROWS[cols % 3], cols)
        assert cfg == {"family": "row_softmax", "dtype": dtype}
        a, k = chosen(ctx, cfg, shape)
        assert a.source == "rule", a.detail
        if dtype == "f32" and cols == 1048576:   # past what 16 CTAs hold in registers (851968 f32)
            assert k.manifest.params["mode"] == "stream"


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("residual", [False, True])
def test_rms_norm_choices_compile_and_take_their_shapes(ctx, dtype, residual):
    for cols in (1, 100, 4096, 5120, 8192, 16384, 65536):
        cfg, shape = C.rms_norm(dtype, 4096, cols, residual)
        assert cfg["eps"] == "arg" and cfg["residual"] is residual
        a, k = chosen(ctx, cfg, shape)
        assert k.manifest.params["residual"] == ("true" if residual else "false")


def test_rms_norm_rows_beyond_the_family_are_refused_with_its_message(ctx):
    cfg, shape = C.rms_norm("f32", 1, 4_000_000, True)
    with pytest.raises(weft.ConfigError, match="cols = 4000000: no layout holds a f32 row this long in registers"):
        ctx.auto(cfg, shape)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_row_reduce_choices_compile_and_take_their_shapes(ctx, op):
    for cols in (1, 7, 4096, 50257, 262144, 1048576):
        cfg, shape = C.row_reduce("bf16", op, 16, cols)
        a, k = chosen(ctx, cfg, shape)
        assert k.manifest.params["op"] == op


def test_row_reduce_refuses_an_unknown_op():
    with pytest.raises(ValueError, match="op = 'mean'; allowed: sum, max, min, prod"):
        C.row_reduce("f32", "mean", 4, 4)


@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_gemm_choices_compile_and_take_their_shapes(ctx, b_layout):
    for m, n, k in [(1, 4096, 4096), (16, 14336, 4096), (128, 4096, 14336), (4096, 4096, 4096), (333, 136, 4104)]:
        cfg, shape = C.gemm("matmul", "bf16", b_layout, m, n, k)
        a, kern = chosen(ctx, cfg, shape)
        assert kern.manifest.params["b_layout"] == b_layout


def test_gemm_refuses_what_its_family_refuses():
    with pytest.raises(C.SizeError, match="K = 100"):
        C.gemm("matmul", "bf16", "row", 4, 16, 100)
    with pytest.raises(C.SizeError, match="N = 4 "):
        C.gemm("linear", "f16", "col", 4, 4, 16, a="x", b="weight")
    with pytest.raises(TypeError, match="weft's GEMM takes float16 and bfloat16"):
        C.gemm("matmul", "f32", "row", 4, 16, 16)


def test_rows_beyond_the_32_bit_count_are_refused(ctx):
    cfg, shape = C.softmax("f32", 2 ** 31, 4)
    with pytest.raises(weft.ConfigError, match=r"shape rows = 2147483648: outside the kernel's limits"):
        ctx.auto(cfg, shape)


def test_tuned_shape_key_matches_the_cli():
    assert C.tuned_shape(rows=4, cols=8) == "cols=8 rows=4"
    assert weft.shape_text({"rows": 4, "cols": 8}) == "cols=8 rows=4"
