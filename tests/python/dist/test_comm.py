#!/usr/bin/env python3
"""weft.torch's comm ops under torchrun: all_reduce / all_reduce_, all_reduce_rms_norm, all_gather_matmul /
all_gather_linear, and matmul_reduce_scatter(_linear) / matmul_all_reduce (their cases: matmul_cases.py).

    torchrun --standalone --nproc-per-node N tests/python/dist/test_comm.py     (tests/python/dist/run.sh)

Every check: random data per rank (seeded by the rank and the case), outputs poisoned (NaN left in the
allocator's block the op's output reuses; the log says how many were), a float64 CPU reference from
every rank's inputs (gathered over gloo), and every rank's result hashed and compared (bit-identical).
Then a CUDA graph of 10 calls replayed 100 times, torch.compile(fullgraph=True), opcheck (one rank),
the MISMATCH error for differing shapes and for one rank's bad argument, and a muted signal's timeout.
all_reduce_rms_norm works in place: its outputs are the inputs themselves (an element it missed keeps the
rank's own x or residual), with NaN guards after them; h must match the reference to the bit, y within one
rounding.  WEFT_TEST_ONLY=arn runs its cases alone, WEFT_TEST_ONLY=mrs the matmul + reduce-scatter /
allreduce ones (all of them; the full run takes their quick set); WEFT_TEST_QUICK=1 fewer sizes and replays.
NCCL cross-check: where the P > 1 ranks are on P distinct GPUs (one rank per GPU; not under MPS, as NCCL
refuses ranks that share a GPU), the eager cases of the sums (all_reduce's sum, all_gather_matmul /
_linear, matmul_reduce_scatter(_linear) / matmul_all_reduce, all_reduce_rms_norm) also get torch's own answer
over an NCCL group from the same inputs (torch.distributed's collective, then torch's matmul / add /
rms_norm), and weft's result must be within both sides' bounds of it.  The log says once whether it runs,
the last line how many comparisons it made.  WEFT_TEST_NCCL=0 turns it off (1 or unset: on where it can run).
Exit 0: all passed on every rank; 1: something failed (every failure printed with its rank); 77: no
CUDA GPU here.
"""
import datetime
import faulthandler
import hashlib
import os
import socket
import sys
import time
import traceback

import torch
import torch.distributed as dist

if not torch.cuda.is_available():
    print("test_comm: SKIP: no CUDA GPU visible to torch")
    sys.exit(77)

import weft  # noqa: E402
from weft.torch import dist as wd  # noqa: E402

import matmul_cases  # noqa: E402 (beside this script)

faulthandler.dump_traceback_later(float(os.environ.get("WEFT_TEST_TIMEOUT_S", "900")), exit=True)
# WEFT_TORCH_TIMEOUT_S, read as weft.torch reads it (a bad value: the default here, and weft.torch's
# first call raises it on every rank; raising here alone would leave the other ranks waiting)
dist.init_process_group("gloo", timeout=wd._settings()[0])
RANK, P = dist.get_rank(), dist.get_world_size()
LOCAL = int(os.environ.get("LOCAL_RANK", "0"))
DEV = torch.device("cuda", LOCAL % torch.cuda.device_count())
torch.cuda.set_device(DEV)
NAME = wd.group_name(None)
FAILS = []
COUNTS = {"checks": 0, "poisoned": 0, "unpoisoned": 0, "nccl": 0}
EPS = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


def log(msg):
    print("[rank %d/%d] %s" % (RANK, P, msg), flush=True)


def fail(what, msg):
    FAILS.append(what)
    log("FAIL %s: %s" % (what, msg))


def case(fn):
    """Runs one check; a failure is recorded (with its traceback) and the next check still runs."""
    def run(*a, **kw):
        what = fn.__name__ + (repr(a) if a else "")
        t0 = time.time()
        try:
            fn(*a, **kw)
            log("ok   %s (%.2f s)" % (what, time.time() - t0))
        except Exception:
            fail(what, traceback.format_exc())
    return run


def gen(seed, shape, dtype, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def gather(t):
    """Every rank's CPU tensor, in rank order (over gloo)."""
    out = [None] * P
    dist.all_gather_object(out, t.cpu())
    return out


def digest(t):
    u = t.detach().cpu().contiguous().view(torch.uint8)
    try:
        data = u.numpy().tobytes()
    except (ImportError, RuntimeError):   # torch without numpy
        data = bytes(u.tolist())
    return hashlib.sha256(data).hexdigest()


def same_bits(what, t):
    hs = [None] * P
    dist.all_gather_object(hs, digest(t))
    if len(set(hs)) != 1:
        raise AssertionError("%s: the ranks' results differ: %s" % (what, hs))


def poisoned_call(like, call):
    """call() with a NaN-filled block of like's size freed just before, which the op's output
    normally reuses (counted: a reused block proves every element was written)."""
    p = torch.full_like(like, float("nan"))
    ptr = p.data_ptr()
    del p
    out = call()
    y = out[1] if isinstance(out, tuple) else out
    COUNTS["poisoned" if y.data_ptr() == ptr else "unpoisoned"] += 1
    return out


def close(what, got, want, atol, rtol):
    """got (any dtype) against want (float64) elementwise: |got - want| <= atol + rtol |want|."""
    g = got.detach().cpu().double()
    if g.shape != want.shape:
        raise AssertionError("%s: shape %s, expected %s" % (what, tuple(g.shape), tuple(want.shape)))
    bad = ~((g - want).abs() <= atol + rtol * want.abs())   # NaN counts as bad
    COUNTS["checks"] += 1
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError("%s: %d of %d elements wrong; first at flat index %d: got %r, want %r" % (
            what, int(bad.sum()), bad.numel(), i, float(g.flatten()[i]), float(want.flatten()[i])))


# ---- the NCCL cross-check (the module's docstring) ---------------------------------------------------

NCCL = {"on": False, "why": "not decided", "group": None}   # nccl_decide's answer; the group, made at first use


def nccl_decide():
    """Whether the cross-check runs: WEFT_TEST_NCCL is not 0 on any rank, there are several ranks, torch
    has NCCL, and the P ranks are on P distinct GPUs (host name and GPU UUID, as bench/dist_timing.py's
    nccl_group asks).  Collective (over gloo), so every rank gets the same answer; logged once."""
    v = os.environ.get("WEFT_TEST_NCCL", "")
    if v not in ("", "0", "1"):
        fail("WEFT_TEST_NCCL", "WEFT_TEST_NCCL=%r: allowed 0 (no NCCL cross-check) or 1 (also unset: the "
             "cross-check where every rank has a GPU of its own)" % v)
    props = torch.cuda.get_device_properties(DEV)
    mine = (v in ("", "1"), "%s/%s" % (socket.gethostname(), getattr(props, "uuid", DEV.index)))
    every = [None] * P
    dist.all_gather_object(every, mine)
    gpus = len(set(g for _, g in every))
    if not all(on for on, _ in every):
        why = "turned off by WEFT_TEST_NCCL"
    elif P == 1:
        why = "one rank: a sum of one"
    elif gpus < P:
        why = "ranks share a GPU: %d ranks on %d GPU(s)" % (P, gpus)
    elif not dist.is_nccl_available():
        why = "this torch has no NCCL"
    else:
        why = None
    NCCL["on"], NCCL["why"] = why is None, why
    if RANK == 0:
        log("NCCL cross-check: %s" % ("on (%d ranks on %d GPUs)" % (P, gpus) if why is None else "skipped (%s)" % why))


def nccl_wanted(dtype, op="sum"):
    """Whether a check cross-checks: NCCL on, a sum, a dtype NCCL adds (f32, f16, bf16)."""
    return NCCL["on"] and op == "sum" and dtype in EPS


def nccl_group():
    """The NCCL group of every rank, made at the first cross-check: every rank gets there at the same call
    (the cases run in the same order everywhere, nccl_decide's answer is the same everywhere, and each case
    calls NCCL before anything a rank can fail alone)."""
    if NCCL["group"] is None:
        # a bounded wait: should one rank's case fail out of step, its peers' next NCCL call ends in
        # 120 s (torch's NCCL default, 10 min, is past run.sh's limit) with the rank named
        NCCL["group"] = dist.new_group(backend="nccl", timeout=datetime.timedelta(seconds=120))
    return NCCL["group"]


def nccl_done(t):
    """t on the CPU, NCCL's work and torch's after it finished (the comparisons are on the CPU)."""
    torch.cuda.synchronize()
    return t.cpu()


def nccl_sum(t):
    """Every rank's t summed by torch.distributed over NCCL, in t's dtype (NCCL adds in it): a new tensor on DEV."""
    s = t.to(DEV, copy=True)
    dist.all_reduce(s, group=nccl_group())
    return s


def nccl_sum_err(dtype, scale):
    """A bound on NCCL's sum against the exact one: it adds the P ranks' values in the dtype itself, in an
    order of its own (ring or tree), P - 1 additions each rounded to the dtype at a partial sum no larger
    than scale (the sum of the terms' magnitudes); doubled for the terms of second order.  (A sum of dtype
    values that lands among the subnormals is exact: no absolute term.)"""
    return 2 * (P - 1) * EPS[dtype] * scale


def torch_matmul(a, b):
    """torch.matmul with reduced-precision reductions off (by default an f16 / bf16 GEMM may add its split-K
    partials in the dtype): each element an f32 sum rounded once, the bound the checks give it."""
    m = torch.backends.cuda.matmul
    saved = m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction
    m.allow_fp16_reduced_precision_reduction = m.allow_bf16_reduced_precision_reduction = False
    try:
        return torch.matmul(a, b)
    finally:
        m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction = saved


def nccl_all_gather_matmul(a, b, layout):
    """torch's all_gather_matmul: the shards gathered over NCCL (in rank order), then torch.matmul; on the CPU."""
    a, b = a.to(DEV), b.to(DEV)
    full = torch.empty((P * a.shape[0], a.shape[1]), dtype=a.dtype, device=DEV)
    dist.all_gather_into_tensor(full, a.contiguous(), group=nccl_group())
    return nccl_done(torch_matmul(full, b if layout == "row" else b.t()))


def nccl_matmul(op, a, b, layout, scatter_dim=0):
    """torch's matmul_reduce_scatter (op "rs": torch.matmul, then dist.reduce_scatter_tensor, which splits
    dim 0: scatter_dim moved there and back) or matmul_all_reduce ("ar": torch.matmul, then dist.all_reduce),
    over NCCL; on the CPU (matmul_cases.check's)."""
    a, b = a.to(DEV), b.to(DEV)
    part = torch_matmul(a, b if layout == "row" else b.t())
    if op == "ar":
        dist.all_reduce(part, group=nccl_group())
        return nccl_done(part)
    full = part.movedim(scatter_dim, 0).contiguous()
    out = torch.empty((full.shape[0] // P,) + tuple(full.shape[1:]), dtype=full.dtype, device=DEV)
    dist.reduce_scatter_tensor(out, full, group=nccl_group())
    return nccl_done(out.movedim(0, scatter_dim))


def nccl_close(what, got, ref, allowed):
    """got against NCCL's ref elementwise: |got - ref| <= allowed (float64, broadcast to ref's shape).
    Counted; a miss is recorded with fail() (the case's own checks have passed) with the worst one."""
    COUNTS["nccl"] += 1
    g, r = got.detach().cpu().double(), ref.double()
    if g.shape != r.shape:
        fail("NCCL cross-check " + what, "rank %d: shape %s, NCCL's %s" % (RANK, tuple(g.shape), tuple(r.shape)))
        return
    diff = (g - r).abs()
    lim = torch.as_tensor(allowed, dtype=torch.float64).expand_as(diff)
    bad = ~(diff <= lim)   # NaN counts as bad
    if bad.any():
        i = int(torch.where(bad, diff.nan_to_num(nan=float("inf")), torch.zeros_like(diff)).flatten().argmax())
        fail("NCCL cross-check " + what, "rank %d: %d of %d elements differ from NCCL's by more than allowed; "
             "the worst at flat index %d: got %r, NCCL's %r, |diff| %.3g > %.3g" % (
                 RANK, int(bad.sum()), bad.numel(), i, float(g.flatten()[i]), float(r.flatten()[i]),
                 float(diff.flatten()[i]), float(lim.flatten()[i])))


# ---- all_reduce ---------------------------------------------------------------------------------

def ar_input(seed, n, dtype, op):
    return gen(seed, (n,), dtype, 0.5, 2.0) if op == "prod" else gen(seed, (n,), dtype)


def ar_reference(xs, op):
    s = torch.stack([x.double() for x in xs])
    if op == "sum":
        return s.sum(0), s.abs().sum(0)
    if op == "prod":
        return s.prod(0), s.prod(0).abs()
    return (s.amax(0) if op == "max" else s.amin(0)), None


def ar_check(what, y, xs, op, dtype):
    want, scale = ar_reference(xs, op)
    if op in ("max", "min"):
        close(what, y, want, 0.0, 0.0)   # a selection: exact
    else:   # the output's rounding, plus f32 arithmetic over P terms
        close(what, y, want, 4 * P * 2.0 ** -24 * scale, 2 * EPS[dtype] + P * 2.0 ** -22)
    return want, scale


@case
def all_reduce_case(dtype, op, n, algo=None):
    saved = (wd.LL_MAX_BYTES, wd.TWO_SHOT_MIN_BYTES, wd.TWO_SHOT_MIN_RANKS)
    if algo == "two_shot":   # every rank the same: the config choice stays identical
        wd.LL_MAX_BYTES, wd.TWO_SHOT_MIN_BYTES, wd.TWO_SHOT_MIN_RANKS = -1, 0, 1
    elif algo == "one_shot":
        wd.LL_MAX_BYTES = -1
    try:
        seed = 1000 * RANK + 17 * n + 101 * ("sum", "max", "min", "prod").index(op) + 7 * list(EPS).index(dtype)
        x_cpu = ar_input(seed, n, dtype, op)
        x = x_cpu.to(DEV)
        xs = gather(x_cpu)
        ref = nccl_done(nccl_sum(x)) if nccl_wanted(dtype, op) else None
        y = poisoned_call(x, lambda: wd.all_reduce(x, op))
        torch.cuda.synchronize()
        wd.check()
        want, scale = ar_check("all_reduce %s %s n=%d" % (dtype, op, n), y, xs, op, dtype)
        if ref is not None:   # ar_check's bound (weft's side) plus NCCL's
            nccl_close("all_reduce %s %s n=%d" % (dtype, op, n), y, ref, 4 * P * 2.0 ** -24 * scale
                       + (2 * EPS[dtype] + P * 2.0 ** -22) * want.abs() + nccl_sum_err(dtype, scale))
        if not torch.equal(x.cpu(), x_cpu):
            raise AssertionError("all_reduce (out of place) changed its input")
        z = x.clone()
        r = wd.all_reduce_(z, op)
        torch.cuda.synchronize()
        if r is not z:
            raise AssertionError("all_reduce_ did not return its argument")
        if digest(z) != digest(y):
            raise AssertionError("in place and out of place results differ in their bits")
        same_bits("all_reduce %s %s n=%d" % (dtype, op, n), y)
    finally:
        wd.LL_MAX_BYTES, wd.TWO_SHOT_MIN_BYTES, wd.TWO_SHOT_MIN_RANKS = saved


@case
def behind_torch_case(launches=20):
    """Each collective queued right behind a torch.matmul on the same stream: a rank whose matmul
    cannot find a free SM never starts its collective.  At 4 ranks on one GPU, grids that put two
    spinning blocks on every SM timed out at the third to fifth launch this way (the runtime now
    caps them at one block per SM per rank, halved)."""
    a = gen(31 + RANK, (2048, 256), torch.float16).to(DEV)
    b = gen(37 + RANK, (256, 1024), torch.float16).to(DEV)
    x_cpu = gen(41 + RANK, (503 * 136,), torch.bfloat16)   # one_shot_ll's size class
    x = x_cpu.to(DEV)
    xs = gather(x_cpu)
    first = None
    for i in range(launches):
        torch.matmul(a, b)
        y = wd.all_reduce(x)
        torch.cuda.synchronize()
        wd.check()
        d = digest(y)
        if first is None:
            ar_check("all_reduce behind torch.matmul", y, xs, "sum", torch.bfloat16)
            first = d
        elif d != first:
            raise AssertionError("all_reduce behind torch.matmul: launch %d gave other bits" % (i + 1))
    same_bits("all_reduce behind torch.matmul", y)


# ---- all_gather_matmul --------------------------------------------------------------------------

def ag_inputs(ms, k, n, dtype, layout, salt=0):
    a = gen(10007 * RANK + ms * 31 + k * 7 + n + salt, (ms, k), dtype)
    b = gen(99991 + ms * 131 + k * 17 + n * 3 + salt, (k, n) if layout == "row" else (n, k), dtype)   # same on every rank
    return a, b


def ag_reference(shards, b, layout):
    a = torch.cat([s.double() for s in shards])
    bd = b.double() if layout == "row" else b.double().t()
    return a, a @ bd, a.abs() @ bd.abs()


@case
def all_gather_matmul_case(dtype, ms, k, n, layout, return_a):
    a_cpu, b_cpu = ag_inputs(ms, k, n, dtype, layout)
    a, b = a_cpu.to(DEV), b_cpu.to(DEV)
    shards = gather(a_cpu)
    ref = nccl_all_gather_matmul(a, b, layout) if nccl_wanted(dtype) else None
    f = wd.all_gather_matmul if layout == "row" else wd.all_gather_linear
    like = torch.empty((ms * P, n), dtype=dtype, device=DEV)
    ga, c = poisoned_call(like, lambda: f(a, b, return_a=return_a))
    torch.cuda.synchronize()
    wd.check()
    what = "%s %s a_shard=%dx%d n=%d return_a=%s" % (f.__name__, dtype, ms, k, n, return_a)
    want_a, want_c, scale = ag_reference(shards, b_cpu, layout)
    if return_a:
        if ga is None or not torch.equal(ga.cpu().double(), want_a):
            raise AssertionError("%s: the gathered A is not the ranks' shards in rank order" % what)
    elif ga is not None:
        raise AssertionError("%s: return_a=False returned an A" % what)
    close(what, c, want_c, 4 * k * 2.0 ** -24 * scale, 2 * EPS[dtype])
    if ref is not None:   # torch's side is an exact gather, then a GEMM adding in f32 and rounding once, as
        # weft's: each within close's bound of the reference, so twice it of each other
        nccl_close(what, c, ref, 2 * (4 * k * 2.0 ** -24 * scale + 2 * EPS[dtype] * want_c.abs()))
    same_bits(what, c)


# ---- all_reduce_rms_norm ----------------------------------------------------------------------------

# y is computed in f32 and rounded once: within one rounding of the dtype (f32: the f32 math's own error)
# y's tolerance, as runtime/check/ref_rmsnorm.c's: one rounding of the output and the f32 arithmetic
# before it (rtol), and half the output's subnormal spacing (atol: f16's y reaches its subnormals)
ARN_RTOL = {torch.float32: 4e-6, torch.float16: 2.0 ** -11 + 4e-6, torch.bfloat16: 2.0 ** -8 + 4e-6}
ARN_ATOL = {torch.float32: 2.0 ** -150, torch.float16: 2.0 ** -25, torch.bfloat16: 2.0 ** -134}
ARN_BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
ARN_GUARD = 256          # NaN elements after x and residual: a write past the end shows there
ARN_ALGOS = set()        # the algorithms the cases ran (logged: which ones this rank count covers)
ARN_ODD = {torch.float32: 1001, torch.bfloat16: 1003, torch.float16: 1003}   # rows off the 16-byte grid


def arn_inputs(rank, seed, shape, dtype, residual=True):
    """rank's x (its own), the residual and the weight (the same on every rank)."""
    x = gen(100003 * rank + seed, shape, dtype)
    r = gen(7777 + seed, shape, dtype) if residual else None
    w = gen(31337 + seed, (shape[-1],), dtype, 0.5, 1.5)
    return x, r, w


def arn_reference(xs, r, w, eps, dtype):
    """h (the exact bits: the rank-order f32 fold rounded to dtype, plus r in f32, rounded) and y in float64."""
    acc = xs[0].float()
    for t in xs[1:]:
        acc = acc + t.float()
    s = acc.to(dtype)
    h = (s.float() + r.float()).to(dtype) if r is not None else s
    hd = h.double()
    return h, hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def arn_check(what, x_out, r_out, xs, r, w, eps, dtype):
    h, want_y = arn_reference(xs, r, w, eps, dtype)
    if r is not None:
        got = r_out.detach().cpu().contiguous().view(ARN_BITS[dtype])
        bad = got != h.contiguous().view(ARN_BITS[dtype])
        COUNTS["checks"] += 1
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            raise AssertionError("%s: h (residual) differs in %d of %d elements' bits; first at flat index %d: got %r, "
                                 "want %r" % (what, int(bad.sum()), bad.numel(), i, float(r_out.flatten()[i]),
                                              float(h.flatten()[i])))
    close(what + " y", x_out, want_y, ARN_ATOL[dtype], ARN_RTOL[dtype])
    return h, want_y


def nccl_arn(x, r, w, eps):
    """torch's all_reduce_rms_norm, as arn_reference defines it: s = the ranks' x summed over NCCL (in the
    dtype), h = s + r (torch's add: in f32, rounded once to the dtype), y = rms_norm(h) * w computed in f32
    from h and w, rounded once; (h, y) on the CPU."""
    s = nccl_sum(x)
    h = s + r.to(DEV) if r is not None else s
    y = torch.nn.functional.rms_norm(h.float(), (h.shape[-1],), w.to(DEV).float(), eps).to(h.dtype)
    return nccl_done(h), nccl_done(y)


def arn_nccl_check(what, x_out, r_out, ref, h, want_y, xs, r, w, eps, dtype):
    """weft's h (r_out: arn_check found it equal to the reference's h; without a residual, the reference's
    sum, weft keeping its own) and y (x_out) against torch's (ref: nccl_arn's (h, y)).
    h: NCCL's sum is within nccl_sum_err of the exact one, the reference's within one rounding and f32's
    over P terms (at most P u sum|x_r|), and each h one more rounding: 4 P u (sum|x_r| + |r|) holds it all.
    y: weft's and torch's each within arn_check's bound of y at its own h; the two h differ by d, and
    y = h w / R(h) with R = sqrt(mean(h^2) + eps) moves by at most |w| (|d| + |h| rho / R) / (R - rho), rho
    = rms(d) per row (R moves by at most rho: it is a 2-norm); doubled, as torch's rounding is of y + dy."""
    h_n, y_n = ref
    mag = r.double().abs() if r is not None else torch.zeros(h.shape, dtype=torch.float64)
    for t in xs:
        mag += t.double().abs()
    nccl_close(what + " h", r_out if r is not None else h, h_n, 4 * P * EPS[dtype] * mag)
    hd = h.double()
    d = h_n.double() - hd
    rms = torch.sqrt(hd.pow(2).mean(-1, keepdim=True) + eps)
    rho = torch.sqrt(d.pow(2).mean(-1, keepdim=True))
    dy = w.double().abs() * (d.abs() + hd.abs() * rho / rms) / (rms - rho).clamp(min=1e-300)
    nccl_close(what + " y", x_out, y_n, 2 * (ARN_ATOL[dtype] + ARN_RTOL[dtype] * want_y.abs()) + 2 * dy)


def arn_guarded(t):
    """t on the device as the head of a NaN-filled buffer (16-byte aligned: a fresh allocation)."""
    n = t.numel()
    buf = torch.full((n + ARN_GUARD,), float("nan"), dtype=t.dtype, device=DEV)
    buf[:n].copy_(t.flatten())
    return buf, buf[:n].view(t.shape)


def arn_guard_check(what, buf, n):
    tail = buf[n:].cpu()
    if not torch.isnan(tail).all():
        raise AssertionError("%s: %d of the %d elements after the tensor were written" % (
            what, int((~torch.isnan(tail)).sum()), ARN_GUARD))


def arn_algo(dtype, shape, residual):
    rows = 1
    for d in shape[:-1]:
        rows *= d
    hit = wd._arn_plans.get((DEV.index, wd._common.DTYPES[dtype], residual, rows, shape[-1], P))
    algo = hit[1].manifest.params["algo"] if hit else "?"
    ARN_ALGOS.add(algo)
    return algo


@case
def arn_case(dtype, shape, residual=True, eps=1e-6):
    seed = 13 * shape[-1] + 7 * len(shape) + shape[0] + 3 * list(EPS).index(dtype) + (1 if residual else 0)
    x_cpu, r_cpu, w_cpu = arn_inputs(RANK, seed, shape, dtype, residual)
    xs = gather(x_cpu)
    ref = nccl_arn(x_cpu, r_cpu, w_cpu, eps) if nccl_wanted(dtype) else None   # before the op: it is in place
    bx, x = arn_guarded(x_cpu)
    br, r = arn_guarded(r_cpu) if residual else (None, None)
    w = w_cpu.to(DEV)
    xo, ro = wd.all_reduce_rms_norm(x, r, w, eps)
    torch.cuda.synchronize()
    wd.check()
    what = "all_reduce_rms_norm %s %s residual=%s eps=%g (%s)" % (dtype, shape, residual, eps,
                                                                  arn_algo(dtype, shape, residual))
    if xo is not x or ro is not r:
        raise AssertionError("%s: did not return (x, residual) themselves" % what)
    arn_guard_check(what + " x", bx, x.numel())
    if residual:
        arn_guard_check(what + " residual", br, r.numel())
    h, want_y = arn_check(what, x, r, xs, r_cpu, w_cpu, eps, dtype)
    if ref is not None:
        arn_nccl_check(what, x, r, ref, h, want_y, xs, r_cpu, w_cpu, eps, dtype)
    if not torch.equal(w.cpu(), w_cpu):
        raise AssertionError("%s: weight was changed" % what)
    same_bits(what + " y", x)
    if residual:
        same_bits(what + " h", r)


ARN_GRAPH = [(torch.bfloat16, (17, 4096), True), (torch.float32, (1000, 1001), True),
             (torch.bfloat16, (1, 1003), False), (torch.float16, (1000, 4096), True), (torch.bfloat16, (3, 1003), True)]


@case
def arn_graph_case(replays):
    """One eager call of each, then all of them captured in one graph and replayed with new inputs."""
    eps = 1e-5
    ws = [arn_inputs(RANK, 900 + i, s, d)[2] for i, (d, s, _) in enumerate(ARN_GRAPH)]
    xs_dev = [torch.empty(s, dtype=d, device=DEV) for d, s, _ in ARN_GRAPH]
    rs_dev = [torch.empty(s, dtype=d, device=DEV) if res else None for d, s, res in ARN_GRAPH]
    w_dev = [w.to(DEV) for w in ws]

    def inputs(rank, rep):
        return [arn_inputs(rank, 5000 * (rep + 2) + i, s, d, res)[:2] for i, (d, s, res) in enumerate(ARN_GRAPH)]

    def fill(rep):
        for (x, r), xd, rd in zip(inputs(RANK, rep), xs_dev, rs_dev):
            xd.copy_(x)
            if rd is not None:
                rd.copy_(r)

    def calls():
        for x, r, w in zip(xs_dev, rs_dev, w_dev):
            wd.all_reduce_rms_norm(x, r, w, eps)

    fill(-1)
    calls()                       # eager first: the plans, the kernels, the communicators
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        calls()
    for rep in range(replays):
        fill(rep)
        g.replay()
        torch.cuda.synchronize()
        wd.check()
        alls = [inputs(q, rep) for q in range(P)]
        for i, (d, s, res) in enumerate(ARN_GRAPH):
            arn_check("graph replay %d all_reduce_rms_norm %s %s residual=%s" % (rep, d, s, res), xs_dev[i], rs_dev[i],
                      [alls[q][i][0] for q in range(P)], alls[RANK][i][1], ws[i], eps, d)
    for i in range(len(ARN_GRAPH)):
        same_bits("graph all_reduce_rms_norm %d y" % i, xs_dev[i])
        if rs_dev[i] is not None:
            same_bits("graph all_reduce_rms_norm %d h" % i, rs_dev[i])


@case
def arn_compile_case():
    x_cpu, r_cpu, w_cpu = arn_inputs(RANK, 55, (8, 1003), torch.bfloat16)
    x, r, w = x_cpu.to(DEV), r_cpu.to(DEV), w_cpu.to(DEV)

    def f(x, r, w):
        a, b, c = x * 1, r + 0, x * 2
        wd.all_reduce_rms_norm(a, b, w, 1e-5, group=NAME)
        wd.all_reduce_rms_norm(c, None, w, group=NAME)
        return a + 0, b * 1, c

    want = f(x, r, w)
    got = torch.compile(f, fullgraph=True)(x, r, w)
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(zip(want, got)):
        if digest(a) != digest(b):
            raise AssertionError("all_reduce_rms_norm under torch.compile(fullgraph=True): output %d differs from eager" % i)


@case
def arn_opcheck_case():
    x, r, w = (t.to(DEV) for t in arn_inputs(RANK, 77, (3, 1001), torch.float32))
    op = torch.ops.weft.all_reduce_rms_norm.default
    torch.library.opcheck(op, (x.clone(), r.clone(), w, 1e-6, NAME))
    torch.library.opcheck(op, (x.clone(), None, w, 0.5, NAME))


@case
def arn_errors_case():
    bf = dict(device=DEV, dtype=torch.bfloat16)
    x, r = torch.ones((4, 256), **bf), torch.ones((4, 256), **bf)
    for what, call, needle in [
            ("weight dtype", lambda: wd.all_reduce_rms_norm(x, r, torch.ones(256, device=DEV)), "weight has dtype"),
            ("weight size", lambda: wd.all_reduce_rms_norm(x, r, torch.ones(255, **bf)), "weight has shape (255,)"),
            ("residual shape", lambda: wd.all_reduce_rms_norm(x, torch.ones((4, 128), **bf), torch.ones(256, **bf)),
             "residual is"),
            ("residual is x", lambda: wd.all_reduce_rms_norm(x, x, torch.ones(256, **bf)), "residual is x"),
            ("1-D x", lambda: wd.all_reduce_rms_norm(torch.ones(256, **bf), None, torch.ones(256, **bf)),
             "x has 1 dimension"),
            ("eps", lambda: wd.all_reduce_rms_norm(x, r, torch.ones(256, **bf), eps=2.0), "eps = 2.0; allowed"),
            ("float64", lambda: wd.all_reduce_rms_norm(x.double(), None, torch.ones(256, device=DEV).double()),
             "x has dtype torch.float64"),
            ("a view at an offset", lambda: wd.all_reduce_rms_norm(torch.ones(1025, **bf)[1:].view(4, 256), None,
                                                                   torch.ones(256, **bf)), "aligned")]:
        try:
            call()
        except (ValueError, TypeError) as e:
            if needle not in str(e) or "weft.torch.all_reduce_rms_norm" not in str(e):
                raise AssertionError("%s: the message does not name it (%r): %s" % (what, needle, e))
            continue
        raise AssertionError("%s: no error" % what)
    if P > 1:
        xm = torch.ones((4, 256 + 8 * RANK), **bf)
        expect_mismatch("all_reduce_rms_norm with a hidden size per rank",
                        lambda: wd.all_reduce_rms_norm(xm, None, torch.ones(xm.shape[1], **bf)))
        expect_mismatch("all_reduce_rms_norm with a bad eps on the last rank",
                        lambda: wd.all_reduce_rms_norm(x, r, torch.ones(256, **bf), eps=-1.0 if RANK == P - 1 else 1e-6),
                        own="eps = -1.0" if RANK == P - 1 else None)
    # the world still works: every rank's x = 1, so s = P, h = P + 1 and y = w (a row of equal values)
    x1, r1 = torch.ones((2, 4096), device=DEV), torch.ones((2, 4096), device=DEV)
    wd.all_reduce_rms_norm(x1, r1, torch.full((4096,), 3.0, device=DEV), eps=0.0)
    torch.cuda.synchronize()
    close("all_reduce_rms_norm after the errors: h", r1, torch.full((2, 4096), float(P + 1), dtype=torch.float64), 0, 0)
    close("all_reduce_rms_norm after the errors: y", x1, torch.full((2, 4096), 3.0, dtype=torch.float64), 0, 4e-6)


def arn_cases(quick):
    """What main runs: tokens 1, 17 and 1000 at hidden 4096 and at an odd hidden, every dtype; without the
    residual at one small and one large shape per dtype; a 3-D x; an eps large enough to move y.  The
    shapes of the graph, compile, opcheck and error cases reuse these kernels (fewer compiles at a
    cold cache).  Which algorithms ran is logged: two_shot at P >= 2 for the large shapes."""
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for hidden in (4096, ARN_ODD[dtype]):
            for tokens in ((1, 1000) if quick else (1, 17, 1000)):
                arn_case(dtype, (tokens, hidden))
                if (tokens, hidden) in ((1, ARN_ODD[dtype]), (1000, 4096)):
                    arn_case(dtype, (tokens, hidden), residual=False)
    arn_case(torch.bfloat16, (2, 500, 4096))
    arn_case(torch.float32, (17, 4096), eps=0.5)
    arn_graph_case(5 if quick else 20)
    arn_compile_case()
    if P == 1:
        arn_opcheck_case()
    arn_errors_case()
    log("all_reduce_rms_norm: algorithms run at P=%d: %s" % (P, sorted(ARN_ALGOS)))


# ---- CUDA graphs ----------------------------------------------------------------------------------

GRAPH_CALLS = [("ar", torch.float32, "sum", 4097, False), ("ar", torch.float32, "max", 4097, False),
               ("ar", torch.bfloat16, "sum", 65537, True), ("ar", torch.float32, "sum", 300001, False),
               ("ar", torch.float16, "min", 7, True), ("ar", torch.float32, "sum", 4097, True),
               ("ar", torch.bfloat16, "prod", 1000, False), ("ag", torch.bfloat16, 200, 328, 264, False),
               ("ag", torch.bfloat16, 64, 64, 256, True), ("ar", torch.float32, "sum", 300001, True)]


def graph_inputs(rank, replay):
    """The 10 calls' inputs of `rank` at replay `replay` (any rank can make any rank's)."""
    out = []
    for i, c in enumerate(GRAPH_CALLS):
        seed = 1_000_003 * (replay + 1) + 1009 * rank + i
        if c[0] == "ar":
            out.append(ar_input(seed, c[3], c[1], c[2]))
        else:
            out.append(gen(seed, (c[2], c[3]), c[1]))
    return out


@case
def cuda_graph_case(replays=100):
    bs = {i: gen(4242 + i, (c[3], c[4]), c[1]) for i, c in enumerate(GRAPH_CALLS) if c[0] == "ag"}
    static = [t.to(DEV) for t in graph_inputs(RANK, -1)]
    b_dev = {i: b.to(DEV) for i, b in bs.items()}

    def calls():
        outs = []
        for i, c in enumerate(GRAPH_CALLS):
            if c[0] == "ar":
                outs.append(wd.all_reduce_(static[i], c[2]) if c[4] else wd.all_reduce(static[i], c[2]))
            else:
                ga, cc = wd.all_gather_matmul(static[i], b_dev[i], return_a=c[5])
                outs.append((ga, cc))
        return outs

    calls()                       # eager first: the worlds, the kernels, the communicators
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = calls()
    for rep in range(replays):
        mine = graph_inputs(RANK, rep)
        for t, v in zip(static, mine):
            t.copy_(v)            # in-place calls overwrite theirs: every replay refills all
        g.replay()
        torch.cuda.synchronize()
        wd.check()
        alls = [graph_inputs(r, rep) if r != RANK else mine for r in range(P)]
        for i, c in enumerate(GRAPH_CALLS):
            what = "graph replay %d call %d %s" % (rep, i, c)
            xs = [alls[r][i] for r in range(P)]
            if c[0] == "ar":
                ar_check(what, outs[i], xs, c[2], c[1])
            else:
                want_a, want_c, scale = ag_reference(xs, bs[i], "row")
                ga, cc = outs[i]
                if c[5] and not torch.equal(ga.cpu().double(), want_a):
                    raise AssertionError("%s: the gathered A is wrong" % what)
                close(what, cc, want_c, 4 * c[3] * 2.0 ** -24 * scale, 2 * EPS[c[1]])
    for i, o in enumerate(outs):
        same_bits("graph call %d after %d replays" % (i, replays), o[1] if isinstance(o, tuple) else o)


# ---- torch.compile and opcheck ----------------------------------------------------------------------

@case
def compile_case():
    x = gen(5 + RANK, (4, 1000), torch.float32).to(DEV)
    a_cpu, b_cpu = ag_inputs(64, 128, 256, torch.bfloat16, "row", salt=5)
    a, b = a_cpu.to(DEV), b_cpu.to(DEV)

    def f(x, a, b):
        y = torch.ops.weft.all_reduce(x * 2, "sum", NAME)
        z = x + 0
        wd.all_reduce_(z, "max", group=NAME)
        _, c = wd.all_gather_matmul(a, b, group=NAME)
        return y + 1, z, c * 1

    want = f(x, a, b)
    got = torch.compile(f, fullgraph=True)(x, a, b)
    torch.cuda.synchronize()
    for i, (w, g_) in enumerate(zip(want, got)):
        if not torch.equal(w, g_):
            raise AssertionError("torch.compile(fullgraph=True) output %d differs from eager" % i)


@case
def opcheck_case():
    x = gen(11, (3, 333), torch.float32).to(DEV)
    a, b = (t.to(DEV) for t in ag_inputs(136, 72, 24, torch.bfloat16, "row", salt=9))
    aw, w = (t.to(DEV) for t in ag_inputs(64, 64, 40, torch.float16, "col", salt=3))
    checks = [(torch.ops.weft.all_reduce.default, (x, "sum", NAME)),
              (torch.ops.weft.all_reduce_.default, (x.clone(), "max", NAME)),
              (torch.ops.weft.all_gather_matmul.default, (a, b, 0, NAME, P, False, "row")),
              (torch.ops.weft.all_gather_matmul.default, (a, b, 0, NAME, P, True, "row")),
              (torch.ops.weft.all_gather_matmul.default, (aw, w, 0, NAME, P, False, "col"))]
    for op, args in checks:
        torch.library.opcheck(op, args)


# ---- errors ---------------------------------------------------------------------------------------------

def expect_mismatch(what, call, own=None):
    """Every rank fails: MISMATCH naming the op and the ranks, except that a rank whose own argument is
    wrong raises its ValueError naming the argument (`own`: a substring of it), after the rendezvous."""
    try:
        call()
        torch.cuda.synchronize()
    except ValueError as e:
        if own is None or own not in str(e) or "weft.torch." not in str(e):
            raise AssertionError("%s: expected %s, got ValueError: %s" % (
                what, "a MISMATCH" if own is None else repr(own), e))
        log("%s: this rank's own error, as expected: %s" % (what, str(e)[:300]))
        return
    except weft.WeftError as e:
        if e.status_name != "MISMATCH" or "weft.torch." not in str(e) or "rank" not in str(e):
            raise AssertionError("%s: expected a MISMATCH error naming the op and the ranks, got %s: %s" % (
                what, e.status_name, e))
        log("%s: got, as expected: %s" % (what, str(e)[:400]))
        return
    raise AssertionError("%s: no error" % what)


@case
def mismatch_case():
    x = torch.ones(1001 + RANK, device=DEV)       # each rank its own size
    expect_mismatch("all_reduce with a size per rank", lambda: wd.all_reduce(x))
    bad = torch.ones(64, device=DEV, dtype=torch.float64 if RANK == P - 1 else torch.float32)
    expect_mismatch("all_reduce with float64 on the last rank", lambda: wd.all_reduce(bad),
                    own="t has dtype torch.float64" if RANK == P - 1 else None)
    # in place on a tensor requiring grad: no backward could follow it (refused, agreed on)
    g = torch.ones(64, device=DEV, requires_grad=(RANK == P - 1))
    expect_mismatch("all_reduce_ on a tensor requiring grad on the last rank", lambda: wd.all_reduce_(g),
                    own="writes t in place, and t requires grad" if RANK == P - 1 else None)
    a = torch.ones((64, 128 if RANK else 136), device=DEV, dtype=torch.bfloat16)
    b = torch.ones((a.shape[1], 64), device=DEV, dtype=torch.bfloat16)
    expect_mismatch("all_gather_matmul with K differing on rank 0", lambda: wd.all_gather_matmul(a, b))
    y = wd.all_reduce(torch.full((1001,), 1.0, device=DEV))   # the world still works
    torch.cuda.synchronize()
    close("all_reduce after the mismatches", y, torch.full((1001,), float(P), dtype=torch.float64), 0.0, 0.0)


@case
def bad_args_case():
    """One op, bad arguments on every rank: the same error everywhere (naming the op and argument)."""
    for what, call, needle in [
            ("op", lambda: wd.all_reduce(torch.ones(8, device=DEV), "avg"), "op = 'avg'"),
            ("a view at an offset", lambda: wd.all_reduce(torch.ones(9, device=DEV)[1:]), "aligned"),
            ("N not a multiple of 8", lambda: wd.all_gather_matmul(torch.ones((16, 64), device=DEV, dtype=torch.bfloat16),
                                                                  torch.ones((64, 20), device=DEV, dtype=torch.bfloat16)),
             "N "),
            ("float32 a_shard", lambda: wd.all_gather_matmul(torch.ones((16, 64), device=DEV),
                                                            torch.ones((64, 64), device=DEV)), "a_shard")]:
        try:
            call()
        except (ValueError, TypeError) as e:
            if needle not in str(e) or "weft.torch." not in str(e):
                raise AssertionError("%s: the message does not name it (%r): %s" % (what, needle, e))
            continue
        raise AssertionError("%s: no error" % what)


@case
def settings_case():
    """The last rank's WEFT_TORCH_AGREE is bad, then differs from the others': each time every rank
    raises the same ValueError naming that rank (a rank raising alone left the others waiting for
    gloo's timeout).  On groups of their own (the settings are read when a group's state is made)."""
    last, mine = P - 1, os.environ.get("WEFT_TORCH_AGREE")
    other = "first" if mine == "always" else "always"
    for value, needle in (("every", "rank %d: WEFT_TORCH_AGREE='every': allowed first" % last),
                          (other, "WEFT_TORCH_AGREE differs between the ranks")):
        sub = dist.new_group(ranks=list(range(P)), backend="gloo")
        if RANK == last:
            os.environ["WEFT_TORCH_AGREE"] = value
        said = None
        try:
            wd.all_reduce(torch.ones(64, device=DEV), group=sub)
        except ValueError as e:
            said = str(e)
        finally:
            if mine is None:
                os.environ.pop("WEFT_TORCH_AGREE", None)
            else:
                os.environ["WEFT_TORCH_AGREE"] = mine
        if said is None or needle not in said or "every rank of the group raises this" not in said:
            raise AssertionError("WEFT_TORCH_AGREE=%r on rank %d: %s" % (value, last, said or "no error"))
        everyone = [None] * P
        dist.all_gather_object(everyone, said)
        if len(set(everyone)) != 1:
            raise AssertionError("WEFT_TORCH_AGREE=%r on rank %d: the ranks said different things: %s"
                                 % (value, last, everyone))
        log("settings: every rank got, as expected: %s" % said[:300])
    try:
        y = wd.all_reduce(torch.full((64,), 1.0, device=DEV), group=sub)   # made again with good settings
        torch.cuda.synchronize()
        close("all_reduce after the settings' errors", y, torch.full((64,), float(P), dtype=torch.float64), 0.0, 0.0)
    finally:
        wd.close(sub)


@case
def timeout_case():
    """Rank 0 never sends "ready" (WEFT_FAULT): every other rank's check() raises CommTimeoutError
    naming rank 0, and the next launch reports it too.  On a group of its own (fresh communicators)."""
    sub = dist.new_group(ranks=list(range(P)), backend="gloo")
    os.environ["WEFT_FAULT"], os.environ["WEFT_SIGNAL_TIMEOUT_MS"] = "mute:0:ready", "400"
    try:
        x = torch.ones(1 << 19, device=DEV, dtype=torch.float16)    # 1 MB: one_shot, which has "ready"
        t0 = time.time()
        wd.all_reduce(x, group=sub)
        torch.cuda.synchronize()
        waited = time.time() - t0
        raised = None
        try:
            wd.check(sub)
        except weft.CommTimeoutError as e:
            raised = e
        log("timeout: %.2f s; check(): %s" % (waited, raised))
        if RANK != 0 and (raised is None or "rank 0" not in str(raised)):
            raise AssertionError("rank %d: check() did not raise CommTimeoutError naming rank 0 (%r)" % (RANK, raised))
        if raised is not None:
            try:
                wd.all_reduce(x, group=sub)
                raise AssertionError("the launch after a timeout did not report it")
            except weft.CommTimeoutError:
                pass
        else:   # rank 0 got through; its next launch waits for ranks that now refuse: it times out too
            try:
                wd.all_reduce(x, group=sub)
                torch.cuda.synchronize()
                wd.check(sub)
            except weft.CommTimeoutError:
                pass
    finally:
        del os.environ["WEFT_FAULT"], os.environ["WEFT_SIGNAL_TIMEOUT_MS"]
        torch.cuda.synchronize()
        wd.close(sub)


def main_cases(quick):
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for op in ("sum", "max", "min", "prod"):
            for n in ((1, 7, 4097) if quick else (1, 7, 4097, 65537, 1000003)):
                all_reduce_case(dtype, op, n)
    for algo in ("one_shot", "two_shot"):
        for dtype, op, n in ((torch.float32, "sum", 7), (torch.float32, "sum", 1000003), (torch.bfloat16, "max", 4097),
                             (torch.float16, "prod", 65537)):
            all_reduce_case(dtype, op, n, algo)
    for dtype in (torch.bfloat16, torch.float16):
        for layout in ("row", "col"):
            for ms, k, n in ((200, 328, 264), (128, 64, 256), (1, 8, 8), (512, 1024, 1024)):
                for return_a in (False, True):
                    all_gather_matmul_case(dtype, ms, k, n, layout, return_a)
    behind_torch_case()
    arn_cases(quick)
    matmul_cases.run(sys.modules[__name__], True)
    cuda_graph_case(10 if quick else 100)
    compile_case()
    if P == 1:
        opcheck_case()
    bad_args_case()
    if P > 1:
        mismatch_case()
        settings_case()
        timeout_case()
    if COUNTS["poisoned"] == 0:
        fail("poison", "no output reused a poisoned block: the checks never saw NaN-filled outputs")


def main():
    log("torch %s, weft %s, device %s (%s), group %s, LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s" % (
        torch.__version__, weft.version(), DEV, torch.cuda.get_device_name(DEV), NAME,
        os.environ.get("LOCAL_RANK"), os.environ.get("LOCAL_WORLD_SIZE")))
    nccl_decide()
    quick = os.environ.get("WEFT_TEST_QUICK") == "1"
    # WEFT_TEST_ONLY=arn: all_reduce_rms_norm's cases alone (its outputs are in place: no poisoned blocks)
    only = os.environ.get("WEFT_TEST_ONLY")
    if only == "arn":
        arn_cases(quick)
    elif only == "mrs":
        behind_torch_case()
        matmul_cases.run(sys.modules[__name__], quick)
        if COUNTS["poisoned"] == 0:
            fail("poison", "no output reused a poisoned block: the checks never saw NaN-filled outputs")
    else:
        main_cases(quick)
    fails = [None] * P
    dist.all_gather_object(fails, (len(FAILS), COUNTS))
    if RANK == 0:
        total = sum(f[0] for f in fails)
        log("summary: P=%d, failures per rank %s; checks %s" % (P, [f[0] for f in fails], [f[1] for f in fails]))
        nccl = sum(f[1]["nccl"] for f in fails)
        print("test_comm: P=%d %s; NCCL cross-checks: %d%s" % (P, "PASS" if total == 0 else "FAIL (%d)" % total, nccl,
                                                              "" if NCCL["on"] else " (skipped: %s)" % NCCL["why"]),
              flush=True)
    wd.close()
    dist.destroy_process_group()
    return 1 if any(f[0] for f in fails) or FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
