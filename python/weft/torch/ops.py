"""weft's single-GPU kernels as torch ops: torch.library custom ops in the namespace "weft", each
with a fake implementation (torch.compile traces them without running them), and plain wrappers.

    weft::softmax(x)                        softmax over x's last dim
    weft::rms_norm(x, weight, eps)          y = x * rsqrt(mean(x^2) + eps) * weight over the last dim
    weft::add_rms_norm(x, residual, weight, eps)
                                            h = x + residual is written INTO residual (mutated in
                                            place, declared in mutates_args), y = rms_norm(h)
    weft::row_reduce(x, op)                 sum / max / min / prod over the last dim, out in float32
    weft::matmul(a, b)                      a [..., M, K] . b [K, N]
    weft::linear(x, weight)                 x [..., K] . weight[N, K]^T (no bias)

The launch path: argument checks, a plan per exact shape (a dict hit after the first call), the
output's allocation, one cuLaunchKernelEx on torch.cuda.current_stream(x.device).  The plan is
weft.auto's kernel for the shape: the op fixes what it means (configs.py) and weft chooses the
rest from the tuning database, the table shipped with weft or the family's rule; with
WEFT_AUTOTUNE=1 the first call of a shape the database does not know times a few candidates
first (_tune.py).
No host sync and no other allocation, so calls can be captured in a CUDA graph once each shape
class has run eagerly (its kernel compiles on the first call, which a capture cannot do).  (matmul
and linear with K, or matmul's contiguous b with N, off the multiples of 8 also allocate the
padded or transposed copies of their operands: _gemm_staged.)

The wrappers call the implementation directly in eager mode (the dispatcher's custom-op path
costs host time on every call) and the registered op under torch.compile, so a compiled
graph holds torch.ops.weft.* nodes; both paths run the same code.
"""
import torch

from .. import core
from . import _common as C
from . import _tune
from . import configs

_plans = C.PlanTable()   # exact shapes -> their kernel


def _plan(op, device, cfg, shape, tuning=None):
    """The kernel for an exact shape: weft.auto's choice for it (first-use tuned when WEFT_AUTOTUNE=1
    and the op gave tuning: a function returning (make, launch, result, reference, dtype, stream)),
    checked once against its limits (the C check, weft_manifest_check_size) before any launch.
    Kernels are cached by name, so shapes with the same choice share one."""
    idx = C.device_index(device)
    tune = tuning is not None and _tune.enabled()
    try:
        a = core.context(idx).auto(cfg, shape, candidates=_tune.CANDIDATES - 1 if tune else 0)
    except core.ConfigError as e:
        raise configs.SizeError("weft.torch.%s: %s" % (op, e)) from None
    try:
        def kernel_of(i):
            return C.kernels.get(device, a.names[i], lambda ctx: a.compile(i))
        i = _tune.tune(op, a, kernel_of, *tuning()) if tune and a.source != "database" else 0
        kern = kernel_of(i)
    finally:
        a.close()
    for name, v in shape.items():
        why = kern.manifest.check_size(name, v)
        if why:
            raise ValueError("weft.torch.%s: %s = %d is outside what its kernel takes (%s)" % (op, name, v, why))
    return kern


_remember = _plans.put


def _rows_cols(x, op, name="x"):
    if x.dim() == 0:
        raise ValueError("weft.torch.%s: %s is 0-dimensional; it needs a last dim to work along" % (op, name))
    cols = x.shape[-1]
    return (x.numel() // cols if cols else 0), cols


# ---- softmax ------------------------------------------------------------------------------

def _softmax_impl(x):
    dt = C.dtype_name(x, "softmax", "x")
    C.check_tensor(x, "softmax", "x")
    rows, cols = _rows_cols(x, "softmax")
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    pk = ("softmax", x.device, dt, rows, cols)
    kern = _plans.get(pk)
    if kern is None:
        cfg, shape = configs.softmax(dt, rows, cols)

        def tuning():
            return (lambda: torch.full_like(x, float("nan")),
                    lambda k, y: k._launch_trusted((y.data_ptr(), x.data_ptr(), rows, cols), C.stream(x.device)),
                    lambda y: y, torch.softmax(x.double(), -1), dt, torch.cuda.current_stream(x.device))
        kern = _remember(pk, _plan("softmax", x.device, cfg, shape, tuning))
    kern._launch_trusted((y.data_ptr(), x.data_ptr(), rows, cols), C.stream(x.device))
    return y


@torch.library.custom_op("weft::softmax", mutates_args=())
def _softmax_op(x: torch.Tensor) -> torch.Tensor:
    return _softmax_impl(x)


@_softmax_op.register_fake
def _(x):
    _rows_cols(x, "softmax")
    return torch.empty_like(x)


def softmax(x, dim=-1):
    """Softmax of x along dim (float32, float16, bfloat16; CUDA, contiguous, 16-byte aligned).  A
    dim other than the last costs a transposing copy of x (movedim + contiguous: one more read and
    write of x) and returns a view with the same shape as x, not contiguous."""
    if not isinstance(x, torch.Tensor):
        raise TypeError("weft.torch.softmax: x must be a torch.Tensor, not %s" % type(x).__name__)
    nd = max(x.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError("weft.torch.softmax: dim = %d is out of range for x of %d dimensions" % (dim, x.dim()))
    f = torch.ops.weft.softmax if C.via_dispatcher(x) else _softmax_impl
    if dim % nd == nd - 1:
        return f(x)
    return f(x.movedim(dim, -1).contiguous()).movedim(-1, dim)


# ---- rms_norm -----------------------------------------------------------------------------

def _rms_checks(x, weight, residual):
    op = "rms_norm"
    dt = C.dtype_name(x, op, "x")
    C.check_tensor(x, op, "x")
    C.check_tensor(weight, op, "weight", dim=1, device=x.device)
    rows, cols = _rows_cols(x, op)
    if weight.dtype != x.dtype:
        raise TypeError("weft.torch.rms_norm: weight has dtype %s but x has %s; they must match" % (weight.dtype, x.dtype))
    if weight.shape[0] != cols:
        raise ValueError("weft.torch.rms_norm: weight has %d elements but x's last dim is %d; they must match"
                         % (weight.shape[0], cols))
    if residual is not None:
        C.check_tensor(residual, op, "residual", device=x.device)
        if residual.shape != x.shape or residual.dtype != x.dtype:
            raise ValueError("weft.torch.rms_norm: residual is %s %s but x is %s %s; they must match"
                             % (residual.dtype, tuple(residual.shape), x.dtype, tuple(x.shape)))
    return dt, rows, cols


def _rms_impl(x, weight, eps, residual):
    eps = configs.eps_value("rms_norm", eps)   # (torch.ops.weft.rms_norm called directly comes here unchecked)
    dt, rows, cols = _rms_checks(x, weight, residual)
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    res = residual is not None
    pk = ("rms_norm", x.device, dt, res, rows, cols)
    kern = _plans.get(pk)
    if kern is None:
        cfg, shape = configs.rms_norm(dt, rows, cols, res)

        def tuning():
            h = x.double() + residual.double() if res else x.double()
            ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + float(eps)) * weight.double()

            def make():
                return torch.full_like(x, float("nan")), (residual.clone() if res else None)

            def launch(k, b):
                if res:
                    k._launch_trusted((b[0].data_ptr(), x.data_ptr(), weight.data_ptr(), b[1].data_ptr(), float(eps),
                                       rows, cols), C.stream(x.device))
                else:
                    k._launch_trusted((b[0].data_ptr(), x.data_ptr(), weight.data_ptr(), float(eps), rows, cols),
                                      C.stream(x.device))
            return make, launch, lambda b: b[0], ref, dt, torch.cuda.current_stream(x.device)
        kern = _remember(pk, _plan("rms_norm", x.device, cfg, shape, tuning))
    s = C.stream(x.device)
    if res:
        kern._launch_trusted((y.data_ptr(), x.data_ptr(), weight.data_ptr(), residual.data_ptr(), float(eps), rows, cols), s)
    else:
        kern._launch_trusted((y.data_ptr(), x.data_ptr(), weight.data_ptr(), float(eps), rows, cols), s)
    return y


@torch.library.custom_op("weft::rms_norm", mutates_args=())
def _rms_norm_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return _rms_impl(x, weight, eps, None)


@_rms_norm_op.register_fake
def _(x, weight, eps):
    return torch.empty_like(x)


@torch.library.custom_op("weft::add_rms_norm", mutates_args=("residual",))
def _add_rms_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return _rms_impl(x, weight, eps, residual)


@_add_rms_norm_op.register_fake
def _(x, residual, weight, eps):
    return torch.empty_like(x)


def rms_norm(x, weight, eps=1e-6, residual=None):
    """y = x * rsqrt(mean(x^2) + eps) * weight over x's last dim, math in float32, returned in x's
    dtype.  With residual (same shape and dtype as x): h = x + residual is what gets normalised,
    and h is written back INTO residual in place (the next layer's residual stream), as the
    family does; y is returned."""
    eps = configs.eps_value("rms_norm", eps)   # (float() let NaN, -1 and True through)
    if residual is not None and not torch.compiler.is_compiling():
        p = C.in_place_grad_problem("rms_norm", "residual", x=x, weight=weight, residual=residual)
        if p:
            raise RuntimeError(p)
    if C.via_dispatcher(x, weight, residual):
        if residual is None:
            return torch.ops.weft.rms_norm(x, weight, eps)
        return torch.ops.weft.add_rms_norm(x, residual, weight, eps)
    return _rms_impl(x, weight, eps, residual)


# ---- row_reduce ---------------------------------------------------------------------------

def _row_reduce_impl(x, op):
    dt = C.dtype_name(x, "row_reduce", "x")
    C.check_tensor(x, "row_reduce", "x")
    rows, cols = _rows_cols(x, "row_reduce")
    if op not in configs.ROW_REDUCE_OPS:
        raise ValueError("weft.torch.row_reduce: op = %r; allowed: %s" % (op, ", ".join(configs.ROW_REDUCE_OPS)))
    if cols == 0:
        raise ValueError("weft.torch.row_reduce: x's last dim is 0 (shape %s): nothing to reduce" % (tuple(x.shape),))
    out = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    pk = ("row_reduce", x.device, dt, op, rows, cols)
    kern = _plans.get(pk)
    if kern is None:
        cfg, shape = configs.row_reduce(dt, op, rows, cols)

        def tuning():
            xd = x.double().reshape(rows, cols)
            ref = {"sum": lambda: xd.sum(-1), "max": lambda: xd.amax(-1), "min": lambda: xd.amin(-1),
                   "prod": lambda: xd.prod(-1)}[op]()
            return (lambda: torch.full((rows,), float("nan"), dtype=torch.float32, device=x.device),
                    lambda k, o: k._launch_trusted((o.data_ptr(), x.data_ptr(), rows, cols), C.stream(x.device)),
                    lambda o: o, ref, "f32", torch.cuda.current_stream(x.device))
        kern = _remember(pk, _plan("row_reduce", x.device, cfg, shape, tuning))
    kern._launch_trusted((out.data_ptr(), x.data_ptr(), rows, cols), C.stream(x.device))
    return out


@torch.library.custom_op("weft::row_reduce", mutates_args=())
def _row_reduce_op(x: torch.Tensor, op: str) -> torch.Tensor:
    return _row_reduce_impl(x, op)


@_row_reduce_op.register_fake
def _(x, op):
    _rows_cols(x, "row_reduce")
    return x.new_empty(x.shape[:-1], dtype=torch.float32)


def row_reduce(x, op="sum"):
    """op ("sum", "max", "min", "prod") over x's last dim, accumulated and returned in float32
    (shape x.shape[:-1]) whatever x's dtype: the family's output; torch's x.sum(-1) would round
    to x's dtype."""
    if C.via_dispatcher(x):
        return torch.ops.weft.row_reduce(x, op)
    return _row_reduce_impl(x, op)


# ---- matmul / linear ----------------------------------------------------------------------

def _gemm_staged(a, b, b_layout, m, n, k):
    """The operands copied where the kernels cannot read them as they are: their TMA rows must be
    16-byte aligned, so K off the multiples of 8 is padded with zeros (A and B copied, K rounded
    up: the zeros add nothing), and row-major B with N off them is copied column-major, where the
    direct stores take any N.  Returns a, b, b_layout, k for the launch; costs a copy of each
    operand it touches (bench/torch_ops.py times it)."""
    kp = (k + 7) // 8 * 8
    if kp != k:
        a = torch.nn.functional.pad(a.reshape(m, k), (0, kp - k))
    if b_layout == "row" and n % 8:
        bc = b.new_empty((n, kp))
        bc[:, k:].zero_()
        bc[:, :k].copy_(b.t())
        return a, bc, "col", kp
    if kp != k:
        b = torch.nn.functional.pad(b, (0, kp - k) if b_layout == "col" else (0, 0, 0, kp - k))
    return a, b, b_layout, kp


def _gemm_oriented(b, b_layout):
    """A transposed view of a contiguous matrix (w.t() for w [N, K]) is B in the other layout: the
    kernel reads it as it lies, no copy."""
    if isinstance(b, torch.Tensor) and b.dim() == 2 and not b.is_contiguous() and b.t().is_contiguous():
        return b.t(), "col" if b_layout == "row" else "row"
    return b, b_layout


def _gemm_impl(op, a, b, b_layout, aname, bname):
    dt = C.dtype_name(a, op, aname, allowed=configs.GEMM_DTYPES)
    C.check_tensor(a, op, aname, dim=(1, 2, 3, 4, 5, 6, 7, 8) if op == "linear" else (2, 3, 4, 5, 6, 7, 8))
    given = b
    b, b_layout = _gemm_oriented(b, b_layout)
    C.check_tensor(b, op, bname, dim=2, device=a.device)
    if b.dtype != a.dtype:
        raise TypeError("weft.torch.%s: %s has dtype %s but %s has %s; they must match" % (op, bname, b.dtype, aname,
                                                                                         a.dtype))
    k = a.shape[-1]
    n, kb = (b.shape[1], b.shape[0]) if b_layout == "row" else (b.shape[0], b.shape[1])
    if kb != k:
        raise ValueError("weft.torch.%s: K mismatch: %s is %s (K = %d) but %s is %s (K = %d)"
                         % (op, aname, tuple(a.shape), k, bname, tuple(given.shape), kb))
    m = a.numel() // k if k else 0
    c = a.new_empty(a.shape[:-1] + (n,))
    if k == 0:
        return c.zero_()   # an empty sum, as torch.matmul gives
    if m == 0 or n == 0:
        return c
    if k % 8 or (b_layout == "row" and n % 8):
        a, b, b_layout, k = _gemm_staged(a, b, b_layout, m, n, k)
    pk = (op, a.device, dt, m, n, k, b_layout)
    kern = _plans.get(pk)
    if kern is None:
        cfg, shape = configs.gemm(op, dt, b_layout, m, n, k, a=aname, b=bname)

        def tuning():
            a2, bd = a.reshape(m, k).double(), b.double()
            ref = a2 @ (bd if b_layout == "row" else bd.t())
            return (lambda: torch.full((m, n), float("nan"), dtype=a.dtype, device=a.device),
                    lambda kk, o: kk._launch_trusted((o.data_ptr(), a.data_ptr(), b.data_ptr(), m, n, k),
                                                     C.stream(a.device)),
                    lambda o: o, ref, dt, torch.cuda.current_stream(a.device))
        kern = _remember(pk, _plan(op, a.device, cfg, shape, tuning))
    kern._launch_trusted((c.data_ptr(), a.data_ptr(), b.data_ptr(), m, n, k), C.stream(a.device))
    return c


@torch.library.custom_op("weft::matmul", mutates_args=())
def _matmul_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _gemm_impl("matmul", a, b, "row", "a", "b")


@_matmul_op.register_fake
def _(a, b):
    if a.dim() < 2 or b.dim() != 2 or a.shape[-1] != b.shape[0]:
        raise ValueError("weft.torch.matmul: a %s and b %s: a is [..., M, K] and b [K, N]" % (tuple(a.shape),
                                                                                            tuple(b.shape)))
    return a.new_empty(a.shape[:-1] + (b.shape[1],))


@torch.library.custom_op("weft::linear", mutates_args=())
def _linear_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _gemm_impl("linear", x, weight, "col", "x", "weight")


@_linear_op.register_fake
def _(x, weight):
    if x.dim() < 1 or weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError("weft.torch.linear: x %s and weight %s: x is [..., K] and weight [N, K]"
                         % (tuple(x.shape), tuple(weight.shape)))
    return x.new_empty(x.shape[:-1] + (weight.shape[0],))


def matmul(a, b):
    """a [..., M, K] . b [K, N] -> [..., M, N] (float16 or bfloat16, f32 accumulate); a's leading
    dims fold into M (a is contiguous, so they are one [M', K] matrix).  b may be contiguous or a
    transposed view (w.t() of a contiguous w [N, K]: read as it lies, as linear's weight).  Any K
    and N: K off the multiples of 8 costs a zero-padded copy of a and b, and N off them with b
    contiguous a column-major copy of b (the kernels' TMA rows are 16-byte aligned)."""
    if C.via_dispatcher(a, b):
        return torch.ops.weft.matmul(a, b)
    return _gemm_impl("matmul", a, b, "row", "a", "b")


def linear(x, weight):
    """x [..., K] . weight^T for weight [N, K] (torch.nn.functional.linear without bias; weight
    contiguous or a transposed view of a contiguous [K, N]).  Any N (50257, 1: off the multiples
    of 8, C is stored without TMA; a transposed view then costs a copy of weight); K off the
    multiples of 8 costs a zero-padded copy of x and weight (the kernels' TMA rows are 16-byte
    aligned)."""
    if C.via_dispatcher(x, weight):
        return torch.ops.weft.linear(x, weight)
    return _gemm_impl("linear", x, weight, "col", "x", "weight")
