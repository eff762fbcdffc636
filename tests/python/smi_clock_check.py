"""bench/smi_clock.py's reading and averaging, and bench/gemm_llm.py's use of them (a shape's
clocks over its timed blocks, a ratio's per-round range in the list of misses), on a written
nvidia-smi file: no GPU, no torch.  Exit 0 or 1 with what differs."""
import datetime
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import gemm_llm as G  # noqa: E402
import smi_clock  # noqa: E402

bad = []


def want(what, got, exp):
    if got != exp:
        bad.append("%s: got %r, want %r" % (what, got, exp))


t0 = datetime.datetime(2026, 12, 6, 12, 0, 0)
lines = []
for i in range(10):   # every 100 ms: 1980 MHz for the first half second, then 1755
    t = t0 + datetime.timedelta(milliseconds=100 * i)
    stamp = t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    lines.append("%s, GPU-a, %d, %.1f, %d, 0x%04x" % (stamp, 1980 if i < 5 else 1755, 500.0 + i, 60 + i,
                                                     0 if i < 5 else 4))
    lines.append("%s, GPU-b, 345, 70.0, 30, 0x0001" % stamp)   # another GPU of the host: left out by UUID
lines.insert(3, "2026/12/06 12:00:00.250, GPU-a, [N/A], [N/A], 61, 0x0000")   # unreadable: left out
lines.append("2026/12/06 12:00:01.0")   # a cut last line
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "smi.csv")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    s = smi_clock.read_samples(path, "GPU-a")
    want("every GPU's lines without a UUID", len(smi_clock.read_samples(path)), 20)
base = t0.timestamp()
want("samples read", len(s), 10)
w = smi_clock.window(s, base, base + 0.45)
want("first half: MHz", w and round(w["mhz"]), 1980)
want("first half: samples, hottest", w and (w["n"], w["temp"]), (5, 64))
w = smi_clock.windows(s, [(base + 0.05, base + 0.15), (base + 0.75, base + 0.85)])
want("two spans: MHz", w and round(w["mhz"], 1), round((1980 + 1755) / 2, 1))
want("two spans: reasons", w and w["reasons"], "0x0000,0x0004")
want("no sample in a span", smi_clock.windows(s, [(base + 0.01, base + 0.02)]), None)
want("missing file", smi_clock.read_samples("/nonexistent/smi.csv"), [])

# gemm_llm.py: cuBLASLt 10 us in each round; best 10.5, 11, 10 -> ratios 0.952, 0.909, 1.0
r = {"key": "k", "lt_rounds": [10.0, 10.0, 10.0], "lt_spans": [(base + 0.05, base + 0.15)], "best_name": "w",
     "auto_name": "w", "weft": {"w": {"rounds": [10.5, 11.0, 10.0], "spans": [(base + 0.75, base + 0.85)]}}}
lo, hi = G.round_range(r, "w")
want("round range", (round(lo, 3), round(hi, 3)), (0.909, 1.0))
want("round range, no kernel", G.round_range(r, None), (None, None))
G.clocks([r], s)
want("clocks", (round(r["lt_mhz"]), round(r["best_mhz"]), round(r["auto_mhz"])), (1980, 1755, 1755))
r["best_lo"], r["best_hi"] = lo, hi
want("miss detail", G.miss_detail(r, "best"), " [0.909-1.000; 1755/1980 MHz]")
want("miss detail, nothing known", G.miss_detail({}, "auto"), "")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print("ok: smi_clock and gemm_llm's clocks")
