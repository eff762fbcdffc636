#!/usr/bin/env bash
# bench/multi_gpu.sh: issue 6 on a machine with several GPUs (one rank per GPU).
#   1. the ceiling: nvidia-smi topo -m, peer access between every pair, copy bandwidth GPU0->GPU1;
#   2. correctness at P = number of GPUs: every op, f32 and bf16, one_shot and two_shot,
#      threadload and the emulated multimem twin, bit-identity, and the timeout test;
#   3. weft against NCCL, and against NCCL's symmetric kernels (same sizes, same timing) from 8 B
#      to 256 MB, launched plainly and with
#      pdl = true (PDL=0: plainly only; TORCH_REF=0 leaves out torch.distributed's reference rows;
#      CHECK_PDL_ONLY=1 checks only the pdl configs).
# PHASES: which of the three (default "ceiling check nccl").
# NVLink multicast stays off for everything started here.  Full logs under $OUT.
set -u
PHASES=${PHASES:-ceiling check nccl}
status=0   # the exit status: 1 when a check failed or a run did not complete (a skip is not a failure)
want() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
final=${OUT:-/tmp/out}
out=/tmp/weft-multi-gpu
rm -rf "$out"; mkdir -p "$out" "$final"
# every log comes back in one archive (the device tool returns a limited number of files)
trap 'tar czf "$final/multi_gpu_logs.tgz" -C "$out" . ; cp "$out"/compare.txt "$out"/ceiling.log "$final"/ 2>/dev/null' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
export WEFT_NCCL_LIB=${WEFT_NCCL_LIB:-$(nccl_lib_default)}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-mgpu-cache}
P=$(nvidia-smi -L | wc -l)
MPIRUN="$MPIRUN --bind-to none -x WEFT_CACHE_DIR"
W=build/weft
AR=examples/allreduce.lua
if want ceiling; then
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv
  nvidia-smi topo -m
  python3 - <<'PY'
import torch
n = torch.cuda.device_count()
for i in range(n):
    print(f"peer access from {i}:", [int(torch.cuda.can_device_access_peer(i, j)) if i != j else '-' for j in range(n)])
if n > 1:
    for src, dst in ((0, 1), (1, 0)):
        a = torch.empty(1 << 28, dtype=torch.float32, device=f"cuda:{src}")   # 1 GiB
        b = torch.empty_like(a, device=f"cuda:{dst}")
        for _ in range(3): b.copy_(a)
        torch.cuda.synchronize(src); torch.cuda.synchronize(dst)
        e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(src):
            e0.record()
            for _ in range(10): b.copy_(a)
            e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1) / 10
        print(f"copy GPU{src} -> GPU{dst}, 1 GiB: {ms:.3f} ms, {a.numel() * 4 / ms / 1e6:.1f} GB/s")
PY
} >"$out/ceiling.log" 2>&1
cat "$out/ceiling.log"
fi

# 2: correctness, one process per GPU (SKIP_CHECK=1 skips it)
pass=0 fail=0
if [ -z "${SKIP_CHECK:-}" ] && want check; then
check() {
  local name=$1; shift
  if timeout 300 $MPIRUN -np $P $W run "$@" --no-time >"$out/check_$name.log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name"; tail -5 "$out/check_$name.log"; fi
}
if [ -z "${CHECK_PDL_ONLY:-}" ]; then   # CHECK_PDL_ONLY=1: only the pdl configs below
for dt in f32 bf16; do
  for op in sum max min prod; do
    for algo in one_shot two_shot one_shot_ll; do check ${dt}_${op}_${algo} $AR --set dtype=$dt --set op=$op --set algo=$algo; done
  done
  check ${dt}_sum_multimem_emulated $AR --set dtype=$dt --set algo=two_shot --set comm=multimem --set fallback=emulate
done
check bf16_max_multimem_emulated $AR --set dtype=bf16 --set op=max --set algo=two_shot --set comm=multimem --set fallback=emulate
check custom tests/configs/allreduce_custom.lua
check custom_ll tests/configs/allreduce_custom.lua --set algo=one_shot_ll
fi
for dt in f32 bf16; do
  for algo in one_shot two_shot one_shot_ll; do check ${dt}_sum_${algo}_pdl $AR --set dtype=$dt --set algo=$algo --set pdl=true; done
done
echo "correctness at P=$P: $pass passed, $fail failed"
[ "$fail" -gt 0 ] && status=1
( export WEFT_FAULT="mute:$((P - 1)):ready" WEFT_SIGNAL_TIMEOUT_MS=300
  t0=$(date +%s%N)
  timeout 120 $MPIRUN -x WEFT_FAULT -x WEFT_SIGNAL_TIMEOUT_MS -np $P $W run $AR --no-time --elems 100000 >"$out/timeout.log" 2>&1
  echo "rc=$? elapsed $(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$out/timeout.log" )
grep -E "timed out|rc=" "$out/timeout.log"
grep -q "timed out" "$out/timeout.log" || { echo "FAIL: the muted rank's timeout was not reported"; status=1; }
( export WEFT_FAULT="mute:0:data" WEFT_SIGNAL_TIMEOUT_MS=300
  timeout 120 $MPIRUN -x WEFT_FAULT -x WEFT_SIGNAL_TIMEOUT_MS -np $P $W run $AR --set algo=one_shot_ll --no-time --elems 100000 >"$out/timeout_ll.log" 2>&1
  echo "rc=$?" >>"$out/timeout_ll.log" )
grep -E "timed out|rc=" "$out/timeout_ll.log"
grep -q "timed out" "$out/timeout_ll.log" || { echo "FAIL: the muted rank's timeout (one_shot_ll) was not reported"; status=1; }
fi

# 3: weft against NCCL: ncclAllReduce called directly (build/nccl_bench, the NCCL torch ships),
# and through torch.distributed for reference (its per-call overhead shows at small sizes)
want nccl || exit $status
echo "NCCL library: $WEFT_NCCL_LIB"
for dt in f32 bf16; do
  timeout 300 $MPIRUN -x WEFT_NCCL_LIB -np $P build/nccl_bench $dt >"$out/nccl_$dt.log" 2>&1 || status=1
  # NCCL's symmetric kernels (buffers registered as symmetric windows; NCCL 2.27 and later: 77 before)
  timeout 300 $MPIRUN -x WEFT_NCCL_LIB -np $P build/nccl_bench $dt 20 symmetric >"$out/ncclsym_$dt.log" 2>&1
  rc=$?
  [ $rc -eq 77 ] && echo "NCCL's symmetric kernels: not in this NCCL (skipped): $(grep -m1 '^nccl_bench:' "$out/ncclsym_$dt.log")"
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1
  [ "${TORCH_REF:-1}" = 1 ] && timeout 300 $MPIRUN -np $P python3 bench/nccl_allreduce.py --dtype $dt >"$out/torch_nccl_$dt.log" 2>&1
  for algo in one_shot two_shot one_shot_ll; do
    timeout 300 $MPIRUN -np $P $W run $AR --set dtype=$dt --set algo=$algo --no-check >"$out/weft_${dt}_$algo.log" 2>&1 || status=1
    # the same launched with programmatic dependent launch (PDL=0 leaves it out)
    if [ "${PDL:-1}" = 1 ]; then
      timeout 300 $MPIRUN -np $P $W run $AR --set dtype=$dt --set algo=$algo --set pdl=true --no-check \
        >"$out/weft_${dt}_${algo}_pdl.log" 2>&1 || status=1
    fi
  done
done
python3 bench/compare_nccl.py "$out" | tee "$out/compare.txt"
if [ "${TORCH_REF:-1}" = 1 ]; then
  for dt in f32 bf16; do echo "== torch.distributed all_reduce $dt (reference)"; grep -E "^ +(8|262144|268435456) " "$out/torch_nccl_$dt.log"; done
fi
exit $status
