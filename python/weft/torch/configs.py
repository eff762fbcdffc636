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
    m >= 1 and n, k >= 8 in multiples of 8 (its TMA rows are 16-byte aligned); these are checked
    here so the message names the tensor."""
    if dtype not in GEMM_DTYPES:
        raise TypeError("weft.torch.%s: %s has dtype %s; weft's GEMM takes float16 and bfloat16" % (op, a, dtype))
    if k < 8 or k % 8:
        raise SizeError("weft.torch.%s: K = %d (%s's last dim): weft's GEMM takes K >= 8 in multiples of 8 (rows of "
                        "16-byte aligned TMA loads): pad K with zeros" % (op, k, a))
    if n < 8 or n % 8:
        raise SizeError("weft.torch.%s: N = %d (%s's %s dim): weft's GEMM takes N >= 8 in multiples of 8: pad N"
                        % (op, n, b, "last" if b_layout == "row" else "first"))
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
