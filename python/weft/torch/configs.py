"""What weft.torch asks weft for, per op: pure Python, no torch, so CI tests it without a GPU.

Each function checks an op's arguments (what weft's kernels can take, with messages that name the
op and the tensor) and returns (config, shape): the config fixes only what the op means (family,
dtype, op, residual, eps as a kernel argument, the GEMM's B layout) and leaves the launch shape
open; weft.auto chooses it for the shape (gen/core/auto.lua: the tuning database, the table
shipped with weft, or the family's rule).  A shape no kernel takes is refused there, by the
family's own limits, and weft.torch raises SizeError with that message.
"""
import numbers

ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
ROW_REDUCE_OPS = ("sum", "max", "min", "prod")
GEMM_DTYPES = ("f16", "bf16")


class SizeError(ValueError):
    """No kernel of the family takes this size."""


def tuned_shape(**sizes):
    """The tuning database's shape key (runtime/cli/cmd_run.c's tuned_shape_key): sizes by name, sorted."""
    return " ".join("%s=%d" % (k, sizes[k]) for k in sorted(sizes))


def softmax(dtype, rows, cols):
    """Softmax of each row of rows x cols."""
    return {"family": "row_softmax", "dtype": dtype}, {"rows": rows, "cols": cols}


def rms_norm(dtype, rows, cols, residual):
    """RMS norm of rows x cols (with the residual add when residual).  eps is a kernel argument
    (eps = "arg"), so one kernel serves every eps."""
    return ({"family": "rmsnorm", "dtype": dtype, "residual": bool(residual), "eps": "arg"},
            {"rows": rows, "cols": cols})


def row_reduce(dtype, op, rows, cols):
    """op over each row, out in f32."""
    if op not in ROW_REDUCE_OPS:
        raise ValueError("weft.torch.row_reduce: op = %r; allowed: %s" % (op, ", ".join(ROW_REDUCE_OPS)))
    return {"family": "row_reduce", "dtype": dtype, "op": op}, {"rows": rows, "cols": cols}


def gemm(op, dtype, b_layout, m, n, k, a="a", b="b"):
    """C[m, n] = A[m, k] . B (B k x n for b_layout "row", n x k for "col").  The family takes any
    m >= 1, k >= 8 in multiples of 8 (its TMA rows are 16-byte aligned), and n >= 8 in multiples of
    8 with B row-major; column-major B (a weight as nn.Linear holds it) takes any n >= 1, through
    the direct stores where n is not a multiple of 8.  These are checked here so the message names
    the tensor; weft.torch.matmul and linear copy their operands into shapes the family takes
    before they get here (ops._gemm_staged)."""
    if dtype not in GEMM_DTYPES:
        raise TypeError("weft.torch.%s: %s has dtype %s; weft's GEMM takes float16 and bfloat16" % (op, a, dtype))
    if k < 8 or k % 8:
        raise SizeError("weft.torch.%s: K = %d (%s's last dim): weft's GEMM takes K >= 8 in multiples of 8 (rows of "
                        "16-byte aligned TMA loads): pad K with zeros" % (op, k, a))
    if b_layout == "row" and (n < 8 or n % 8):
        raise SizeError("weft.torch.%s: N = %d (%s's last dim): weft's GEMM takes N >= 8 in multiples of 8 with B "
                        "[K, N] (its rows are TMA loads); pad N, or pass B as [N, K] (weft.torch.linear)" % (op, n, b))
    if n < 1:
        raise SizeError("weft.torch.%s: N = %d: at least 1 column of the result" % (op, n))
    if m < 1:
        raise SizeError("weft.torch.%s: M = %d: at least 1 row of %s" % (op, m, a))
    return {"family": "gemm", "dtype": dtype, "b_layout": b_layout}, {"m": m, "n": n, "k": k}


NORM_DTYPES = ("f32", "f16", "bf16")
_TORCH_DTYPE = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16"}


def eps_value(op, eps):
    """eps as the float the kernel takes (its f32 argument); a number in [0, 1]."""
    # int and float first: what torch.compile traces (a numpy scalar is a numbers.Real too)
    if isinstance(eps, bool) or not (isinstance(eps, (int, float)) or isinstance(eps, numbers.Real)):
        raise TypeError("weft.torch.%s: eps = %r (%s); eps is a number in [0, 1]" % (op, eps, type(eps).__name__))
    e = float(eps)
    if not 0.0 <= e <= 1.0:   # NaN fails too
        raise ValueError("weft.torch.%s: eps = %r; allowed: a number in [0, 1]" % (op, eps))
    return e


def all_reduce_rms_norm(x, residual, weight, eps):
    """allreduce + residual + RMS norm (gen/families/allreduce_norm.lua) of x [..., hidden].  Each
    tensor is described as (dtype, shape): dtype weft's name (f32, f16, bf16) or, for any other,
    the tensor's dtype as text; residual None for none.  Returns (config, shape, eps): the config
    fixes what the op means (dtype, residual, eps as a kernel argument, comm = threadload) and
    leaves the algorithm and the layout to weft.auto, which takes the rank count (the family's
    rule: one_shot_ll for small messages, two_shot for large ones on many ranks, else one_shot)."""
    op = "all_reduce_rms_norm"
    xd, xs = x[0], tuple(x[1])
    allowed = ", ".join(_TORCH_DTYPE[d] for d in NORM_DTYPES)
    if xd not in NORM_DTYPES:
        raise TypeError("weft.torch.%s: x has dtype %s; allowed: %s" % (op, _TORCH_DTYPE.get(xd, xd), allowed))
    if len(xs) < 2:
        raise ValueError("weft.torch.%s: x has %d dimension(s) (shape %s); it needs 2 or more, [..., tokens, hidden]"
                         % (op, len(xs), xs))
    hidden = xs[-1]
    if residual is not None:
        rd, rs = residual[0], tuple(residual[1])
        if rd != xd or rs != xs:
            raise ValueError("weft.torch.%s: residual is %s %s but x is %s %s; they must match (or pass residual=None)"
                             % (op, _TORCH_DTYPE.get(rd, rd), rs, _TORCH_DTYPE[xd], xs))
    wd, ws = weight[0], tuple(weight[1])
    if len(ws) != 1 or ws[0] != hidden:
        raise ValueError("weft.torch.%s: weight has shape %s; it must be 1-D with x's last dim (hidden = %d) elements"
                         % (op, ws, hidden))
    if wd != xd:
        raise TypeError("weft.torch.%s: weight has dtype %s but x has %s; they must match"
                        % (op, _TORCH_DTYPE.get(wd, wd), _TORCH_DTYPE[xd]))
    e = eps_value(op, eps)
    rows = 1
    for d in xs[:-1]:
        rows *= d
    cfg = {"family": "allreduce_norm", "dtype": xd, "residual": residual is not None, "eps": "arg",
           "comm": "threadload"}
    return cfg, {"rows": rows, "cols": hidden}, e


# ---- matmul_reduce_scatter / matmul_all_reduce (python/weft/torch/dist_matmul.py) ----------------

MATMUL_COMM_DTYPES = ("f16", "bf16")
REDUCE_OPS = ("sum",)
FUSE_CHOICES = ("auto", True, False)
# The fused-or-not rule (provisional: two measured points).  bench/RESULTS.md, "gemm_rs: GEMM +
# reduce-scatter in one kernel", H200, bf16, P = 2 under MPS, fused / (weft gemm + weft
# reduce_scatter): 0.928 at 1024^3 (M x N = 2^20: fused wins) and 1.313 at 8192^3 (2^26: the
# unfused pieces win); at P = 1, 8192^3, the fused kernel (the plain GEMM epilogue) took 1753 us
# and cuBLASLt 1655 us.  What grows faster in the fused kernel than in the pieces is the f32
# staging and the fold after the GEMM, both per element of C, so the rule is on M x N (all
# rows), cut at the geometric middle of the two points: 2^23 (~2896^2).  The same cut for every
# rank count and for the allreduce (gemm_ar: not measured at all).  Replace it with measured
# crossovers per P (bench/torch_dist_session.sh mrs; bench/gemm_rs.sh, whose runner now times the
# fused kernel beside the unfused pieces).  The op itself at P = 4 under MPS (bench/mrs_torch.py,
# fused / unfused): 0.648 at 1024^3, 1.51 at 4096^3, 1.49 at 8192^3, so the cut holds there too,
# though the runner's C-level pair (weft gemm + weft reduce_scatter, no host work between) beats
# the fused kernel at 1024^3 (0.69): torch.matmul plus a second op call cost the op's unfused path
# more than the fused kernel's halved grid costs it.
FUSE_MAX_MN = 1 << 23


def _desc(t):
    return t[0], tuple(t[1])


def matmul_comm_args(op, reduce_op="sum", scatter_dim=0, b_layout="row", fuse="auto", ndim=2):
    """The arguments that are not tensors; scatter_dim None for the allreduce (no scatter).  Every
    problem in one message, each naming the argument, its value and what is allowed."""
    bad = []
    if not isinstance(reduce_op, str) or reduce_op not in REDUCE_OPS:
        bad.append("reduce_op = %r; allowed: %s (the rank-order sum; \"avg\" is not built: divide the result)"
                   % (reduce_op, ", ".join(REDUCE_OPS)))
    if scatter_dim is not None:
        top = max(ndim - 2, 0)
        if isinstance(scatter_dim, bool) or not isinstance(scatter_dim, int) or not 0 <= scatter_dim <= top:
            bad.append("scatter_dim = %r; allowed: %s (a leading dim of a_shard [..., K]: dim 0 scatters the rows "
                       "in place, another costs a transposing copy of a_shard; K's dim is not one)"
                       % (scatter_dim, "0" if top == 0 else "0 .. %d" % top))
    if b_layout not in ("row", "col"):
        bad.append("b_layout = %r; allowed: row (b [K, N]), col (b [N, K], as nn.Linear stores its weight)" % (b_layout,))
    if not any(fuse is c for c in FUSE_CHOICES) and fuse != "auto":
        bad.append("fuse = %r; allowed: \"auto\" (the rule), True (the fused kernel), False (torch.matmul, then "
                   "weft's collective)" % (fuse,))
    if bad:
        raise ValueError("; ".join("weft.torch.%s: %s" % (op, b) for b in bad))


def matmul_comm_shapes(op, a, b, b_layout, ranks, scatter_dim=None, aname="a_shard", bname="b_shard"):
    """(M, N, k) of a row-parallel matmul: a (dtype, shape) is this rank's [..., k] (its K shard; the
    leading dims fold into M rows), b is [k, N] ("row") or [N, k] ("col").  scatter_dim (the
    reduce-scatter): that dim of a must split into `ranks` equal parts."""
    ad, ash = _desc(a)
    bd, bsh = _desc(b)
    allowed = ", ".join(_TORCH_DTYPE[d] for d in MATMUL_COMM_DTYPES)
    if ad not in MATMUL_COMM_DTYPES:
        raise TypeError("weft.torch.%s: %s has dtype %s; allowed: %s" % (op, aname, _TORCH_DTYPE.get(ad, ad), allowed))
    if bd != ad:
        raise TypeError("weft.torch.%s: %s has dtype %s but %s has %s; they must match"
                        % (op, bname, _TORCH_DTYPE.get(bd, bd), aname, _TORCH_DTYPE[ad]))
    if len(ash) < 2:
        raise ValueError("weft.torch.%s: %s has %d dimension(s) (shape %s); it needs 2 or more, [..., M, K]"
                         % (op, aname, len(ash), ash))
    if len(bsh) != 2:
        raise ValueError("weft.torch.%s: %s has %d dimension(s) (shape %s); it is a matrix, %s"
                         % (op, bname, len(bsh), bsh, "[K, N]" if b_layout == "row" else "[N, K]"))
    k = ash[-1]
    kb, n = bsh if b_layout == "row" else (bsh[1], bsh[0])
    if kb != k:
        raise ValueError("weft.torch.%s: %s is %s (K = %d) but %s is %s (K = %d, b_layout %s)"
                         % (op, aname, ash, k, bname, bsh, kb, b_layout))
    m = 1
    for d in ash[:-1]:
        m *= d
    if scatter_dim is not None and ash[scatter_dim] % ranks:
        raise ValueError("weft.torch.%s: %s is %s: its dim %d (scatter_dim) = %d does not split over the group's %d ranks"
                         % (op, aname, ash, scatter_dim, ash[scatter_dim], ranks))
    return m, n, k


def fused_refusal(op, m, n, k, ranks=1):
    """Why the fused families cannot take this shape, or None: N and K (the GEMM's TMA rows) and M,
    which both split into one block of rows per rank (gemm_rs's shards, gemm_ar's owners: their
    comm.divide = "m"; the reduce-scatter's own check already holds M to that)."""
    why = []
    if m % ranks:
        why.append("M = %d (not a multiple of the %d ranks: each owns M / P rows)" % (m, ranks))
    if k < 8 or k % 8:
        why.append("K = %d (a_shard's last dim)" % k)
    if n < 8 or n % 8:
        why.append("N = %d" % n)
    if not why:
        return None
    return ("weft.torch.%s: %s: the fused kernel takes N and K >= 8 in multiples of 8 (16-byte TMA rows) and M a "
            "multiple of the ranks; pass fuse=\"auto\" or False for torch.matmul and weft's collective, or pad"
            % (op, " and ".join(why)))


def choose_fuse(op, m, n, k, ranks, fuse="auto"):
    """(fused, why): whether to run the fused kernel.  fuse=True asks for it (SizeError where it
    cannot take the shape), False for torch.matmul + weft's collective, "auto" the rule: fused
    where M x N <= FUSE_MAX_MN and the kernel takes the shape."""
    refused = fused_refusal(op, m, n, k, ranks)
    if fuse is True:
        if refused:
            raise SizeError(refused)
        return True, "fuse=True"
    if fuse is False:
        return False, "fuse=False"
    if refused:
        return False, "the fused kernel cannot take it (N, K multiples of 8, M of the ranks)"
    if m * n <= FUSE_MAX_MN:
        return True, "M x N = %d <= %d (FUSE_MAX_MN)" % (m * n, FUSE_MAX_MN)
    return False, "M x N = %d > %d (FUSE_MAX_MN)" % (m * n, FUSE_MAX_MN)


def matmul_comm_config(family, dtype, b_layout, ranks):
    """The fused family's config (gemm_rs or gemm_ar): what the op means, reduce = "ordered" (the
    rank-order fold: the same bits every run; never "atomic"), comm = threadload (never multicast
    here); weft.auto (with the rank count) chooses the schedule.  One rank: ranks = 1 is the plain
    GEMM's epilogue, no staging (the families' rule leaves ranks open at one rank, see
    gen/families/gemm_rs.lua)."""
    cfg = {"family": family, "dtype": dtype, "b_layout": b_layout, "reduce": "ordered", "comm": "threadload"}
    if ranks == 1:
        cfg["ranks"] = 1
    return cfg
