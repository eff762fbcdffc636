#!/usr/bin/env python3
"""bench/gemm_llm.py: issue 19's GEMM targets on the GPU machine, in ONE process.

For each shape of the published set (bench/gemm_llm_shapes.py: the linear layers of Llama-3-8B,
Llama-3-70B, Qwen2.5-72B and Mixtral-8x7B, B column-major as nn.Linear stores it, at M = 1 ..
16384; the squares with B row-major), all timed the same way in this process:
  cuBLASLt  torch.mm(A, B, out=C) under torch.backends.cuda.preferred_blas_library("cublaslt")
  torch     the same under preferred_blas_library("cublas") (torch's default on CUDA)
  auto      weft's choice with no tuning database and no table (WEFT_AUTO_TABLE=none, a private
            empty DB path): the gemm rule's first candidate (Context.auto, as weft.torch's linear
            and `weft run --auto` choose it)
  best      the fastest of the rule's candidate list (Context.auto(..., candidates=N)), each one
            compiled, checked and timed; its kernel name is the schedule printed
Timing: each op heated first (--heat-ms of back-to-back launches), then --rounds rounds of every op
in turn (the clocks drift under load; alternating puts an op and its baselines under the same
drift; odd rounds go in reverse order, so no op always runs after a long run of the others), each
round (a) CUDA events around --iters back-to-back launches, queued behind a sleep kernel so the
host's launch path is not timed, and (b) one replay of a CUDA graph holding --iters launches; the
median over rounds of each.  RATIOS USE THE GRAPH NUMBER.  Each round's graph times are kept: a
ratio below 0.95 is listed with its range over the rounds (cuBLASLt's time / the kernel's in the
same round).  nvidia-smi samples the SM clock and power every 20 ms (bench/smi_clock.py;
--no-clocks: not), and each shape's TSV row has the mean clock cuBLASLt, best and auto ran at in
their graph blocks (blank where no sample fell in them: blocks shorter than ~20 ms).  Inputs
rotate over enough copies to defeat the 60 MB L2 when A + B + C fit in it.  The launch count of a slow op is capped
(--cap-ms per timed block, at least 3 launches).
Correctness before timing, for every op timed: A and B uniform in [-1, 1), C poisoned with NaN,
one launch: no NaN left in C, and a row sample (every row for M <= 256, else 256 random rows and
the last one) against a float64 reference within 2^-7 (bf16; 2^-10 f16) x (|ref| + sqrt(K) / 8);
then a second launch on a poisoned C must give bit-identical C (split-K must be deterministic).
A weft kernel that fails is FAIL and never counted; a baseline that fails is reported, with its
largest error in units of u * sum|a b| (output-precision split-K, which cuBLAS picks at some shapes
when torch allows reduced-precision reduction, stays within pieces + 1 of them).
Floor (M <= 256): (bytes of A + B + C) / the device copy rate measured at the start (a 1 GiB
torch copy, bytes read + written over the time).
Ratios: cuBLASLt time / the other's time (> 1: faster than cuBLASLt).

  PYTHONPATH=build/python python3 bench/gemm_llm.py [--quick] [--dtype bf16,f16] [--m 1,16] [--models M,..]
      [--candidates 8] [--jobs 16] [--budget-s S] [--out DIR] [--extra CFG ...] [--dry-run]
--dry-run needs neither a GPU nor torch: the shapes, each one's candidates (the rule, through the
Python package) and the estimated device time.  bench/gemm_llm.sh is the device-call wrapper.
"""
import argparse
import json
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemm_args  # noqa: E402
import gemm_llm_shapes as S  # noqa: E402
import smi_clock  # noqa: E402

MB = 1 << 20
L2_BYTES = 60 * MB
ROTATE_BYTES = 192 * MB        # measure.c's measure_rotation_sets: 3 x L2 per rotation, <= 16 sets
U = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}   # unit roundoff
TOL = {dt: 2 * u for dt, u in U.items()}
# the estimate (device seconds): a kernel takes max(flops / PEAK, bytes / BW) + LAT
EST = {"peak_flops": 700e12, "bw": 4.0e12, "lat_us": 4.0, "op_s": 0.02, "shape_s": 0.4, "start_s": 12.0,
       "compile_s": 1.5, "names_s": 0.15}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def user_config(s):
    """What weft.torch.linear / matmul ask auto for: the family's key fields, the rest open."""
    return {"family": "gemm", "dtype": s["dtype"], "b_layout": s["b_layout"]}


def shape_of(s):
    return {"m": s["m"], "n": s["n"], "k": s["k"]}


def nbytes(s):
    return 2 * (s["m"] * s["k"] + s["n"] * s["k"] + s["m"] * s["n"])


def flops(s):
    return 2.0 * s["m"] * s["n"] * s["k"]


def nsets(s):
    per = nbytes(s)
    return 1 if per >= L2_BYTES else min(16, -(-ROTATE_BYTES // per))


# ---- choosing (no GPU) --------------------------------------------------------------------------

# what an --extra schedule may not set: each shape's own
EXTRA_FIXED = {"family": "benchmark", "dtype": "shape", "b_layout": "shape"}


def choose(shapes, ncand, db, extras=()):
    """{key: {"names", "configs", "source", "detail", "extra_fails"} or {"error"}}: Context.auto per
    shape, then each of `extras` (key=value configs, bench/gemm_args.py's config: schedules the rule
    does not list, on top of the shape's dtype and B layout) after its candidates; an extra that does
    not generate at a shape is named in extra_fails, and one the rule already lists is not repeated."""
    import weft
    ctx = weft.Context()
    out = {}
    for s in shapes:
        try:
            a = ctx.auto(user_config(s), shape_of(s), candidates=ncand, db=db)
        except Exception as e:   # a shape outside the family's limits: the message names it
            out[S.key(s)] = {"error": str(e)}
            continue
        ch = out[S.key(s)] = {"names": list(a.names), "configs": list(a.configs), "source": a.source,
                              "detail": a.detail, "extra_fails": {}}
        a.close()
        for kv in extras:
            try:
                cfg = gemm_args.config(s["dtype"], kv, s["b_layout"], EXTRA_FIXED)
                name = ctx.generate(cfg).name
            except Exception as e:   # a bad pair, or a config the generator refuses (its message names the field)
                ch["extra_fails"]["extra " + kv] = str(e)[:300]
                continue
            if name not in ch["names"]:
                ch["names"].append(name)
                ch["configs"].append(weft.lua_config(cfg))
    ctx.close()
    return out


def compile_all(texts, jobs):
    """Compiles {name: Lua text} into the kernel cache on `jobs` threads, one weft Context each (a C
    context is not thread-safe; NVRTC and the generator run with the GIL released).  Returns
    ({name: error}, seconds, cold compiles)."""
    import weft
    local = threading.local()
    contexts, lock = [], threading.Lock()
    errors, cold = {}, [0]

    def one(item):
        name, text = item
        ctx = getattr(local, "ctx", None)
        if ctx is None:
            ctx = local.ctx = weft.Context()
            with lock:
                contexts.append(ctx)
        try:
            k = ctx.compile_source(text, "<%s>" % name)
            hit = k.cache_hit
            k.close()
            if not hit:
                with lock:
                    cold[0] += 1
        except Exception as e:
            with lock:
                errors[name] = str(e)

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(one, sorted(texts.items())))
    for c in contexts:
        c.close()
    return errors, time.time() - t0, cold[0]


# ---- the estimate ---------------------------------------------------------------------------------

def est_kernel_us(s):
    return max(flops(s) / EST["peak_flops"], nbytes(s) / EST["bw"]) * 1e6 + EST["lat_us"]


def est_op_s(s, args):
    """One op of a shape: probe (3) + check (2) launches, the heat, the graph's warm replay and
    --rounds x (events + graph) blocks of the capped launch count."""
    one = est_kernel_us(s) / 1e6
    iters = max(3, min(args.iters, int(args.cap_ms / 1e3 / one)))
    heat = max(0.0, args.heat_ms / 1e3 - 3 * one)
    return 5 * one + heat + (2 * args.rounds + 1) * iters * one + EST["op_s"]


def est_shape_s(s, nops, args):
    """(the profiler's kernel names run after every shape, at names_s each)"""
    return nops * est_op_s(s, args) + EST["shape_s"] + (EST["names_s"] if args.kernel_names else 0)


# ---- the GPU side ---------------------------------------------------------------------------------

class Timed:
    """An op's times: the medians over the rounds (events, graph; us), launches per block, and per
    round the graph's us and its block's wall-clock span."""

    def __init__(self, ev, us, iters, rounds, spans):
        self.ev, self.us, self.iters, self.rounds, self.spans = ev, us, iters, rounds, spans


class Op:
    """A timed thing: fn(set, stream) launches it on one input set; blas: the torch backend it needs."""

    def __init__(self, name, fn, blas=None):
        self.name, self.fn, self.blas = name, fn, blas


class Bench:
    def __init__(self, args):
        import torch
        import weft
        self.torch, self.args = torch, args
        self.ctx = weft.Context()
        self.dt = {"bf16": torch.bfloat16, "f16": torch.float16}
        self.kernels = {}
        self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def close(self):
        for k in self.kernels.values():
            k.close()
        self.kernels.clear()
        self.ctx.close()

    def blas(self, name):
        b = self.torch.backends.cuda
        if name:
            b.preferred_blas_library(name)

    def blas_now(self):
        return str(self.torch.backends.cuda.preferred_blas_library())

    def copy_rate(self):
        """Bytes read + written per second of a 1 GiB device copy (median of 10 after warm-up)."""
        torch = self.torch
        src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").fill_(1)
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize()
        t = []
        a, b = self.ev
        for _ in range(10):
            a.record()
            dst.copy_(src)
            b.record()
            b.synchronize()
            t.append(a.elapsed_time(b) / 1e3)
        del src, dst
        torch.cuda.empty_cache()
        return 2.0 * (1 << 30) / sorted(t)[len(t) // 2]

    def inputs(self, s):
        torch = self.torch
        dt = self.dt[s["dtype"]]
        g = torch.Generator(device="cuda").manual_seed(19)
        bshape = (s["n"], s["k"]) if s["b_layout"] == "col" else (s["k"], s["n"])
        sets = []
        for _ in range(nsets(s)):
            a = torch.empty(s["m"], s["k"], device="cuda", dtype=dt).uniform_(-1, 1, generator=g)
            b = torch.empty(bshape, device="cuda", dtype=dt).uniform_(-1, 1, generator=g)
            sets.append({"a": a, "b": b, "c": torch.empty(s["m"], s["n"], device="cuda", dtype=dt)})
        return sets

    def reference(self, s, st):
        """(row indices, float64 reference rows) for set st."""
        torch = self.torch
        m = s["m"]
        if m <= 256:
            idx = torch.arange(m, device="cuda")
        else:
            g = torch.Generator(device="cuda").manual_seed(7)
            idx = torch.cat([torch.randperm(m - 1, device="cuda", generator=g)[:256], torch.tensor([m - 1], device="cuda")])
        bd = st["b"].double()
        ref = st["a"][idx].double() @ (bd.t() if s["b_layout"] == "col" else bd)
        del bd
        return idx, ref

    def torch_op(self, s, blas):
        torch = self.torch
        col = s["b_layout"] == "col"

        def fn(st, stream):
            torch.mm(st["a"], st["b"].t() if col else st["b"], out=st["c"])
        return Op("torch[%s]" % blas, fn, blas)

    def weft_op(self, name, s):
        k = self.kernels[name]
        args = gemm_args.launch_args(k, s["m"], s["n"], s["k"])
        cache = {}

        def fn(st, stream):
            v = cache.get(id(st))
            if v is None:
                v = cache[id(st)] = args(st["a"].data_ptr(), st["b"].data_ptr(), st["c"].data_ptr())
            k._launch_trusted(v, stream)
        return Op(name, fn)

    def stream(self):
        return self.torch.cuda.current_stream().cuda_stream

    def check(self, op, s, st, idx, ref):
        """None, or what is wrong (first launch: NaN left, rows off the reference; second: bits differ)."""
        torch = self.torch
        self.blas(op.blas)
        c = st["c"]
        c.fill_(float("nan"))
        op.fn(st, self.stream())
        torch.cuda.synchronize()
        nan = int(torch.isnan(c).sum())
        if nan:
            return "%d of %d outputs NaN (unwritten)" % (nan, c.numel())
        got = c[idx].double()
        tol = TOL[s["dtype"]] * (ref.abs() + math.sqrt(s["k"]) / 8)
        bad = (got - ref).abs() > tol
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            row, col = divmod(i, s["n"])
            why = "%d of %d sampled outputs off (first: row %d col %d got %r want %r, tol %.3g)" % (
                int(bad.sum()), bad.numel(), int(idx[row]), col, float(got.flatten()[i]), float(ref.flatten()[i]),
                float(tol.flatten()[i]))
            if op.blas is not None:
                why += "; " + self.rounding_units(s, st, idx, got, ref)
            return why
        first = c.clone()
        c.fill_(float("nan"))
        op.fn(st, self.stream())
        torch.cuda.synchronize()
        if not torch.equal(first.view(torch.int16), c.view(torch.int16)):
            diff = int((first.view(torch.int16) != c.view(torch.int16)).sum())
            return "NOT DETERMINISTIC: %d of %d outputs differ bitwise between two launches" % (diff, c.numel())
        return None

    def rounding_units(self, s, st, idx, got, ref):
        """The largest error in units of u * sum_k |a_ik b_kj|: a sum whose partial sums were rounded
        to the output type (cuBLAS's split-K with reduced-precision reduction, which torch allows for
        bf16 and f16 by default) is off by at most (pieces + 1) of them; a wrong answer is off by far more."""
        bd = st["b"].double().abs()
        mag = st["a"][idx].double().abs() @ (bd.t() if s["b_layout"] == "col" else bd)
        del bd
        units = float(((got - ref).abs() / (U[s["dtype"]] * mag + 1e-300)).max())
        return "largest error %.3g u*sum|ab| (an output-precision split-K's rounding stays within pieces + 1)" % units

    def _launch(self, op, sets, n, start=0):
        s = self.stream()
        for i in range(n):
            op.fn(sets[(start + i) % len(sets)], s)

    def _events(self, op, sets, n):
        torch = self.torch
        a, b = self.ev
        if hasattr(torch.cuda, "_sleep"):   # ~30 us of host per launch queued before the GPU gets there
            torch.cuda._sleep(int(min(8e6, max(2e6, n * 60e3))))
        a.record()
        self._launch(op, sets, n)
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3 / n

    def time_ops(self, ops, sets):
        """{op.name: Timed}: probe, heat, capture, rounds."""
        torch, args = self.torch, self.args
        info = {}
        for op in ops:
            self.blas(op.blas)
            one = self._events(op, sets, 3) / 1e6
            iters = max(3, min(args.iters, int(args.cap_ms / 1e3 / max(one, 1e-7))))
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, capture_error_mode="relaxed"):
                self._launch(op, sets, iters)
            g.replay()
            torch.cuda.synchronize()
            info[op.name] = {"one": one, "iters": iters, "graph": g, "ev": [], "gr": [], "spans": []}
        a, b = self.ev
        for rd in range(args.rounds):
            # odd rounds take the ops in reverse: over an even number of rounds op i runs at
            # places i and n-1-i equally often, so every op's mean place is the same and a drift
            # within a round (the clock falling under a long run of heavy kernels) favours none
            for op in (ops if rd % 2 == 0 else ops[::-1]):
                d = info[op.name]
                self.blas(op.blas)
                if rd == 0:   # heat: the clocks under load, as every op here gets them
                    heat = int(max(0.0, args.heat_ms / 1e3 - 3 * d["one"]) / max(d["one"], 1e-7))
                    for j in range(0, min(heat, 20000), 500):
                        self._launch(op, sets, min(500, heat - j), j)
                    torch.cuda.synchronize()
                d["ev"].append(self._events(op, sets, d["iters"]))
                a.record()
                d["graph"].replay()
                b.record()
                b.synchronize()
                end = time.time()
                d["gr"].append(a.elapsed_time(b) * 1e3 / d["iters"])
                # the graph block's wall-clock span (it ended when synchronize returned), for the clock samples
                d["spans"].append((end - a.elapsed_time(b) / 1e3, end))
        out = {}
        for op in ops:
            d = info.pop(op.name)
            out[op.name] = Timed(median(d["ev"]), median(d["gr"]), d["iters"], d["gr"], d["spans"])
            del d["graph"]
        return out

    def kernel_names(self, s, st):
        """{blas: the CUDA kernels one torch.mm ran under that backend} (torch.profiler), or errors."""
        torch = self.torch
        out = {}
        for blas in ("cublaslt", "cublas"):
            op = self.torch_op(s, blas)
            try:
                self.blas(blas)
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    op.fn(st, self.stream())
                    torch.cuda.synchronize()
                names = sorted({e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")})
                out[blas] = " + ".join(names) or "?"
            except Exception as e:
                out[blas] = "profiler: %s" % str(e)[:100]
        return out


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def run_shape(B, s, ch, copy_rate):
    """One shape's record (dict)."""
    torch = B.torch
    r = {"key": S.key(s), "label": s["label"], "dtype": s["dtype"], "m": s["m"], "n": s["n"], "k": s["k"],
         "b_layout": s["b_layout"], "bytes": nbytes(s), "fails": {}}
    if s["m"] <= 256:
        r["floor_us"] = nbytes(s) / copy_rate * 1e6
    sets = B.inputs(s)
    idx, ref = B.reference(s, sets[0])
    ops, r["blas_read"] = [], {}
    for blas, col in (("cublaslt", "lt"), ("cublas", "torch")):
        op = B.torch_op(s, blas)
        why = B.check(op, s, sets[0], idx, ref)
        r["blas_read"][blas] = B.blas_now()   # the setting read back (torch may refuse one)
        if why:
            r["fails"][col] = why
        ops.append(op)
    names = [] if "error" in ch else ch["names"]
    r["fails"].update(ch.get("extra_fails", {}))
    if "error" in ch:
        r["fails"]["auto"] = "choose: " + ch["error"]
    else:
        r["auto_name"], r["auto_source"] = names[0], ch["source"]
    for name in names:
        if name not in B.kernels:
            r["fails"][name] = "compile failed (see the compile errors above)"
            continue
        try:
            op = B.weft_op(name, s)
            why = B.check(op, s, sets[0], idx, ref)
        except Exception as e:
            why = "launch: %s" % str(e)[:300]
        if why:
            r["fails"][name] = why
            continue
        ops.append(op)
    del ref
    t = B.time_ops(ops, sets)
    lt, tc = t["torch[cublaslt]"], t["torch[cublas]"]
    r["lt_ev"], r["lt_us"], r["lt_rounds"], r["lt_spans"] = lt.ev, lt.us, lt.rounds, lt.spans
    r["torch_ev"], r["torch_us"] = tc.ev, tc.us
    r["weft"] = {n: {"ev": v.ev, "us": v.us, "iters": v.iters, "rounds": v.rounds, "spans": v.spans}
                 for n, v in t.items() if not n.startswith("torch[")}
    if r["weft"]:
        best = min(r["weft"], key=lambda n: r["weft"][n]["us"])
        r["best_name"], r["best_us"], r["best_ev"] = best, r["weft"][best]["us"], r["weft"][best]["ev"]
    if r.get("auto_name") in r["weft"]:
        r["auto_us"], r["auto_ev"] = r["weft"][r["auto_name"]]["us"], r["weft"][r["auto_name"]]["ev"]
    del sets
    torch.cuda.empty_cache()
    return r


def record(B, s, ch, r, args):
    """Every candidate that passed its checks, at its graph time, into --record-db (the same rows
    first-use tuning writes: key fields, shape, GPU)."""
    try:
        a = B.ctx.auto(user_config(s), shape_of(s), candidates=args.candidates,
                       db=os.path.join(args.out, "no-such-dir", "empty-tune.db"))
        try:
            for i, name in enumerate(a.names):
                if name in r["weft"]:
                    a.record(i, r["weft"][name]["us"], db=args.record_db)
        finally:
            a.close()
    except Exception as e:
        r["fails"]["record"] = "record: %s" % str(e)[:200]


# ---- the report -------------------------------------------------------------------------------------

def ratio(base, t):
    return None if base is None or t is None or t <= 0 else base / t


def round_range(r, name):
    """(lowest, highest) of cuBLASLt's graph time / the kernel's in the same round, or (None, None)."""
    w = r.get("weft", {}).get(name) if name else None
    if not w or not r.get("lt_rounds"):
        return None, None
    v = [a / b for a, b in zip(r["lt_rounds"], w["rounds"]) if b > 0]
    return (min(v), max(v)) if v else (None, None)


def miss_detail(r, which):
    """' [0.91-0.96; 1740/1830 MHz]': a ratio's round range and the clocks, for the list of misses."""
    lo, hi = r.get(which + "_lo"), r.get(which + "_hi")
    parts = ["%.3f-%.3f" % (lo, hi)] if lo else []
    if r.get(which + "_mhz") and r.get("lt_mhz"):
        parts.append("%.0f/%.0f MHz" % (r[which + "_mhz"], r["lt_mhz"]))
    return " [%s]" % "; ".join(parts) if parts else ""


def ratios(res):
    """Each record's ratios to cuBLASLt (best, auto, torch) and the best's and auto's ranges over the rounds."""
    for r in res:
        lt = r.get("lt_us")
        r["best_ratio"], r["auto_ratio"], r["torch_ratio"] = (ratio(lt, r.get(k)) for k in ("best_us", "auto_us", "torch_us"))
        for which in ("best", "auto"):
            r[which + "_lo"], r[which + "_hi"] = round_range(r, r.get(which + "_name"))


def clocks(res, samples):
    """Each record's mean SM clock and power over its timed graph blocks: cuBLASLt's, best's, auto's."""
    for r in res:
        for which, spans in (("lt", r.get("lt_spans")), ("best", r.get("weft", {}).get(r.get("best_name"), {}).get("spans")),
                             ("auto", r.get("weft", {}).get(r.get("auto_name"), {}).get("spans"))):
            w = smi_clock.windows(samples, spans) if spans else None
            if w:
                r[which + "_mhz"], r[which + "_watts"] = w["mhz"], w["watts"]


def f(v, spec="%.1f"):
    return "-" if v is None else spec % v


def schedule(name):
    """The kernel name without the family / dtype / layout head: tile, stages, consumers, mma,
    cluster, split_k, epilogue, group, pdl."""
    if not name:
        return "-"
    parts = name.split("_")
    return "_".join(parts[4:]) if len(parts) > 4 and parts[0] == "weft" else name


def report(res, not_run, copy_rate, out_dir, head):
    print()
    print("## GEMM: weft against cuBLASLt, one process (%s)" % head)
    print("Times in us are CUDA-graph replays (the median of the rounds); the events numbers are in the TSV. "
          "Ratios are cuBLASLt us / the other's us (> 1: faster than cuBLASLt). floor: (A + B + C bytes) / %.2f TB/s "
          "(the copy rate measured in this run), M <= 256 only." % (copy_rate / 1e12))
    print()
    print("| shape (M x N x K, B) | model / layer | dtype | schedule of the best | weft best us | auto us | cuBLASLt us "
          "| torch us | best/cuBLASLt | auto/cuBLASLt | torch/cuBLASLt | floor us | best/floor | cuBLASLt/floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for r in res:
        lt = r.get("lt_us")
        fl = r.get("floor_us")
        rb, ra, rt = r["best_ratio"], r["auto_ratio"], r["torch_ratio"]
        print("| %d x %d x %d (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["m"], r["n"], r["k"], r["b_layout"], r["label"], r["dtype"], schedule(r.get("best_name")),
            f(r.get("best_us")), f(r.get("auto_us")), f(lt), f(r.get("torch_us")), f(rb, "%.3f"), f(ra, "%.3f"),
            f(rt, "%.3f"), f(fl), f(ratio(r.get("best_us"), fl), "%.2f"), f(ratio(lt, fl), "%.2f")))
        rows.append(r)
    print()

    def summary(what, k, sub):
        v = [(r[k], r["key"]) for r in sub if r.get(k)]
        if not v:
            print("%s: no shape measured" % what)
            return
        gm = math.exp(sum(math.log(x) for x, _ in v) / len(v))
        low = sorted((r[k], r["key"] + miss_detail(r, k[:4])) for r in sub if r.get(k) and r[k] < 0.95)
        mn = min(v)
        print("%s: geomean %.3f over %d shapes (target >= 1.0; moonshot 1.05); min %.3f (%s); %d below 0.95%s" % (
            what, gm, len(v), mn[0], mn[1], len(low), (": " + ", ".join("%s %.3f" % (key, x) for x, key in low))
            if low else ""))
    dts = sorted({r["dtype"] for r in rows})
    for dt in dts if len(dts) > 1 else []:
        sub = [r for r in rows if r["dtype"] == dt]
        print("(%s only)" % dt)
        summary("  best/cuBLASLt", "best_ratio", sub)
        summary("  auto/cuBLASLt", "auto_ratio", sub)
    print("(the whole set)" if len(dts) > 1 else "(%s)" % (dts[0] if dts else "-"))
    summary("best/cuBLASLt", "best_ratio", rows)
    summary("auto/cuBLASLt", "auto_ratio", rows)
    summary("torch/cuBLASLt", "torch_ratio", rows)
    print("(below 0.95: [the ratio in each round, lowest-highest], and the mean SM clock weft / cuBLASLt ran at "
          "in their timed blocks where nvidia-smi sampled them)")
    clk = [r["best_mhz"] / r["lt_mhz"] for r in rows if r.get("best_mhz") and r.get("lt_mhz")]
    if clk:
        print("SM clock, weft's best / cuBLASLt in the same blocks' time: geomean %.3f over %d shapes (min %.3f, "
              "max %.3f); the rest had no sample in their blocks" % (
                  math.exp(sum(math.log(x) for x in clk) / len(clk)), len(clk), min(clk), max(clk)))
    auto_failed = [r["key"] for r in rows if r.get("auto_us") is None and r.get("lt_us") is not None]
    if auto_failed:   # left out of the auto geomean above: say so, it is a miss of the target
        print("auto's choice FAILED or was not timed at %d shape(s) (not in its geomean; each one misses the target): %s"
              % (len(auto_failed), ", ".join(auto_failed)))
    unmeasured = [r["key"] for r in rows if r.get("best_us") is None]
    if unmeasured:
        print("no weft kernel passed at %d shape(s): %s" % (len(unmeasured), ", ".join(unmeasured)))
    nfail = sum(1 for r in rows for n in r["fails"] if n not in ("lt", "torch"))
    print("weft kernels FAILED (not counted): %d" % nfail)
    for r in rows:
        for n, why in sorted(r["fails"].items()):
            print("  FAIL %s %s: %s" % (r["key"], n, why))
    if not_run:
        print("NOT RUN (the budget, --budget-s): %d shape(s): %s" % (len(not_run), ", ".join(not_run)))
    names = [(r["key"], r["blas_kernels"]) for r in rows if r.get("blas_kernels")]
    if names:
        read = sorted({"%s -> %s" % kv for r in rows for kv in r.get("blas_read", {}).items()})
        print("\nthe kernels torch ran (torch.profiler, one call each; preferred_blas_library set -> read back: %s):"
              % ", ".join(read))
        for key, d in names:
            print("  %s: cublaslt: %s | cublas: %s" % (key, d.get("cublaslt"), d.get("cublas")))
    write_tsv(rows, not_run, out_dir)


def write_tsv(rows, not_run, out_dir):
    path = os.path.join(out_dir, "gemm_llm.tsv")
    cols = ["m", "n", "k", "b_layout", "dtype", "label", "best_name", "best_us", "best_ev", "auto_name", "auto_source",
            "auto_us", "auto_ev", "lt_us", "lt_ev", "torch_us", "torch_ev", "best_ratio", "auto_ratio", "torch_ratio",
            "floor_us", "best_lo", "best_hi", "auto_lo", "auto_hi", "lt_mhz", "best_mhz", "auto_mhz", "lt_watts",
            "best_watts", "auto_watts", "lt_rounds", "fails"]
    with open(path, "w") as fh:
        fh.write("\t".join(cols) + "\n")
        for r in rows:
            v = dict(r, fails="; ".join("%s: %s" % kv for kv in sorted(r["fails"].items())),
                     lt_rounds=",".join("%.3f" % x for x in r.get("lt_rounds", [])))
            fh.write("\t".join(("%.4g" % v[c]) if isinstance(v.get(c), float) else str(v.get(c, "")).replace("\t", " ")
                               for c in cols) + "\n")
        for key in not_run:
            fh.write("# not run (budget): %s\n" % key)
    with open(os.path.join(out_dir, "gemm_llm_kernels.tsv"), "w") as fh:   # every candidate's times
        fh.write("shape\tdtype\tkernel\tgraph_us\tevents_us\tlaunches\tauto\tgraph_us_by_round\n")
        for r in rows:
            for n, d in sorted(r.get("weft", {}).items(), key=lambda x: x[1]["us"]):
                fh.write("%s\t%s\t%s\t%.3f\t%.3f\t%d\t%d\t%s\n" % (
                    r["key"], r["dtype"], n, d["us"], d["ev"], d["iters"], n == r.get("auto_name"),
                    ",".join("%.3f" % x for x in d.get("rounds", []))))
    print("TSV: %s (and gemm_llm_kernels.tsv: every candidate)" % path)


# ---- main -------------------------------------------------------------------------------------------

def dry_run(shapes, chosen, args):
    total, texts, with_cands = EST["start_s"], {}, 0
    counts = []
    for s in shapes:
        ch = chosen[S.key(s)]
        if "error" in ch:
            print("%-28s %-44s ERROR: %s" % (S.key(s), s["label"], ch["error"]))
            continue
        n = len(ch["names"])
        with_cands += n > 0
        counts.append(n)
        texts.update(zip(ch["names"], ch["configs"]))
        est = est_shape_s(s, n + 2, args)
        total += est
        print("%-28s %-44s ~%.2f s (kernel ~%.1f us)  candidates: %d: %s" % (
            S.key(s), s["label"], est, est_kernel_us(s), n, " ".join(schedule(x) for x in ch["names"])))
        for kv, why in sorted(ch.get("extra_fails", {}).items()):
            print("%-28s %s: %s" % (S.key(s), kv, why))
    comp = len(texts) * EST["compile_s"] / max(1, min(args.jobs, len(texts) or 1))
    total += comp
    print("# %d shapes (%d with candidates, %s each; %d distinct kernels); estimated device time %.0f s "
          "(compiles ~%.0f s on %d threads, cold)" % (
              len(shapes), with_cands, "%d to %d" % (min(counts), max(counts)) if counts else "none", len(texts),
              total, comp, args.jobs))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the fixed 44-shape bf16 subset (gemm_llm_shapes.py)")
    ap.add_argument("--dtype", help="comma list of bf16, f16 (default both; --quick is bf16)")
    ap.add_argument("--m", help="comma list of M for the layer rows (the squares keep theirs)")
    ap.add_argument("--models", help="comma list of %s" % ", ".join(S.MODELS))
    ap.add_argument("--limit", type=int, default=0, help="the first N shapes only")
    ap.add_argument("--candidates", type=int, default=8, help="rule candidates beside the choice (Context.auto)")
    ap.add_argument("--jobs", type=int, default=16, help="compile threads")
    ap.add_argument("--iters", type=int, default=20, help="launches per timed block (capped by --cap-ms)")
    ap.add_argument("--rounds", type=int, default=4,
                    help="timed rounds (even: odd rounds go in reverse, so every op's mean place in the order is the same)")
    ap.add_argument("--heat-ms", type=float, default=50.0)
    ap.add_argument("--cap-ms", type=float, default=25.0, help="a timed block's length cap (at least 3 launches)")
    ap.add_argument("--budget-s", type=float, default=0, help="no shape starts past this many seconds (0: none)")
    ap.add_argument("--no-clocks", dest="clocks", action="store_false",
                    help="no nvidia-smi sampling of the SM clock and power (bench/smi_clock.py) during the run")
    ap.add_argument("--no-kernel-names", dest="kernel_names", action="store_false",
                    help="skip the profiler pass naming the kernels torch ran")
    ap.add_argument("--record-db", help="also store every checked candidate's graph time in this tuning database "
                    "(Auto.record: `weft export-table --db PATH FILE` then writes the table rows auto reads)")
    ap.add_argument("--shapes", help="comma list of MxNxK (B column-major) in place of the set: shapes off it, "
                    "in each --dtype (default bf16)")
    ap.add_argument("--auto-table", default="none", help="the table auto reads: none (default: the rule alone, "
                    "as without tuning), shipped (tune/h200.tsv, as a user gets it) or a path")
    ap.add_argument("--extra", action="append", default=[], metavar="CFG",
                    help="a schedule to time beside the rule's candidates at every shape: key=value pairs joined by "
                    "commas on top of family gemm, the shape's dtype and B layout (tile.m=64,tile.n=80,stages=12,"
                    "epilogue=direct); repeatable; not recorded in --record-db")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gemm_llm"))
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    split = lambda v: [x for x in v.split(",") if x] if v else None  # noqa: E731
    try:
        if args.shapes:
            shapes = []
            for dt in split(args.dtype) or ["bf16"]:
                if dt not in S.DTYPES:
                    raise ValueError("--dtype %s: allowed are %s" % (dt, ", ".join(S.DTYPES)))
                for t in split(args.shapes):
                    mnk = t.split("x")
                    if len(mnk) != 3 or not all(x.isdigit() and int(x) > 0 for x in mnk):
                        raise ValueError("--shapes %s: expected MxNxK, three positive integers" % t)
                    shapes.append(S.shape(dt, int(mnk[0]), int(mnk[1]), int(mnk[2]), "col", [("off-set", "-")]))
        else:
            shapes = S.select(quick=args.quick, dtypes=split(args.dtype),
                              ms=[int(x) for x in split(args.m) or []] or None, models=split(args.models),
                              limit=args.limit)
    except ValueError as e:
        ap.error(str(e))
    if not shapes:
        ap.error("no shape left after the filters")
    for name in ("rounds", "iters"):
        if getattr(args, name) < 1:
            ap.error("--%s %d: at least 1" % (name, getattr(args, name)))
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    # auto with no database, and by default no table: the rule's choice, as a user without tuning
    # gets it (--auto-table shipped: the table weft ships, whose rows came from this bench)
    if args.auto_table == "shipped":
        os.environ.pop("WEFT_AUTO_TABLE", None)
    else:
        os.environ["WEFT_AUTO_TABLE"] = args.auto_table
    os.environ.pop("WEFT_AUTOTUNE", None)
    db = os.path.join(args.out, "no-such-dir", "empty-tune.db")   # never created: lookups open it read-only
    t0 = time.time()
    for kv in args.extra:   # (checked before anything runs: a typo fails here, not at every shape)
        try:
            gemm_args.config("bf16", kv, "col", EXTRA_FIXED)
        except ValueError as e:
            ap.error("--extra %s" % e)
    chosen = choose(shapes, args.candidates, db, args.extra)
    if args.dry_run:
        return dry_run(shapes, chosen, args)
    texts = {}
    for ch in chosen.values():
        if "error" not in ch:
            texts.update(zip(ch["names"], ch["configs"]))
    errors, comp_s, cold = compile_all(texts, args.jobs)
    print("# chose %d shapes and compiled %d distinct kernels (%d cold, %d failed) on %d threads in %.1f s "
          "(WEFT_CACHE_DIR=%s)" % (len(shapes), len(texts), cold, len(errors), args.jobs, time.time() - t0, 
                                   os.environ.get("WEFT_CACHE_DIR", "default")), flush=True)
    for n, e in sorted(errors.items()):
        print("# compile FAILED %s: %s" % (n, e[:400]))
    B = Bench(args)
    for n, text in texts.items():
        if n not in errors:
            B.kernels[n] = B.ctx.compile_source(text, "<%s>" % n)   # cache hits: the pool compiled them
    torch = B.torch
    smi = None
    if args.clocks and hasattr(torch.cuda, "get_device_properties"):
        smi = smi_clock.Sampler(os.path.join(args.out, "smi.csv"), torch.cuda.get_device_properties(0), period_ms=20)
        if smi.note:
            log(smi.note)
    try:
        return run_all(B, shapes, chosen, args, smi, t0)
    finally:
        if smi is not None:
            smi.stop()


def run_all(B, shapes, chosen, args, smi, t0):
    """Times every shape (within --budget-s), then the profiler's names and the report."""
    torch = B.torch
    copy_rate = B.copy_rate()
    head = "%s, torch %s, copy %.2f TB/s, %d rounds x %d launches (capped at %.0f ms), heat %.0f ms, %d candidates" % (
        torch.cuda.get_device_name(), torch.__version__, copy_rate / 1e12, args.rounds, args.iters, args.cap_ms,
        args.heat_ms, args.candidates)
    print("# device: " + head, flush=True)
    res, not_run, est_done, real_done = [], [], 0.0, 0.0
    for i, s in enumerate(shapes):
        ch = chosen[S.key(s)]
        est = est_shape_s(s, len(ch.get("names", [])) + 2, args)
        scale = max(1.0, real_done / est_done) if est_done else 1.0
        el = time.time() - t0
        if args.budget_s and el + est * scale > args.budget_s:
            not_run.append(S.key(s))
            continue
        s0 = time.time()
        try:
            r = run_shape(B, s, ch, copy_rate)
        except Exception as e:   # out of memory, say: the shape is reported, the run goes on
            r = {"key": S.key(s), "label": s["label"], "dtype": s["dtype"], "m": s["m"], "n": s["n"], "k": s["k"],
                 "b_layout": s["b_layout"], "fails": {"shape": "%s: %s" % (type(e).__name__, str(e)[:300])}}
            torch.cuda.empty_cache()
        if args.record_db and r.get("weft"):
            record(B, s, ch, r, args)
        took = time.time() - s0
        est_done, real_done = est_done + est, real_done + took
        res.append(r)
        log("[%d/%d] %s: %.1f s (est %.1f), elapsed %.0f s: best %s us (%s), auto %s us, cuBLASLt %s us, torch %s us%s" % (
            i + 1, len(shapes), r["key"], took, est, time.time() - t0, f(r.get("best_us")), schedule(r.get("best_name")),
            f(r.get("auto_us")), f(r.get("lt_us")), f(r.get("torch_us")),
            "; %d FAIL" % len(r["fails"]) if r["fails"] else ""))
    # weft's kernels and context go now, before the profiler pass: their module unloads then never
    # meet torch.profiler's teardown at interpreter exit (two runs ended in a glibc abort there)
    B.close()
    # the kernels torch ran, after every timing: the profiler (CUPTI) could slow what runs after it
    if args.kernel_names and not (args.budget_s and time.time() - t0 > args.budget_s - 5):
        s0 = time.time()
        for s, r in zip([x for x in shapes if S.key(x) not in not_run], res):
            if r.get("lt_us") is None:
                continue
            try:
                bshape = (s["n"], s["k"]) if s["b_layout"] == "col" else (s["k"], s["n"])
                dt = B.dt[s["dtype"]]
                st = {"a": torch.empty(s["m"], s["k"], device="cuda", dtype=dt),
                      "b": torch.empty(bshape, device="cuda", dtype=dt),
                      "c": torch.empty(s["m"], s["n"], device="cuda", dtype=dt)}
                r["blas_kernels"] = B.kernel_names(s, st)
                del st
            except Exception as e:
                r["blas_kernels"] = {"cublaslt": "profiler: %s" % str(e)[:100]}
        log("kernel names (torch.profiler) in %.1f s" % (time.time() - s0))
    if smi is not None:
        note = smi.stop()
        if note:
            log(note)
        clocks(res, smi.samples())
    ratios(res)
    with open(os.path.join(args.out, "gemm_llm.json"), "w") as fh:
        json.dump({"head": head, "copy_rate": copy_rate, "results": res, "not_run": not_run}, fh, indent=1)
    report(res, not_run, copy_rate, args.out, head)
    print("# %d shapes run, %d not run, in %.0f s" % (len(res), len(not_run), time.time() - t0))
    return 0


if __name__ == "__main__":
    rc = main() or 0
    # Everything is written: leave without the interpreter's teardown.  After a torch.profiler
    # pass, torch's CUPTI buffer pool frees activity buffers CUPTI may still write, and some runs
    # ended in a glibc abort ("double free or corruption", exit 134) there, after their results
    # (pytorch/pytorch pull requests 195207 and 195471).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
