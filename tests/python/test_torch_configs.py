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


def test_gemm_any_n_with_column_major_b(ctx):
    """weft.torch.linear's weight is [N, K]: any N (a vocabulary's 50257, one output), C stored
    without TMA; the choice compiles and its kernel takes the shape."""
    for m, n, k in [(1, 50257, 4096), (128, 50257, 4096), (2048, 1, 4096), (17, 1001, 1000)]:
        cfg, shape = C.gemm("linear", "bf16", "col", m, n, k, a="x", b="weight")
        a, kern = chosen(ctx, cfg, shape)
        assert kern.manifest.params["epilogue"] == "direct" and kern.manifest.params["any_n"] == "true"


def test_gemm_refuses_what_its_family_refuses():
    with pytest.raises(C.SizeError, match="K = 100"):
        C.gemm("matmul", "bf16", "row", 4, 16, 100)
    with pytest.raises(C.SizeError, match=r"N = 4 \(b's last dim\).*pass B as \[N, K\]"):
        C.gemm("matmul", "f16", "row", 4, 4, 16)
    with pytest.raises(C.SizeError, match="N = 0: at least 1 column"):
        C.gemm("linear", "f16", "col", 4, 0, 16, a="x", b="weight")
    with pytest.raises(TypeError, match="weft's GEMM takes float16 and bfloat16"):
        C.gemm("matmul", "f32", "row", 4, 16, 16)


def test_rows_beyond_the_32_bit_count_are_refused(ctx):
    cfg, shape = C.softmax("f32", 2 ** 31, 4)
    with pytest.raises(weft.ConfigError, match=r"shape rows = 2147483648: outside the kernel's limits"):
        ctx.auto(cfg, shape)


def test_tuned_shape_key_matches_the_cli():
    assert C.tuned_shape(rows=4, cols=8) == "cols=8 rows=4"
    assert weft.shape_text({"rows": 4, "cols": 8}) == "cols=8 rows=4"


# ---- all_reduce_rms_norm (python/weft/torch/dist.py; the config and the checks live in configs.py) ----

ARN = "weft.torch.all_reduce_rms_norm: "


def arn(x=("bf16", (16, 4096)), residual="same", weight=None, eps=1e-6):
    residual = x if residual == "same" else residual
    weight = (x[0], (x[1][-1],)) if weight is None else weight
    return C.all_reduce_rms_norm(x, residual, weight, eps)


@pytest.mark.parametrize("kw, err, msg", [
    ({"x": ("torch.float64", (4, 8))}, TypeError,
     "x has dtype torch.float64; allowed: torch.float32, torch.float16, torch.bfloat16"),
    ({"x": ("f32", (4096,))}, ValueError, r"x has 1 dimension\(s\) \(shape \(4096,\)\); it needs 2 or more"),
    ({"residual": ("f16", (16, 4096))}, ValueError,
     r"residual is torch.float16 \(16, 4096\) but x is torch.bfloat16 \(16, 4096\); they must match"),
    ({"residual": ("bf16", (17, 4096))}, ValueError, r"residual is torch.bfloat16 \(17, 4096\) but x is"),
    ({"weight": ("bf16", (4095,))}, ValueError,
     r"weight has shape \(4095,\); it must be 1-D with x's last dim \(hidden = 4096\) elements"),
    ({"weight": ("bf16", (1, 4096))}, ValueError, r"weight has shape \(1, 4096\); it must be 1-D"),
    ({"weight": ("f32", (4096,))}, TypeError, "weight has dtype torch.float32 but x has torch.bfloat16; they must match"),
    ({"eps": -1e-6}, ValueError, r"eps = -1e-06; allowed: a number in \[0, 1\]"),
    ({"eps": 2}, ValueError, r"eps = 2; allowed: a number in \[0, 1\]"),
    ({"eps": float("nan")}, ValueError, r"eps = nan; allowed"),
    ({"eps": "1e-6"}, TypeError, r"eps = '1e-6' \(str\); eps is a number in \[0, 1\]"),
    ({"eps": True}, TypeError, r"eps = True \(bool\)"),
])
def test_all_reduce_rms_norm_refuses_bad_arguments_naming_them(kw, err, msg):
    with pytest.raises(err, match="^" + ARN + msg):
        arn(**kw)


def test_all_reduce_rms_norm_config_fixes_what_the_op_means():
    cfg, shape, eps = arn(x=("f16", (2, 3, 5120)), eps=0)
    assert cfg == {"family": "allreduce_norm", "dtype": "f16", "residual": True, "eps": "arg", "comm": "threadload"}
    assert shape == {"rows": 6, "cols": 5120} and eps == 0.0 and type(eps) is float
    cfg, shape, eps = arn(x=("f32", (1, 1001)), residual=None, eps=1)
    assert cfg["residual"] is False and shape == {"rows": 1, "cols": 1001} and eps == 1.0
    assert arn(x=("bf16", (0, 4096)))[1] == {"rows": 0, "cols": 4096}   # no tokens: the op launches nothing


def arn_expected_algo(dtype, rows, cols, ranks):
    """gen/families/allreduce_norm.lua's F.auto (F.TWO_SHOT), restated so that auto's answer is checked:
    two_shot from 4 ranks and 4 MB, else one_shot (one_shot_ll is never chosen)."""
    nbytes = rows * cols * C.ESIZE[dtype]
    if ranks >= 4 and nbytes >= 4 << 20:
        return "two_shot"
    return "one_shot"


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("residual", [True, False])
def test_all_reduce_rms_norm_asks_auto_with_the_rank_count(ctx, dtype, residual):
    seen = set()
    for ranks in (1, 2, 3, 4, 8):
        for rows, cols in ((1, 4096), (17, 4096), (32, 4096), (1000, 4096), (1000, 1001), (1000, 1003), (256, 4096),
                           (3, 8192), (1024, 4096), (4096, 16384)):
            x = (dtype, (rows, cols))
            cfg, shape, _ = arn(x=x, residual=x if residual else None)
            a = ctx.auto(cfg, shape, ranks=ranks)
            try:
                assert a.source == "rule", a.detail
                m = ctx.generate_source(a.configs[0], name=a.names[0])   # no NVRTC: the manifest only
            finally:
                a.close()
            want = arn_expected_algo(dtype, rows, cols, ranks)
            assert m.params["algo"] == want, (ranks, rows, cols, m.params["algo"], want)
            # several ranks: generated for their count, 512 threads, two blocks per SM
            assert m.params["ranks"] == (str(ranks) if ranks > 1 else "any"), (ranks, m.params["ranks"])
            if ranks > 1:
                assert (m.params["threads"], m.params["min_blocks"]) == ("512", "2"), m.params
            assert m.params["residual"] == ("true" if residual else "false") and m.params["eps.value"] == "arg"
            assert m.params["comm"] == "threadload" and int(m.params["max_cols"]) >= cols
            names = [g.name for g in m.args]
            assert names == ["y", "x", "w"] + (["r"] if residual else []) + ["eps", "rows", "cols"], names
            for k, v in shape.items():
                assert m.check_size(k, v) is None, (k, v, m.check_size(k, v))
            seen.add(want)
    assert seen == {"one_shot", "two_shot"}


def test_all_reduce_rms_norm_rows_too_long_are_refused_with_the_family_message(ctx):
    cfg, shape, _ = arn(x=("f32", (1, 4_000_000)))
    with pytest.raises(weft.ConfigError, match="cols = 4000000: no layout holds a f32 row this long in registers"):
        ctx.auto(cfg, shape, ranks=2)


# ---- matmul_reduce_scatter / matmul_all_reduce (python/weft/torch/dist_matmul.py; checks and rule in configs.py) ----

MRS = "weft.torch.matmul_reduce_scatter: "


@pytest.mark.parametrize("kw, msg", [
    ({"reduce_op": "avg"}, "reduce_op = 'avg'; allowed: sum "),
    ({"reduce_op": None}, "reduce_op = None; allowed: sum "),
    ({"scatter_dim": 1}, r"scatter_dim = 1; allowed: 0 \(a leading dim"),
    ({"scatter_dim": -1}, "scatter_dim = -1; allowed: 0 "),
    ({"scatter_dim": True}, "scatter_dim = True; allowed: 0 "),
    ({"scatter_dim": 3, "ndim": 3}, r"scatter_dim = 3; allowed: 0 \.\. 1 "),
    ({"scatter_dim": 2, "ndim": 3}, r"scatter_dim = 2; allowed: 0 \.\. 1 .*K's dim is not one"),
    ({"b_layout": "t"}, r"b_layout = 't'; allowed: row \(b \[K, N\]\), col"),
    ({"fuse": 1}, "fuse = 1; allowed: \"auto\" \\(the rule\\), True"),
    ({"fuse": "yes"}, "fuse = 'yes'; allowed"),
])
def test_matmul_comm_refuses_bad_arguments_naming_them(kw, msg):
    with pytest.raises(ValueError, match="^" + MRS + msg):
        C.matmul_comm_args("matmul_reduce_scatter", **kw)


def test_matmul_comm_takes_the_allowed_arguments_and_says_every_problem_at_once():
    for kw in ({}, {"scatter_dim": 1, "ndim": 3}, {"b_layout": "col", "fuse": True}, {"fuse": False},
               {"scatter_dim": None, "ndim": 2}):
        C.matmul_comm_args("matmul_reduce_scatter", **kw)
    with pytest.raises(ValueError) as e:
        C.matmul_comm_args("matmul_all_reduce", reduce_op="max", scatter_dim=None, b_layout="x", fuse=None)
    text = str(e.value)
    assert text.count("weft.torch.matmul_all_reduce: ") == 3 and "scatter_dim" not in text, text


@pytest.mark.parametrize("a, b, layout, ranks, sd, err, msg", [
    (("f32", (8, 64)), ("f32", (64, 16)), "row", 2, 0, TypeError,
     "a_shard has dtype torch.float32; allowed: torch.float16, torch.bfloat16"),
    (("bf16", (8, 64)), ("f16", (64, 16)), "row", 2, 0, TypeError,
     "b_shard has dtype torch.float16 but a_shard has torch.bfloat16; they must match"),
    (("bf16", (64,)), ("bf16", (64, 16)), "row", 2, 0, ValueError, r"a_shard has 1 dimension\(s\) \(shape \(64,\)\)"),
    (("bf16", (8, 64)), ("bf16", (1, 64, 16)), "row", 2, 0, ValueError, r"b_shard has 3 dimension\(s\).*\[K, N\]"),
    (("bf16", (8, 64)), ("bf16", (72, 16)), "row", 2, 0, ValueError,
     r"a_shard is \(8, 64\) \(K = 64\) but b_shard is \(72, 16\) \(K = 72, b_layout row\)"),
    (("bf16", (8, 64)), ("bf16", (64, 16)), "col", 2, 0, ValueError,
     r"a_shard is \(8, 64\) \(K = 64\) but b_shard is \(64, 16\) \(K = 16, b_layout col\)"),
    (("bf16", (9, 64)), ("bf16", (64, 16)), "row", 2, 0, ValueError,
     r"a_shard is \(9, 64\): its dim 0 \(scatter_dim\) = 9 does not split over the group's 2 ranks"),
    (("bf16", (4, 6, 64)), ("bf16", (64, 16)), "row", 4, 1, ValueError,
     r"a_shard is \(4, 6, 64\): its dim 1 \(scatter_dim\) = 6 does not split over the group's 4 ranks"),
])
def test_matmul_comm_shapes_refuse_naming_the_tensor(a, b, layout, ranks, sd, err, msg):
    with pytest.raises(err, match="^" + MRS + msg):
        C.matmul_comm_shapes("matmul_reduce_scatter", a, b, layout, ranks, sd)


def test_matmul_comm_shapes_fold_the_leading_dims():
    op = "matmul_reduce_scatter"
    assert C.matmul_comm_shapes(op, ("bf16", (4, 6, 64)), ("bf16", (64, 24)), "row", 4, 0) == (24, 24, 64)
    assert C.matmul_comm_shapes(op, ("f16", (4, 6, 64)), ("f16", (24, 64)), "col", 3, 1) == (24, 24, 64)
    # the allreduce splits nothing: any M
    assert C.matmul_comm_shapes("matmul_all_reduce", ("f16", (7, 64)), ("f16", (64, 8)), "row", 4, None) == (7, 8, 64)
    with pytest.raises(ValueError, match=r"x_shard is \(8, 64\) \(K = 64\) but weight_shard is"):
        C.matmul_comm_shapes("matmul_reduce_scatter_linear", ("bf16", (8, 64)), ("bf16", (16, 72)), "col", 2, 0,
                             "x_shard", "weight_shard")


def test_the_fuse_rule_follows_the_measured_points():
    op = "matmul_reduce_scatter"
    # bench/RESULTS.md (gemm_rs, P = 2 under MPS): fused wins at 1024^3, the unfused pieces at 8192^3
    assert C.choose_fuse(op, 1024, 1024, 512, 2)[0] is True
    assert C.choose_fuse(op, 8192, 8192, 4096, 2)[0] is False
    assert C.choose_fuse(op, 8192, 8192, 8192, 1)[0] is False    # P = 1: cuBLASLt beat the fused kernel there
    edge = C.FUSE_MAX_MN
    assert C.choose_fuse(op, edge // 4096, 4096, 4096, 8)[0] is True
    assert C.choose_fuse(op, edge // 4096 + 1, 4096, 4096, 8)[0] is False
    # shapes the fused kernel cannot take: auto goes unfused, True refuses naming them
    for m, n, k, what in ((64, 100, 64, "N = 100"), (64, 64, 12, "K = 12 "), (64, 4, 4, "K = 4 .* and N = 4"),
                          (63, 64, 64, r"M = 63 \(not a multiple of the 2 ranks")):
        fused, why = C.choose_fuse(op, m, n, k, 2)
        assert fused is False and "cannot take" in why
        with pytest.raises(C.SizeError, match="^" + MRS + what):
            C.choose_fuse(op, m, n, k, 2, True)
    assert C.choose_fuse(op, 8192, 8192, 4096, 2, True) == (True, "fuse=True")
    assert C.choose_fuse(op, 64, 64, 64, 2, False) == (False, "fuse=False")


@pytest.mark.parametrize("family", ["gemm_rs", "gemm_ar"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_matmul_comm_choices_compile_and_take_their_shapes(ctx, family, b_layout):
    """What the op asks weft.auto for, at each rank count: generated for that count (one rank: the
    plain epilogue, ranks = 1), compiled, and its limits take the shape."""
    for ranks in (1, 2, 4, 8):
        for ms, n, k in ((1, 8, 8), (125, 136, 4104), (1024, 4096, 512)):
            m = ms * ranks
            cfg = C.matmul_comm_config(family, "bf16", b_layout, ranks)
            assert cfg == dict({"family": family, "dtype": "bf16", "b_layout": b_layout, "reduce": "ordered",
                                "comm": "threadload"},
                               **({"ranks": 1} if ranks == 1 else {}))
            a = ctx.auto(cfg, {"m": m, "n": n, "k": k}, ranks=ranks)
            try:
                assert a.source == "rule", a.detail
                kern = a.compile(0)
            finally:
                a.close()
            p = kern.manifest.params
            assert (p["ranks"], p["b_layout"], p["dtype"], p["comm"], p["reduce"]) == (
                str(ranks), b_layout, "bf16", "threadload", "ordered"), p
            assert kern.manifest.name.startswith("weft_%s_bf16_" % family), kern.manifest.name
            assert [g.name for g in kern.manifest.args] == ["c", "a", "b", "m", "n", "k"]
            for name, v in (("m", m), ("n", n), ("k", k)):
                assert kern.manifest.check_size(name, v) is None, (name, v)


def test_the_unfused_collectives_compile(ctx):
    for dt in ("f16", "bf16"):
        for ranks in (2, 8):   # dist_matmul.py's unfused reduce-scatter: generated for the group's size
            k = ctx.compile({"family": "reduce_scatter", "dtype": dt, "op": "sum", "comm": "threadload", "ranks": ranks})
            assert [g.name for g in k.manifest.args] == ["y", "x", "n"] and k.manifest.params["op"] == "sum"
            assert k.manifest.params["ranks"] == str(ranks)
        for algo in ("one_shot_ll", "one_shot", "two_shot"):   # dist.allreduce_algo's choices
            k = ctx.compile({"family": "allreduce", "dtype": dt, "op": "sum", "algo": algo, "comm": "threadload"})
            assert [g.name for g in k.manifest.args] == ["y", "x", "n"] and k.manifest.params["algo"] == algo
