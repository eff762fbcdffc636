"""A pure-Python stand-in for the few torch calls bench/gemm_llm.py makes, so that its GPU path (checks,
timing loop, report) runs in CI without torch or a GPU (tests/python/gemm_llm_fake.py).  Times are
a fake clock; matmuls are exact in Python floats.  Not a torch: nothing else may import it."""
import math, random, contextlib, types
__version__ = "fake"
bfloat16, float16, float64, uint8, int16, float32 = "bf16", "f16", "f64", "u8", "i16", "f32"
_reg = {}
_next = [4096]

class Tensor:
    def __init__(self, shape, data, dtype):
        self.shape, self.data, self.dtype = tuple(shape), data, dtype
        self._ptr = None
    def data_ptr(self):
        if self._ptr is None:
            self._ptr = _next[0]; _next[0] += 4096; _reg[self._ptr] = self
        return self._ptr
    def numel(self): return len(self.data)
    def uniform_(self, lo, hi, generator=None):
        r = generator.r if generator else random
        self.data[:] = [r.uniform(lo, hi) for _ in self.data]; return self
    def fill_(self, v): self.data[:] = [float(v)] * len(self.data); return self
    def double(self): return Tensor(self.shape, list(self.data), float64)
    def clone(self): return Tensor(self.shape, list(self.data), self.dtype)
    def view(self, dt): return Tensor(self.shape, self.data, dt)
    def t(self):
        r, c = self.shape
        return Tensor((c, r), [self.data[i * c + j] for j in range(c) for i in range(r)], self.dtype)
    def flatten(self): return Tensor((len(self.data),), self.data, self.dtype)
    def __getitem__(self, i):
        if isinstance(i, Tensor):
            c = self.shape[1] if len(self.shape) == 2 else 1
            rows = [int(x) for x in i.data]
            if len(self.shape) == 1: return Tensor((len(rows),), [self.data[x] for x in rows], self.dtype)
            return Tensor((len(rows), c), [self.data[x * c + j] for x in rows for j in range(c)], self.dtype)
        if isinstance(i, slice): assert len(self.shape) == 1; d = self.data[i]; return Tensor((len(d),), d, self.dtype)
        if len(self.shape) == 1: return Tensor((), [self.data[i]], self.dtype)
        c = self.shape[1]
        return Tensor((c,), self.data[i * c:(i + 1) * c], self.dtype)
    def __matmul__(self, o):
        m, k = self.shape; k2, n = o.shape; assert k == k2
        out = [sum(self.data[i * k + p] * o.data[p * n + j] for p in range(k)) for i in range(m) for j in range(n)]
        return Tensor((m, n), out, float64)
    def _bin(self, o, f, dt=None):
        od = o.data if isinstance(o, Tensor) else [o] * len(self.data)
        return Tensor(self.shape, [f(a, b) for a, b in zip(self.data, od)], dt or self.dtype)
    def __add__(self, o): return self._bin(o, lambda a, b: a + b)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
    def __mul__(self, o): return self._bin(o, lambda a, b: a * b)
    __rmul__ = __mul__
    def __gt__(self, o): return self._bin(o, lambda a, b: not (a <= b), "bool")
    def __ne__(self, o): return self._bin(o, lambda a, b: repr(a) != repr(b), "bool")
    def abs(self): return Tensor(self.shape, [abs(x) for x in self.data], self.dtype)
    def any(self): return Tensor((), [any(self.data)], "bool")
    def sum(self): return Tensor((), [sum(self.data)], self.dtype)
    def nonzero(self): return Tensor((sum(1 for x in self.data if x), 1), [i for i, x in enumerate(self.data) if x], "i64")
    def __int__(self): return int(self.data[0])
    def __float__(self): return float(self.data[0])
    def __bool__(self): return bool(self.data[0])

def _shape(s): return s[0] if len(s) == 1 and isinstance(s[0], tuple) else s
def empty(*s, device=None, dtype=float32):
    s = _shape(s); return Tensor(s, [0.0] * math.prod(s), dtype)
def empty_like(t): return Tensor(t.shape, [0.0] * len(t.data), t.dtype)
def arange(n, device=None): return Tensor((n,), list(range(n)), "i64")
def tensor(v, device=None): return Tensor((len(v),), list(v), "i64")
def cat(ts): return Tensor((sum(len(t.data) for t in ts),), [x for t in ts for x in t.data], "i64")
def randperm(n, device=None, generator=None):
    v = list(range(n)); (generator.r if generator else random).shuffle(v); return Tensor((n,), v, "i64")
def isnan(t): return Tensor(t.shape, [x != x for x in t.data], "bool")
def equal(a, b): return a.shape == b.shape and all(repr(x) == repr(y) for x, y in zip(a.data, b.data))
def mm(a, b, out=None):
    r = a @ b; out.data[:] = r.data; return out

class Generator:
    def __init__(self, device=None): self.r = random.Random(0)
    def manual_seed(self, s): self.r.seed(s); return self

class _Event:
    def __init__(self, enable_timing=False): self.t = 0.0
    def record(self): cuda._clock += 0.01; self.t = cuda._clock
    def synchronize(self): pass
    def elapsed_time(self, o): return o.t - self.t

class _Graph:
    def replay(self): cuda._clock += 0.01

class _Stream:
    cuda_stream = 0

class _Cuda(types.ModuleType):
    _clock = 0.0
    Event = _Event
    CUDAGraph = _Graph
    def synchronize(self): pass
    def _sleep(self, n): pass
    def current_stream(self): return _Stream()
    def empty_cache(self): pass
    def get_device_name(self): return "fake GPU"
    @contextlib.contextmanager
    def graph(self, g, capture_error_mode="global"):
        assert capture_error_mode in ("global", "relaxed", "thread_local")
        yield
cuda = _Cuda("torch.cuda")

class _Backends:
    class cuda:
        _b = "cublas"
        @staticmethod
        def preferred_blas_library(b=None):
            if b is not None:
                assert b in ("cublas", "cublaslt"); _Backends.cuda._b = b
            return "_BlasBackend." + _Backends.cuda._b
backends = _Backends

class _Prof:
    def __init__(self, activities=None): pass
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def events(self): return [types.SimpleNamespace(name="nvjet_fake_" + _Backends.cuda._b, device_type="DeviceType.CUDA")]
profiler = types.SimpleNamespace(profile=_Prof, ProfilerActivity=types.SimpleNamespace(CUDA="cuda"))
