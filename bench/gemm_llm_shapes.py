"""bench/gemm_llm_shapes.py: issue 19's published GEMM set (the "Targets" section), for bench/gemm_llm.py.

The linear layers of four models, C[M, N] = A[M, K] . W^T with W the nn.Linear weight (N x K,
b_layout = "col"), at M = tokens in flight.  N x K of each layer:

  Llama-3-8B    hidden 4096, 32 heads / 8 kv heads of 128, inter 14336
                  QKV  6144 x 4096   (4096 + 2 * 8 * 128)
                  O    4096 x 4096
                  gate/up 14336 x 4096 (each; the same N x K)
                  down 4096 x 14336
  Mixtral-8x7B  hidden 4096, 32 / 8 heads of 128, expert inter 14336: the same four N x K as
                  Llama-3-8B (one expert's gate/up/down), so every Mixtral layer dedupes into them
  Llama-3-70B   hidden 8192, 64 / 8 heads of 128, inter 28672
                  QKV 10240 x 8192   (8192 + 2 * 8 * 128)
                  O    8192 x 8192
                  gate/up 28672 x 8192
                  down 8192 x 28672
  Qwen2.5-72B   hidden 8192, 64 / 8 heads of 128, inter 29568
                  QKV 10240 x 8192 and O 8192 x 8192: the same as Llama-3-70B's
                  gate/up 29568 x 8192
                  down 8192 x 29568

Deduplicated: 10 distinct N x K (each row below names every model / layer that has it), at M in
{1, 16, 64, 128, 256, 1024, 4096, 16384}, in bf16 and f16: 160 shapes; plus the squares 1024^3,
3072^3, 4096^3 and 8192^3 with B row-major (K x N, torch.matmul's B) in each dtype: 168 in all.

--quick (QUICK below): bf16 only, 44 shapes: Llama-3-8B's gate/up (14336 x 4096) and down
(4096 x 14336) at every M (the issue's headline rows: decode and prefill of the most deployed
shapes), three of the other eight N x K at each M in rotation (so each of them runs at three
M spread over decode and prefill, and every model appears at small and large M), and the four
squares.
"""

MS = (1, 16, 64, 128, 256, 1024, 4096, 16384)
DTYPES = ("bf16", "f16")
SQUARES = (1024, 3072, 4096, 8192)

# (N, K, [(model, layer), ...]) in a fixed order; the models' short names are what --models takes
LAYERS = [
    (6144, 4096, [("llama3-8b", "qkv"), ("mixtral-8x7b", "qkv")]),
    (4096, 4096, [("llama3-8b", "o"), ("mixtral-8x7b", "o")]),
    (14336, 4096, [("llama3-8b", "gate/up"), ("mixtral-8x7b", "expert gate/up")]),
    (4096, 14336, [("llama3-8b", "down"), ("mixtral-8x7b", "expert down")]),
    (10240, 8192, [("llama3-70b", "qkv"), ("qwen2.5-72b", "qkv")]),
    (8192, 8192, [("llama3-70b", "o"), ("qwen2.5-72b", "o")]),
    (28672, 8192, [("llama3-70b", "gate/up")]),
    (8192, 28672, [("llama3-70b", "down")]),
    (29568, 8192, [("qwen2.5-72b", "gate/up")]),
    (8192, 29568, [("qwen2.5-72b", "down")]),
]
MODELS = ("llama3-8b", "llama3-70b", "qwen2.5-72b", "mixtral-8x7b", "square")

# --quick: indices into LAYERS.  2 and 3 at every M; the other eight three at a time, rotating
_ALWAYS = (2, 3)
_ROTATE = (0, 4, 8, 1, 5, 9, 6, 7)


def quick_layers(mi):
    """The LAYERS indices --quick runs at MS[mi]."""
    return _ALWAYS + tuple(_ROTATE[(3 * mi + j) % len(_ROTATE)] for j in range(3))


def label(owners):
    return ", ".join("%s %s" % (m, l) for m, l in owners)


def shape(dtype, m, n, k, b_layout, owners):
    return {"dtype": dtype, "m": m, "n": n, "k": k, "b_layout": b_layout, "owners": owners,
            "models": sorted({o[0] for o in owners}), "label": label(owners)}


def full_set():
    """Every shape of the published set: dtype-major (bf16 first), then the squares, then the
    layers by M (so a run cut by its budget keeps the small-M, decode rows of a dtype whole)."""
    out = []
    for dt in DTYPES:
        for s in SQUARES:
            out.append(shape(dt, s, s, s, "row", [("square", "%d^3" % s)]))
        for m in MS:
            for n, k, owners in LAYERS:
                out.append(shape(dt, m, n, k, "col", owners))
    return out


def quick_set():
    out = [shape("bf16", s, s, s, "row", [("square", "%d^3" % s)]) for s in SQUARES]
    for mi, m in enumerate(MS):
        for li in sorted(quick_layers(mi)):
            n, k, owners = LAYERS[li]
            out.append(shape("bf16", m, n, k, "col", owners))
    return out


def key(s):
    return "%dx%dx%d %s b%s" % (s["m"], s["n"], s["k"], s["dtype"], s["b_layout"])


def select(quick=False, dtypes=None, ms=None, models=None, limit=0):
    """The set (quick or full), filtered: dtypes / ms / models (lists; None = all).  A shape is kept
    when any of its owners is one of `models`."""
    base = quick_set() if quick else full_set()
    for what, got, allowed in (("--dtype", dtypes, DTYPES), ("--models", models, MODELS)):
        bad = [x for x in (got or []) if x not in allowed]
        if bad:
            raise ValueError("%s %s: allowed are %s" % (what, ",".join(bad), ", ".join(allowed)))
    out = []
    for s in base:
        if dtypes and s["dtype"] not in dtypes:
            continue
        # squares have their own M; --m filters the layer rows only
        if ms and s["b_layout"] == "col" and s["m"] not in ms:
            continue
        if models and not any(m in models for m in s["models"]):
            continue
        out.append(s)
    return out[:limit] if limit else out


if __name__ == "__main__":
    import sys
    for s in (quick_set() if "--quick" in sys.argv else full_set()):
        print("%-28s %s" % (key(s), s["label"]))
