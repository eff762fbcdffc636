#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with build/ carried from the development
# machine: ctest's files hold absolute paths, so the tree is made visible at the path it was
# built at (WEFT_BUILT_AT, else the path build/CTestTestfile.cmake names).  Full logs go to $OUT.
#   bash bench/device_tests.sh [CTEST ARGS...]   the GPU tests (ctest -L gpu), ARGS narrowing them
#   SKIP_PASSED="LOG..."  leave out the tests these earlier ctest logs show passed: the MPS tests run
#                         one at a time (about 22 minutes of the whole), more than one device call
#                         holds, so the next call goes on where the last stopped.  The tests left
#                         are named exactly (-R '^(name|...)$'), as ARGS selected them.
#   LIST_ONLY=1           list the tests that would run (ctest -N), run none.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
built_at=$(link_built_at "$(pwd)") || exit 1
out=${OUT:-/tmp/out}
mkdir -p "$out"
logs=()
for f in ${SKIP_PASSED:-}; do   # (read before the cd below: the logs' paths may be relative)
  [ -r "$f" ] || { echo "device_tests.sh: SKIP_PASSED: cannot read '$f' (a ctest log of an earlier call)" >&2; exit 2; }
  logs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
cd "$built_at/build" || exit 1
if [ ${#logs[@]} -gt 0 ]; then
  export LC_ALL=C   # (sort and comm alike)
  names() { sed -n 's/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p'; }
  passed=$(grep -hE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: [^ ]+ \.* +Passed' "${logs[@]}" |
           sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .*$/\1/' | sort -u)
  left=$(ctest -N -L gpu "$@" | names | sort -u | comm -23 - <(printf '%s\n' "$passed" | grep .))
  echo "SKIP_PASSED: $(printf '%s\n' "$passed" | grep -c .) passed in ${#logs[@]} log(s); $(printf '%s\n' "$left" | grep -c .) selected tests left"
  if [ -z "$left" ]; then echo "every selected test passed already"; exit 0; fi
  re=$(printf '%s\n' "$left" | sed 's/[][\.*^$+?(){}|/]/\\&/g' | paste -sd'|')
  set -- -R "^($re)\$"
fi
if [ "${LIST_ONLY:-0}" = 1 ]; then exec ctest -N -L gpu "$@"; fi
ctest -L gpu -j "${JOBS:-12}" --output-on-failure --timeout 300 "$@" 2>&1 | tee "$out/ctest_gpu.log" | tail -40
exit "${PIPESTATUS[0]}"   # ctest's status: a failed test fails the script (it was tail's, always 0)
