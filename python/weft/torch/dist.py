"""weft.torch's collectives over torch.distributed process groups: all_reduce, all_reduce_rms_norm
and all_gather_matmul.

    import weft.torch as wt
    y = wt.all_reduce(x)                       # out of place, sum over the default group
    wt.all_reduce_(x, "max", group=tp)         # in place
    x, r = wt.all_reduce_rms_norm(x, r, w)     # r = allreduce(x) + r, x = rms_norm(r) * w (in place)
    a, c = wt.all_gather_matmul(a_shard, b, group=tp, return_a=True)

The symmetric buffers are weft's (runtime/core/symm.c), not torch's: a weft World per process
group (cached by the group's name) is bootstrapped over a gloo subgroup of that group, made once,
so it works whatever backend the group itself uses (NCCL included) and weft's host collectives
never interleave with the caller's.  Every rank of the group must make the same calls with the
same sizes, in the same order, on one stream at a time per group: that is what lets each rank
decide alone (from the call's arguments) when a communicator must grow, which is collective.

Mismatches: the first call of each signature (op, operator, dtype, shapes) runs weft's rendezvous
(weft_world_agree, one host all-gather), so when ranks pass different shapes, or one rank's
arguments are bad, every rank fails -- not a hang: with the same MISMATCH message naming who said
what, except that a rank whose own arguments are bad raises its ValueError naming the argument.
Later calls of a known signature skip it (WEFT_TORCH_AGREE=always makes every eager call agree);
a rank whose arguments are then rejected raises alone, and its peers' kernels time out on the
device (CommTimeoutError, WEFT_SIGNAL_TIMEOUT_MS, default 5 s).

Settings: WEFT_TORCH_TIMEOUT_S and WEFT_TORCH_AGREE are read when a group's weft state is made
(its first call; a later change takes effect after close(group)), and the ranks compare them
there: a bad value on any rank, or WEFT_TORCH_AGREE set differently, raises the same ValueError
on every rank, naming the rank, the variable and the value (a rank raising alone would leave its
peers waiting for gloo's timeout).  Valid timeouts may differ: each rank waits its own.

CUDA graphs: once a size class has run eagerly, calls need no host synchronisation and no weft
allocation (epochs live on the device), so they can be captured and replayed.  Communicators
are never freed while the process uses them (growing keeps the old one alive), as a captured
graph may still point at its buffer; close(group) frees them all (collective).

Timeouts: a wait for another rank that times out stops the kernel.  check(group) after
torch.cuda.synchronize() raises CommTimeoutError naming the rank, the peer and the signal; if
nobody checks, the next launch on that communicator raises it instead.  The communicator is then
unusable: close(group) (every rank) and call again to get fresh ones.
"""
import datetime
import os
import socket
import threading
from typing import Optional

import torch
import torch.distributed as dist

from .. import core
from ..dist import Comm, World
from . import _common, configs

SELF = "weft:self"   # the group name of a one-rank world, where torch.distributed is not initialised

# allreduce crossovers measured in bench/RESULTS.md (H200, f32 and bf16): one_shot_ll is the
# fastest up to 256 KB (at 512 KB it ties one_shot); two_shot beats one_shot only at 8 ranks and
# large messages (3173 vs 3660 us at 256 MB; not measured between 2 MB and 256 MB, so 64 MB here).
LL_MAX_BYTES = 256 << 10
LL_MAX_ELEMS = 1 << 21          # gen/families/allreduce.lua F.LL_MAX
TWO_SHOT_MIN_BYTES = 64 << 20
TWO_SHOT_MIN_RANKS = 8

AR_OPS = ("sum", "max", "min", "prod")
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
# examples/ag_gemm.lua: the fused kernel's tile, ring and consumers (gather_then_gemm's GEMM takes them too)
AG_TILE = {"m": 128, "n": 256, "k": 64}
AG_STAGES, AG_CONSUMERS = 4, 2


def _timeout():
    """WEFT_TORCH_TIMEOUT_S: the gloo subgroup's timeout (seconds, 1 to a day; unset: 300)."""
    v = os.environ.get("WEFT_TORCH_TIMEOUT_S", "")
    try:
        s = float(v) if v != "" else 300.0
    except ValueError:
        s = -1.0
    # (float() takes "5_0" and other scripts' digits; the C parsers do not.  gloo counts whole
    # milliseconds, and a rank with a wait of a few would time out alone in the group's first
    # gather, its peers waiting theirs: at least a second.)
    if not 1 <= s <= 86400 or v != v.strip() or "_" in v or not v.isascii():
        raise ValueError("weft.torch: WEFT_TORCH_TIMEOUT_S=%r: allowed a number of seconds from 1 to 86400 "
                         "(how long weft's gloo subgroup waits for the other ranks; unset: 300)" % v)
    return datetime.timedelta(seconds=s)


def _agree_always():
    """WEFT_TORCH_AGREE: "always" (every eager call agrees), or "first" / unset (a signature's first call)."""
    v = os.environ.get("WEFT_TORCH_AGREE", "")
    if v not in ("", "first", "always"):
        raise ValueError("weft.torch: WEFT_TORCH_AGREE=%r: allowed first (the ranks agree on a signature's first "
                         "call; also unset) or always (on every eager call)" % v)
    return v == "always"


def _settings():
    """(timeout, always, problems): this rank's settings, a bad value a problem (to compare with the
    other ranks', so that every rank raises it) in place of an exception, its default used."""
    problems = []
    try:
        timeout = _timeout()
    except ValueError as e:
        timeout, problems = datetime.timedelta(seconds=300), problems + [str(e)]
    try:
        always = _agree_always()
    except ValueError as e:
        always, problems = False, problems + [str(e)]
    return timeout, always, problems


def _settings_problem(name, mine):
    """What is wrong with the ranks' settings, as every rank raises it, or None.  mine: per rank,
    (always, problems) as _settings gave them."""
    said = ["rank %d: %s" % (r, p.replace("weft.torch: ", "", 1)) for r, (_, ps) in enumerate(mine) for p in ps]
    modes = [always for always, _ in mine]
    if not said and len(set(modes)) > 1:
        said.append("WEFT_TORCH_AGREE differs between the ranks (%s); every rank must set the same"
                    % ", ".join("rank %d: %s" % (r, "always" if a else "first") for r, a in enumerate(modes)))
    if not said:
        return None
    return "weft.torch: group %s: %s (every rank of the group raises this)" % (name, "; ".join(said))


def group_name(group=None):
    """The name weft's ops take for a group: a ProcessGroup, its name, or None (the default group;
    SELF when torch.distributed is not initialised)."""
    if isinstance(group, str):
        return group
    if group is None:
        if not (dist.is_available() and dist.is_initialized()):
            return SELF
        group = dist.group.WORLD
    name = getattr(group, "group_name", None)
    if not isinstance(name, str):   # (group=5 raised AttributeError: 'int' has no group_name)
        raise TypeError("weft.torch: group = %r: a ProcessGroup, its name (str) or None (the default group)" % (group,))
    return name


def _resolve(name):
    return dist.distributed_c10d._resolve_process_group(name)


# A constant to torch.compile (dynamo cannot trace the process-group lookup): a graph is traced
# for one group, whose size does not change.
@torch.compiler.assume_constant_result
def group_size(name):
    return 1 if name == SELF else dist.get_world_size(_resolve(name))


def _node(info, rank):
    """(local_rank, local_size): torchrun's LOCAL_RANK / LOCAL_WORLD_SIZE where every rank has them
    and they describe consecutive blocks of ranks, else the ranks that share this host name."""
    env = [(lr, ls) for _, lr, ls in info]
    ok = all(lr is not None and ls is not None and 0 <= lr < ls for lr, ls in env)
    if ok:
        for r, (lr, ls) in enumerate(env):
            first = r - lr
            if first < 0 or first + ls > len(env) or any(env[first + i] != (i, ls) for i in range(ls)):
                ok = False
                break
        # a block of ranks the variables call one node must be on one host
        ok = ok and all(info[r][0] == info[r - env[r][0]][0] for r in range(len(env)))
    if ok:
        return env[rank]
    same = [r for r, (h, _, _) in enumerate(info) if h == info[rank][0]]
    return same.index(rank), len(same)


def _env_int(name):
    v = os.environ.get(name)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


class _Group:
    """weft's side of one process group: its World (over a gloo subgroup), the device it runs on,
    its communicators by config, and the signatures its ranks already agreed on."""

    def __init__(self, name, device):
        self.name, self.device = name, device
        self.comms = {}           # config key -> [Comm, ...], the largest last
        self.agreed = set()
        self.parts = {}           # config key -> the kernel's parts (gather_then_gemm: [gather, gemm])
        self.lock = threading.RLock()
        timeout, self.always, problems = _settings()
        if name == SELF:
            bad = _settings_problem(name, [(self.always, problems)])
            if bad:
                raise ValueError(bad)
            self.gloo, rank, size, local = None, 0, 1, (0, 1)
            gather = lambda data: data  # noqa: E731 (one rank: its own bytes)
        else:
            pg = _resolve(name)
            rank, size = dist.get_rank(pg), dist.get_world_size(pg)
            ranks = dist.get_process_group_ranks(pg)
            # only the group's members create it (use_local_synchronization): the group may be a subgroup
            self.gloo = dist.new_group(ranks=ranks, backend="gloo", timeout=timeout,
                                       use_local_synchronization=True)
            whole = dist.get_world_size() == size
            mine = (socket.gethostname(), _env_int("LOCAL_RANK") if whole else None,
                    _env_int("LOCAL_WORLD_SIZE") if whole else None, self.always, problems)
            info = [None] * size
            dist.all_gather_object(info, mine, group=self.gloo)
            bad = _settings_problem(name, [i[3:] for i in info])
            if bad:   # (the gloo subgroup stays, as close() leaves it: destroying one lets torch reuse its name)
                raise ValueError(bad)
            local = _node([i[:3] for i in info], rank)
            gather = self._allgather
        self.rank, self.size = rank, size
        self.world = World(rank, size, local[0], local[1], gather)

    def _allgather(self, data):
        out = [None] * self.size
        dist.all_gather_object(out, data, group=self.gloo)
        return b"".join(out)

    def agree(self, op, sig, problem):
        """The rendezvous of a signature's first call; raises the same error on every rank."""
        # a rank's own argument error names the rank, as the mismatch its peers get does
        own = problem and "%s (rank %d of group %s)" % (problem, self.rank, self.name)
        if sig in self.agreed and not self.always:
            if problem:
                raise ValueError(own)
            return
        try:
            self.world.agree("weft.torch." + op, sig + (" error: " + problem if problem else ""))
        except core.WeftError as e:
            # A rank whose own arguments are wrong says so (its ValueError, the argument named); the
            # others, whose arguments are fine, get the mismatch naming that rank.  Every rank went
            # through the rendezvous, so none is left waiting.
            if problem and e.status_name == "MISMATCH":
                raise ValueError(own) from None
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (op, self.rank, self.name, e)) from None
        if problem:
            raise ValueError(own)
        self.agreed.add(sig)

    def comm(self, op, key, build, need):
        """The communicator of config `key` with room for `need` elements; creating or growing one is
        collective, decided from `need` alone (identical on every rank)."""
        lst = self.comms.setdefault(key, [])
        if lst and lst[-1].max_elems >= need:
            return lst[-1]
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("weft.torch.%s: group %s needs a communicator for %d elements (config %s), which is "
                               "created collectively and allocates; run the op once eagerly at this size before "
                               "capturing a CUDA graph" % (op, self.name, need, key))
        size = 1 << max(12, (int(need) - 1).bit_length())   # a power of two: at most log2 growths
        k = _common.kernels.get(self.device, key, build)
        try:
            c = Comm(k, self.world, size)
        except core.WeftError as e:
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (op, self.rank, self.name, e)) from None
        lst.append(c)   # older ones stay alive: a captured graph may still use them
        return c

    def kernel_parts(self, key, kernel):
        p = self.parts.get(key)
        if p is None:
            p = self.parts[key] = kernel.parts()
        return p

    def close(self):
        # Every communicator and then the world, whatever one raises (the peers close theirs in
        # the same order: a rank stopping part-way would leave them waiting); the first error last.
        first = None
        for c in [c for lst in self.comms.values() for c in lst] + [self.world]:
            try:
                c.close()
            except BaseException as e:  # noqa: B902 (raised below, once all are closed)
                first = first or e
        self.comms.clear()
        self.agreed.clear()
        self.parts.clear()
        if first is not None:
            raise first


_groups = {}
_groups_lock = threading.Lock()


def _device_of(t):
    """The tensor's device where it is a CUDA tensor, else the current one (its check then fails)."""
    if isinstance(t, torch.Tensor) and t.device.type == "cuda":
        return t.device if t.device.index is not None else torch.device("cuda", torch.cuda.current_device())
    return torch.device("cuda", torch.cuda.current_device())


def _group(name, device, op, arg):
    """(the group's weft state, a problem to agree on or None)."""
    with _groups_lock:
        g = _groups.get(name)
        if g is None:
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError("weft.torch.%s: group %s has no weft world yet (creating one is collective); "
                                   "run the op once eagerly before capturing a CUDA graph" % (op, name))
            g = _groups[name] = _Group(name, device)
    if g.device != device:
        return g, ("weft.torch.%s: %s is on %s, but group %s's weft world runs on %s (one device per rank)"
                   % (op, arg, device, name, g.device))
    return g, None


def check(group=None):
    """After torch.cuda.synchronize(): raises CommTimeoutError if any of this group's launches timed
    out waiting for another rank (the message names this rank, the peer and the signal)."""
    g = _groups.get(group_name(group))
    if g is None:
        return
    for key, lst in g.comms.items():
        for c in lst:
            try:
                c.check()
            except core.WeftError as e:
                raise core.error(e.status, "weft.torch: group %s (%s): %s" % (g.name, key[0], e)) from None


def close(group=None):
    """Collective: frees the group's weft world and communicators (every rank, no graph using them)."""
    name = group_name(group)
    with _groups_lock:
        g = _groups.pop(name, None)
    if g is not None:
        try:
            torch.cuda.synchronize(g.device)
        finally:   # (a sticky CUDA error raised here: the collective close still runs, the peers not left waiting)
            g.close()


def _problem(fn, *a, **kw):
    """A failed argument check as its message (to agree on), or None."""
    try:
        fn(*a, **kw)
    except (TypeError, ValueError) as e:
        return str(e)
    return None


def _bind(kernel, **vals):
    return [vals[a.name] for a in kernel.manifest.args]


# ---- all_reduce ------------------------------------------------------------------------------

def allreduce_algo(nbytes, n, ranks):
    if nbytes <= LL_MAX_BYTES and n <= LL_MAX_ELEMS:
        return "one_shot_ll"
    if ranks >= TWO_SHOT_MIN_RANKS and nbytes >= TWO_SHOT_MIN_BYTES:
        return "two_shot"
    return "one_shot"


def _all_reduce_run(opname, x, y, op, name):
    problems = []
    if y is x:   # all_reduce_ (agreed on, as every problem: a rank that raised alone would leave the others waiting)
        p = _common.in_place_grad_problem(opname, "t", t=x)
        if p:
            problems.append(p)
    if not isinstance(op, str) or op not in AR_OPS:
        problems.append("weft.torch.%s: op = %r; allowed: %s" % (opname, op, ", ".join(AR_OPS)))
    p = _problem(_common.check_tensor, x, opname, "t")
    if p:
        problems.append(p)
    dt = None
    if not p:
        p = _problem(_common.dtype_name, x, opname, "t")
        if p:
            problems.append(p)
        else:
            dt = _common.DTYPES[x.dtype]
    device = _device_of(x)
    g, p = _group(name, device, opname, "t")
    if p:
        problems.append(p)
    sig = "%s op=%s dtype=%s shape=%s" % (opname, op, x.dtype if isinstance(x, torch.Tensor) else "?",
                                          list(x.shape) if isinstance(x, torch.Tensor) else "?")
    g.agree(opname, sig, "; ".join(problems) or None)
    n = x.numel()
    if n == 0:
        return
    algo = allreduce_algo(n * ESIZE[dt], n, g.size)
    cfg = {"family": "allreduce", "dtype": dt, "op": op, "algo": algo, "comm": "threadload"}
    key = ("allreduce", dt, op, algo)
    with g.lock:
        c = g.comm(opname, key, lambda ctx: ctx.compile(cfg), n)
        try:
            c.launch(*_bind(c.kernel, y=y, x=x, n=n), stream=_common.stream(device))
        except core.WeftError as e:
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (opname, g.rank, name, e)) from None


@torch.library.custom_op("weft::all_reduce", mutates_args=())
def _all_reduce_op(t: torch.Tensor, op: str, group_name: str) -> torch.Tensor:
    y = torch.empty_like(t, memory_format=torch.contiguous_format)
    _all_reduce_run("all_reduce", t, y, op, group_name)
    return y


@_all_reduce_op.register_fake
def _(t, op, group_name):
    return torch.empty_like(t, memory_format=torch.contiguous_format)


@torch.library.custom_op("weft::all_reduce_", mutates_args=("t",))
def _all_reduce_inplace_op(t: torch.Tensor, op: str, group_name: str) -> None:
    _all_reduce_run("all_reduce_", t, t, op, group_name)


@_all_reduce_inplace_op.register_fake
def _(t, op, group_name):
    return None


def all_reduce(t, op="sum", group=None):
    """A new tensor: op (sum, max, min, prod) over the group's ranks of t (f32, f16, bf16; contiguous,
    16-byte aligned, on this rank's device), the same bits on every rank (folded in rank order).
    group: a ProcessGroup, its name, or None (the default group).  The config follows the size
    (one_shot_ll / one_shot / two_shot, comm = threadload); its communicator is sized for the largest
    t seen so far and grows (collectively) from the call's arguments alone, so every rank must call
    with the same shapes in the same order (the module's docstring says what a mismatch does)."""
    name = group_name(group)
    if _common.via_dispatcher(t) and _common.schema_types_ok((op, str)):
        return torch.ops.weft.all_reduce(t, op, name)
    return _all_reduce_eager(t, op, name)


def _all_reduce_eager(t, op, name):
    # eager calls skip the dispatcher (no autograd, no tracing to do): one allocation, one launch
    y = torch.empty_like(t, memory_format=torch.contiguous_format) if isinstance(t, torch.Tensor) else t
    _all_reduce_run("all_reduce", t, y, op, name)
    return y


def all_reduce_(t, op="sum", group=None):
    """all_reduce in place: t becomes the result; returns t."""
    name = group_name(group)
    if torch.compiler.is_compiling():   # (in place: no dispatch for autograd, _all_reduce_run refuses it)
        torch.ops.weft.all_reduce_(t, op, name)
    else:
        _all_reduce_run("all_reduce_", t, t, op, name)
    return t


# ---- all_reduce_rms_norm -------------------------------------------------------------------------

_arn_plans = _common.PlanTable()   # exact shapes -> (kernel name, kernel)


def _arn_desc(t):
    return _common.DTYPES.get(t.dtype, str(t.dtype)), tuple(t.shape)


def _arn_key(device, cfg, shape, ranks):
    return _common.device_index(device), cfg["dtype"], cfg["residual"], shape["rows"], shape["cols"], ranks


def _arn_choose(device, cfg, shape, ranks):
    """(kernel name, kernel, None) for a shape seen before, else (name, None, the Auto to compile it
    from): weft.auto's choice at this rank count (the tuning database, the shipped table, or the
    family's rule: gen/families/allreduce_norm.lua's F.auto picks the algorithm from the bytes and
    the ranks, the layout from the row).  Nothing is compiled before the ranks agree on the name."""
    hit = _arn_plans.get(_arn_key(device, cfg, shape, ranks))
    if hit is not None:
        return hit[0], hit[1], None
    # generated for this group's size: the folds keep only its ranks' vectors, one rank has no exchange
    a = core.context(_common.device_index(device)).auto(dict(cfg, ranks=ranks), shape, ranks=ranks)
    return a.names[0], None, a


def _arn_compile(device, cfg, shape, ranks, name, a):
    kern = _common.kernels.get(device, name, lambda ctx: a.compile(0))
    for arg, v in shape.items():
        why = kern.manifest.check_size(arg, v)
        if why:   # auto checked its choice against the shape: this is a bug there
            raise configs.SizeError("weft.torch.all_reduce_rms_norm: %s = %d is outside what %s takes (%s)"
                                    % (arg, v, name, why))
    _arn_plans.put(_arn_key(device, cfg, shape, ranks), (name, kern))
    return kern


def _arn_run(x, residual, weight, eps, name):
    op = "all_reduce_rms_norm"
    problems = []
    p = _common.in_place_grad_problem(op, "x and residual", x=x, residual=residual, weight=weight)
    if p:
        problems.append(p)
    p = _problem(_common.check_tensor, x, op, "x")
    if p:
        problems.append(p)
    cfg = shape = None
    if not p:
        ok = True
        # w is read with vectors only where it is 16-byte aligned (the kernel tests it), so any
        # weight view will do; x and r are the symmetric buffer's rows and must be aligned
        if weight is None:   # (every rank must reach the agreement below with its problem, not raise alone)
            problems.append("weft.torch.%s: weight is None; it takes a tensor of x's last dimension" % op)
            ok = False
        for t, arg, align in ((residual, "residual", 16), (weight, "weight", 0)):
            if t is None:
                continue
            p = _problem(_common.check_tensor, t, op, arg, device=x.device, align=align)
            if p:
                problems.append(p)
                ok = False
        if ok and residual is not None and residual.numel() and residual.data_ptr() == x.data_ptr():
            problems.append("weft.torch.%s: residual is x (the same memory); y is written into x and h into "
                            "residual, so they must be separate tensors" % op)
            ok = False
        if ok:
            try:
                cfg, shape, eps = configs.all_reduce_rms_norm(
                    _arn_desc(x), None if residual is None else _arn_desc(residual), _arn_desc(weight), eps)
            except (TypeError, ValueError) as e:
                problems.append(str(e))
    device = _device_of(x)
    g, p = _group(name, device, op, "x")
    if p:
        problems.append(p)
    kname = kern = a = None
    try:
        if not problems and shape["rows"] * shape["cols"]:
            # The choice is made on each rank (its own database may answer); its name is in the
            # signature, so ranks that chose differently fail together instead of mixing protocols.
            try:
                kname, kern, a = _arn_choose(device, cfg, shape, g.size)
            except (core.WeftError, ValueError) as e:
                problems.append("weft.torch.%s: x %s: %s" % (op, tuple(x.shape), e))
        desc = [_arn_desc(t) if isinstance(t, torch.Tensor) else ("?", "?") for t in (x, residual, weight)]
        sig = "%s x=%s %s residual=%s weight=%s %s eps=%r kernel=%s" % (
            op, desc[0][0], list(desc[0][1]), "none" if residual is None else "%s %s" % (desc[1][0], list(desc[1][1])),
            desc[2][0], list(desc[2][1]), eps, kname)
        g.agree(op, sig, "; ".join(problems) or None)
        if kname is None:   # nothing to do: no tokens, or a hidden size of 0
            return
        if kern is None:
            kern = _arn_compile(device, cfg, shape, g.size, kname, a)
    finally:
        if a is not None:
            a.close()
    rows, cols = shape["rows"], shape["cols"]
    with g.lock:
        # keyed as the other ops' communicators are (check() names a communicator by key[0])
        c = g.comm(op, ("allreduce_norm", kname), lambda ctx: kern, rows * cols)
        try:
            c.launch(*_bind(c.kernel, y=x, x=x, w=weight, r=residual, eps=eps, rows=rows, cols=cols),
                     stream=_common.stream(device))
        except core.WeftError as e:
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (op, g.rank, name, e)) from None


@torch.library.custom_op("weft::all_reduce_rms_norm", mutates_args=("x", "residual"))
def _arn_op(x: torch.Tensor, residual: Optional[torch.Tensor], weight: torch.Tensor, eps: float,
            group_name: str) -> None:
    _arn_run(x, residual, weight, eps, group_name)


@_arn_op.register_fake
def _(x, residual, weight, eps, group_name):
    return None


def all_reduce_rms_norm(x, residual, weight, eps=1e-6, group=None):
    """vLLM's fused_add_rms_norm after an allreduce, in place, in one launch: with s the sum over
    the group's ranks of x [..., hidden] (folded in rank order in float32, rounded once),
    residual becomes h = s + residual (rounded once) and x becomes h * rsqrt(mean(h^2) + eps) *
    weight; returns (x, residual).  residual=None: x becomes rms_norm(s) * weight.  The same bits
    on every rank.  x and residual: float32, float16 or bfloat16, the same shape and dtype,
    contiguous, 16-byte aligned, on this rank's device; weight [hidden] of x's dtype, the same on
    every rank; eps in [0, 1] (a kernel argument: one kernel serves every eps).  The kernel is
    weft.auto's for (tokens, hidden) at the group's size (the family's rule, F.auto in
    gen/families/allreduce_norm.lua: two_shot for large messages on several ranks, else one_shot);
    every rank calls with the same shapes in the same order (all_reduce's docstring says why)."""
    name = group_name(group)
    if torch.compiler.is_compiling():   # (in place: no dispatch for autograd, _arn_run refuses it)
        torch.ops.weft.all_reduce_rms_norm(x, residual, weight, configs.eps_value("all_reduce_rms_norm", eps), name)
    else:
        _arn_run(x, residual, weight, eps, name)
    return x, residual


# ---- all_gather_matmul -------------------------------------------------------------------------

def _ag_shapes(opname, a, b, b_layout, ranks):
    """(M, N, K) of the gathered problem; raises naming the argument."""
    _common.check_tensor(a, opname, "a_shard", dim=2)
    _common.check_tensor(b, opname, "b" if b_layout == "row" else "weight", dim=2, device=a.device)
    _common.dtype_name(a, opname, "a_shard", allowed=("f16", "bf16"))
    if b.dtype != a.dtype:
        raise TypeError("weft.torch.%s: %s has dtype %s but a_shard has %s; they must match" % (
            opname, "b" if b_layout == "row" else "weight", b.dtype, a.dtype))
    ms, k = a.shape
    if b_layout == "row":
        kb, n = b.shape
        what = "b [K, N]"
    else:
        n, kb = b.shape
        what = "weight [N, K]"
    if kb != k:
        raise ValueError("weft.torch.%s: a_shard is %s (K = %d) but %s is %s (K = %d)" % (
            opname, tuple(a.shape), k, what, tuple(b.shape), kb))
    return ms * ranks, n, k


def _all_gather_matmul_run(a, b, gather_dim, name, return_a, b_layout):
    opname = "all_gather_matmul" if b_layout == "row" else "all_gather_linear"
    problems = []
    if not _common.schema_types_ok((gather_dim, int)) or gather_dim != 0:   # (0.0 and False were taken)
        problems.append("weft.torch.%s: gather_dim = %r; weft gathers along dim 0 only" % (opname, gather_dim))
    if b_layout not in ("row", "col"):
        problems.append("weft.torch.%s: b_layout = %r; allowed: row, col" % (opname, b_layout))
    ranks = group_size(name)
    shape, p = None, None
    try:
        shape = _ag_shapes(opname, a, b, b_layout if b_layout in ("row", "col") else "row", ranks)
    except (TypeError, ValueError) as e:
        p = str(e)
        problems.append(p)
    device = _device_of(a)
    g, p = _group(name, device, opname, "a_shard")
    if p:
        problems.append(p)
    variant = "gather_then_gemm" if return_a else "fused"
    dt = _common.DTYPES.get(a.dtype) if isinstance(a, torch.Tensor) else None
    cfg = {"family": "ag_gemm", "variant": variant, "dtype": dt, "b_layout": b_layout, "comm": "threadload",
           "tile": dict(AG_TILE), "stages": AG_STAGES, "consumers": AG_CONSUMERS}
    key = ("ag_gemm", dt, b_layout, variant)
    kernel = None
    if not problems and shape[0]:   # (an empty gather, M = 0, launches nothing: no limits to check)
        # compiled before the agreement: a rank whose compile fails says so there, with the others
        try:
            kernel = _common.kernels.get(device, key, lambda ctx: ctx.compile(cfg))
            M, N, K = shape
            parts = g.kernel_parts(key, kernel) if return_a else [kernel]
        except (core.WeftError, ValueError) as e:
            problems.append("weft.torch.%s: rank %d: %s" % (opname, g.rank, e))
            parts = []
        limits = [("m", shape[0]), ("k", shape[2])] + [("n", shape[1])]
        for part in parts:
            for arg, v in limits:
                if any(a_.name == arg for a_ in part.manifest.args):
                    why = part.manifest.check_size(arg, v)
                    if why:
                        problems.append("weft.torch.%s: %s (a_shard %s x %d ranks, %s %s): %s" % (
                            opname, arg.upper(), tuple(a.shape), ranks, "b" if b_layout == "row" else "weight",
                            tuple(b.shape), why))
                        break
    sig = "%s dtype=%s a_shard=%s b=%s layout=%s return_a=%s" % (
        opname, getattr(a, "dtype", "?"), list(getattr(a, "shape", [])), list(getattr(b, "shape", [])), b_layout,
        bool(return_a))
    g.agree(opname, sig, "; ".join(problems) or None)
    M, N, K = shape
    c_out = torch.empty((M, N), dtype=a.dtype, device=device)
    a_out = torch.empty((M, K) if return_a else (0, K), dtype=a.dtype, device=device)
    if M == 0:
        return a_out, c_out
    s = _common.stream(device)
    with g.lock:
        comm = g.comm(opname, key, lambda ctx: ctx.compile(cfg), M * K)
        try:
            if return_a:
                gather, gemm = g.kernel_parts(key, comm.kernel)
                comm.launch(*_bind(gather, ag=a_out, a=a, m=M, k=K), stream=s)
                gemm.launch(*_bind(gemm, c=c_out, a=a_out, b=b, m=M, n=N, k=K), stream=s)
            else:
                comm.launch(*_bind(comm.kernel, c=c_out, a=a, b=b, m=M, n=N, k=K), stream=s)
        except core.WeftError as e:
            raise core.error(e.status, "weft.torch.%s: rank %d of group %s: %s" % (opname, g.rank, name, e)) from None
    return a_out, c_out


# The group's size is an argument of the op, not looked up in the fake: the output's M depends on
# it, and a compiled graph cached under the same group name ("0") at another world size would
# otherwise replay the old shapes (seen: compiled at 1 rank, rerun at 2).
@torch.library.custom_op("weft::all_gather_matmul", mutates_args=())
def _all_gather_matmul_op(a_shard: torch.Tensor, b: torch.Tensor, gather_dim: int, group_name: str,
                          group_size: int, return_a: bool, b_layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    ranks = globals()["group_size"](group_name)
    if group_size != ranks:
        raise ValueError("weft.torch.all_gather_matmul: group_size = %d, but group %s has %d ranks"
                         % (group_size, group_name, ranks))
    return _all_gather_matmul_run(a_shard, b, gather_dim, group_name, return_a, b_layout)


@_all_gather_matmul_op.register_fake
def _(a_shard, b, gather_dim, group_name, group_size, return_a, b_layout):
    m = a_shard.shape[0] * group_size
    n = b.shape[1] if b_layout == "row" else b.shape[0]
    a = a_shard.new_empty((m, a_shard.shape[1]) if return_a else (0, a_shard.shape[1]))
    return a, a_shard.new_empty((m, n))


def all_gather_matmul(a_shard, b, group=None, return_a=False, gather_dim=0):
    """(A or None, A @ b), A being the ranks' a_shard [M/P, K] concatenated along dim 0 in rank order,
    b [K, N] (the same on every rank); f16 or bf16, K and N multiples of 8.  As
    torch.ops.symm_mem.fused_all_gather_matmul(a_shard, [b], 0, group_name, return_A=return_a) with
    one B: the differences are one b (not a list; the result is a tensor, not a list), 2-D shards
    gathered along dim 0 only, and return_a defaulting to False.  return_a=False runs the fused kernel
    (examples/ag_gemm.lua: the GEMM starts on the own shard while the others arrive; the gathered A
    stays in weft's buffer); return_a=True runs gather_then_gemm, whose gather writes A into the
    returned tensor, then the GEMM reads it.  Every rank calls with the same shapes (all_reduce's
    docstring says why)."""
    return _ag_call(a_shard, b, gather_dim, group, return_a, "row")


def _ag_call(a_shard, b, gather_dim, group, return_a, layout):
    name = group_name(group)
    if _common.via_dispatcher(a_shard, b) and _common.schema_types_ok(
            (a_shard, torch.Tensor), (b, torch.Tensor), (gather_dim, int)):
        a, c = torch.ops.weft.all_gather_matmul(a_shard, b, gather_dim, name, group_size(name), bool(return_a),
                                                 layout)
    else:
        a, c = _all_gather_matmul_run(a_shard, b, gather_dim, name, bool(return_a), layout)
    return (a if return_a else None), c


def all_gather_linear(a_shard, weight, group=None, return_a=False):
    """all_gather_matmul with a linear layer's weight [N, K]: (A or None, A @ weight.T), no transpose made."""
    return _ag_call(a_shard, weight, 0, group, return_a, "col")


__all__ = ["all_reduce", "all_reduce_", "all_reduce_rms_norm", "all_gather_matmul", "all_gather_linear", "check",
           "close", "group_name",
           "SELF"]
