"""First-use tuning of weft.torch's ops (WEFT_AUTOTUNE=1).

The first time an op meets a shape that the tuning database does not know exactly, weft.auto's
choice and the rule's next candidates are each compiled, run on the op's own inputs into a
poisoned scratch output, checked against a float64 torch reference (a wrong kernel is never
timed, nor chosen), then timed with CUDA events.  Within WEFT_AUTOTUNE_BUDGET_MS (default 2000 ms,
compiles included: a candidate starts only while the mean cost of those before it still fits) the fastest is stored in the
tuning database (weft_auto_record), so this process and every later one use it for the shape,
and nearby shapes find it as the database's nearest.

Only the single-GPU ops tune; the comm ops (weft.torch.dist) use the choice as it is, because
their ranks would have to agree on the timing.
"""
import math
import os
import time
import warnings

import torch

from .. import core

CANDIDATES = 4          # the choice and three of the rule's next ones
_REPS, _ROUNDS = 10, 3  # launches per timed round, rounds (the median is kept)


def _env_flag(name):
    v = os.environ.get(name, "")
    if v.lower() in ("", "0", "false", "no", "off"):   # any case, as the C side reads it
        return False
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    raise ValueError("weft.torch: %s=%r: allowed 1, true, yes, on (tune on first use) or 0, false, no, off, unset"
                     % (name, v))


def enabled():
    return _env_flag("WEFT_AUTOTUNE")


def budget_s():
    v = os.environ.get("WEFT_AUTOTUNE_BUDGET_MS", "")
    if v == "":
        return 2.0
    try:
        ms = int(v)
    except ValueError:
        ms = -1
    if not 1 <= ms <= 600000:
        raise ValueError("weft.torch: WEFT_AUTOTUNE_BUDGET_MS=%r: allowed an integer number of milliseconds in "
                         "1..600000 (default 2000)" % v)
    return ms / 1000.0


def close_enough(out, ref, dtype):
    """out against the float64 reference: |out - ref| <= atol + rtol |ref| everywhere, atol scaled
    by the reference's RMS (so a GEMM's large sums and a softmax's small ones are judged alike).
    Where the reference is not finite (a product that overflows) the output must be the same
    infinity, or NaN where it is NaN; anywhere else NaN (the poison, where a kernel wrote nothing)
    fails."""
    rtol = {"f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}[dtype]
    o = out.double().reshape(ref.shape)
    fin = torch.isfinite(ref)
    rf = ref[fin]
    rms = float(rf.pow(2).mean().sqrt()) if rf.numel() else 0.0
    atol = rtol * (rms if math.isfinite(rms) and rms > 0 else 1.0)
    err = (o[fin] - rf).abs()
    ok = bool(torch.isfinite(o[fin]).all()) and bool((err <= atol + rtol * rf.abs()).all())
    nf = ~fin
    if bool(nf.any()):
        same = (o[nf] == ref[nf]) | (torch.isnan(o[nf]) & torch.isnan(ref[nf]))
        ok = ok and bool(same.all())
    return ok, float(err.max()) if err.numel() else 0.0


def _time_us(launch, stream):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    times = []
    with torch.cuda.stream(stream):
        launch()
        launch()
        for _ in range(_ROUNDS):
            ev[0].record(stream)
            for _ in range(_REPS):
                launch()
            ev[1].record(stream)
            ev[1].synchronize()
            times.append(ev[0].elapsed_time(ev[1]) * 1000.0 / _REPS)
    times.sort()
    return times[len(times) // 2]


def tune(op, auto, kernel_of, make, launch, result, reference, dtype, stream):
    """The index of auto's fastest correct candidate, recorded in the tuning database.
    kernel_of(i): candidate i compiled (through the op's kernel cache); make(): fresh poisoned
    scratch buffers; launch(kernel, bufs): one launch; result(bufs): the tensor to check;
    reference: the float64 result."""
    if torch.cuda.is_current_stream_capturing():
        return 0
    budget = budget_s()
    start = time.monotonic()
    timed, wrong = [], []
    spent = []   # seconds each candidate took (compile, check, timing): the next is started only if one
    for i in range(len(auto.names)):   # more of the mean still fits the budget
        now = time.monotonic() - start
        if i > 0 and now + sum(spent) / len(spent) > budget:
            break
        c0 = time.monotonic()
        k = kernel_of(i)
        bufs = make()
        launch(k, bufs)
        stream.synchronize()
        ok, err = close_enough(result(bufs), reference, dtype)
        if not ok:
            wrong.append("%s (max error %.3g)" % (auto.names[i], err))
            spent.append(time.monotonic() - c0)
            continue
        timed.append((_time_us(lambda: launch(k, bufs), stream), i))
        spent.append(time.monotonic() - c0)
    if wrong:
        warnings.warn("weft.torch.%s: first-use tuning found wrong results from %s; %s" % (
            op, ", ".join(wrong), "not used" if timed else "no candidate was right"), RuntimeWarning, stacklevel=3)
    if not timed:
        raise RuntimeError("weft.torch.%s: every candidate weft chose for this shape gave a wrong result (%s): "
                           "please report this as a bug in weft" % (op, "; ".join(wrong)))
    us, best = min(timed)
    try:
        auto.record(best, us)
    except core.WeftError as e:
        warnings.warn("weft.torch.%s: first-use tuning could not store its result: %s" % (op, e), RuntimeWarning,
                      stacklevel=3)
    return best
