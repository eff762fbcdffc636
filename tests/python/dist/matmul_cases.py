"""test_comm.py's cases for weft.torch.matmul_reduce_scatter(_linear) and matmul_all_reduce
(python/weft/torch/dist_matmul.py): run(t, quick) with t the test_comm module (its helpers: gen,
poisoned_call, close, digest, same_bits, expect_mismatch, case, log, RANK, P, DEV, EPS, and the NCCL
cross-check's nccl_wanted, nccl_matmul, nccl_close, nccl_sum_err).

Every check: each rank's A_r [..., k] and B_r [k, N] (or [N, k]) made from a seed any rank can
regenerate, so every rank computes the float64 reference sum_r A_r . B_r over the full K = P k
without communication; the output poisoned (a freed NaN block its allocation reuses); both paths
(fuse=True: the fused kernel; fuse=False: torch.matmul, then weft's collective); a second call must
give the same bits; matmul_all_reduce's result must be the same bits on every rank.  Tolerances:
fused, f32 over K terms rounded once; unfused, each rank's partial rounded to the dtype too.
"""
import torch

from weft.torch import dist_matmul as wm


def inputs(t, rank, lead, k, n, dtype, layout, salt=0):
    """rank's A_r (shape lead + (k,)) and B_r."""
    seed = 7919 * rank + 131 * k + 17 * n + 3 * sum(lead) + salt
    a = t.gen(seed, tuple(lead) + (k,), dtype)
    b = t.gen(seed + 1_000_003, (k, n) if layout == "row" else (n, k), dtype)
    return a, b


def reference(t, lead, k, n, dtype, layout, salt=0):
    """sum_r A_r . B_r in float64 (lead + (n,)) and sum_r |A_r| . |B_r| (for the tolerance)."""
    want = scale = None
    for r in range(t.P):
        a, b = inputs(t, r, lead, k, n, dtype, layout, salt)
        a2, bd = a.double().reshape(-1, k), b.double() if layout == "row" else b.double().t()
        w, s = a2 @ bd, a2.abs() @ bd.abs()
        want, scale = (w, s) if want is None else (want + w, scale + s)
    shape = tuple(lead) + (n,)
    return want.reshape(shape), scale.reshape(shape)


def tolerance(t, k, dtype, fused):
    """(atol per unit of scale, rtol): f32 accumulation over P k terms, the output's rounding, and
    for the unfused path each partial's rounding to the dtype."""
    per = 4 * t.P * k * 2.0 ** -24 + (0.0 if fused else t.EPS[dtype])
    return per, 2 * t.EPS[dtype]


def mine(t, full, scatter_dim):
    """This rank's part of the full result along scatter_dim."""
    return full.chunk(t.P, dim=scatter_dim)[t.RANK]


def check(t, what, op, lead, k, n, dtype, layout, fuse, scatter_dim=0, salt=0):
    a_cpu, b_cpu = inputs(t, t.RANK, lead, k, n, dtype, layout, salt)
    a, b = a_cpu.to(t.DEV), b_cpu.to(t.DEV)
    want, scale = reference(t, lead, k, n, dtype, layout, salt)
    if op == "rs":
        want, scale = mine(t, want, scatter_dim), mine(t, scale, scatter_dim)

        def call():
            if layout == "col" and salt % 2:   # the nn.Linear spelling, on every other case
                return wm.matmul_reduce_scatter_linear(a, b, scatter_dim=scatter_dim, fuse=fuse)
            return wm.matmul_reduce_scatter(a, b, scatter_dim=scatter_dim, b_layout=layout, fuse=fuse)
    else:
        def call():
            return wm.matmul_all_reduce(a, b, b_layout=layout, fuse=fuse)
    ref = t.nccl_matmul(op, a, b, layout, scatter_dim) if t.nccl_wanted(dtype) else None
    like = torch.empty(tuple(want.shape), dtype=dtype, device=t.DEV)
    c = t.poisoned_call(like, call)
    torch.cuda.synchronize()
    t.wd.check()
    per, rtol = tolerance(t, k, dtype, fuse is True)
    t.close(what, c, want, per * scale, rtol)
    if ref is not None:   # weft's bound (above) plus torch's: its partials rounded to the dtype (the unfused
        # bound's scale term; nothing is rounded after NCCL's additions), then NCCL's sum of them in the dtype
        per_n, _ = tolerance(t, k, dtype, False)
        t.nccl_close(what, c, ref, (per + per_n) * scale + rtol * want.abs() + t.nccl_sum_err(dtype, scale))
    again = call()
    torch.cuda.synchronize()
    if t.digest(again) != t.digest(c):
        raise AssertionError("%s: a second call gave other bits" % what)
    if op == "ar":
        t.same_bits(what, c)
    if not torch.equal(a.cpu(), a_cpu) or not torch.equal(b.cpu(), b_cpu):
        raise AssertionError("%s: the inputs were changed" % what)
    return c


def mrs_case_fn(t):
    @t.case
    def mrs_case(op, dtype, lead, k, n, layout, fuse, scatter_dim=0, salt=0):
        what = "%s %s a=%s k=%d n=%d layout=%s fuse=%s scatter_dim=%d" % (
            "matmul_reduce_scatter" if op == "rs" else "matmul_all_reduce", dtype, lead, k, n, layout, fuse, scatter_dim)
        check(t, what, op, lead, k, n, dtype, layout, fuse, scatter_dim, salt)
    return mrs_case


def paths_differ_case_fn(t):
    @t.case
    def paths_case(dtype=torch.bfloat16):
        """Both paths at one shape: each within its own bound of the reference; printed: how many
        elements differ between them (the unfused partials are rounded to the dtype first)."""
        lead, k, n = (64 * t.P, 520), 520, 264
        fused = check(t, "paths fused", "rs", lead[:1], k, n, dtype, "row", True, salt=11)
        unfused = check(t, "paths unfused", "rs", lead[:1], k, n, dtype, "row", False, salt=11)
        t.log("matmul_reduce_scatter %s: fused and unfused differ in %d of %d elements (as documented)"
              % (dtype, int((fused != unfused).sum()), fused.numel()))
    return paths_case


def graph_case_fn(t):
    @t.case
    def mrs_graph_case(replays):
        """Both ops and both paths, once eagerly, then captured in one graph and replayed with new inputs."""
        calls = [("rs", torch.bfloat16, (32 * t.P,), 264, 136, "row", True), ("rs", torch.float16, (32 * t.P,), 264, 136,
                                                                              "col", False),
                 ("ar", torch.bfloat16, (33 * t.P,), 136, 264, "row", True),
                 ("ar", torch.bfloat16, (33,), 136, 264, "col", False)]
        static = [[x.to(t.DEV) for x in inputs(t, t.RANK, c[2], c[3], c[4], c[1], c[5], 500 + i)] for i, c in enumerate(calls)]

        def run():
            outs = []
            for (op, dt, lead, k, n, layout, fuse), (a, b) in zip(calls, static):
                f = wm.matmul_reduce_scatter if op == "rs" else wm.matmul_all_reduce
                outs.append(f(a, b, b_layout=layout, fuse=fuse))
            return outs

        run()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs = run()
        for rep in range(replays):
            salt = 1000 * (rep + 1)
            for i, c in enumerate(calls):
                a, b = inputs(t, t.RANK, c[2], c[3], c[4], c[1], c[5], salt + i)
                static[i][0].copy_(a)
                static[i][1].copy_(b)
            g.replay()
            torch.cuda.synchronize()
            t.wd.check()
            for i, (op, dt, lead, k, n, layout, fuse) in enumerate(calls):
                want, scale = reference(t, lead, k, n, dt, layout, salt + i)
                if op == "rs":
                    want, scale = mine(t, want, 0), mine(t, scale, 0)
                per, rtol = tolerance(t, k, dt, fuse)
                t.close("graph replay %d call %d %s" % (rep, i, calls[i]), outs[i], want, per * scale, rtol)
        t.same_bits("graph matmul_all_reduce after %d replays" % replays, outs[2])
    return mrs_graph_case


def compile_case_fn(t):
    @t.case
    def mrs_compile_case():
        a, b = (x.to(t.DEV) for x in inputs(t, t.RANK, (2 * t.P, 16), 136, 264, torch.bfloat16, "row", 77))

        def f(a, b):
            c = wm.matmul_reduce_scatter(a * 1, b, group=t.NAME)
            d = wm.matmul_all_reduce(a, b, group=t.NAME, fuse=False)
            e = wm.matmul_reduce_scatter(a, b, group=t.NAME, scatter_dim=1, fuse=False)
            return c + 0, d * 1, e.contiguous()

        want = f(a, b)
        got = torch.compile(f, fullgraph=True)(a, b)
        torch.cuda.synchronize()
        for i, (w, g_) in enumerate(zip(want, got)):
            if w.shape != g_.shape or t.digest(w) != t.digest(g_):
                raise AssertionError("matmul ops under torch.compile(fullgraph=True): output %d differs from eager" % i)
    return mrs_compile_case


def opcheck_case_fn(t):
    @t.case
    def mrs_opcheck_case():
        a, b = (x.to(t.DEV) for x in inputs(t, t.RANK, (64,), 64, 40, torch.bfloat16, "row", 5))
        aw, w = (x.to(t.DEV) for x in inputs(t, t.RANK, (2, 8), 64, 40, torch.float16, "col", 6))
        for op, args in [(torch.ops.weft.matmul_reduce_scatter.default, (a, b, "sum", t.NAME, t.P, "row", "fused")),
                         (torch.ops.weft.matmul_reduce_scatter.default, (aw, w, "sum", t.NAME, t.P, "col", "unfused")),
                         (torch.ops.weft.matmul_all_reduce.default, (a, b, "sum", t.NAME, t.P, "row", "auto"))]:
            torch.library.opcheck(op, args)
    return mrs_opcheck_case


def errors_case_fn(t):
    @t.case
    def mrs_errors_case():
        bf = dict(device=t.DEV, dtype=torch.bfloat16)
        a, b = torch.ones((8 * t.P, 64), **bf), torch.ones((64, 64), **bf)
        for what, call, needle in [
                ("reduce_op", lambda: wm.matmul_reduce_scatter(a, b, reduce_op="avg"), "reduce_op = 'avg'; allowed: sum"),
                ("scatter_dim", lambda: wm.matmul_reduce_scatter(a, b, scatter_dim=1), "scatter_dim = 1; allowed: 0"),
                ("fuse", lambda: wm.matmul_all_reduce(a, b, fuse="yes"), "fuse = 'yes'"),
                ("float32", lambda: wm.matmul_reduce_scatter(a.float(), b.float()), "a_shard has dtype torch.float32"),
                ("K", lambda: wm.matmul_all_reduce(a, torch.ones((72, 64), **bf)), "(K = 72, b_layout row)"),
                ("rows", lambda: wm.matmul_reduce_scatter(torch.ones((8 * t.P + 1, 64), **bf), b) if t.P > 1 else
                 wm.matmul_reduce_scatter(a, b, reduce_op="max"), "does not split" if t.P > 1 else "reduce_op"),
                ("N for the fused kernel", lambda: wm.matmul_reduce_scatter(a, torch.ones((64, 20), **bf), fuse=True),
                 "N = 20: the fused kernel takes"),
                ("M for the fused allreduce", lambda: wm.matmul_all_reduce(torch.ones((8 * t.P + 1, 64), **bf), b, fuse=True)
                 if t.P > 1 else wm.matmul_all_reduce(a, b, fuse=None), "not a multiple of the" if t.P > 1 else "fuse = None")]:
            try:
                call()
            except (ValueError, TypeError) as e:
                if needle not in str(e) or "weft.torch.matmul_" not in str(e):
                    raise AssertionError("%s: the message does not name it (%r): %s" % (what, needle, e))
                continue
            raise AssertionError("%s: no error" % what)
        if t.P > 1:
            k = 64 if t.RANK else 72
            t.expect_mismatch("matmul_reduce_scatter with K differing on rank 0",
                              lambda: wm.matmul_reduce_scatter(torch.ones((8 * t.P, k), **bf), torch.ones((k, 64), **bf)))
            t.expect_mismatch("matmul_all_reduce with reduce_op avg on the last rank",
                              lambda: wm.matmul_all_reduce(a, b, reduce_op="avg" if t.RANK == t.P - 1 else "sum"),
                              own="reduce_op = 'avg'" if t.RANK == t.P - 1 else None)
        # the group still works: every partial is 64 (ones over k = 64), the sum 64 P
        c = wm.matmul_all_reduce(a, b, fuse=True)
        torch.cuda.synchronize()
        t.close("matmul_all_reduce after the errors", c, torch.full((8 * t.P, 64), 64.0 * t.P, dtype=torch.float64), 0, 0)
    return mrs_errors_case


def run(t, quick):
    """Odd sizes (rows per rank 1 and 125, K off the tiles, N = 136), both layouts, bf16 and f16,
    both paths; N and k off the fused kernel's multiples of 8 on the unfused path (fuse="auto");
    3-D inputs, scatter_dim 0 and 1; a CUDA graph, torch.compile, opcheck (one rank), errors."""
    mrs_case = mrs_case_fn(t)
    P = t.P
    salt = 0
    for dtype in (torch.bfloat16, torch.float16):
        for layout in ("row", "col"):
            for fuse in (True, False):
                shapes = [((P,), 8, 8), ((125 * P,), 4104, 136)] + ([] if quick else [((512 * P,), 1024, 1024)])
                for lead, k, n in shapes:
                    salt += 1
                    mrs_case("rs", dtype, lead, k, n, layout, fuse, 0, salt)
                    # the fused allreduce needs M a multiple of P (odd rows per rank: 3, 127); unfused any M
                    mrs_case("ar", dtype, (lead[0] + (2 * P if fuse else 3),), k, n, layout, fuse, 0, salt)
    for fuse in ("auto", False):   # the unfused path takes any N and K
        mrs_case("rs", torch.bfloat16, (3 * P,), 12, 100, "row", fuse, 0, 90)
        mrs_case("ar", torch.float16, (5,), 20, 36, "col", fuse, 0, 91)
    mrs_case("rs", torch.bfloat16, (2 * P, 7), 264, 136, "row", True, 0, 92)
    mrs_case("rs", torch.bfloat16, (3, 4 * P, 5), 136, 72, "col", True, 1, 93)
    mrs_case("rs", torch.float16, (3, 4 * P, 5), 136, 72, "row", False, 1, 94)
    mrs_case("ar", torch.bfloat16, (2, 9 * P), 264, 136, "col", True, 0, 95)
    if P > 1:   # rows that do not split: "auto" takes the unfused path
        mrs_case("ar", torch.bfloat16, (4 * P + 1,), 64, 64, "row", "auto", 0, 97)
    mrs_case("rs", torch.bfloat16, (64 * P,), 512, 512, "row", "auto", 0, 96)
    paths_differ_case_fn(t)()
    graph_case_fn(t)(3 if quick else 10)
    compile_case_fn(t)()
    if P == 1:
        opcheck_case_fn(t)()
    errors_case_fn(t)()
