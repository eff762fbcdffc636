"""bench/gemm_llm.py's GPU path without a GPU: the real weft rule and compiles, torch replaced by
tests/python/fake_torch (on PYTHONPATH) and each weft launch computed in Python.  One candidate
kind is made wrong (each shape's second candidate: one output off by 1) and one nondeterministic
(each shape's third candidate: the first output moves between launches); the report must FAIL exactly those, count no failed kernel
as the best, sample rows at M > 256 and write its TSVs.  Exit 0 or 1."""
import os
import sys

import torch  # the fake (fake_torch on PYTHONPATH)
import weft.core

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gemm_llm as G  # noqa: E402
import gemm_llm_shapes as S  # noqa: E402

assert torch.__version__ == "fake", "tests/python/fake_torch must come first on PYTHONPATH"
calls = {"n": 0}
WRONG = set()   # each shape's second candidate (the rule's list, as gemm_llm.py asks for it)
NONDET = set()  # and its third


def fake_launch(self, vals, stream):
    d = dict(zip([a.name for a in self.manifest.args], vals))
    a, b, c = torch._reg[d["a"]], torch._reg[d["b"]], torch._reg[d["c"]]
    r = a @ (b.t() if "_bcol_" in self.manifest.name else b)
    if self.manifest.name in WRONG:
        r.data[5] += 1.0
    if self.manifest.name in NONDET:
        calls["n"] += 1
        r.data[0] += 1e-9 * calls["n"]
    c.data[:] = r.data


def main():
    out = sys.argv[1]
    weft.core.Kernel._launch_trusted = fake_launch
    G.Bench.copy_rate = lambda self: 4.0e12
    shapes = [S.shape("bf16", 3, 16, 8, "col", [("llama3-8b", "t")]), S.shape("f16", 260, 8, 8, "row", [("square", "t")])]
    S.select = lambda **kw: shapes
    ctx = weft.core.Context()
    for s in shapes:
        a = ctx.auto(G.user_config(s), G.shape_of(s), candidates=8)
        WRONG.update(a.names[1:2])
        NONDET.update(a.names[2:3])
        a.close()
    ctx.close()
    # the clock sampler's path: torch's device properties and an nvidia-smi that writes a sample
    # line of this GPU every 20 ms, and one of another GPU (left out by UUID)
    import types
    torch.cuda.get_device_properties = lambda i: types.SimpleNamespace(uuid="GPU-fake", multi_processor_count=132)
    bindir = os.path.join(out, "bin")
    os.makedirs(bindir, exist_ok=True)
    with open(os.path.join(bindir, "nvidia-smi"), "w") as fh:
        fh.write('#!/bin/sh\nwhile [ $# -gt 1 ] && [ "$1" != -f ]; do shift; done\n'
                 'while :; do d=$(date "+%Y/%m/%d %H:%M:%S.%N" | cut -c1-23)\n'
                 '  echo "$d, GPU-fake, 1755, 600.5, 60, 0x0000000000000004" >> "$2"\n'
                 '  echo "$d, GPU-other, 345, 70.0, 30, 0x0000000000000001" >> "$2"; sleep 0.02; done\n')
    os.chmod(os.path.join(bindir, "nvidia-smi"), 0o755)
    os.environ["PATH"] = bindir + os.pathsep + os.environ["PATH"]
    sys.argv = ["gemm_llm.py", "--out", out, "--iters", "4", "--rounds", "4", "--heat-ms", "0", "--jobs", "2"]
    rc = G.main()
    import json
    res = json.load(open(os.path.join(out, "gemm_llm.json")))["results"]
    bad = []
    for r in res:
        for name, why in r["fails"].items():
            want = "sampled outputs off" if name in WRONG else "NOT DETERMINISTIC" if name in NONDET else None
            if not want or want not in why:
                bad.append("%s %s: %s" % (r["key"], name, why))
        names = set(r["weft"]) | set(r["fails"])
        for name in names:
            if (name in WRONG or name in NONDET) and name not in r["fails"]:
                bad.append("%s %s: should have FAILED" % (r["key"], name))
        if not r.get("best_name") or r["best_name"] in r["fails"] or r.get("lt_us") is None:
            bad.append("%s: best %s, cuBLASLt %s" % (r["key"], r.get("best_name"), r.get("lt_us")))
    if not any(n in WRONG for r in res for n in r["fails"]) or not any(n in NONDET for r in res for n in r["fails"]):
        bad.append("no wrong candidate was run: the test checks nothing")
    for f in ("gemm_llm.tsv", "gemm_llm_kernels.tsv"):
        if not os.path.getsize(os.path.join(out, f)):
            bad.append(f + " empty")
    import smi_clock
    got = smi_clock.read_samples(os.path.join(out, "smi.csv"), "GPU-fake")
    if len(got) < 3 or any(x[1] != 1755 for x in got):
        bad.append("the sampler read %d samples of this GPU (%s): want several, all at 1755 MHz" % (len(got), got[:2]))
    for r in res:
        if len(r.get("lt_rounds", [])) != 4 or r.get("best_lo") is None:
            bad.append("%s: rounds %s, best's range %s" % (r["key"], r.get("lt_rounds"), r.get("best_lo")))
    for b in bad:
        print("WRONG:", b)
    return 1 if rc or bad else 0


if __name__ == "__main__":
    sys.exit(main())
