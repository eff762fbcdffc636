#!/usr/bin/env bash
# bench/diag_gemm_bounds.sh: where a GEMM tile's main loop spends its time (a diagnostic, not a
# kernel weft ships).  Patched copies of the sources (WEFT_SOURCE_DIR) are timed beside the real
# kernel (those that skip work unchecked):
#   noload: the producer arrives on each stage's full barrier without loading (the consumers'
#           WGMMAs and the ring's hand-shakes alone: the compute + protocol bound);
#   nomma:  the consumers wait for each stage and release it without multiplying (TMA and the
#           ring alone: the load bound).
#   depth2: two groups of WGMMAs in flight instead of one (each k-block's stage released two
#           k-blocks later): whether a consumer's k-block waits on the WGMMAs' latency (small
#           swapped tiles: m64 n40 k16 x 4 a k-block).  It computes: checked like real.
#   nored:  split-K without its sum: every CTA of a cluster skips the hand-over and rank 0
#           stores its own partial whole (the cost of weft/gemm_splitk.cuh's sums).  Unchecked.
#   rowcol: in a 2-d multicast cluster (CM x CN), a consumer warp releases its stage to the CTAs
#           that write into it (its cluster row, which sends A, and its column, which sends B:
#           CM + CN - 1) instead of to all CM x CN; a producer then waits for those alone.
#           Whether the whole cluster's lock-step is what slows weft's 4 x 2.  It computes.
#   noepi:  the consumers store nothing (no epilogue, swapped or not): what C's stores cost the
#           tensor cores between tiles, where the cooperative consumers stop multiplying to store.
#           Unchecked.  (A store under a condition that never holds keeps the accumulators read:
#           without it ptxas dropped the WGMMAs too, and 3072^3 ran above the GPU's peak.)
# Patches combine with '+'; a patch that finds nothing to change stops the script.  Usage (GPU
# machine, build/ built):
#   DIAG_KINDS="real noload nomma" DIAG_SHAPES="--time-shape ..." bench/diag_gemm_bounds.sh "CONFIG SETS" ...
# DIAG_PATCH_ONLY=1: make the patched copies (under $DIAG_TMP, default /tmp) and stop: the
# host test that the patches still find what they change in the kernel's headers.
set -u
W=$(pwd)/build/weft
O=${OUT:-/tmp/out}
mkdir -p "$O"
. bench/env.sh
shapes=${DIAG_SHAPES:---time-shape 1024x1024x1024 --time-shape 1024x1024x256 --time-shape 8192x1024x1024}
for kind in ${DIAG_KINDS:-real noload nomma}; do
  src=$(pwd)
  if [ $kind != real ]; then
    src=${DIAG_TMP:-/tmp}/weft_diag_${kind//+/_}
    rm -rf "$src" && mkdir -p "$src" && cp -r gen templates "$src"/
    python3 - "$src/templates/weft" $kind <<'PY' || exit 1
import re, sys
d, kinds = sys.argv[1], sys.argv[2].split("+")
def patch(name, edit):
    p = d + "/" + name
    s = open(p).read()
    open(p, "w").write(edit(s))
def noload(s):
    # the producer's k-loop (weft/gemm_kernel.cuh): arrive (count 1) instead of announcing bytes
    # and loading them
    a = s.index("mbar_arrive_expect(full, Ring<Cfg>::STAGE_BYTES);")
    b = s.index("p.next();", a)
    return s[:a] + "mbar_arrive(full);\n            " + s[b:]
def nomma(s):
    # the consumers' main loop (weft/gemm_mainloop.cuh): wait for each stage, release it, multiply nothing
    s, n = re.subn(r"\n *consume_kblock<Cfg, MR>\([^;]*;", "", s)
    assert n == 1, "consume_kblock calls in the main loop: %d, not 1" % n
    return s
def depth2(s):
    # the consumers' main loop (weft/gemm_mainloop.cuh): wait<2>, release the stage two k-blocks
    # back; after the loop, wait<1> releases that one, and mainloop_drain the last as before
    s = s.replace("int prev = -1;\n", "int prev = -1, prev2 = -1;\n", 1)
    old = "    wgmma_wait<1>();"
    a = s.index(old)
    b = s.index("p.next();", a)
    s = s[:a] + "    wgmma_wait<2>();\n    if (prev2 >= 0) release(prev2);\n    prev2 = prev;\n    prev = p.s;\n    " + s[b:]
    a = s.index("  return prev;\n}", a)
    s = s[:a] + "  wgmma_wait<1>();\n  if (prev2 >= 0) release(prev2);\n" + s[a:]
    assert s.count("wgmma_wait<2>") == 1 and s.count("prev2") == 6, "depth2: the main loop changed shape"
    return s
def rowcol(s):
    # the kernel (weft/gemm_kernel.cuh): empty[s] counts the warps of the CTAs of this CTA's row and
    # column; each consumer warp's lanes 0 .. CM + CN - 2 arrive in those CTAs (its column's CM,
    # then its row's others)
    old = "ring.init(STAGE_WARPS * SHARE);"
    assert s.count(old) == 1, "rowcol: the ring's init changed"
    s = s.replace(old, "ring.init(STAGE_WARPS * (CM + CN - 1));")
    old = "if (lane < SHARE) mbar_arrive_remote(&ring.empty[st], (u32)lane);"
    assert s.count(old) == 1, "rowcol: the release changed"
    new = ("if (lane < CM + CN - 1) {\n"
           "          const int rcm = crank % CM, rcn = crank / CM, j = lane - CM;\n"
           "          const int peer = lane < CM ? CM * rcn + lane : rcm + CM * (j < rcn ? j : j + 1);\n"
           "          mbar_arrive_remote(&ring.empty[st], (u32)peer);\n"
           "        }")
    return s.replace(old, new)
def noepi(s):
    # the kernel (weft/gemm_kernel.cuh): the tile's last store statement (swapped, a source's own,
    # or the epilogue) gone; the accumulators are still drained and zeroed as before
    a = s.index("      if constexpr (SWAP) store_tile_swapped<")
    b = s.index("epilogue<Cfg, MR, WG_ROWS, Src::SHARDED>(", a)
    b = s.index(");", b) + 2
    # (ptxas drops WGMMAs whose results nothing reads, the whole main loop's with them: a store
    # that never runs -- C's rows are never negative -- keeps every 64-row group's live)
    sink = ("      (void)r0;   // noepi: no store\n"
            "      if (ms < 0) {\n"
            "        float sink = 0.f;\n"
            "        for (int mi = 0; mi < MR; ++mi) sink += acc[mi][0];\n"
            "        c[threadIdx.x] = from_f32<typename Cfg::T>(sink);\n"
            "      }")
    return s[:a] + sink + s[b:]
def nored(s):
    # the kernel (weft/gemm_kernel.cuh): a split tile's rank 0 stores its own partial whole, the
    # others store nothing (no tree, no flat sum)
    a = s.index("if constexpr (SPLITK > 1) {")
    b = s.index("if constexpr (Cfg::STREAM_K) {", a)
    assert "sk.template combine" in s[a:b] and "sk.template scatter" in s[a:b], "nored: the split-K hand-over changed"
    return s[:a] + "if constexpr (SPLITK > 1) {\n        if (w.split && crank != 0) continue;\n      }\n      " + s[b:]
for kind in kinds:
    if kind == "nored": patch("gemm_kernel.cuh", nored)
    elif kind == "noepi": patch("gemm_kernel.cuh", noepi)
    elif kind == "rowcol": patch("gemm_kernel.cuh", rowcol)
    elif kind == "noload": patch("gemm_kernel.cuh", noload)
    elif kind == "nomma": patch("gemm_mainloop.cuh", nomma)
    elif kind == "depth2": patch("gemm_mainloop.cuh", depth2)
    else: sys.exit("unknown patch " + kind)
PY
    [ "${DIAG_PATCH_ONLY:-0}" = 1 ] && { echo "patched: $src"; continue; }
  fi
  [ "${DIAG_PATCH_ONLY:-0}" = 1 ] && continue
  for cfg in "$@"; do
    sets=$(set_args "$cfg")
    echo "== $kind: $cfg"
    chk="--shape 1000x1000x1000"   # checked on an uneven shape too, unless it computes nothing right
    case $kind in *noload*|*nomma*|*nored*|*noepi*) chk=--no-check;; esac
    # shellcheck disable=SC2086
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_diag_cache_${kind//+/_} $W run examples/gemm.lua $sets $chk --shapes-only \
      $shapes --iters 30 2>&1 | tee -a "$O/diag_${kind//+/_}.log" | grep -E "^ag_gemm|rror|check: .*(PASS|FAIL)"
  done
done
