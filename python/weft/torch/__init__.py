"""weft's kernels on torch tensors (needs torch; the config rules in configs.py do not).

    import weft.torch as wt
    y = wt.softmax(x)                       # also wt.rms_norm, wt.row_reduce, wt.matmul, wt.linear
    y = torch.ops.weft.softmax(x)           # the registered op (what torch.compile traces)

Each op compiles its kernel on the first call of a shape class (a dtype and a size bucket,
configs.py) and launches on torch.cuda.current_stream(x.device).
"""
from .ops import linear, matmul, rms_norm, row_reduce, softmax
from .dist import all_gather_linear, all_gather_matmul, all_reduce, all_reduce_, check, close

__all__ = ["linear", "matmul", "rms_norm", "row_reduce", "softmax",
           "all_gather_linear", "all_gather_matmul", "all_reduce", "all_reduce_", "check", "close"]
