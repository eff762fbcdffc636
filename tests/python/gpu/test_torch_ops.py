"""weft.torch's ops on the GPU against torch's own result in float64 (run through run.py).

Inputs are random; each output buffer is poisoned first (the op's output comes from torch's
caching allocator, so a NaN-filled block of the same size is freed just before the call, and the
allocator hands it back), and every element is compared.  Tolerances per dtype, on
|got - ref| <= atol + rtol * |ref| with ref in float64:
    softmax, rms_norm: f32 rtol 1e-5 atol 1e-6; f16 rtol 2e-3 atol 1e-5; bf16 rtol 1.6e-2 atol 1e-4
        (about two units in the last place of the output dtype; the math is f32)
    row_reduce (f32 out): sum atol 1e-6 * sum|x| (f32 accumulation), max/min exact, prod rtol 2e-7 * cols
    matmul / linear: f16 rtol = atol/rms(ref) = 2^-10, bf16 2^-7 (the output's rounding; f32 accumulation)
Every failure prints the op, shape, dtype, shape class and the worst element.
"""
import math

import pytest
import torch

import weft
import weft.torch as wt
from weft.torch import configs, ops

DEV = torch.device("cuda", 0)
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (2e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-4)}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(17)
    yield
    torch.cuda.synchronize()


def poison(nbytes):
    """Free a NaN-filled block of nbytes so the next allocation of that size gets it back."""
    t = torch.full((max(1, nbytes // 4),), float("nan"), device=DEV, dtype=torch.float32)
    del t


def rand(shape, dtype, lo=-1.0, hi=1.0):
    return torch.empty(shape, device=DEV, dtype=dtype).uniform_(lo, hi)


def check(what, got, ref, rtol, atol):
    """got (any dtype) against ref (float64), elementwise; atol may be a tensor."""
    assert got.shape == ref.shape, "%s: shape %s, expected %s" % (what, tuple(got.shape), tuple(ref.shape))
    g = got.double()
    bad = ~(torch.isfinite(g)) | ((g - ref).abs() > atol + rtol * ref.abs())
    nbad = int(bad.sum())
    if nbad:
        i = int(bad.flatten().nonzero()[0])
        a = atol.flatten()[i].item() if torch.is_tensor(atol) and atol.numel() > 1 else float(atol)
        raise AssertionError("%s: %d of %d elements wrong; first at flat index %d: got %r, expected %r "
                             "(atol %.3g, rtol %.3g); max |err| %.4g"
                             % (what, nbad, ref.numel(), i, g.flatten()[i].item(), ref.flatten()[i].item(), a, rtol,
                                (g - ref).abs().nan_to_num(float("inf")).max().item()))
    print("  ok %s: max |err| %.3g" % (what, (g - ref).abs().max().item() if ref.numel() else 0.0))


# ---- softmax ------------------------------------------------------------------------------

SOFTMAX_SHAPES = [(1, 1), (1, 3), (7, 100), (3, 100003), (64, 32000), (5, 40000), (3, 300000), (2, 3, 50), (1, 1048583)]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax(dtype, shape):
    dt = DTYPES[dtype]
    x = rand(shape, dt, -8, 8)
    poison(x.numel() * x.element_size())
    y = wt.softmax(x)
    rows, cols = x.numel() // shape[-1], shape[-1]
    key = configs.softmax(dtype, rows, cols)[0]
    check("softmax %s %s %s" % (dtype, shape, key), y, torch.softmax(x.double(), -1), *TOL[dt])
    assert y.dtype == dt


@pytest.mark.parametrize("dim", [0, 1, -2])
def test_softmax_other_dims(dim):
    x = rand((6, 33, 40), torch.float32, -4, 4)
    y = wt.softmax(x, dim=dim)
    check("softmax dim=%d" % dim, y, torch.softmax(x.double(), dim), *TOL[torch.float32])


# ---- rms_norm -----------------------------------------------------------------------------

def rms_ref(x, w, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


RMS_SHAPES = [(1, 1), (3, 3), (128, 100), (1000, 4099), (64, 4096), (33, 5120), (16, 16384), (3, 100003), (2, 5, 384)]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("shape", RMS_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rms_norm(dtype, residual, shape):
    dt = DTYPES[dtype]
    x = rand(shape, dt)
    w = rand(shape[-1:], dt, -2, 2)
    eps = 1e-5
    r = rand(shape, dt) if residual else None
    r0 = r.clone() if residual else None
    poison(x.numel() * x.element_size())
    y = wt.rms_norm(x, w, eps=eps, residual=r)
    rows, cols = x.numel() // shape[-1], shape[-1]
    key = configs.rms_norm(dtype, rows, cols, residual)[0]
    rtol, atol = TOL[dt]
    if residual:
        h = (x.double() + r0.double())
        # h is rounded to the dtype when it is written back; the norm is of the unrounded f32 h
        check("rms_norm residual h %s %s %s" % (dtype, shape, key), r, h, rtol, atol)
        ref = rms_ref(h, w, eps)
    else:
        ref = rms_ref(x, w, eps)
    check("rms_norm %s %s residual=%s %s" % (dtype, shape, residual, key), y, ref, rtol, atol)


# ---- row_reduce ---------------------------------------------------------------------------

REDUCE_SHAPES = [(1, 1), (5, 3), (300, 100), (7, 4097), (3, 100003), (300, 262145), (2, 1048576), (2, 3, 10)]


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("shape", REDUCE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_row_reduce(dtype, op, shape):
    dt = DTYPES[dtype]
    cols = shape[-1]
    if op == "prod":   # values near 1, so that a product of a million stays finite
        x = (1 + 0.01 * torch.randn(shape, device=DEV)).to(dt)
    else:
        x = rand(shape, dt, -4, 4)
    poison(max(4, x.numel() // cols * 4))
    out = wt.row_reduce(x, op)
    xd = x.double()
    ref = {"sum": lambda: xd.sum(-1), "max": lambda: xd.amax(-1), "min": lambda: xd.amin(-1),
           "prod": lambda: xd.prod(-1)}[op]()
    key = configs.row_reduce(dtype, op, x.numel() // cols, cols)[0]
    assert out.dtype == torch.float32 and out.shape == x.shape[:-1]
    what = "row_reduce %s %s %s %s" % (op, dtype, shape, key)
    if op == "sum":
        check(what, out, ref, 0.0, 1e-6 * xd.abs().sum(-1) + 1e-6)
    elif op == "prod":
        check(what, out, ref, max(1e-5, 2e-7 * cols), 1e-30)
    else:
        check(what, out, ref, 0.0, 0.0)


# ---- matmul / linear ----------------------------------------------------------------------

def gemm_check(what, c, ref, dt):
    t = 2.0 ** -10 if dt == torch.float16 else 2.0 ** -7
    rms = ref.pow(2).mean().sqrt().item() if ref.numel() else 1.0
    check(what, c, ref, t, t * rms + 1e-6)


GEMM_SHAPES = [(1, 8, 8), (2, 256, 512), (3, 256, 512), (5, 256, 512), (8, 256, 512), (13, 256, 512), (16, 256, 512),
               (7, 200, 72), (100, 1000, 1000), (1000, 1024, 1000), (333, 136, 4104), (1024, 1024, 1024),
               (8192, 1024, 1024), (4096, 4096, 1024), (16, 14336, 4096)]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("mnk", GEMM_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul(dtype, mnk):
    m, n, k = mnk
    dt = DTYPES[dtype]
    a, b = rand((m, k), dt), rand((k, n), dt)
    poison(m * n * 2)
    c = wt.matmul(a, b)
    gemm_check("matmul %s %s %s" % (dtype, mnk, configs.gemm("matmul", dtype, "row", m, n, k)[0]), c,
               a.double() @ b.double(), dt)


def test_gemm_stream_k_workspace_per_stream_and_in_a_graph():
    """stream_k's partial tiles go through a workspace the runtime keeps per CUDA stream: launches
    on two streams at once must not share one, and a stream first seen while torch captures a
    graph gets its workspace then (allocated mid-capture, its flags zeroed off the stream).  Every
    result bit-identical to the first launch's (the partials are added in CTA order), which is
    checked against float64; the graph, with a workspace of its own, replayed beside eager launches."""
    ctx = weft.context()
    k = ctx.compile({"family": "gemm", "dtype": "bf16", "b_layout": "col", "swap_ab": True, "consumers": 1,
                     "tile": {"m": 200, "n": 64, "k": 64}, "stages": 6, "epilogue": "direct", "stream_k": True})
    m, n, kk = 200, 3072, 4096
    dt = torch.bfloat16
    a, b = rand((m, kk), dt), rand((n, kk), dt)   # B column-major: N x K
    outs = [torch.full((m, n), float("nan"), device=DEV, dtype=dt) for _ in range(21)]
    torch.cuda.synchronize()
    k.launch(outs[0], a, b, m, n, kk, stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    gemm_check("stream_k eager", outs[0], a.double() @ b.double().t(), dt)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for i in range(1, 21):   # alternately on two streams, nothing in between: they overlap
        k.launch(outs[i], a, b, m, n, kk, stream=(s1 if i % 2 else s2).cuda_stream)
    torch.cuda.synchronize()
    for i in range(1, 21):
        assert torch.equal(outs[i], outs[0]), "stream_k launch %d (stream %d) differs from the first" % (i, 2 - i % 2)
    g, cg = torch.cuda.CUDAGraph(), torch.full((m, n), float("nan"), device=DEV, dtype=dt)
    with torch.cuda.graph(g):   # (torch captures on a stream of its own, new to weft)
        k.launch(cg, a, b, m, n, kk, stream=torch.cuda.current_stream().cuda_stream)
    for rep in range(3):
        cg.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(cg, outs[0]), "stream_k graph replay %d differs from the eager launch" % rep
    # the graph has a workspace of its own: replays on one stream beside eager launches on another
    for o in outs[1:]:
        o.fill_(float("nan"))
    cg.fill_(float("nan"))
    torch.cuda.synchronize()
    for i in range(1, 21):
        with torch.cuda.stream(s1):
            g.replay()
        k.launch(outs[i], a, b, m, n, kk, stream=s2.cuda_stream)
    torch.cuda.synchronize()
    assert torch.equal(cg, outs[0]), "stream_k graph replayed beside eager launches differs"
    for i in range(1, 21):
        assert torch.equal(outs[i], outs[0]), "stream_k launch %d beside graph replays differs" % i


def test_matmul_folds_leading_dims():
    a, b = rand((2, 3, 40, 64), torch.bfloat16), rand((64, 96), torch.bfloat16)
    c = wt.matmul(a, b)
    assert c.shape == (2, 3, 40, 96)
    gemm_check("matmul batched", c, a.double() @ b.double(), torch.bfloat16)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("xshape,n", [((16, 4096), 14336), ((5, 3, 72), 200), ((1000, 1000), 1024), ((1, 64), 8),
                                      ((72,), 16), ((8192, 1024), 1024),
                                      # any N (the weight is [N, K]): a vocabulary, one output, odd N
                                      ((2, 4096), 50257), ((300, 1024), 1), ((17, 1000), 1001), ((4, 512), 3)], ids=str)
def test_linear(dtype, xshape, n):
    dt = DTYPES[dtype]
    x, w = rand(xshape, dt), rand((n, xshape[-1]), dt)
    poison(x.numel() // xshape[-1] * n * 2)
    y = wt.linear(x, w)
    gemm_check("linear %s %s -> %d" % (dtype, xshape, n), y, torch.nn.functional.linear(x.double(), w.double()), dt)


# any K and N (the kernels' TMA rows are 16-byte aligned): K off the multiples of 8 is padded with
# zeros, row-major B with N off them is copied column-major; the caller's tensors stay as they were
ANY_KN = [(4, 16, 100), (1, 8, 3), (17, 1001, 1001), (333, 128, 2500), (64, 20, 64), (1000, 3500, 700), (3, 5, 7)]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("mnk", ANY_KN, ids=lambda s: "x".join(map(str, s)))
def test_matmul_any_k_and_n(dtype, mnk):
    m, n, k = mnk
    dt = DTYPES[dtype]
    a, b = rand((m, k), dt), rand((k, n), dt)
    a0, b0 = a.clone(), b.clone()
    poison(m * n * 2)
    c = wt.matmul(a, b)
    gemm_check("matmul %s %s" % (dtype, mnk), c, a.double() @ b.double(), dt)
    assert torch.equal(a, a0) and torch.equal(b, b0), "matmul %s: an input changed" % (mnk,)
    assert torch.equal(wt.matmul(a, b), c), "matmul %s: a second launch differs" % (mnk,)
    with torch.no_grad():   # the registered op, as torch.compile calls it
        assert torch.equal(torch.ops.weft.matmul(a, b), c), "matmul %s: the registered op differs" % (mnk,)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("xshape,n", [((5, 3, 77), 200), ((1, 4095), 4096), ((300, 2500), 1001), ((2, 9), 3)], ids=str)
def test_linear_any_k(dtype, xshape, n):
    dt = DTYPES[dtype]
    x, w = rand(xshape, dt), rand((n, xshape[-1]), dt)
    poison(x.numel() // xshape[-1] * n * 2)
    y = wt.linear(x, w)
    gemm_check("linear %s %s -> %d" % (dtype, xshape, n), y, torch.nn.functional.linear(x.double(), w.double()), dt)


def test_gemm_reads_a_transposed_view_as_it_lies():
    """b = w.t() (w [N, K] contiguous) is matmul's B column-major, and weight = v.t() (v [K, N]
    contiguous) linear's B row-major: no copy, the same result as the contiguous operand."""
    dt = torch.bfloat16
    a, w, v = rand((64, 512), dt), rand((200, 512), dt), rand((512, 96), dt)
    poison(64 * 200 * 2)
    c = wt.matmul(a, w.t())
    gemm_check("matmul a . w.t()", c, a.double() @ w.double().t(), dt)
    assert torch.equal(c, wt.linear(a, w)), "matmul(a, w.t()) differs from linear(a, w)"
    y = wt.linear(a, v.t())
    gemm_check("linear a . v", y, a.double() @ v.double(), dt)
    assert torch.equal(y, wt.matmul(a, v)), "linear(a, v.t()) differs from matmul(a, v)"
    a7, w7 = rand((33, 77), dt), rand((40, 77), dt)   # and K off the multiples of 8
    gemm_check("matmul a . w.t(), K = 77", wt.matmul(a7, w7.t()), a7.double() @ w7.double().t(), dt)
    _raises(ValueError, "weft.torch.matmul: K mismatch: a is (64, 512) (K = 512) but b is (77, 40) (K = 77)",
            lambda: wt.matmul(a, w7.t()))


# ---- the launch path: no sync, one allocation ---------------------------------------------

def _calls():
    x, w, r = rand((64, 1000), torch.bfloat16), rand((1000,), torch.bfloat16), rand((64, 1000), torch.bfloat16)
    a, b, wl = rand((64, 256), torch.bfloat16), rand((256, 128), torch.bfloat16), rand((128, 256), torch.bfloat16)
    return [("softmax", lambda: wt.softmax(x)), ("rms_norm", lambda: wt.rms_norm(x, w)),
            ("rms_norm+residual", lambda: wt.rms_norm(x, w, residual=r)), ("row_reduce", lambda: wt.row_reduce(x, "max")),
            ("matmul", lambda: wt.matmul(a, b)), ("linear", lambda: wt.linear(a, wl)),
            # (a transposed B is read as it lies: no copy)
            ("matmul b = w.t()", lambda: wt.matmul(a, wl.t())), ("linear weight = v.t()", lambda: wt.linear(a, b.t()))]


def test_launch_path_has_no_sync_and_allocates_only_the_output():
    for name, f in _calls():
        f()   # the first call compiles and loads
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats()["allocation.all.allocated"]
        torch.cuda.set_sync_debug_mode("error")
        try:
            out = f()
        finally:
            torch.cuda.set_sync_debug_mode(0)
        after = torch.cuda.memory_stats()["allocation.all.allocated"]
        print("  %s: %d allocation(s)" % (name, after - before))
        assert after - before == 1, "%s allocated %d blocks; only its output should be" % (name, after - before)
        del out


# ---- torch.library: opcheck, torch.compile ------------------------------------------------

def _opcheck_cases():
    x, w = rand((8, 40), torch.bfloat16), rand((40,), torch.bfloat16)
    a, b, wl = rand((24, 64), torch.float16), rand((64, 32), torch.float16), rand((32, 64), torch.float16)
    return [(torch.ops.weft.softmax.default, (rand((5, 33), torch.float32),)),
            (torch.ops.weft.rms_norm.default, (x, w, 1e-6)),
            (torch.ops.weft.add_rms_norm.default, (x, rand((8, 40), torch.bfloat16), w, 1e-6)),
            (torch.ops.weft.row_reduce.default, (rand((6, 70), torch.float32), "sum")),
            (torch.ops.weft.matmul.default, (a, b)),
            (torch.ops.weft.linear.default, (a, wl)),
            # K = 77 and N = 20 (the operands padded and copied inside the op), and a transposed B
            (torch.ops.weft.matmul.default, (rand((24, 77), torch.float16), rand((77, 20), torch.float16))),
            (torch.ops.weft.matmul.default, (a, wl.t()))]


@pytest.mark.parametrize("i", range(8))
def test_opcheck(i):
    op, args = _opcheck_cases()[i]
    print("  opcheck", op)
    torch.library.opcheck(op, args)


def _model(x, w, r, a, b, wl):
    y = wt.softmax(x)
    z = wt.rms_norm(y, w, 1e-6)
    s = wt.row_reduce(z, "max")
    h = wt.rms_norm(x, w, 1e-6, residual=r)
    return y, z, s, h, wt.matmul(a, b), wt.linear(a, wl)


def test_torch_compile_fullgraph():
    args = (rand((32, 256), torch.bfloat16), rand((256,), torch.bfloat16), rand((32, 256), torch.bfloat16),
            rand((48, 128), torch.bfloat16), rand((128, 64), torch.bfloat16), rand((64, 128), torch.bfloat16))
    r_eager, r_comp = args[2].clone(), args[2].clone()
    eager = _model(args[0], args[1], r_eager, *args[3:])
    explain = torch._dynamo.explain(_model)(args[0], args[1], args[2].clone(), *args[3:])
    print("  dynamo: %d graph(s), %d break(s) %s" % (explain.graph_count, explain.graph_break_count,
                                                   explain.break_reasons))
    assert explain.graph_break_count == 0
    torch._dynamo.reset()
    comp = torch.compile(_model, fullgraph=True)(args[0], args[1], r_comp, *args[3:])
    for i, (e, c) in enumerate(zip(eager, comp)):
        assert torch.equal(e, c), "compiled output %d differs from eager" % i
    assert torch.equal(r_eager, r_comp), "the residual written in place differs under torch.compile"


def test_torch_compile_any_k_and_a_transposed_b():
    """K = 77 and N = 20 (padded and copied inside the op) and B as w.t(), compiled whole: the same
    bits as eager."""
    def f(a, b, w):
        return wt.matmul(a, b), wt.linear(a, w), wt.matmul(a, w.t())
    args = (rand((48, 77), torch.bfloat16), rand((77, 20), torch.bfloat16), rand((20, 77), torch.bfloat16))
    eager = f(*args)
    torch._dynamo.reset()
    comp = torch.compile(f, fullgraph=True)(*args)
    for i, (e, c) in enumerate(zip(eager, comp)):
        assert torch.equal(e, c), "compiled output %d differs from eager" % i
    gemm_check("matmul K = 77 under compile", comp[0], args[0].double() @ args[1].double(), torch.bfloat16)


# ---- CUDA graphs --------------------------------------------------------------------------

def _warmed_and_captured(body, before_capture=None):
    """body run twice on a side stream (each shape's kernel compiled and loaded: a capture cannot),
    then captured once: the graph and the outputs its replays write."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            body()
    torch.cuda.current_stream().wait_stream(s)
    if before_capture:
        before_capture()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = body()
    return g, outs


def test_cuda_graph_captures_padded_and_transposed_gemm():
    """K = 77 (both operands padded inside the op: the copies come from the graph's pool) and B as
    w.t(), captured once and replayed over new values of a."""
    dt = torch.bfloat16
    a, b, w = rand((100, 77), dt), rand((77, 136), dt), rand((136, 77), dt)

    def body():
        return [wt.matmul(a, b), wt.matmul(a, w.t()), wt.linear(a, w)]

    g, outs = _warmed_and_captured(body)
    for i in range(3):
        a.uniform_(-1, 1)
        g.replay()
        torch.cuda.synchronize()
        ad = a.double()
        for j, ref in enumerate([ad @ b.double(), ad @ w.double().t(), ad @ w.double().t()]):
            gemm_check("padded graph replay %d call %d" % (i, j), outs[j], ref, dt)


def test_cuda_graph_capture_10_replay_100():
    dt = torch.bfloat16
    x, w, r = rand((64, 1000), dt), rand((1000,), dt), rand((64, 1000), dt)
    a, b, wl = rand((100, 256), dt), rand((256, 136), dt), rand((136, 256), dt)
    r_init = r.clone()

    def body():
        return [wt.softmax(x), wt.softmax(x, dim=0), wt.rms_norm(x, w), wt.row_reduce(x, "sum"),
                wt.row_reduce(x, "max"), wt.matmul(a, b), wt.linear(a, wl), wt.matmul(a, b), wt.softmax(a),
                wt.rms_norm(x, w, residual=r)]   # 10 calls; the last adds x into r each replay

    g, outs = _warmed_and_captured(body, before_capture=lambda: r.copy_(r_init))
    checked = 0
    for i in range(100):
        if i % 10 == 0:
            x.uniform_(-1, 1)
            a.uniform_(-1, 1)
            r.copy_(r_init)
        g.replay()
        if i % 10 == 0:
            torch.cuda.synchronize()
            xd, ad = x.double(), a.double()
            h = xd + r_init.double()
            refs = [torch.softmax(xd, -1), torch.softmax(xd, 0), rms_ref(x, w, 1e-6), xd.sum(-1), xd.amax(-1),
                    ad @ b.double(), ad @ wl.double().t(), ad @ b.double(), torch.softmax(ad, -1), rms_ref(h, w, 1e-6)]
            for j, (o, ref) in enumerate(zip(outs, refs)):
                if j in (5, 6, 7):
                    gemm_check("graph replay %d call %d" % (i, j), o, ref, dt)
                elif j == 3:
                    check("graph replay %d call %d" % (i, j), o, ref, 0.0, 1e-6 * xd.abs().sum(-1) + 1e-6)
                else:
                    check("graph replay %d call %d" % (i, j), o, ref, *TOL[dt])
            check("graph replay %d residual" % i, r, h, *TOL[dt])
            checked += 1
    assert checked == 10


# ---- errors -------------------------------------------------------------------------------

def _raises(exc, text, f):
    with pytest.raises(exc) as e:
        f()
    print("  %s: %s" % (type(e.value).__name__, e.value))
    assert text in str(e.value), "expected %r in: %s" % (text, e.value)


def test_errors_name_the_op_and_the_argument():
    x = rand((4, 64), torch.float32)
    _raises(ValueError, "weft.torch.softmax: x is on cpu; weft runs on CUDA tensors", lambda: wt.softmax(x.cpu()))
    _raises(TypeError, "weft.torch.softmax: x has dtype torch.float64; allowed: torch.float32, torch.float16, "
            "torch.bfloat16", lambda: wt.softmax(x.double()))
    _raises(ValueError, "weft.torch.row_reduce: x (shape (64, 4), strides (1, 64)) is not contiguous",
            lambda: wt.row_reduce(x.t(), "sum"))
    _raises(ValueError, "weft.torch.softmax: x's data is at", lambda: wt.softmax(x.view(-1)[1:]))
    _raises(ValueError, "not 16-byte aligned", lambda: wt.softmax(x.view(-1)[1:]))
    a, b = rand((8, 64), torch.bfloat16), rand((32, 16), torch.bfloat16)
    _raises(ValueError, "weft.torch.matmul: K mismatch: a is (8, 64) (K = 64) but b is (32, 16) (K = 32)",
            lambda: wt.matmul(a, b))
    _raises(ValueError, "weft.torch.linear: K mismatch: x is (8, 64) (K = 64) but weight is (32, 16) (K = 16)",
            lambda: wt.linear(a, b))
    _raises(TypeError, "weft.torch.matmul: a has dtype torch.float32; allowed: torch.float16, torch.bfloat16",
            lambda: wt.matmul(x, x))
    _raises(TypeError, "weft.torch.matmul: b must be a torch.Tensor, not NoneType", lambda: wt.matmul(a, None))
    _raises(TypeError, "weft.torch.linear: weight must be a torch.Tensor, not list", lambda: wt.linear(a, [[1.0]]))
    _raises(ValueError, "weft.torch.matmul: b (shape (64, 16), strides (32, 2)) is not contiguous",
            lambda: wt.matmul(a, rand((64, 32), torch.bfloat16)[:, ::2]))
    _raises(ValueError, "weft.torch.rms_norm: weight has 63 elements but x's last dim is 64",
            lambda: wt.rms_norm(x, rand((63,), torch.float32)))
    _raises(TypeError, "weft.torch.rms_norm: weight has dtype torch.bfloat16 but x has torch.float32",
            lambda: wt.rms_norm(x, rand((64,), torch.bfloat16)))
    _raises(ValueError, "weft.torch.rms_norm: residual is", lambda: wt.rms_norm(x, rand((64,), torch.float32),
                                                                              residual=rand((4, 65), torch.float32)))
    _raises(ValueError, "weft.torch.row_reduce: op = 'mean'; allowed: sum, max, min, prod",
            lambda: wt.row_reduce(x, "mean"))
    big = rand((1, 4000000), torch.float32)
    _raises(ValueError, "weft.torch.rms_norm: <dict rmsnorm>: shape cols=4000000 rows=1: cols = 4000000: no layout "
            "holds a f32 row this long", lambda: wt.rms_norm(big, rand((4000000,), torch.float32)))
    # the registered op raises the same
    _raises(ValueError, "weft.torch.softmax: x is on cpu", lambda: torch.ops.weft.softmax(x.cpu()))


def test_no_backward_is_said_not_dropped():
    """weft's ops have no backward.  With an input that requires grad they go through the dispatcher:
    the output carries a grad_fn and backward raises naming the op (called straight, the output had
    none, and the gradients vanished without a word).  Under no_grad, the short path, no grad_fn."""
    x = rand((4, 64), torch.float32).requires_grad_()
    w = rand((64,), torch.float32).requires_grad_()
    a, b = rand((8, 64), torch.bfloat16), rand((64, 16), torch.bfloat16).requires_grad_()
    for name, out in (("softmax", wt.softmax(x)), ("rms_norm", wt.rms_norm(x.detach(), w)),
                      ("row_reduce", wt.row_reduce(x)), ("matmul", wt.matmul(a, b)),
                      ("linear", wt.linear(a, b.detach().t().contiguous().requires_grad_()))):
        assert out.requires_grad and out.grad_fn is not None, name
        with pytest.raises(RuntimeError, match=r"weft\.%s\.default but no autograd formula" % name):
            out.float().sum().backward()
    # in place (residual): nothing returned carries the write, so it is refused before any launch
    r = rand((4, 64), torch.float32)
    with pytest.raises(RuntimeError, match="weft.torch.rms_norm: writes residual in place, and x requires grad"):
        wt.rms_norm(x, w.detach(), residual=r)
    with torch.no_grad():
        y = wt.softmax(x)
    assert y.grad_fn is None and not y.requires_grad
    check("softmax under grad", wt.softmax(x).detach(), torch.softmax(x.detach().double(), -1), *TOL[torch.float32])


def test_outputs_of_zero_rows():
    assert wt.softmax(rand((0, 7), torch.float32)).shape == (0, 7)
    assert wt.row_reduce(rand((0, 7), torch.float32)).shape == (0,)
    assert wt.matmul(rand((0, 64), torch.bfloat16), rand((64, 16), torch.bfloat16)).shape == (0, 16)


def test_each_choice_compiles_once():
    n0 = len(ops.C.kernels._k)
    cols = (1000, 1001, 1020, 1024)   # rows of one onchip capacity share a kernel
    for c in cols:
        wt.softmax(rand((3, c), torch.float32))
    names = {weft.auto(*configs.softmax("f32", 3, c)).names[0] for c in cols}
    assert len(ops.C.kernels._k) - n0 == len(names) <= 2, (names, len(ops.C.kernels._k) - n0)
    for c in cols:   # again: nothing new
        wt.softmax(rand((3, c), torch.float32))
    assert len(ops.C.kernels._k) - n0 == len(names)
    assert math.isfinite(float(wt.softmax(rand((3, 1001), torch.float32)).sum()))


def test_readme_torch_example_runs():
    """The README's single-GPU torch example (section "From Python and PyTorch", second python
    block) runs as written and its softmax matches torch's."""
    import os
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    i = text.index("## From Python and PyTorch")
    code = re.findall(r"```python\n(.*?)```", text[i:text.index("\n## ", i + 1)], re.S)[1]
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    err, shape = r.stdout.split(None, 1)
    assert float(err) < 1e-2 and "16, 14336" in shape


@pytest.mark.parametrize("op", ["softmax", "rms_norm", "row_reduce", "matmul"])
def test_first_use_tuning_stores_a_checked_winner(op, monkeypatch, tmp_path):
    """WEFT_AUTOTUNE=1: the first call of a shape times weft's candidates (each checked first), stores
    the fastest in the tuning database, and returns the right answer; the next auto() answers from
    the database."""
    monkeypatch.setenv("WEFT_AUTOTUNE", "1")
    monkeypatch.setenv("WEFT_TUNE_DB", str(tmp_path / "tune.db"))
    ops._plans.clear()
    if op == "softmax":
        x = rand((300, 7001), torch.bfloat16, -8, 8)
        check("tuned softmax", wt.softmax(x), torch.softmax(x.double(), -1), *TOL[torch.bfloat16])
        cfg, shape = configs.softmax("bf16", 300, 7001)
    elif op == "rms_norm":
        x, w, r = rand((300, 7001), torch.float16), rand((7001,), torch.float16), rand((300, 7001), torch.float16)
        h = x.double() + r.double()
        y = wt.rms_norm(x, w, eps=1e-5, residual=r)
        check("tuned rms_norm", y, rms_ref(h, w, 1e-5), *TOL[torch.float16])
        cfg, shape = configs.rms_norm("f16", 300, 7001, True)
    elif op == "row_reduce":
        x = rand((300, 7001), torch.float32, -4, 4)
        check("tuned row_reduce", wt.row_reduce(x, "max"), x.double().amax(-1), 0.0, 0.0)
        cfg, shape = configs.row_reduce("f32", "max", 300, 7001)
    else:
        a, b = rand((24, 1000), torch.bfloat16), rand((1000, 776), torch.bfloat16)
        gemm_check("tuned matmul", wt.matmul(a, b), a.double() @ b.double(), torch.bfloat16)
        cfg, shape = configs.gemm("matmul", "bf16", "row", 24, 776, 1000)
    a = weft.auto(cfg, shape)
    assert a.source == "database", (a.source, a.detail)
    assert a.time_us is not None and a.time_us > 0


def test_first_use_tuning_refuses_a_bad_budget(monkeypatch):
    monkeypatch.setenv("WEFT_AUTOTUNE", "1")
    monkeypatch.setenv("WEFT_AUTOTUNE_BUDGET_MS", "soon")
    ops._plans.clear()
    _raises(ValueError, "WEFT_AUTOTUNE_BUDGET_MS='soon': allowed an integer number of milliseconds",
            lambda: wt.softmax(rand((3, 5003), torch.float32)))
