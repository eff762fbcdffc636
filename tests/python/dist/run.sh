#!/bin/bash
# tests/python/dist/run.sh NP [ARGS...]: tests/python/dist/test_comm.py under
# `python -m torch.distributed.run --standalone --nproc-per-node NP` (torchrun), gloo process group.
# Exit 77 (SKIP) when there is no torch, no CUDA GPU or no torchrun; non-zero when any rank failed.
# It starts nothing else.  NP ranks on one GPU need the MPS daemon already running (the caller's:
# bench/torch_dist_session.sh starts it) with CUDA_MPS_PIPE_DIRECTORY (and CUDA_MPS_LOG_DIRECTORY)
# exported to the same folders; without MPS the ranks time-slice the GPU and a device-side wait for a
# peer can take milliseconds, enough to trip weft's signal timeouts.
# The package: PYTHONPATH must reach weft (build/python, or python/ with WEFT_LIB=.../libweft.so.0);
# the interpreter: $WEFT_TORCH_PYTHON, else python3 on PATH (the one with torch).
set -u
NP=${1:?usage: run.sh NP [test args]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${WEFT_TORCH_PYTHON:-python3}
if ! command -v "$PY" > /dev/null; then echo "run.sh: SKIP: no $PY"; exit 77; fi
if ! "$PY" -c 'import torch' 2> /dev/null; then echo "run.sh: SKIP: $PY has no torch"; exit 77; fi
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  echo "run.sh: SKIP: torch sees no CUDA GPU"; exit 77
fi
if ! "$PY" -c 'import torch.distributed.run' 2> /dev/null; then echo "run.sh: SKIP: no torch.distributed.run (torchrun)"; exit 77; fi
if ! "$PY" -c 'import weft' ; then
  echo "run.sh: FAIL: $PY cannot import weft (PYTHONPATH=${PYTHONPATH:-} WEFT_LIB=${WEFT_LIB:-})"; exit 1
fi
GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
if [ "$NP" -gt "$GPUS" ] && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
  echo "run.sh: warning: $NP ranks on $GPUS GPU(s) without CUDA_MPS_PIPE_DIRECTORY: is the MPS daemon running?"
fi
# NVLink multicast stays off on these machines (DEVICE.md), in every child process too
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 WEFT_MULTICAST=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONUNBUFFERED=1
LIMIT=${WEFT_TEST_TIMEOUT_S:-900}
echo "run.sh: $NP ranks, $GPUS GPU(s), $PY ($("$PY" -c 'import torch; print(torch.__version__)')), limit ${LIMIT} s"
timeout -k 20 $((LIMIT + 60)) "$PY" -m torch.distributed.run --standalone --nproc-per-node "$NP" \
  "$HERE/test_comm.py" "$@"
rc=$?
[ $rc -eq 124 ] && echo "run.sh: FAIL: timed out after $((LIMIT + 60)) s"
[ $rc -ne 0 ] && [ $rc -ne 77 ] && echo "run.sh: FAIL (exit $rc)"
# a rank's 77 (no GPU) reaches here as torchrun's failure: only a clean 0 passes
[ $rc -eq 0 ] && echo "run.sh: PASS ($NP ranks)"
exit $rc
