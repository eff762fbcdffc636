"""bench/nccl_allreduce.py: NCCL's allreduce (through torch.distributed), timed the way
`weft run` times weft's: 3 warm-ups, a barrier, CUDA events around back-to-back launches, the
slowest rank counts.  Run one process per GPU under mpirun (rank and size from Open MPI's
environment):  mpirun -np 2 python3 bench/nccl_allreduce.py [--dtype f32] [--iters 20]
Prints the same columns as weft's table.  NVLink multicast stays off (NCCL_NVLS_ENABLE=0)."""
import argparse
import os

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
p.add_argument("--iters", type=int, default=20)
a = p.parse_args()
assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "NCCL_NVLS_ENABLE=0 must be set"
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
torch.cuda.set_device(local % torch.cuda.device_count())
dist.init_process_group("nccl", rank=rank, world_size=size, device_id=torch.device("cuda", torch.cuda.current_device()))
dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
es = torch.tensor([], dtype=dt).element_size()
x = torch.randn((256 << 20) // es, device="cuda").to(dt)
worst = torch.zeros(1, device="cuda", dtype=torch.float64)
if rank == 0:
    print(f"time: nccl allreduce {a.dtype} sum, {size} ranks, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}; "
          "CUDA events around back-to-back launches, the slowest rank")
    print(f"{'bytes':>12} {'elements':>12} {'time_us':>10} {'algbw_GB/s':>11} {'busbw_GB/s':>11}")
b = 8
while b <= (256 << 20):
    n = b // es
    if n >= 1:
        t = x[:n]
        iters = a.iters * 4 if b <= (1 << 20) else a.iters if b <= (32 << 20) else 10
        for _ in range(3):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        dist.barrier()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(iters):
            dist.all_reduce(t)
        e1.record()
        e1.synchronize()
        us = e0.elapsed_time(e1) * 1e3 / iters
        worst.fill_(us)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        us = worst.item()
        alg = b / (us * 1e3)
        bus = alg * (2.0 * (size - 1) / size if size > 1 else 1.0)
        if rank == 0:
            print(f"{b:>12} {n:>12} {us:>10.2f} {alg:>11.2f} {bus:>11.2f}", flush=True)
    b = b * 4 if b < (128 << 20) else b * 2
dist.destroy_process_group()
