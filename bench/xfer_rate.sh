#!/usr/bin/env bash
# bench/xfer_rate.sh: split-K's ways to sum partial tiles (tree, flat, l2, bulk; bench/xfer_rate.cu
# says what each is), timed alone on the GPU machine.  Build here, carry build/bench:
#   bash bench/xfer_rate.sh --build        (nvcc -> build/bench/xfer_rate; 10 s on 2 cores)
# then on the GPU:  OUT=$OUT bash bench/xfer_rate.sh [LAUNCHES]   (xfer_rate.txt under $OUT)
# XFER_PTX=FILE bash bench/xfer_rate.sh --build writes the PTX too, and
# bash bench/xfer_rate.sh --check-ptx FILE says whether each way's kernels move their data as named
# (tree, flat: st.shared::cluster; l2: st.global and ld.global.cg, nothing into another CTA;
# bulk: cp.async.bulk into the peers, no thread's store there; none: no data): CI's
# bench.xfer_rate_ptx.
set -eu
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
BIN=${XFER_BIN:-build/bench/xfer_rate}
if [ "${1:-}" = "--build" ]; then
  mkdir -p "$(dirname "$BIN")"
  flags=(-arch=sm_90a -O3 -std=c++17 -I templates)
  "$NVCC" "${flags[@]}" -o "$BIN" bench/xfer_rate.cu
  "$NVCC" "${flags[@]}" -DXFER_ONE_FENCE=1 -o "${BIN}_fence1" bench/xfer_rate.cu   # one fence per hand-over
  "$NVCC" "${flags[@]}" -DXFER_ONE_FENCE=1 -DXFER_GO_PLAIN=1 -o "${BIN}_go" bench/xfer_rate.cu   # ... and a plain go
  if [ -n "${XFER_PTX:-}" ]; then "$NVCC" "${flags[@]}" -ptx -o "$XFER_PTX" bench/xfer_rate.cu; fi
  echo "built: $BIN"
  exit 0
fi
if [ "${1:-}" = "--check-ptx" ]; then
  # the entry's mode is its last template argument: exchange<S, J, MODE> mangles to ...ELi<MODE>EEv
  awk '
    function done_entry() {
      if (mode == "") return
      ok = 1
      if (mode == 0) ok = !dsm && !stg && !bulk
      if (mode == 1 || mode == 2) ok = dsm && !stg && !bulk
      if (mode == 3) ok = !dsm && stg && ldcg && !bulk
      if (mode == 4) ok = !dsm && !stg && bulk
      if (!ok) { printf "xfer_rate.sh: entry %s (mode %s) moves its data another way\n", name, mode; bad++ }
      n++
      mode = ""
    }
    /^\.visible \.entry|^\.entry/ {
      done_entry(); name = $0; dsm = stg = ldcg = bulk = 0
      mode = ""; if (match($0, /ELi[0-9]EEv/)) mode = substr($0, RSTART + 3, 1) + 0
    }
    /st\.shared::cluster\.v4/ { dsm = 1 }
    /st\.global\.v4\.f32/ { stg = 1 }
    /ld\.global\.cg\.v4/ { ldcg = 1 }
    /cp\.async\.bulk\.shared::cluster\.shared::cta/ { bulk = 1 }
    END { done_entry(); if (bad || n == 0) exit 1; printf "xfer kernels checked: %d\n", n }' "$2"
  exit
fi
[ -x "$BIN" ] || { echo "xfer_rate.sh: $BIN: not built (bash bench/xfer_rate.sh --build, then carry build/bench)" >&2; exit 1; }
O=${OUT:-/tmp/out}; mkdir -p "$O"
set -o pipefail
n=${1:-50}
case $n in ''|*[!0-9]*) echo "xfer_rate.sh: launches per case: $n: a whole number, 1..100000" >&2; exit 2 ;; esac
# ~100 cases of 2 n + 3 launches, each well under a millisecond; a hung exchange ends here
limit=$((60 + n / 100))
rc=0
timeout "$limit" "$BIN" "$n" 2>&1 | tee "$O/xfer_rate.txt" || rc=$?
[ "$rc" = 124 ] && echo "xfer_rate: timed out after $limit s (a hung exchange: the case after the last line above)" | tee -a "$O/xfer_rate.txt" >&2
exit "$rc"
