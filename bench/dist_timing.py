"""bench/dist_timing.py: the timing the torchrun benchmarks share (bench/torch_comm.py, bench/arn_torch.py),
over the default process group (gloo: its collectives run on the host, so they only pace the ranks)."""
import statistics
import time

import torch
import torch.distributed as dist


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
