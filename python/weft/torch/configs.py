"""The config weft.torch compiles for a shape: pure Python, no torch, so CI tests it without a GPU.

Each function maps an op's dtype and sizes to (key, config): the key names the shape class (every
shape with the same key gets the same kernel, so ops compile once per key per process), the
config is a dict for weft.compile.  The rules come from the measurements in bench/RESULTS.md
(each rule cites its table) and from the families' own limits (gen/families/*.lua): a rule never
picks a config that its family would refuse for that shape, which tests/python/test_torch_configs.py
proves by compiling every choice and asking its manifest about the shape.

A shape no kernel takes raises SizeError, naming the op, the argument, the size, the limit and
what to do instead.
"""

ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
INT_MAX = 2**31 - 1
PORTABLE_CLUSTER = 8


class SizeError(ValueError):
    """No kernel of the family takes this size."""


def _cdiv(a, b):
    return -(-a // b)


def _vec(dtype):
    return 16 // ESIZE[dtype]


def tuned_shape(**sizes):
    """The tuning database's shape key (runtime/cli/cmd_run.c's tuned_shape_key): sizes by name, sorted."""
    return " ".join("%s=%d" % (k, sizes[k]) for k in sorted(sizes))


def _rows_ok(op, rows, cluster, arg="x"):
    if rows > INT_MAX // cluster:
        raise SizeError("weft.torch.%s: %s has %d rows (all dims but the last, multiplied); at most %d fit one "
                        "launch (the kernel's 32-bit row count over clusters of %d): split the batch"
                        % (op, arg, rows, INT_MAX // cluster, cluster))


# ---- softmax (gen/families/row_softmax.lua) ----------------------------------------------

SOFTMAX_PT = 8   # 16-byte vectors per thread an onchip rule aims for (the measured rows below hold 8)


def _softmax_onchip_fits(dtype, max_cols, cluster, threads):
    # the family's register budget (F.check, mode = "onchip", min_blocks = 1, no prefetch)
    pt = _cdiv(max_cols, cluster * threads * _vec(dtype))
    cap = min(255, 65536 // threads) - 24
    return pt * 4 <= min(128, cap - cap % 4)


def softmax(dtype, rows, cols):
    """Softmax of rows x cols.  onchip (the row in registers: one read, one write) while a row fits
    SOFTMAX_PT vectors per thread on one CTA of up to 1024 threads (RESULTS.md, "Rows", run 4: f32
    8192 x 32768 at cluster 1, 1024 threads is 0.976 of copy), then on a cluster of 2-8 CTAs, each
    persistent with the push exchange (run 4: f32 2048 x 262144 cluster 8, bf16 4096 x 262144
    cluster 4, 1024 threads, 0.87-0.88); longer rows stream (read twice) over 16 CTAs (run 4: f32
    32 x 1048576, cluster 16, 1024 threads, push: 3.99x torch).  The bucket is the onchip kernel's
    capacity, so a class covers every column count up to it."""
    v = _vec(dtype)
    for cluster, threads in [(1, 128), (1, 256), (1, 512), (1, 1024), (2, 1024), (4, 1024), (8, 1024)]:
        pt = _cdiv(cols, cluster * threads * v)
        if pt <= SOFTMAX_PT:
            max_cols = pt * cluster * threads * v
            assert _softmax_onchip_fits(dtype, max_cols, cluster, threads)
            cfg = {"family": "row_softmax", "dtype": dtype, "mode": "onchip", "max_cols": max_cols,
                   "cluster": cluster, "threads": threads}
            if cluster > 1:
                cfg.update(persistent=True, exchange="push")
            _rows_ok("softmax", rows, cluster)
            return ("softmax", dtype, "onchip", max_cols), cfg
    _rows_ok("softmax", rows, 16)
    return ("softmax", dtype, "stream"), {"family": "row_softmax", "dtype": dtype, "mode": "stream", "cluster": 16,
                                          "nonportable": True, "threads": 1024, "unroll": 4, "exchange": "push"}


# ---- rms_norm (gen/families/rmsnorm.lua) ---------------------------------------------------

def _rms_fit(dtype, cols, threads, cluster, rpc, min_blocks, residual):
    """(fits, pt): the family's register rule (F.check) for a row of cols on this layout."""
    group = threads // rpc
    pt = max(1, _cdiv(cols, cluster * group * _vec(dtype)))
    cap = min(255, 65536 // (threads * min_blocks)) - 40
    budget = max(0, min(128, cap - cap % 4))
    return pt * 4 * (3 if residual else 2) <= budget, pt


# (threads, cluster, rows_per_cta, min_blocks, most vectors per thread).  RESULTS.md, "rmsnorm"
# (weft tune examples/sweeps/rmsnorm.lua on the H200): 8192 x 4096 bf16 -> 128 threads, 1 row,
# min_blocks 2 (4 vectors per thread, 0.994 of copy); 2048 x 5120 f16 + residual -> 128 threads,
# 1 row (5 vectors, 1.041); 4096 x 16384 f32 -> 256 threads, 1 row (16 vectors, 0.938).  A cluster
# per row costs a barrier per row (the first guesses, 0.66 and 0.77 of copy; 512 x 65536 f32 on
# cluster 8: 0.437), so clusters come last, for rows no single CTA holds.
RMS_LAYOUTS = [(128, 1, 1, 2, 4), (128, 1, 1, 1, 8), (256, 1, 1, 1, 16), (512, 1, 1, 1, 32),
               (512, 2, 1, 1, 32), (512, 4, 1, 1, 32), (512, 8, 1, 1, 32), (512, 16, 1, 1, 32)]
RMS_SMALL_VECTORS = 128   # rows up to this many vectors: the family's defaults (256 threads, rows_per_cta auto)


def rms_norm_max_cols(dtype, residual):
    threads, cluster, rpc, mb, _ = RMS_LAYOUTS[-1]
    n = cluster * (threads // rpc) * _vec(dtype)
    best = 0
    for pt in range(1, 33):
        if _rms_fit(dtype, pt * n, threads, cluster, rpc, mb, residual)[0]:
            best = pt * n
    return min(best, 1 << 24)


def rms_norm(dtype, rows, cols, residual):
    """RMS norm of rows x cols (with the residual add when residual).  eps is a kernel argument
    (eps = "arg"), so one kernel serves every eps."""
    v = _vec(dtype)
    base = {"family": "rmsnorm", "dtype": dtype, "residual": bool(residual), "eps": "arg"}
    if _cdiv(cols, v) <= RMS_SMALL_VECTORS:
        max_cols = RMS_SMALL_VECTORS * v
        _rows_ok("rms_norm", rows, 1)
        return ("rms_norm", dtype, bool(residual), "small"), dict(base, max_cols=max_cols, threads=256,
                                                                  rows_per_cta="auto")
    for threads, cluster, rpc, mb, most in RMS_LAYOUTS:
        fits, pt = _rms_fit(dtype, cols, threads, cluster, rpc, mb, residual)
        if fits and pt <= most:
            max_cols = min(pt * cluster * (threads // rpc) * v, 1 << 24)
            if max_cols < cols:
                break
            cfg = dict(base, max_cols=max_cols, threads=threads, rows_per_cta=rpc, cluster=cluster, min_blocks=mb)
            if cluster > PORTABLE_CLUSTER:
                cfg["nonportable"] = True
            if cluster > 1:
                cfg["exchange"] = "push"
            _rows_ok("rms_norm", rows, cluster)
            return ("rms_norm", dtype, bool(residual), max_cols), cfg
    raise SizeError("weft.torch.rms_norm: x has %d columns (its last dim); at most %d %s columns fit a row's "
                    "registers%s (a cluster of 16 CTAs of 512 threads): use torch.nn.functional.rms_norm for "
                    "rows this long" % (cols, rms_norm_max_cols(dtype, residual), dtype,
                                        " with the residual" if residual else ""))


# ---- row_reduce (gen/families/row_reduce.lua) -------------------------------------------

ROW_REDUCE_OPS = ("sum", "max", "min", "prod")
REDUCE_LONG_BYTES = 256 * 1024    # rows longer than this take a cluster of CTAs
REDUCE_MANY_ROWS = 264            # two waves of 4-CTA clusters over the H200's 132 SMs


def row_reduce(dtype, op, rows, cols):
    """op over each row, out in f32.  Rows up to 256 KB: one CTA each, 512 threads, unroll 4,
    min_blocks 2 (RESULTS.md run 4: f32 8192 x 32768, 1.058 of copy); rows up to 8 KB on 128
    threads (not measured: a 512-thread CTA would leave most of its threads idle).  Longer rows:
    clusters of 4 -- 512 threads, unroll 4 with many rows (run 4: f32 2048 x 262144, 1.022), 1024
    threads, unroll 2 with few (the row_reduce sweep: f32 32 x 1048576, 0.899)."""
    if op not in ROW_REDUCE_OPS:
        raise ValueError("weft.torch.row_reduce: op = %r; allowed: %s" % (op, ", ".join(ROW_REDUCE_OPS)))
    nbytes = cols * ESIZE[dtype]
    base = {"family": "row_reduce", "dtype": dtype, "op": op}
    if nbytes <= 8192:
        cls, cfg = "short", dict(base, cluster=1, threads=128, unroll=4, min_blocks=2)
    elif nbytes <= REDUCE_LONG_BYTES:
        cls, cfg = "row", dict(base, cluster=1, threads=512, unroll=4, min_blocks=2)
    elif rows >= REDUCE_MANY_ROWS:
        cls, cfg = "long", dict(base, cluster=4, threads=512, unroll=4, min_blocks=2)
    else:
        cls, cfg = "few", dict(base, cluster=4, threads=1024, unroll=2, min_blocks=2)
    _rows_ok("row_reduce", rows, cfg["cluster"])
    return ("row_reduce", dtype, op, cls), cfg


# ---- matmul / linear (gen/families/gemm.lua) -------------------------------------------

GEMM_DTYPES = ("f16", "bf16")
SMS = 132   # the H200's SMs: a "wave" of persistent CTAs

# RESULTS.md, weft's GEMM at P = 1 (bf16, B row-major), as ratios to cuBLASLt:
#   large: 128 x 256, 3 stages, TMA epilogue (examples/gemm.lua): 4096^3 0.958, 8192^3 0.957-0.965
#          (third session, call 7)
#   wide:  128 x 128 pingpong, 6 stages, cluster.m = 2, group 8: 8192 x 1024 x 1024 0.834-0.869
#          (calls 4, 6, 8), where 128 x 256 gets 0.80 / 0.75
#   small: 64 x 128, one consumer, 6 stages, TMA epilogue: 1024^3 0.85 in graph replay (call 5),
#          the only tile that fills the SMs when M or N is small; decode (M <= 64) reads B once
#          with it.  No small-M schedule of its own yet (DESIGN.md, "GEMM schedules").
GEMM_CONFIGS = {
    "large": {"tile": {"m": 128, "n": 256, "k": 64}, "stages": 3, "consumers": 2, "epilogue": "tma"},
    "wide": {"tile": {"m": 128, "n": 128, "k": 64}, "stages": 6, "consumers": 2, "mma": "pingpong",
             "cluster": {"m": 2, "n": 1}, "group": 8},
    "small": {"tile": {"m": 64, "n": 128, "k": 64}, "stages": 6, "consumers": 1, "epilogue": "tma"},
}


def gemm_class(m, n):
    if _cdiv(m, 128) * _cdiv(n, 256) >= 2 * SMS:
        return "large"
    if m >= 256 and _cdiv(m, 128) * _cdiv(n, 128) >= SMS:
        return "wide"
    return "small"


def gemm(op, dtype, b_layout, m, n, k, a="a", b="b"):
    """C[m, n] = A[m, k] . B (B k x n for b_layout "row", n x k for "col").  The family takes any
    m >= 1 and n, k >= 8 in multiples of 8 (its TMA rows are 16-byte aligned)."""
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
    cls = gemm_class(m, n)
    cfg = dict({"family": "gemm", "dtype": dtype, "b_layout": b_layout}, **GEMM_CONFIGS[cls])
    return ("gemm", dtype, b_layout, cls), cfg
