#!/usr/bin/env bash
# tests/mps/run.sh NP WEFT ARGS...: `weft run ARGS --no-time` on NP ranks sharing the one GPU
# under MPS.  Exit 77 (ctest SKIP) where there is no GPU; otherwise mpirun's status, which is
# non-zero if any rank failed.
set -u
np=$1 weft=$2
shift 2
[ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null || { echo "no GPU here: SKIP"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench/mps.sh"
exec timeout 600 $MPIRUN -x WEFT_CACHE_DIR -np "$np" "$weft" run "$@" --no-time
