"""bench/dist_timing.py: what the torchrun benchmarks share (bench/torch_comm.py, bench/arn_torch.py,
bench/mrs_torch.py): their prologue (session), an NCCL group where it can run (nccl_group), and the
timing, over the default process group (gloo: its collectives run on the host, so they only pace the
ranks)."""
import datetime
import os
import statistics
import sys
import time
import types

import torch
import torch.distributed as dist


def session(name, samples):
    """The prologue: exit 77 (a skip) where torch sees no CUDA GPU, else the default group over gloo,
    this rank's GPU (LOCAL_RANK modulo the GPUs here) made current.  Called before weft.torch is
    imported, so a machine without a GPU skips before loading it.  Returns rank, p (the world size),
    dev, samples ($WEFT_BENCH_SAMPLES, else `samples`) and out(line), which prints on rank 0."""
    if not torch.cuda.is_available():
        print("%s: SKIP: no CUDA GPU" % name)
        sys.exit(77)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(dev)

    def out(line):
        if rank == 0:
            print(line, flush=True)
    return types.SimpleNamespace(rank=rank, p=dist.get_world_size(), dev=dev,
                                 samples=int(os.environ.get("WEFT_BENCH_SAMPLES", str(samples))), out=out)


def nccl_group(dev, p):
    """(an NCCL group of every rank, None), or (None, why) where ranks share a GPU (MPS): NCCL takes one
    rank per GPU.  Collective: every rank asks every other which GPU it is on."""
    props = torch.cuda.get_device_properties(dev)
    buses = [None] * p
    dist.all_gather_object(buses, "%s/%s" % (os.uname().nodename, getattr(props, "uuid", dev.index)))
    if len(set(buses)) < p:
        return None, "%d ranks on %d GPU(s): NCCL takes one rank per GPU" % (p, len(set(buses)))
    return dist.new_group(backend="nccl"), None


def agree_all(flag):
    """True on every rank if flag is true on every rank."""
    t = torch.tensor([1 if flag else 0])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def finish(failed, wd):
    """The end of a torchrun bench: every rank past its rows, weft's groups and the process group
    closed, exit 1 where `failed` (this rank saw a failure), else 0."""
    dist.barrier()
    wd.close()
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


def heat(fn, ms=300):
    """About ms of calls, the same number on every rank: a collective's ranks must launch the same
    sequence (a count per rank's own clock left one rank two launches short: a timeout, rightly)."""
    t0 = time.time()
    while True:
        for _ in range(10):
            fn()
        go = torch.tensor([1 if (time.time() - t0) * 1000 < ms else 0])
        dist.all_reduce(go, op=dist.ReduceOp.MIN)   # everyone stops together
        if not go.item():
            break
    torch.cuda.synchronize()


def time_us(fn, reps, samples, after=None):
    """The slowest rank's median over `samples` of (reps back-to-back calls) / reps, in us, a barrier
    before each; after(): called once the events are in (weft.torch.dist.check, to raise a timeout)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    meds = []
    for _ in range(samples):
        dist.barrier()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        meds.append(s.elapsed_time(e) * 1000 / reps)
    allm = [None] * dist.get_world_size()
    dist.all_gather_object(allm, statistics.median(meds))
    if after is not None:
        after()
    return max(allm)
