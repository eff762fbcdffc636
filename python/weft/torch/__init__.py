"""weft's kernels on torch tensors (needs torch; configs.py, what each op asks weft for, does not).

    import weft.torch as wt
    y = wt.softmax(x)                       # also wt.rms_norm, wt.row_reduce, wt.matmul, wt.linear
    y = torch.ops.weft.softmax(x)           # the registered op (what torch.compile traces)
    wt.all_reduce(t); wt.all_gather_matmul(a_shard, b)           # over a process group (dist.py)
    x, residual = wt.all_reduce_rms_norm(x, residual, weight)   # allreduce + add + RMS norm, in place
    c = wt.matmul_reduce_scatter(a_shard, b_shard)              # row-parallel GEMM + RS (dist_matmul.py)
    c = wt.matmul_all_reduce(a_shard, b_shard)                  # ... + allreduce: every rank all rows

The first call of a shape asks weft.auto for its kernel (the tuning database, the table shipped
with weft, or the family's rule; WEFT_AUTOTUNE=1 tunes it first), kernels are cached by name, and
every launch goes on torch.cuda.current_stream(x.device).
"""
from .ops import linear, matmul, rms_norm, row_reduce, softmax
from .dist import all_gather_linear, all_gather_matmul, all_reduce, all_reduce_, all_reduce_rms_norm, check, close
from .dist_matmul import matmul_all_reduce, matmul_reduce_scatter, matmul_reduce_scatter_linear

__all__ = ["linear", "matmul", "rms_norm", "row_reduce", "softmax",
           "all_gather_linear", "all_gather_matmul", "all_reduce", "all_reduce_", "all_reduce_rms_norm",
           "matmul_reduce_scatter", "matmul_reduce_scatter_linear", "matmul_all_reduce", "check", "close"]
