"""What every weft.torch op shares: argument checks that name the argument, the weft dtype of a
tensor, the current stream, and a kernel cache per (device, config) in the process."""
import threading

import torch

from .. import core

DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def via_dispatcher(*tensors):
    """True where an op must go through its torch.ops.weft entry, not straight to its launch:
    under torch.compile, and where autograd would record it (grad mode on, an input requiring
    grad).  weft's ops have no backward; called straight, the output would carry no grad_fn and the
    gradients to those inputs would vanish without a word.  Through the dispatcher, forward runs
    as ever and backward raises, naming the op ("no autograd formula was registered"), as torch
    does for any custom op without one; an inference under no_grad() stays on the short path."""
    return torch.compiler.is_compiling() or (torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in tensors))


def schema_types_ok(*pairs):
    """True where each (value, type) pair is what a torch.ops.weft schema takes (int: not a bool).
    The distributed ops route through the dispatcher only then: torch's own type check would
    raise on this rank alone, before the agreement, and its peers would wait in it.  Otherwise
    the eager path runs, whose checks go through the agreement and raise on every rank."""
    return all(_is(v, t) for v, t in pairs)


def _is(v, t):
    if t is int:   # (core.whole's whole number: an int or what stands for one, numpy's; not a bool, not 0.0)
        try:
            core.whole(v, "", -(1 << 63), (1 << 63) - 1)   # (the schema's int is 64 bits)
        except (TypeError, ValueError):
            return False
        return True
    return isinstance(v, t)


def in_place_grad_problem(op, written, **tensors):
    """The message for an op that writes `written` in place when autograd is on and one of its
    tensors requires grad, else None.  A custom op that returns nothing gives torch nothing to
    attach a backward to: the written tensors would keep their old history, and backward would run
    through them as if nothing had changed (the gradients wrong, without a word)."""
    if not torch.is_grad_enabled():
        return None
    wanting = [n for n, t in tensors.items() if isinstance(t, torch.Tensor) and t.requires_grad]
    if not wanting:
        return None
    return ("weft.torch.%s: writes %s in place, and %s require%s grad: weft's ops have no backward; call it "
            "under torch.no_grad() or torch.inference_mode()" % (op, written, ", ".join(wanting),
                                                               "s" if len(wanting) == 1 else ""))


def dtype_name(t, op, name, allowed=("f32", "f16", "bf16")):
    if not isinstance(t, torch.Tensor):   # (None raised AttributeError: 'NoneType' has no dtype)
        raise TypeError("weft.torch.%s: %s is a %s, not a torch.Tensor" % (op, name, type(t).__name__))
    d = DTYPES.get(t.dtype)
    if d is None or d not in allowed:
        want = ", ".join("torch." + {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[a] for a in allowed)
        raise TypeError("weft.torch.%s: %s has dtype %s; allowed: %s" % (op, name, t.dtype, want))
    return d


def check_tensor(t, op, name, dim=None, device=None, align=16):
    """A CUDA tensor, contiguous, its data aligned to `align` bytes, on `device` if given."""
    # the common case first, in a few attribute reads (this runs on every launch); the checks
    # below say what is wrong
    if (type(t) is torch.Tensor and t.is_cuda and t.is_contiguous() and not t.data_ptr() % (align or 1)
            and dim is None and (device is None or t.device == device)):
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError("weft.torch.%s: %s must be a torch.Tensor, not %s" % (op, name, type(t).__name__))
    if t.device.type != "cuda":
        raise ValueError("weft.torch.%s: %s is on %s; weft runs on CUDA tensors" % (op, name, t.device))
    if device is not None and t.device != device:
        raise ValueError("weft.torch.%s: %s is on %s but the other arguments are on %s" % (op, name, t.device, device))
    if dim is not None and t.dim() not in (dim if isinstance(dim, tuple) else (dim,)):
        raise ValueError("weft.torch.%s: %s has %d dimensions (shape %s); expected %s" % (
            op, name, t.dim(), tuple(t.shape), dim))
    if not t.is_contiguous():
        raise ValueError("weft.torch.%s: %s (shape %s, strides %s) is not contiguous; call .contiguous() first"
                         % (op, name, tuple(t.shape), t.stride()))
    if align and t.numel() and t.data_ptr() % align:
        raise ValueError("weft.torch.%s: %s's data is at 0x%x, not %d-byte aligned (a view at an offset?); "
                         "pass a fresh tensor or .clone() it" % (op, name, t.data_ptr(), align))


def _stream_slow(device):
    return torch.cuda.current_stream(device).cuda_stream


try:   # the raw handle without building a torch.cuda.Stream (about a microsecond a call)
    _raw_stream = torch._C._cuda_getCurrentRawStream

    def stream(device):
        """The handle of torch's current stream on device, as an int."""
        i = device.index
        return _raw_stream(i if i is not None else torch.cuda.current_device())
except AttributeError:
    stream = _stream_slow


def device_index(device):
    """The CUDA device index of a torch.device (the current one for a bare "cuda")."""
    return device.index if device.index is not None else torch.cuda.current_device()


class PlanTable:
    """An op's plans by exact shape: at most `cap` of them, and beyond that the table starts again
    (the kernels themselves stay in KernelCache)."""

    def __init__(self, cap=4096):
        self._d, self.cap = {}, cap

    def get(self, key):
        v = self._d.get(key)
        k = v[-1] if isinstance(v, tuple) else v
        if v is not None and getattr(k, "_h", True) is None:   # its context was closed: a miss, planned again
            self._d.pop(key, None)
            return None
        return v

    def put(self, key, value):
        if len(self._d) >= self.cap:
            self._d.clear()
        self._d[key] = value
        return value

    def clear(self):
        self._d.clear()


class KernelCache:
    """Compiled kernels by (device index, config key); compiling happens once per key per process
    (never while a CUDA graph is being captured: the first call of a shape class must be eager)."""

    def __init__(self):
        self._k = {}
        self._lock = threading.Lock()

    def get(self, device, key, build):
        """The kernel for key on device; build(ctx) compiles it on a miss."""
        full = (device_index(device), key)
        k = self._k.get(full)
        if k is None or k._h is None:   # (closed with its context, weft.context().close(): compiled again)
            with self._lock:
                k = self._k.get(full)
                if k is None or k._h is None:
                    if torch.cuda.is_current_stream_capturing():
                        raise RuntimeError("weft.torch: config %s is compiled on first use, which cannot happen "
                                           "during CUDA graph capture; run the op once before capturing" % (key,))
                    k = self._k[full] = build(core.context(full[0]))
        return k

    def clear(self):
        with self._lock:
            self._k.clear()


kernels = KernelCache()
