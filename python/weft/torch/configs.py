"""What weft.torch asks weft for, per op: pure Python, no torch, so CI tests it without a GPU.

Each function checks an op's arguments (what weft's kernels can take, with messages that name the
op and the tensor) and returns (config, shape): the config fixes only what the op means (family,
dtype, op, residual, eps as a kernel argument, the GEMM's B layout) and leaves the launch shape
open; weft.auto chooses it for the shape (gen/core/auto.lua: the tuning database, the table
shipped with weft, or the family's rule).  A shape no kernel takes is refused there, by the
family's own limits, and weft.torch raises SizeError with that message.
"""

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
