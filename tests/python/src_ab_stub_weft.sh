#!/usr/bin/env bash
# A stand-in for `weft run` in bench.src_ab_run (no GPU): a check line where it is asked to check
# (--shape), and one timing row per --time-shape in weft run's table format, 90 us from this
# tree, 50 from a noepi copy (WEFT_SOURCE_DIR), cuBLASLt 85.  The noepi copy's rows end in FAIL and
# it exits 1, as `weft run` does where a copy that computes nothing right is timed.
set -u
t=90.00 verdict=ok rc=0
case ${WEFT_SOURCE_DIR:-} in *weft_diag_noepi) t=50.00 verdict=FAIL rc=1;; esac
while [ $# -gt 0 ]; do
  case $1 in
    --shape) echo "check: stub $2 PASS"; shift ;;
    --time-shape) IFS=x read -r m n k <<<"$2"
                  echo "ag_gemm  gemm              bf16 col $m $n $k  1    30  $t  $t  1.0  1.0  85.00  85.00  1.0  1.0  0.9  0.9  -  -  -  -  $verdict"
                  shift ;;
  esac
  shift
done
exit $rc
