#!/usr/bin/env bash
# bench/mps.sh: source it on the GPU machine to run several ranks on the one GPU at once.
# Starts the MPS daemon in a private pipe folder (once) and exports what mpirun needs;
# `mps_stop` shuts it down.  NVLink multicast stays switched off for everything started here.
# WEFT_NO_MPS=1 (a machine with a GPU per rank, bench/multi_gpu_session.sh): no daemon, and each
# rank takes the GPU of its local rank as it would under torchrun or a plain mpirun.
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ "${WEFT_NO_MPS:-0}" = 1 ]; then
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  mps_stop() { :; }
else
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/weft-mps} CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/weft-mpslog}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if ! echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then nvidia-cuda-mps-control -d; fi
  # every rank must find the MPS daemon
  MPIRUN="$MPIRUN -x CUDA_MPS_PIPE_DIRECTORY"
  mps_stop() { echo quit | nvidia-cuda-mps-control; }
fi
