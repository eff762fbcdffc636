#!/usr/bin/env bash
# bench/mps.sh: source it on the GPU machine to run several ranks on the one GPU at once.
# Starts the MPS daemon in a private pipe folder (once) and exports what mpirun needs;
# `mps_stop` shuts it down.  NVLink multicast stays switched off for everything started here.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 WEFT_MULTICAST=0
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/weft-mps} CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/weft-mpslog}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if ! echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then nvidia-cuda-mps-control -d; fi
# mpirun -x for every variable above, so each rank sees them
MPIRUN="mpirun --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x WEFT_MULTICAST"
mps_stop() { echo quit | nvidia-cuda-mps-control; }
