#!/usr/bin/env bash
# The main job: set up, then generate and compile every example (build/examples/: .cu, .json,
# .ptx, .cubin), and run each one -- random data, checked against a CPU reference, timed --
# when this machine has a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=build/examples
mkdir -p "$out"
status=0
for cfg in examples/*.lua; do
  echo "== weft build $cfg"
  build/weft build "$cfg" -o "$out" || status=1
done
for cfg in examples/*.lua; do
  echo "== weft run $cfg"
  set +e
  build/weft run "$cfg"
  rc=$?
  set -e
  if [ $rc -eq 77 ]; then
    echo "(no GPU here: the examples were generated and compiled, not run)"
    break
  fi
  [ $rc -eq 0 ] || status=1
done
exit $status
