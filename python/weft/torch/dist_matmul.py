"""weft.torch's row-parallel matmuls over a process group: matmul_reduce_scatter (GEMM +
reduce-scatter, family gemm_rs) and matmul_all_reduce (GEMM + allreduce, family gemm_ar).

    import weft.torch as wt
    c = wt.matmul_reduce_scatter(a_shard, b_shard, group=tp)       # this rank's M/P rows of sum_r A_r . B_r
    c = wt.matmul_reduce_scatter_linear(x_shard, weight_shard)     # weight [N, k] as nn.Linear stores it
    c = wt.matmul_all_reduce(a_shard, b_shard)                     # all M rows, the same bits on every rank

Rank r holds A_r = A[:, K_r] (its K shard, [..., k]) and B_r = B[K_r, :] ([k, N], or [N, k] with
b_layout="col"); the result is sum over the ranks of A_r . B_r.  Two ways to get it:
  fused   one weft kernel: the GEMM pushes each finished f32 tile to the rank that owns its rows,
          which folds the P partials in rank order in f32 and rounds once (the sum has the same
          bits on every run; for the allreduce on every rank too).
  unfused torch.matmul (cuBLAS) writes this rank's partial in the input dtype, then weft's
          reduce_scatter (or allreduce) folds the P partials in rank order in f32 and rounds once.
          Each partial is rounded to the dtype first, so the two paths' results differ in the last
          bits (the fused one is the more accurate); each path alone is deterministic.
fuse="auto" (the default) picks with configs.choose_fuse (provisional: fused up to M x N =
configs.FUSE_MAX_MN elements, the middle of the two measured points cited there, and unfused where
the fused kernel cannot take the shape); fuse=True / False forces one.

Everything dist.py's docstring says about groups, the first-call agreement (the path and the
kernel's name are part of the signature: ranks that chose differently fail together with
MISMATCH), CUDA graphs and timeouts holds here.  Every rank calls with the same shapes.
"""
import operator

import torch

from .. import core
from . import _common, configs
from .dist import ESIZE, _bind, _device_of, _group, _problem, allreduce_algo, group_name, group_size

_plans = _common.PlanTable()   # (device, family, dtype, layout, M, N, k, ranks) -> (kernel name, kernel)
_FUSE_VALUE = {"auto": "auto", "fused": True, "unfused": False}   # the op's schema takes fuse as a string


def _fuse_text(fuse):
    if fuse is True or fuse is False:
        return "fused" if fuse else "unfused"
    return "auto" if isinstance(fuse, str) and fuse == "auto" else repr(fuse)   # the run refuses the rest


def _desc(t):
    return _common.DTYPES.get(t.dtype, str(t.dtype)), tuple(t.shape)


def _choose(device, family, cfg, shape, ranks):
    """(name, kernel, None) for a shape seen before, else (name, None, the Auto to compile it from):
    weft.auto's choice at this rank count (the tuning database, the shipped table, or the family's
    rule: the GEMM's wave model over the per-rank problem).  Nothing is compiled before the ranks
    agree on the name."""
    key = (_common.device_index(device), family, cfg["dtype"], cfg["b_layout"], shape["m"], shape["n"], shape["k"], ranks)
    hit = _plans.get(key)
    if hit is not None:
        return hit[0], hit[1], None
    a = core.context(key[0]).auto(cfg, shape, ranks=ranks)
    return a.names[0], None, a


def _compile(op, device, family, cfg, shape, ranks, name, a):
    kern = _common.kernels.get(device, name, lambda ctx: a.compile(0))
    for arg, v in shape.items():
        why = kern.manifest.check_size(arg, v)
        if why:   # auto checked its choice against the shape: this is a bug there
            raise configs.SizeError("weft.torch.%s: %s = %d is outside what %s takes (%s)" % (op, arg, v, name, why))
    key = (_common.device_index(device), family, cfg["dtype"], cfg["b_layout"], shape["m"], shape["n"], shape["k"], ranks)
    _plans.put(key, (name, kern))
    return kern


def _launch(g, op, key, build, need, stream, **args):
    with g.lock:
        c = g.comm(op, key, build, need)
        try:
            c.launch(*_bind(c.kernel, **args), stream=stream)
        except core.WeftError as e:
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (op, g.rank, g.name, e)) from None


def _run(op, a, b, name, b_layout, fuse, scatter, reduce_op="sum", scatter_dim=0, moved=False):
    """The result of one call, after every check has gone through the group's agreement.  a: this
    rank's [..., k] (moved: the caller has already brought scatter_dim to the front, so dim 0 is
    the one that splits)."""
    aname, bname = ("a_shard", "b_shard") if op != "matmul_reduce_scatter_linear" else ("x_shard", "weight_shard")
    family = "gemm_rs" if scatter else "gemm_ar"
    ranks = group_size(name)
    problems = []
    ndim = a.dim() if isinstance(a, torch.Tensor) else 2
    p = _problem(configs.matmul_comm_args, op, reduce_op, scatter_dim if scatter else None, b_layout, fuse, ndim)
    if p:
        problems.append(p)
    layout = b_layout if b_layout in ("row", "col") else "row"
    shape = fused = None
    p = _problem(_common.check_tensor, a, op, aname)
    if not p:
        p = _problem(_common.check_tensor, b, op, bname, device=a.device)
    if p:
        problems.append(p)
    else:
        try:
            shape = configs.matmul_comm_shapes(op, _desc(a), _desc(b), layout, ranks,
                                               (0 if moved else scatter_dim) if scatter and not problems else None,
                                               aname, bname)
            if not problems:
                fused, why = configs.choose_fuse(op, shape[0], shape[1], shape[2], ranks, fuse)
        except (TypeError, ValueError) as e:
            problems.append(str(e))
    device = _device_of(a)
    g, p = _group(name, device, op, aname)
    if p:
        problems.append(p)
    kname = kern = auto = None
    dt = _common.DTYPES.get(a.dtype) if isinstance(a, torch.Tensor) else None
    M, N, k = shape if shape else (0, 0, 0)
    cfg = configs.matmul_comm_config(family, dt, layout, ranks)
    sizes = {"m": M, "n": N, "k": k}
    try:
        if not problems and fused and M * N:
            try:
                kname, kern, auto = _choose(device, family, cfg, sizes, ranks)
            except (core.WeftError, ValueError) as e:
                problems.append("weft.torch.%s: %s %s: %s" % (op, aname, tuple(a.shape), e))
        da = _desc(a) if isinstance(a, torch.Tensor) else ("?", "?")
        db = _desc(b) if isinstance(b, torch.Tensor) else ("?", "?")
        sig = "%s %s=%s %s %s=%s %s layout=%s reduce_op=%s scatter_dim=%r path=%s kernel=%s" % (
            op, aname, da[0], list(da[1]), bname, db[0], list(db[1]), layout, reduce_op, scatter_dim,
            "fused" if fused else "unfused", kname)
        g.agree(op, sig, "; ".join(problems) or None)
        if kname is not None and kern is None:
            kern = _compile(op, device, family, cfg, sizes, ranks, kname, auto)
    finally:
        if auto is not None:
            auto.close()
    rows = M // ranks if scatter else M
    out_shape = tuple(a.shape[:-1]) + (N,)
    if scatter:
        out_shape = (out_shape[0] // ranks,) + out_shape[1:]
    if M * N == 0:   # nothing to compute or send (k = 0 with rows and columns: the unfused path's zeros)
        return torch.empty(out_shape, dtype=a.dtype, device=device)
    s = _common.stream(device)
    if fused:
        c = torch.empty((rows, N), dtype=a.dtype, device=device)
        # the staging holds M x N f32 partials per half; k is a size argument the buffer also bounds
        _launch(g, op, (family, kname), lambda ctx: kern, max(M * N, k), s, c=c, a=a.view(M, k), b=b, m=M, n=N, k=k)
        return c.view(out_shape)
    # unfused: this rank's partial in the dtype (cuBLAS), then weft's rank-order fold of the partials
    part = torch.matmul(a.view(M, k), b if layout == "row" else b.t())
    if ranks == 1:
        return part.view(out_shape)
    if scatter:
        c = torch.empty((rows, N), dtype=a.dtype, device=device)
        n = rows * N
        # generated for the group's size (its fold's loads and loops are P; the runtime refuses another world)
        rs = {"family": "reduce_scatter", "dtype": dt, "op": "sum", "comm": "threadload", "ranks": ranks}
        _launch(g, op, ("reduce_scatter", dt, "sum", ranks), lambda ctx: ctx.compile(rs), n, s, y=c, x=part, n=n)
    else:
        c = torch.empty((M, N), dtype=a.dtype, device=device)
        n = M * N
        algo = allreduce_algo(n * ESIZE[dt], n, ranks)
        ar = {"family": "allreduce", "dtype": dt, "op": "sum", "algo": algo, "comm": "threadload"}
        # the same key as dist.all_reduce's: one communicator serves both
        _launch(g, op, ("allreduce", dt, "sum", algo), lambda ctx: ctx.compile(ar), n, s, y=c, x=part, n=n)
    return c.view(out_shape)


def _out_shape(a, b, b_layout, ranks, scatter):
    n = b.shape[1] if b_layout == "row" else b.shape[0]
    shape = list(a.shape[:-1]) + [n]
    if scatter:
        shape[0] //= ranks
    return shape


# The group's size is an argument of the ops (the output's rows depend on it; all_gather_matmul's
# comment in dist.py says why a lookup in the fake is not enough).  scatter_dim is 0 in the op:
# the wrapper moves another dim to the front outside it.
@torch.library.custom_op("weft::matmul_reduce_scatter", mutates_args=())
def _mrs_op(a_shard: torch.Tensor, b_shard: torch.Tensor, reduce_op: str, group_name: str, group_size: int,
            b_layout: str, fuse: str) -> torch.Tensor:
    _check_size("matmul_reduce_scatter", group_name, group_size)
    op = "matmul_reduce_scatter" if b_layout == "row" else "matmul_reduce_scatter_linear"
    return _run(op, a_shard, b_shard, group_name, b_layout, _FUSE_VALUE.get(fuse, fuse), True, reduce_op)


@_mrs_op.register_fake
def _(a_shard, b_shard, reduce_op, group_name, group_size, b_layout, fuse):
    return a_shard.new_empty(_out_shape(a_shard, b_shard, b_layout, group_size, True))


@torch.library.custom_op("weft::matmul_all_reduce", mutates_args=())
def _mar_op(a_shard: torch.Tensor, b_shard: torch.Tensor, reduce_op: str, group_name: str, group_size: int,
            b_layout: str, fuse: str) -> torch.Tensor:
    _check_size("matmul_all_reduce", group_name, group_size)
    return _run("matmul_all_reduce", a_shard, b_shard, group_name, b_layout, _FUSE_VALUE.get(fuse, fuse), False,
                reduce_op)


@_mar_op.register_fake
def _(a_shard, b_shard, reduce_op, group_name, group_size, b_layout, fuse):
    return a_shard.new_empty(_out_shape(a_shard, b_shard, b_layout, group_size, False))


def _check_size(op, name, size):
    ranks = group_size(name)
    if size != ranks:
        raise ValueError("weft.torch.%s: group_size = %d, but group %s has %d ranks" % (op, size, name, ranks))


def _mrs_call(op, a, b, group, scatter_dim, b_layout, fuse, reduce_op):
    name = group_name(group)
    # an int-like dim (numpy's, anything with __index__) as the int it stands for, so that the
    # tests below and the eager path's check see the same value (a bool stays itself: refused)
    if not isinstance(scatter_dim, bool):
        try:
            scatter_dim = operator.index(scatter_dim)
        except TypeError:
            pass
    # another leading dim: brought to the front by one transposing copy of a, and the result's
    # rows moved back (a view), as torch's op does for an A not laid out that way
    moved = (isinstance(a, torch.Tensor) and not isinstance(scatter_dim, bool) and isinstance(scatter_dim, int)
             and 0 < scatter_dim <= a.dim() - 2)
    if moved:
        a = a.movedim(scatter_dim, 0).contiguous()
    if _common.via_dispatcher(a, b) and _common.schema_types_ok(
            (a, torch.Tensor), (b, torch.Tensor), (reduce_op, str), (b_layout, str)) and (
            moved or (_common.schema_types_ok((scatter_dim, int)) and scatter_dim == 0)):   # (else the eager path: its checks are agreed on)
        c = torch.ops.weft.matmul_reduce_scatter(a, b, reduce_op, name, group_size(name), b_layout,
                                                 _fuse_text(fuse))
    else:
        c = _run(op, a, b, name, b_layout, fuse, True, reduce_op, scatter_dim, moved)
    return c.movedim(0, scatter_dim) if moved else c


def matmul_reduce_scatter(a_shard, b_shard, group=None, scatter_dim=0, b_layout="row", fuse="auto", reduce_op="sum"):
    """This rank's share of sum over the group's ranks of a_shard @ b_shard: the contract of
    torch.ops.symm_mem.fused_matmul_reduce_scatter(A, B, reduce_op, scatter_dim, group_name), that
    is reduce_scatter_tensor(A @ B, reduce_op, scatter_dim), with a_shard [..., k] (this rank's K
    shard of A; leading dims kept, as torch's matmul keeps them) and b_shard [k, N] (b_layout="row")
    or [N, k] ("col"), both float16 or bfloat16, contiguous, 16-byte aligned, on this rank's device.
    The result: a_shard.shape[:-1] + (N,), its dim scatter_dim divided by the group's size P, rank r
    holding part r (dim 0: rows r*M/P .. of the flattened [M, N]).
    As torch's: the output's shape and which part each rank gets; a_shard's leading dims; the
    scatter along any dim but the last (dim 0 in place; another costs one transposing copy of
    a_shard, as torch's op makes for an A not laid out for it; the result is then a view, not
    contiguous).  Not as torch's: reduce_op "sum" only ("avg": divide the result); the ranks'
    partials are summed in f32 in rank order and rounded once, where torch's sums in the dtype
    (the same bits on every run here); b_layout; fuse.  Refused with a ValueError naming the
    argument: another reduce_op, scatter_dim outside 0 .. a_shard.dim() - 2, a dim that does not
    split into P parts.  fuse: "auto" (configs.choose_fuse), True (the gemm_rs kernel: N and k
    multiples of 8), False (torch.matmul, then weft's reduce_scatter: the partial is rounded to the
    dtype before the sum, so the bits differ from the fused path's)."""
    return _mrs_call("matmul_reduce_scatter", a_shard, b_shard, group, scatter_dim, b_layout, fuse, reduce_op)


def matmul_reduce_scatter_linear(x_shard, weight_shard, group=None, scatter_dim=0, fuse="auto", reduce_op="sum"):
    """matmul_reduce_scatter with a row-parallel nn.Linear's weight shard [N, k] (x_shard @ weight_shard.T,
    no transpose made): the layer after a column-parallel one, summed and scattered over the group."""
    return _mrs_call("matmul_reduce_scatter_linear", x_shard, weight_shard, group, scatter_dim, "col", fuse, reduce_op)


def matmul_all_reduce(a_shard, b_shard, group=None, b_layout="row", fuse="auto", reduce_op="sum"):
    """sum over the group's ranks of a_shard @ b_shard, all of it on every rank with the same bits
    (a_shard.shape[:-1] + (N,)): matmul_reduce_scatter's arguments without the scatter.  fuse: True
    is the gemm_ar kernel (each row block's owner folds the f32 partials in rank order, rounds once,
    and every rank copies those bits; N and k multiples of 8, M = a_shard's rows a multiple of P),
    False torch.matmul then weft's allreduce (the partial rounded to the dtype first, then the same
    rank-order f32 fold: any M, N, k); "auto" configs.choose_fuse (the gemm_rs crossover: gemm_ar
    has not been measured), unfused where the fused kernel cannot take the shape."""
    name = group_name(group)
    if _common.via_dispatcher(a_shard, b_shard) and _common.schema_types_ok(
            (a_shard, torch.Tensor), (b_shard, torch.Tensor), (reduce_op, str), (b_layout, str)):
        return torch.ops.weft.matmul_all_reduce(a_shard, b_shard, reduce_op, name, group_size(name), b_layout,
                                                _fuse_text(fuse))
    return _run("matmul_all_reduce", a_shard, b_shard, name, b_layout, fuse, False, reduce_op)


__all__ = ["matmul_reduce_scatter", "matmul_reduce_scatter_linear", "matmul_all_reduce"]
