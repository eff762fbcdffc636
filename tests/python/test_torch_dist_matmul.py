"""weft.torch.matmul_reduce_scatter / matmul_all_reduce (python/weft/torch/dist_matmul.py) on the host,
without torch or a GPU: a stand-in torch (below, only what the module touches) so that the ops' real
code runs in a one-rank world (weft:self, no torch.distributed): every argument check goes through
the group's agreement and raises the message naming the argument; the path the rule picks; the
unfused path end to end (its matmul computed here in Python floats); the fused path up to the
launch (the gemm_rs kernel chosen for one rank and compiled, then the launch says there is no GPU).
The correctness of both paths on real GPUs: tests/python/dist/test_comm.py (WEFT_TEST_ONLY=mrs).
"""
import math
import re
import sys
import types

import pytest

import weft


# ---- the stand-in torch --------------------------------------------------------------------------

class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


class device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __eq__(self, o):
        return isinstance(o, device) and (self.type, self.index) == (o.type, o.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return "%s:%s" % (self.type, self.index)


_ptr = [1 << 20]


class Tensor:
    """Row-major data in Python floats; contiguous unless made by movedim without contiguous()."""

    def __init__(self, shape, dtype, dev, data=None, contiguous=True):
        self.shape, self.dtype, self.device = tuple(shape), dtype, dev
        self.data = data if data is not None else [0.0] * math.prod(self.shape)
        self._contig = contiguous
        self.requires_grad = False
        self._p = _ptr[0]
        _ptr[0] += 4096

    is_cuda = property(lambda self: self.device.type == "cuda")

    def dim(self):
        return len(self.shape)

    def numel(self):
        return math.prod(self.shape)

    def data_ptr(self):
        return self._p

    def is_contiguous(self):
        return self._contig

    def stride(self):
        s, out = 1, []
        for d in reversed(self.shape):
            out.insert(0, s)
            s *= d
        return tuple(out)

    def view(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        assert self._contig and math.prod(shape) == self.numel(), (shape, self.shape)
        return Tensor(shape, self.dtype, self.device, self.data)

    def movedim(self, src, dst):
        dims = list(range(self.dim()))
        dims.insert(dst, dims.pop(src))
        shape = [self.shape[d] for d in dims]
        old = self.stride()
        out = []
        for idx in range(self.numel()):   # idx over the new shape, read at the old position
            pos, rem = 0, idx
            for i in reversed(range(len(shape))):
                pos += (rem % shape[i]) * old[dims[i]]
                rem //= shape[i]
            out.append(self.data[pos])
        return Tensor(shape, self.dtype, self.device, out, contiguous=False)

    def contiguous(self):
        return Tensor(self.shape, self.dtype, self.device, self.data)

    def t(self):
        r, c = self.shape
        return Tensor((c, r), self.dtype, self.device, [self.data[i * c + j] for j in range(c) for i in range(r)])

    def new_empty(self, shape):
        return Tensor(shape, self.dtype, self.device)


def _matmul(a, b):
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2
    return Tensor((m, n), a.dtype, a.device, [sum(a.data[i * k + p] * b.data[p * n + j] for p in range(k))
                                              for i in range(m) for j in range(n)])


class _CustomOp:
    def __init__(self, fn):
        self.fn = fn

    def register_fake(self, f):
        self.fake = f
        return f

    def __call__(self, *a):
        return self.fn(*a)


def _fake_torch():
    t = types.ModuleType("torch")
    t.__version__ = "host-stand-in"
    t.Tensor, t.device = Tensor, device
    t.float32, t.float16, t.bfloat16, t.float64 = (_Dtype(n) for n in ("float32", "float16", "bfloat16", "float64"))
    t.empty = lambda shape, dtype=None, device=None: Tensor(shape, dtype, device)
    t.matmul = _matmul
    t.library = types.SimpleNamespace(custom_op=lambda name, mutates_args=(): _CustomOp)
    t.compiler = types.SimpleNamespace(assume_constant_result=lambda f: f, is_compiling=lambda: False)
    t.is_grad_enabled = lambda: t._grad   # (grad mode: on, as torch's default)
    t._grad = True
    t.ops = types.SimpleNamespace()
    cuda = types.ModuleType("torch.cuda")
    cuda.current_device = lambda: 0
    cuda.is_current_stream_capturing = lambda: False
    cuda.current_stream = lambda d=None: types.SimpleNamespace(cuda_stream=0)
    cuda.synchronize = lambda d=None: None
    t.cuda = cuda
    d = types.ModuleType("torch.distributed")
    d.is_available, d.is_initialized = (lambda: True), (lambda: False)
    t.distributed = d
    t._C = types.SimpleNamespace()   # no _cuda_getCurrentRawStream: _common takes its fallback
    return t, d


@pytest.fixture(scope="module")
def wt(tmp_path_factory):
    if "torch" in sys.modules:
        pytest.skip("a real torch is imported in this process")
    t, d = _fake_torch()
    sys.modules["torch"], sys.modules["torch.distributed"] = t, d
    try:
        import weft.torch.dist_matmul as dm
        yield dm
    finally:
        for m in [m for m in sys.modules if m == "torch" or m.startswith("torch.") or m.startswith("weft.torch")]:
            del sys.modules[m]


@pytest.fixture(autouse=True)
def no_table_no_db(monkeypatch, tmp_path):
    monkeypatch.setenv("WEFT_AUTO_TABLE", "none")
    monkeypatch.setenv("WEFT_TUNE_DB", str(tmp_path / "tune.db"))


CUDA = device("cuda", 0)


def tensor(shape, dtype, values=None, contiguous=True, dev=CUDA):
    n = math.prod(shape)
    return Tensor(shape, dtype, dev, list(values) if values is not None else [float((i * 7) % 5 - 2) for i in range(n)],
                  contiguous)


def bf(*shape, **kw):
    return tensor(shape, sys.modules["torch"].bfloat16, **kw)


# ---- the tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, err, msg", [
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 16), reduce_op="avg"), ValueError, "reduce_op = 'avg'; allowed: sum"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 16), scatter_dim=1), ValueError, "scatter_dim = 1; allowed: 0 "),
    (lambda w: w.matmul_reduce_scatter(bf(2, 4, 64), bf(64, 16), scatter_dim=2), ValueError,
     r"scatter_dim = 2; allowed: 0 \.\. 1"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 16), b_layout="T"), ValueError, "b_layout = 'T'; allowed: row"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 16), fuse="always"), ValueError, "fuse = 'always'; allowed"),
    (lambda w: w.matmul_all_reduce(bf(8, 64), bf(72, 16)), ValueError,
     r"a_shard is \(8, 64\) \(K = 64\) but b_shard is \(72, 16\) \(K = 72, b_layout row\)"),
    (lambda w: w.matmul_reduce_scatter_linear(bf(8, 64), bf(64, 16)), ValueError,
     r"x_shard is \(8, 64\) \(K = 64\) but weight_shard is \(64, 16\) \(K = 16, b_layout col\)"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), tensor((64, 16), sys.modules["torch"].float16)), ValueError,
     "b_shard has dtype torch.float16 but a_shard has torch.bfloat16"),
    (lambda w: w.matmul_reduce_scatter(tensor((8, 64), sys.modules["torch"].float32), bf(64, 16)), ValueError,
     "a_shard has dtype torch.float32; allowed: torch.float16, torch.bfloat16"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64, contiguous=False), bf(64, 16)), ValueError,
     r"a_shard \(shape \(8, 64\), strides .*\) is not contiguous"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 16, dev=device("cpu"))), ValueError, "b_shard is on cpu"),
    (lambda w: w.matmul_reduce_scatter(bf(8, 64), bf(64, 12), fuse=True), ValueError,
     "N = 12: the fused kernel takes N and K >= 8 in multiples of 8"),
    (lambda w: w.matmul_all_reduce(bf(8, 12), bf(12, 16), fuse=True), ValueError, "K = 12 .*: the fused kernel takes"),
])
def test_bad_arguments_raise_through_the_agreement_naming_them(wt, call, err, msg):
    # every problem is agreed on first (dist.py's _Group.agree), then raised as a ValueError
    with pytest.raises(err, match=msg) as e:
        call(wt)
    assert str(e.value).startswith("weft.torch.matmul_"), e.value


def test_several_problems_are_said_at_once(wt):
    with pytest.raises(ValueError) as e:
        wt.matmul_reduce_scatter(bf(8, 64), bf(64, 16), reduce_op="max", b_layout="x", fuse=None)
    assert [p in str(e.value) for p in ("reduce_op = 'max'", "b_layout = 'x'", "fuse = None")] == [True] * 3, e.value


def reference(a, b, layout):
    """a [..., k] . b in Python floats, a's leading dims kept."""
    k = a.shape[-1]
    m = a.numel() // k
    n = b.shape[1] if layout == "row" else b.shape[0]
    bb = b if layout == "row" else b.t()
    return [sum(a.data[i * k + p] * bb.data[p * n + j] for p in range(k)) for i in range(m) for j in range(n)]


@pytest.mark.parametrize("layout", ["row", "col"])
def test_the_unfused_path_at_one_rank_is_the_matmul(wt, layout):
    a = bf(2, 3, 12)                                   # K = 12: the fused kernel cannot take it, "auto" goes unfused
    b = bf(12, 10) if layout == "row" else bf(10, 12)
    f = wt.matmul_reduce_scatter if layout == "row" else wt.matmul_reduce_scatter_linear
    c = f(a, b)
    assert c.shape == (2, 3, 10) and c.data == reference(a, b, layout)
    c = wt.matmul_all_reduce(a, b, b_layout=layout, fuse=False)
    assert c.shape == (2, 3, 10) and c.data == reference(a, b, layout)


def test_an_input_requiring_grad_goes_through_the_dispatcher(wt, monkeypatch):
    # weft's ops have no backward: called straight, the output had no grad_fn and the gradients
    # vanished; through torch.ops.weft, torch records the op and its backward raises naming it
    torch = sys.modules["torch"]
    calls = []
    monkeypatch.setattr(torch.ops, "weft", types.SimpleNamespace(
        matmul_all_reduce=lambda *a: calls.append(a) or "dispatched"), raising=False)
    a, b = bf(2, 12), bf(12, 10)
    assert wt.matmul_all_reduce(a, b, fuse=False).data == reference(a, b, "row")   # no grad wanted: straight
    b.requires_grad = True
    assert wt.matmul_all_reduce(a, b, fuse=False) == "dispatched" and len(calls) == 1
    monkeypatch.setattr(torch, "_grad", False)   # torch.no_grad(): straight again
    assert wt.matmul_all_reduce(a, b, fuse=False).data == reference(a, b, "row") and len(calls) == 1


@pytest.mark.parametrize("kw, msg", [({"reduce_op": 5}, "reduce_op = 5"), ({"b_layout": None}, "b_layout = None"),
                                     ({"scatter_dim": "0"}, "scatter_dim = '0'"), ({"scatter_dim": 0.0}, "scatter_dim = 0.0"),
                                     ({"b": None}, "b_shard")])
def test_a_wrongly_typed_argument_is_agreed_on_not_raised_by_the_dispatcher(wt, monkeypatch, kw, msg):
    # An input requiring grad routes the op through torch.ops.weft, whose schema check raised a
    # TypeError on this rank alone, before the agreement: a rank whose grad mode differed from its
    # peers' left them waiting.  A wrongly typed argument now takes the eager path, whose checks
    # are agreed on (every rank raises them).
    import weft.torch.dist as D
    torch = sys.modules["torch"]
    calls, seen = [], []
    monkeypatch.setattr(torch.ops, "weft", types.SimpleNamespace(
        matmul_reduce_scatter=lambda *a: calls.append(a) or "dispatched"), raising=False)
    real = D._Group.agree

    def spy(self, op, sig, problem):
        seen.append(problem)
        return real(self, op, sig, problem)
    monkeypatch.setattr(D._Group, "agree", spy)
    a, b = bf(8, 64), bf(64, 16)
    a.requires_grad = b.requires_grad = True
    args = {"b": kw.pop("b")} if "b" in kw else {"b": b}
    with pytest.raises((ValueError, TypeError), match=re.escape(msg)):
        wt.matmul_reduce_scatter(a, args["b"], **kw)
    assert not calls and seen and msg in (seen[-1] or ""), (calls, seen)
    assert wt.matmul_reduce_scatter(a, b) == "dispatched" and len(calls) == 1   # (well typed: dispatched)


def test_in_place_on_a_tensor_requiring_grad_is_refused(wt, monkeypatch):
    # all_reduce_ returns nothing torch could attach a backward to: t would keep its old history
    # and backward run through it as if unchanged.  Refused (through the agreement), before a launch.
    import weft.torch.dist as wd
    torch = sys.modules["torch"]
    t = tensor((64,), torch.float32)
    t.requires_grad = True
    with pytest.raises(ValueError, match=r"weft.torch.all_reduce_: writes t in place, and t requires grad.*"
                                         r"rank 0 of group weft:self"):
        wd.all_reduce_(t)
    monkeypatch.setattr(torch, "_grad", False)   # under no_grad: taken (no GPU here: it fails at the launch)
    with pytest.raises(weft.WeftError):
        wd.all_reduce_(t)


def test_another_scatter_dim_moves_it_to_the_front_and_back(wt):
    a = bf(2, 3, 16)
    b = bf(16, 8)
    c = wt.matmul_reduce_scatter(a, b, scatter_dim=1, fuse=False)
    want = reference(a, b, "row")   # one rank: the whole sum, in a's layout again
    assert c.shape == (2, 3, 8) and not c.is_contiguous()
    assert c.contiguous().data == want


class IntLike:   # numpy's integers and other int-likes: an __index__, not an int
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v

    def __repr__(self):
        return "IntLike(%d)" % self.v


@pytest.mark.parametrize("dim", [0, 1])
def test_an_int_like_scatter_dim_is_the_int_it_stands_for(wt, dim):
    # dim 1 as an int-like had been refused ("scatter_dim = IntLike(1); allowed: 0 .. 1"): the
    # move to the front took only a plain int, and the check then saw dim 1 unmoved
    a, b = bf(2, 3, 16), bf(16, 8)
    c = wt.matmul_reduce_scatter(a, b, scatter_dim=IntLike(dim), fuse=False)
    assert c.shape == (2, 3, 8) and c.contiguous().data == reference(a, b, "row")
    with pytest.raises(ValueError, match=r"scatter_dim = 2; allowed: 0 \.\. 1"):
        wt.matmul_reduce_scatter(a, b, scatter_dim=IntLike(2), fuse=False)


@pytest.mark.parametrize("family", ["gemm_rs", "gemm_ar"])
def test_the_fused_path_chooses_the_one_rank_kernel(wt, family):
    a, b = bf(64, 64), bf(64, 64)
    op = "matmul_reduce_scatter" if family == "gemm_rs" else "matmul_all_reduce"
    # no GPU here: the kernel is chosen and compiled, its communicator cannot be made
    with pytest.raises(weft.NoGPUError, match="^weft.torch.%s: rank 0 of group weft:self: .*no NVIDIA driver" % op):
        getattr(wt, op)(a, b, fuse=True)
    chosen = [v[1].manifest for v in wt._plans._d.values() if v[0].startswith("weft_%s_bf16_" % family)]
    assert len(chosen) == 1 and chosen[0].params["ranks"] == "1", [m.name for m in chosen]
    assert (chosen[0].params["b_layout"], chosen[0].params["comm"]) == ("row", "threadload"), chosen[0].params


# ---- the environment weft.torch.dist reads: a typo is refused with the variable, never defaulted --

def test_env_torch_timeout(wt, monkeypatch):
    import weft.torch.dist as D
    monkeypatch.delenv("WEFT_TORCH_TIMEOUT_S", raising=False)
    assert D._timeout().total_seconds() == 300
    for v, s in (("", 300), ("2.5", 2.5), ("86400", 86400), ("1", 1)):
        monkeypatch.setenv("WEFT_TORCH_TIMEOUT_S", v)
        assert D._timeout().total_seconds() == s
    # (1e-7 and 0.0004 were taken: gloo's whole milliseconds made them no wait at all)
    for v in ("0", "-1", "soon", "nan", "inf", "86401", " 30", "30s", "5_0", "1e-7", "0.0004", "0.5", "\uff15"):
        monkeypatch.setenv("WEFT_TORCH_TIMEOUT_S", v)
        with pytest.raises(ValueError, match=r"WEFT_TORCH_TIMEOUT_S=%s: allowed a number of seconds from 1 to 86400"
                           % re.escape(repr(v))):
            D._timeout()


def test_env_torch_agree(wt, monkeypatch):
    import weft.torch.dist as D
    monkeypatch.delenv("WEFT_TORCH_AGREE", raising=False)
    assert D._agree_always() is False
    for v, want in (("", False), ("first", False), ("always", True)):
        monkeypatch.setenv("WEFT_TORCH_AGREE", v)
        assert D._agree_always() is want
    for v in ("Always", "1", "every", "always "):
        monkeypatch.setenv("WEFT_TORCH_AGREE", v)
        with pytest.raises(ValueError, match=r"WEFT_TORCH_AGREE=%r: allowed first" % v):
            D._agree_always()


def test_settings_compared_across_ranks():
    import weft.torch.dist as D
    assert D._settings_problem("g", [(False, []), (False, [])]) is None
    assert D._settings_problem("g", [(True, []), (True, [])]) is None
    bad = "weft.torch: WEFT_TORCH_TIMEOUT_S='soon': allowed a number of seconds above 0"
    msg = D._settings_problem("g", [(False, []), (False, [bad])])
    assert msg == ("weft.torch: group g: rank 1: WEFT_TORCH_TIMEOUT_S='soon': allowed a number of seconds above 0 "
                   "(every rank of the group raises this)"), msg
    msg = D._settings_problem("g", [(True, []), (False, []), (True, [])])
    assert "WEFT_TORCH_AGREE differs between the ranks (rank 0: always, rank 1: first, rank 2: always)" in msg, msg


def test_a_bad_setting_on_one_rank_raises_on_every_rank(wt, monkeypatch):
    """Two ranks (threads) making one group's weft state, each reading its own settings (the
    readers, per thread): rank 1's bad WEFT_TORCH_AGREE, rank 1's bad WEFT_TORCH_TIMEOUT_S, and the
    two ranks' different modes each raise the same ValueError on both; neither waits for the other
    (before, rank 1 raised alone, in agree() or before gloo's subgroup, and rank 0 waited in the
    rendezvous for gloo's timeout).  A bad timeout makes the subgroup with the default, 300 s."""
    import datetime
    import threading
    import weft.torch.dist as D
    box, barrier, local, made = [None, None], threading.Barrier(2, timeout=20), threading.local(), {}

    def all_gather_object(out, obj, group=None):
        box[local.rank] = obj
        barrier.wait()
        out[:] = list(box)
        barrier.wait()

    def new_group(**kw):
        made[local.rank] = kw["timeout"]
        return "gloo-subgroup"
    fake = types.SimpleNamespace(
        get_rank=lambda pg=None: local.rank, get_world_size=lambda pg=None: 2,
        get_process_group_ranks=lambda pg: [0, 1], new_group=new_group, all_gather_object=all_gather_object)
    monkeypatch.setattr(D, "dist", fake)
    monkeypatch.setattr(D, "_resolve", lambda name: "pg")

    def refuse(msg):
        raise ValueError(msg)
    five = datetime.timedelta(seconds=5)
    for case, timeouts, modes, want in (
            ("bad mode", (five, five), (False, "WEFT_TORCH_AGREE='Always': allowed first"),
             "rank 1: WEFT_TORCH_AGREE='Always': allowed first"),
            ("bad timeout", (five, "WEFT_TORCH_TIMEOUT_S='soon': allowed a number"), (False, False),
             "rank 1: WEFT_TORCH_TIMEOUT_S='soon': allowed a number"),
            ("modes differ", (five, five), (True, False),
             "WEFT_TORCH_AGREE differs between the ranks (rank 0: always, rank 1: first)")):
        for fn, vals in (("_timeout", timeouts), ("_agree_always", modes)):
            monkeypatch.setattr(D, fn, lambda vals=vals: (refuse("weft.torch: " + vals[local.rank])
                                                          if isinstance(vals[local.rank], str) else vals[local.rank]))
        got, made = [None, None], {}

        def rank(r):
            local.rank = r
            try:
                D._Group("pair", CUDA)
            except ValueError as e:
                got[r] = str(e)
        threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads), case
        assert got[0] is not None and got[0] == got[1], (case, got)
        assert got[0].startswith("weft.torch: group pair: " + want), (case, got)
        assert got[0].endswith("(every rank of the group raises this)"), (case, got)
        want_made = {0: five, 1: datetime.timedelta(seconds=300) if case == "bad timeout" else five}
        assert made == want_made, (case, made)


def test_a_bad_setting_in_a_one_rank_world(wt, monkeypatch):
    import weft.torch.dist as D
    D.close()   # (the one-rank world of the tests above: made again, reading the settings)
    monkeypatch.setenv("WEFT_TORCH_AGREE", "every")
    with pytest.raises(ValueError, match=r"^weft.torch: group weft:self: rank 0: WEFT_TORCH_AGREE='every': allowed first"):
        wt.matmul_reduce_scatter(bf(8, 64), bf(64, 16))
    assert D._groups.get(D.SELF) is None   # (nothing kept of the failed one)
    monkeypatch.delenv("WEFT_TORCH_AGREE")
    a, b = bf(2, 3, 12), bf(12, 10)   # made again, with good settings
    assert wt.matmul_all_reduce(a, b, fuse=False).data == reference(a, b, "row")
    assert D._groups[D.SELF].always is False


# ---- a problem on one rank reaches the agreement (every rank raises it), never an exception alone --

def test_arn_weight_none_is_agreed_not_raised_alone(wt, monkeypatch):
    import weft.torch.dist as D
    seen = []
    real = D._Group.agree

    def spy(self, op, sig, problem):
        seen.append(problem)
        return real(self, op, sig, problem)
    monkeypatch.setattr(D._Group, "agree", spy)
    # (an AttributeError from weight.dtype used to escape before the agreement: the others waited in it)
    with pytest.raises(ValueError, match="weight is None; it takes a tensor of x's last dimension"):
        D.all_reduce_rms_norm(bf(4, 64), None, None)
    assert seen and "weight is None" in (seen[-1] or ""), seen


@pytest.mark.parametrize("eps, err", [(float("nan"), ValueError), (-1.0, ValueError), (1e300, ValueError),
                                      (True, TypeError), ("abc", TypeError), (None, TypeError)])
def test_rms_norm_eps_checked(wt, eps, err):
    import weft.torch.ops as O
    # (float(eps) let NaN, -1, 1e300 and True through to the kernel; all_reduce_rms_norm refused them)
    with pytest.raises(err, match="weft.torch.rms_norm: eps = "):
        O.rms_norm(bf(4, 64), bf(64), eps=eps)


def test_all_gather_matmul_of_empty_shards_is_empty(wt):
    import weft.torch.dist as D
    # M = 0 launches nothing (the kernel's m >= 1 limit was checked first and refused it)
    a_out, c = D.all_gather_matmul(bf(0, 64), bf(64, 16), return_a=True)
    assert tuple(c.shape) == (0, 16) and tuple(a_out.shape) == (0, 64)


def test_not_a_tensor_or_group_is_named(wt):
    import weft.torch.dist as D
    import weft.torch.ops as O
    with pytest.raises(TypeError, match="weft.torch.rms_norm: x is a NoneType, not a torch.Tensor"):
        O.rms_norm(None, bf(64))
    with pytest.raises(TypeError, match=r"group = 5: a ProcessGroup, its name \(str\) or None"):
        D.group_name(5)


@pytest.mark.parametrize("gather_dim", [0.0, False, "0", 1])
def test_all_gather_matmul_gather_dim_is_the_int_0(wt, gather_dim):
    # 0.0 and False compared equal to 0 and ran (on the eager path, without autograd); refused now,
    # through the agreement, as any other value but 0
    import weft.torch.dist as D
    with pytest.raises(ValueError, match="gather_dim = %s; weft gathers along dim 0 only" % re.escape(repr(gather_dim))):
        D.all_gather_matmul(bf(8, 64), bf(64, 16), gather_dim=gather_dim)
