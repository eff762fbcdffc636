#!/usr/bin/env python3
"""bench/auto/grid.py: the shapes and search spaces of issue 18's proof for the row families, in one
place.  It writes the sweep files bench/auto/<variant>_<dtype>.lua (`weft tune` reads them; the
shipped table tune/h200.tsv is exported from what they measure) and bench/auto_rows.py imports
the same shape lists, so the sweep and the check can never disagree on the published set.

  python3 bench/auto/grid.py --write              rewrite the sweep files
  python3 bench/auto/grid.py --list               the published set, per variant
  python3 bench/auto/grid.py --estimate [--weft build/weft]
                                                  count every sweep's candidates (weft tune --no-run
                                                  --budget 1: the expansion is printed before
                                                  compiling) and estimate the device time

Variants: row_softmax; row_reduce op = sum and op = max; rmsnorm residual = false and true.
The published set per variant: the 36 (tokens, width) pairs of the issue's grid, each at one
dtype (f32 / f16 / bf16 in turn along the diagonals, so each dtype meets every token count and
every width), without the pairs whose input tensor exceeds MAX_TENSOR; plus the shapes of
bench/RESULTS.md's row tables for that variant.
"""
import argparse, os, re, subprocess, sys

TOKENS = [1, 16, 128, 1024, 4096, 16384]
WIDTHS = [4096, 32000, 50257, 128256, 151936, 262144]
DTYPES = ["f32", "f16", "bf16"]
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
MAX_TENSOR = 1 << 30        # bytes per input tensor: larger pairs are left out (listed by --list)
SMS = 132
HERE = os.path.dirname(os.path.abspath(__file__))

# variant -> (family, key fields set in every candidate's sets, so the tuning DB keeps rows of
# different ops / residual apart: its key is family, dtype and shape only)
VARIANTS = {
    "row_softmax": ("row_softmax", {}),
    "row_reduce_sum": ("row_reduce", {"op": "sum"}),
    "row_reduce_max": ("row_reduce", {"op": "max"}),
    "rmsnorm": ("rmsnorm", {"residual": False, "eps": 1e-6}),
    "rmsnorm_res": ("rmsnorm", {"residual": True, "eps": 1e-6}),
}

# bench/RESULTS.md's row tables (Rows run 4, the autotune sweeps, rmsnorm) and issue 18's own
# examples: (variant, dtype, rows, cols).  32 x 1048576 is the streaming shape.
RESULTS_SHAPES = [
    ("row_softmax", "f32", 8192, 32768), ("row_softmax", "f32", 2048, 262144),
    ("row_softmax", "bf16", 4096, 262144), ("row_softmax", "f32", 32, 1048576),
    ("row_softmax", "f16", 8192, 50257), ("row_softmax", "bf16", 4096, 128256),
    ("row_reduce_sum", "f32", 8192, 32768), ("row_reduce_sum", "f32", 2048, 262144),
    ("row_reduce_sum", "bf16", 4096, 262144), ("row_reduce_sum", "f32", 32, 1048576),
    ("row_reduce_max", "bf16", 4096, 50257),
    ("rmsnorm", "bf16", 8192, 4096), ("rmsnorm", "bf16", 16384, 8192), ("rmsnorm", "f32", 4096, 16384),
    ("rmsnorm", "bf16", 4096, 7168), ("rmsnorm", "f32", 512, 65536),
    ("rmsnorm_res", "f16", 2048, 5120), ("rmsnorm_res", "f16", 1000, 4099), ("rmsnorm_res", "bf16", 16384, 2048),
]

# Off the grid (auto_rows.py only, never swept): a rule that memorises the table misses these.
OFF_GRID = [(48, 11008), (777, 70000), (3000, 200000), (48, 200000), (3000, 11008), (777, 4099),
            (5, 131072), (2500, 24576)]


def tensor_bytes(dtype, rows, cols):
    return rows * cols * ESIZE[dtype]


def over_limit(variant, dtype, cols):
    """Shapes no config of the family takes (the generator's own limit): rmsnorm keeps a row on
    chip, and an f32 row with the residual fits at most 16 CTAs x 512 threads x 7 vectors x 4.
    Never swept; auto_rows.py checks that auto refuses them with a message naming cols."""
    return variant == "rmsnorm_res" and dtype == "f32" and cols > 229376


def published(variant):
    """[(dtype, rows, cols)] of the grid for this variant (over MAX_TENSOR left out), then RESULTS'."""
    out = []
    for ti, t in enumerate(TOKENS):
        for wi, w in enumerate(WIDTHS):
            dt = grid_dtype(variant, ti, wi)
            if tensor_bytes(dt, t, w) <= MAX_TENSOR and not over_limit(variant, dt, w):
                out.append((dt, t, w))
    for v, dt, r, c in RESULTS_SHAPES:
        if v == variant and (dt, r, c) not in out:
            out.append((dt, r, c))
    return out


def grid_dtype(variant, ti, wi):
    """The dtype of grid point (ti, wi): the diagonals in turn, shifted to the next dtype where a
    sibling variant (same family) sweeps that dtype and shape for RESULTS (see check_keys)."""
    off = list(VARIANTS).index(variant)
    fam = VARIANTS[variant][0]
    for step in range(3):
        dt = DTYPES[(ti + wi + off + step) % 3]
        if not any(v != variant and VARIANTS[v][0] == fam and (d, r, c) == (dt, TOKENS[ti], WIDTHS[wi])
                   for v, d, r, c in RESULTS_SHAPES):
            return dt
    return dt


def limit_cases(variant):
    """Grid points outside the kernel's limits (see over_limit)."""
    return [(grid_dtype(variant, ti, wi), t, w) for ti, t in enumerate(TOKENS) for wi, w in enumerate(WIDTHS)
            if over_limit(variant, grid_dtype(variant, ti, wi), w)]


def left_out(variant):
    return [(grid_dtype(variant, ti, wi), t, w) for ti, t in enumerate(TOKENS) for wi, w in enumerate(WIDTHS)
            if tensor_bytes(grid_dtype(variant, ti, wi), t, w) > MAX_TENSOR]


def off_grid(variant):
    """[(dtype, rows, cols)] off the grid, dtypes in turn (16-bit where f32 would pass MAX_TENSOR)."""
    off = list(VARIANTS).index(variant)
    out = []
    for i, (r, c) in enumerate(OFF_GRID):
        dt = DTYPES[(i + off) % 3]
        if tensor_bytes(dt, r, c) > MAX_TENSOR:
            dt = "bf16"
        out.append((dt, r, c))
    return out


# ---- the sweep files ----------------------------------------------------------------------------
# `where` sees a candidate config only; the row count comes from per_shape, which
# gen/core/sweep.lua calls once per shape right before that shape's `where` calls, so the upvalue
# ROWS (and COLS) hold the shape being expanded.

HEAD = """-- bench/auto/{name}.lua: issue 18's full sweep of {what}, {dtype}, over the published
-- shapes (bench/auto/grid.py wrote it: edit grid.py and run it with --write, not this file).
-- `weft tune` measures every candidate; `weft tune --export` keeps the best per shape for
-- tune/h200.tsv.  `where` prunes what cannot win (it reads the shape through ROWS / COLS, which
-- per_shape sets: gen/core/sweep.lua runs per_shape for a shape right before its `where` calls).
local ROWS, COLS, L = 0, 0, 0
local SMS = {sms}
local V = {vec}          -- elements per 16-byte vector
-- each shape's level: the higher, the narrower its space (grid.py's LEVELS: what a candidate costs)
local LEVEL = {{ {levels} }}
-- the smallest cluster (a power of two, at most 16) that holds the row when each CTA holds
-- `vecs` 16-byte vectors (what the family's register budget allows at its best block size)
local function cmin(vecs)
  local c = 1
  while c < 16 and V * c * vecs < COLS do c = c * 2 end
  return c
end
"""

SOFTMAX = """return {{
  base = {{ family = "row_softmax", dtype = "{dtype}", nonportable = true }},
  space = {{
    mode = {{ "onchip", "tma", "stream" }},
    cluster = {{ 1, 2, 4, 8, 16 }},
    threads = {{ 128, 256, 512, 1024 }},
    min_blocks = {{ 1, 2 }},
    persistent = {{ false, true }},
    exchange = {{ "pull", "push" }},
    prefetch = {{ false, true }},
    unroll = {{ 2, 4, 8 }},
  }},
  where = function(c)
    if c.cluster == 1 and c.exchange == "push" then return false end   -- nothing to exchange
    if (c.mode == "stream") ~= (COLS > 262144) then return false end   -- rows past 256K stream
    if c.mode ~= "stream" and c.unroll ~= 4 then return false end      -- unroll is stream's
    if c.mode ~= "onchip" and c.prefetch then return false end
    -- one wave: persistent or not, the same launch; keep the persistent one (the rule's pick)
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end
    if c.threads == 128 and COLS > 65536 then return false end
    if c.min_blocks > 1 and (c.threads > 512 or c.mode == "tma") then return false end
    -- clusters from the smallest that holds the row in registers (a CTA holds at most ~13K
    -- vectors: 26 a thread at 512 threads) to 2x that; few rows may spread to 16
    local lo = cmin(13312)
    if c.mode ~= "stream" and c.cluster > 2 * lo and not (ROWS <= 16 and c.cluster <= 16) then return false end
    if c.mode == "stream" and ROWS * c.cluster < 2 * SMS and c.cluster < 16 then return false end
    -- the next row is prefetched (tma, prefetch) only where a CTA loops over rows
    if (c.mode == "tma" or c.prefetch) and not c.persistent then return false end
    local span = c.cluster * c.threads * V
    if c.mode ~= "stream" then
      if span > COLS then return false end                              -- idle threads
      local pt = (COLS + span - 1) // span                              -- vectors per thread
      if c.prefetch and (pt > 8 or ROWS * c.cluster <= SMS) then return false end
      if c.mode == "tma" and pt > 16 then return false end
    end
{extra}    return true
  end,
  shapes = {{
{shapes}  }},
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return {{ max_cols = s.cols <= 262144 and s.cols or 0 }}
  end,
}}
"""

REDUCE = """return {{
  base = {{ family = "row_reduce", dtype = "{dtype}", op = "{op}", nonportable = true }},
  space = {{
    cluster = {{ 1, 2, 4, 8, 16 }},
    threads = {{ 128, 256, 512, 1024 }},
    unroll = {{ 1, 2, 4, 8 }},
    min_blocks = {{ 1, 2, 4, 8 }},
    persistent = {{ false, true }},
    exchange = {{ "pull", "push" }},
  }},
  where = function(c)
    if c.cluster == 1 and c.exchange == "push" then return false end
    if c.threads * c.min_blocks > 2048 then return false end
    if c.min_blocks > 1 and c.threads * c.min_blocks < 1024 then return false end   -- half an SM or more
    if c.unroll == 1 then return false end
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks then return false end   -- one wave: as above
    if c.cluster * c.threads * V * c.unroll > 2 * COLS then return false end   -- loads past the row
    if c.cluster > 1 and ROWS >= 1024 and c.cluster > 4 then return false end  -- rows enough for every SM
    -- few rows: spread them over more CTAs, while a doubled cluster still has a row to read
    if c.cluster < 16 and ROWS * c.cluster * 4 < SMS and 2 * c.cluster * 128 * V * 2 <= COLS then return false end
    if c.exchange == "push" and (ROWS > 16 or c.cluster < 8) then return false end   -- a wide combine, few rows
    -- clusters up to 4x the smallest that spreads the rows over the SMs
    local spread = 1
    while spread < 16 and ROWS * spread * 4 < SMS do spread = spread * 2 end
    if c.cluster > 4 * spread then return false end
{extra}    return true
  end,
  shapes = {{
{shapes}  }},
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return {{ op = "{op}" }}
  end,
}}
"""

RMSNORM = """return {{
  base = {{ family = "rmsnorm", dtype = "{dtype}", residual = {residual}, eps = 1e-6, nonportable = true }},
  space = {{
    cluster = {{ 1, 2, 4, 8, 16 }},
    threads = {{ 128, 256, 512, 1024 }},
    rows_per_cta = {{ 1, 2, 4, 8 }},
    min_blocks = {{ 1, 2 }},
    persistent = {{ false, true }},
    exchange = {{ "pull", "push" }},
  }},
  where = function(c)
    if c.cluster > 1 and c.rows_per_cta > 1 then return false end     -- a cluster takes whole CTAs
    if c.cluster == 1 and c.exchange == "push" then return false end
    local group = c.threads // c.rows_per_cta
    if c.cluster * group * V > COLS then return false end               -- idle threads
    if c.rows_per_cta > 1 and (ROWS < SMS * c.rows_per_cta or COLS > 16384) then return false end
    if not c.persistent and ROWS * c.cluster <= SMS * c.min_blocks * c.rows_per_cta then return false end
    local lo = cmin({cta_vecs})                                         -- the row in one cluster's registers
    if c.cluster > math.max(4, 2 * lo) then return false end
{extra}    return true
  end,
  shapes = {{
{shapes}  }},
  per_shape = function(s)
    ROWS, COLS, L = s.rows, s.cols, LEVEL[s.rows .. "x" .. s.cols]
    return {{ max_cols = s.cols, residual = {residual} }}
  end,
}}
"""

# Pruning by what a candidate costs on the device machine: weft tune fills the whole input on the
# host and copies it over for every candidate, so a candidate of a 2 GB shape costs 1-6 s where
# one of a 1 MB shape costs ~0.05 s.  Each shape gets a level (LEVELS: seconds per candidate, from
# cand_seconds); the higher the level, the narrower the space around what RESULTS and the small
# shapes found.  Level 0 keeps the whole pruned space.
LEVELS = [0.05, 0.15, 0.4, 1.5]

EXTRA = {
    "row_softmax": """    if L >= 1 and (c.threads < 256 and ROWS > 4096 or c.prefetch and c.mode == "onchip" and COLS > 65536) then
      return false
    end
    if L >= 2 then
      if c.min_blocks > 1 or c.prefetch or c.cluster > 2 * lo then return false end
      if c.mode == "tma" and not c.persistent then return false end
    end
    if L >= 3 then
      if c.mode ~= "onchip" or c.threads < 512 or c.cluster < lo or not c.persistent and ROWS * c.cluster > SMS then
        return false
      end
      if c.cluster > 1 and c.exchange == "pull" then return false end
    end
    if L >= 4 and c.threads ~= 1024 then return false end
""",
    "row_reduce": """    if L >= 1 and (c.threads < 256 and c.min_blocks == 2 or c.unroll < 4 and COLS > 16384) then return false end
    if c.min_blocks > 1 and c.threads >= 512 and c.threads * c.min_blocks > 1024 then return false end
    if ROWS >= 1024 and c.cluster > 2 and COLS <= 65536 then return false end
    local wide = COLS > 16384   -- a short row takes 256 threads x 4 vectors in a pass
    if L >= 2 and (c.unroll < 4 or c.threads < (wide and 512 or 256) and not (c.threads == 128 and c.min_blocks == 1)
                   or c.min_blocks > 2) then return false end
    if L >= 3 then
      if c.threads ~= (wide and 512 or 256) or c.min_blocks ~= 2048 // c.threads // 2 or c.unroll ~= (wide and 8 or 4) then
        return false
      end
      if c.cluster ~= 1 and c.cluster ~= (COLS > 65536 and 4 or 2) then return false end
    end
    if L >= 4 and not c.persistent then return false end
""",
    "rmsnorm": """    if L >= 1 and c.threads < 256 and COLS > 8192 then return false end
    if L >= 2 and (c.threads < 256 or c.rows_per_cta > 2 or c.min_blocks > 1) then return false end
    if L >= 3 then
      if c.threads > 512 or c.rows_per_cta > 1 or c.persistent then return false end
      if c.cluster > 1 and c.exchange == "pull" then return false end
    end
    if L >= 4 and c.threads ~= 512 then return false end
""",
}


def level(variant, dtype, rows, cols):
    t = cand_seconds(variant, dtype, rows, cols, 20)
    return sum(1 for x in LEVELS if t > x)


def sweep_name(variant, dtype):
    return "%s_%s" % (variant, dtype)


def sweep_text(variant, dtype, shapes):
    fam, keys = VARIANTS[variant]
    lines = "".join("    { rows = %d, cols = %d },\n" % (r, c) for r, c in shapes)
    what = {"row_softmax": "row_softmax", "row_reduce_sum": "row_reduce op = sum",
            "row_reduce_max": "row_reduce op = max", "rmsnorm": "rmsnorm",
            "rmsnorm_res": "rmsnorm residual = true"}[variant]
    levels = ", ".join('["%dx%d"] = %d' % (r, c, level(variant, dtype, r, c)) for r, c in shapes)
    head = HEAD.format(name=sweep_name(variant, dtype), what=what, dtype=dtype, sms=SMS, vec=16 // ESIZE[dtype],
                       levels=levels)
    extra = EXTRA[fam].format(esize=ESIZE[dtype])
    if fam == "row_softmax":
        body = SOFTMAX.format(dtype=dtype, shapes=lines, extra=extra)
    elif fam == "row_reduce":
        body = REDUCE.format(dtype=dtype, op=keys["op"], shapes=lines, extra=extra)
    else:
        body = RMSNORM.format(dtype=dtype, residual="true" if keys["residual"] else "false", shapes=lines,
                              extra=extra, cta_vecs=4096 if keys["residual"] else 6656)
    return head + body


def check_keys():
    """The tuning DB and the table key a row by family, dtype and shape, not by op or residual:
    two variants of one family must never sweep the same dtype and shape, or `weft tune --export`
    would keep one variant's best for both.  The diagonal dtype order keeps them apart."""
    seen = {}
    for v in VARIANTS:
        for dt, r, c in published(v):
            k = (VARIANTS[v][0], dt, r, c)
            if k in seen and seen[k] != v:
                sys.exit("grid.py: %s and %s both sweep %s %s %dx%d" % (seen[k], v, *k))
            seen[k] = v


def sweeps():
    """[(variant, dtype, path, [(rows, cols)])]: one sweep file per variant and dtype."""
    check_keys()
    out = []
    for v in VARIANTS:
        for dt in DTYPES:
            shapes = [(r, c) for d, r, c in published(v) if d == dt]
            if shapes:
                out.append((v, dt, os.path.join(HERE, sweep_name(v, dt) + ".lua"), shapes))
    return out


# ---- the device-time estimate ---------------------------------------------------------------------
# Calibrated on RESULTS' "Autotune sweeps" run (row_softmax, 222 kernels, 77 s of runs): per
# candidate a fixed cost, twice the host fill + copy of the whole input (the timing run; the
# check run fills 16 rows), and 2 x (iters + 3) launches of the kernel and of the copy baseline.
FILL_PER_S = {"f32": 2.5e9, "bf16": 2.5e9, "f16": 0.8e9}   # elements (16 threads); f16's conversion is slow
FIXED_S = 0.05
COMPILE_S = 0.5          # one cold compile per thread: RESULTS saw 240 kernels in 7.5 s on 16 threads (here: 0.6-0.8 s on one core)


def inputs(variant, dtype, rows, cols):
    """(elements filled on the host, bytes moved by one launch)"""
    n = rows * cols
    e = ESIZE[dtype]
    if variant == "row_softmax":
        return n, 2 * n * e
    if variant.startswith("row_reduce"):
        return n, n * e + rows * 4
    if variant == "rmsnorm":
        return n + cols, 2 * n * e + cols * e
    return 2 * n + cols, 4 * n * e + cols * e   # x and r read, h and y written


def cand_seconds(variant, dtype, rows, cols, iters):
    n, moved = inputs(variant, dtype, rows, cols)
    fill = n / FILL_PER_S[dtype] + n * ESIZE[dtype] / 20e9
    check = 16 * cols * (2 if variant == "rmsnorm_res" else 1) / 0.2e9
    launches = 2 * (iters + 3) * (moved / 3.8e12 + 4e-6)
    return FIXED_S + 2 * fill + check + launches


COUNT_RE = re.compile(r"^\s+cols=(\d+) rows=(\d+): .* (\d+) candidates$")


def count(weft, path, cache):
    env = dict(os.environ, WEFT_CACHE_DIR=cache)
    p = subprocess.run([weft, "tune", path, "--no-run", "--budget", "1", "--jobs", "1", "-o", cache],
                       capture_output=True, text=True, env=env)
    got = {}
    for line in p.stdout.splitlines():
        m = COUNT_RE.match(line)
        if m:
            got[(int(m.group(2)), int(m.group(1)))] = int(m.group(3))
    if not got:
        sys.exit("%s: no counts from weft tune (rc %d):\n%s%s" % (path, p.returncode, p.stdout, p.stderr))
    return got


def estimate(weft, iters, jobs):
    cache = "/tmp/weft-auto-grid-count"
    os.makedirs(cache, exist_ok=True)
    tot_c = tot_run = 0
    tsv = ["# bench/auto/grid.py --estimate: per sweep, kernels (candidates + the base per shape) and run seconds",
           "sweep\tshapes\tkernels\trun_s"]
    print("%-22s %6s %7s %8s   shapes" % ("sweep", "shapes", "kernels", "run s"))
    for v, dt, path, shapes in sweeps():
        got = count(weft, path, cache)
        kern = sum(got.values()) + len(got)   # + the base config per shape (weft tune runs it too)
        run = sum((got[(r, c)] + 1) * cand_seconds(v, dt, r, c, iters) for r, c in shapes)
        tot_c += kern
        tot_run += run
        tsv.append("%s\t%d\t%d\t%.1f" % (os.path.basename(path), len(shapes), kern, run))
        print("%-22s %6d %7d %8.1f   %s" % (os.path.basename(path), len(shapes), kern, run,
              " ".join("%dx%d:%d" % (r, c, got[(r, c)]) for r, c in shapes)))
    with open(os.path.join(HERE, "estimate.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")
    comp = tot_c * COMPILE_S / jobs
    print("total: %d kernels; compile ~%.0f s on %d threads (%.1f s each); runs ~%.0f s (iters %d); "
          "sum ~%.0f s" % (tot_c, comp, jobs, COMPILE_S, tot_run, iters, comp + tot_run))


def check(weft):
    """CI (no GPU): the sweep files are what this script writes, no two variants share a DB key,
    and every shape of every sweep keeps at least one candidate (counted by weft tune; nothing is
    compiled: WEFT_NO_COMPILE=1).  Exit status 1 on the first problem."""
    cache = os.environ.get("TMPDIR", "/tmp") + "/weft-auto-grid-check-%d" % os.getpid()
    os.makedirs(cache, exist_ok=True)
    bad = 0
    for v, dt, path, shapes in sweeps():
        want = sweep_text(v, dt, shapes)
        have = open(path).read() if os.path.exists(path) else None
        if have != want:
            print("%s: not what bench/auto/grid.py writes: run python3 bench/auto/grid.py --write" % path)
            bad = 1
            continue
        env = dict(os.environ, WEFT_CACHE_DIR=cache, WEFT_NO_COMPILE="1")
        p = subprocess.run([weft, "tune", path, "--no-run", "--jobs", "1", "-o", cache], capture_output=True,
                           text=True, env=env)
        got = {}
        for line in p.stdout.splitlines():
            m = COUNT_RE.match(line)
            if m:
                got[(int(m.group(2)), int(m.group(1)))] = int(m.group(3))
        for r, c in shapes:
            if got.get((r, c), 0) < 1:
                print("%s: shape %dx%d has no candidate (%s)" % (path, r, c, "counted 0" if (r, c) in got else
                                                                 "not in weft tune's output:\n" + p.stdout[-2000:] + p.stderr[-2000:]))
                bad = 1
        print("%s: %d shapes, %d candidates" % (os.path.basename(path), len(shapes), sum(got.values())))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--estimate", action="store_true")
    ap.add_argument("--check", action="store_true", help="CI: files up to date, keys apart, no empty shape")
    ap.add_argument("--weft", default="build/weft")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=16)
    a = ap.parse_args()
    if a.write:
        for v, dt, path, shapes in sweeps():
            with open(path, "w") as f:
                f.write(sweep_text(v, dt, shapes))
            print("wrote %s (%d shapes)" % (os.path.relpath(path), len(shapes)))
    if a.list:
        for v in VARIANTS:
            p = published(v)
            print("%s: %d shapes: %s" % (v, len(p), " ".join("%s:%dx%d" % s for s in p)))
            print("  left out (input over %d GiB): %s" % (MAX_TENSOR >> 30, " ".join("%s:%dx%d" % s for s in left_out(v))))
            print("  off the grid: %s" % " ".join("%s:%dx%d" % s for s in off_grid(v)))
            if limit_cases(v):
                print("  outside the kernel's limits (auto must refuse): %s" % " ".join("%s:%dx%d" % s for s in limit_cases(v)))
    if a.estimate:
        estimate(a.weft, a.iters, a.jobs)
    if a.check:
        sys.exit(check(a.weft))
    if not (a.write or a.list or a.estimate):
        ap.print_help()


if __name__ == "__main__":
    main()
