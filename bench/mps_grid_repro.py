"""bench/mps_grid_repro.py BLOCKS:BETWEEN ...: two torch processes on one GPU under MPS, each
launching 20 one_shot f32 allreduces of 1,000,003 elements through weft.dist (a World over
torch.distributed's gloo all-gather), with the config's `blocks` set to BLOCKS; BETWEEN is "torch"
(torch work between launches: a comparison and .item()) or "none" (a synchronize only).  Prints,
per rank, ok or the first timeout.  The run in bench/RESULTS.md (issue 17, "What the GPU found"):

    . bench/mps.sh; PYTHONPATH=build/python python3 -m torch.distributed.run --standalone \
        --nproc-per-node 2 bench/mps_grid_repro.py 8:torch 64:torch 66:torch 100:none 132:none 100:torch 132:torch

It ran before the runtime halved a comm kernel's share on a shared GPU; since then a grid of
blocks=132 is capped at 66 on two ranks, so it no longer reproduces the deadlock."""
import os
import sys
import time

import torch
import torch.distributed as dist

os.environ["WEFT_SIGNAL_TIMEOUT_MS"] = "1000"
dist.init_process_group("gloo")
R, P = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(0)
import weft  # noqa: E402

dev = torch.device("cuda", 0)


def ag(b):
    out = [None] * P
    dist.all_gather_object(out, b)
    return b"".join(out)


w = weft.World(R, P, R, P, ag)
for blocks, between in [(int(a), b) for a, b in (s.split(":") for s in sys.argv[1:])]:
    k = weft.compile({"family": "allreduce", "dtype": "f32", "op": "sum", "algo": "one_shot", "blocks": blocks})
    c = weft.Comm(k, w, 1 << 20)
    n = 1000003
    res = "ok"
    t0 = time.time()
    for i in range(20):
        x = torch.full((n,), float(R + 1), device=dev)
        y = torch.empty_like(x)
        c.launch(y, x, n, stream=0)
        torch.cuda.synchronize()
        bad = (y != P * (P + 1) / 2).sum().item() if between == "torch" else 0
        try:
            c.check()
        except Exception as e:
            res = "call %d: %s" % (i, str(e)[:150])
            break
        if bad:
            res = "call %d: bad %d" % (i, bad)
            break
    print("[r%d] blocks=%d between=%s: %s in %.2f s (epoch %d)" % (R, blocks, between, res, time.time() - t0, c.epoch),
          flush=True)
    ok = [None] * P
    dist.all_gather_object(ok, res == "ok")
    if not all(ok):
        break
    c.close()
os._exit(0)
