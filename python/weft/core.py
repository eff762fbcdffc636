"""Generate, compile and launch weft kernels from Python (over libweft's C API, runtime/core/weft.h).

A config is a path to a Lua config file (str or os.PathLike) or a dict (rendered to a Lua table:
{"family": "row_softmax", "dtype": "bf16", "tile": {"m": 128}}).  Overrides are keyword
arguments; a dict value overrides nested keys (tile={"m": 128} is "tile.m=128").
Generating and compiling need no GPU; launching does.
"""
import ctypes
import json
import math
import os
import re
import threading

from . import _lib
from ._lib import lib

STATUS = {0: "OK", 1: "CONFIG", 2: "COMPILE", 3: "CACHE", 4: "NO_DRIVER", 5: "NO_DEVICE", 6: "CUDA",
          7: "LAUNCH", 8: "IO", 9: "NOMEM", 10: "INVALID", 11: "INTERNAL", 12: "MISMATCH", 13: "MULTICAST",
          14: "TIMEOUT"}


class WeftError(RuntimeError):
    """A weft call failed.  status: the weft_status code; status_name: its name ("CONFIG", ...)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = STATUS.get(status, str(status))
        super().__init__(message)


class ConfigError(WeftError, ValueError):
    """The config (or an override) is invalid: the message names the file, field, value, what is allowed."""


class NoGPUError(WeftError):
    """No NVIDIA driver, or no usable sm_90 GPU, on this machine."""


class CommTimeoutError(WeftError, TimeoutError):
    """A device-side wait for another rank timed out; the message names the rank, the peer and the signal."""


def error(status, message):
    cls = {1: ConfigError, 4: NoGPUError, 5: NoGPUError, 14: CommTimeoutError}.get(status, WeftError)
    return cls(status, message or "weft: %s" % text_status(status))


def text_status(status):
    return _lib.text(lib.weft_status_name(status))


# ---- configs ------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LUA_KEYWORDS = frozenset("and break do else elseif end false for function goto if in local nil not or "
                          "repeat return then true until while".split())


def _lua_string(s):
    out = ['"']
    for b in s.encode("utf-8"):
        c = chr(b)
        if c == "\\" or c == '"':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\%03d" % b)   # newlines, control bytes, UTF-8 bytes: decimal escapes
    out.append('"')
    return "".join(out)


def _lua_value(v, where):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(1, "weft: config field %s = %r: a number must be finite" % (where, v))
        return repr(v)
    if isinstance(v, str):
        return _lua_string(v)
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_lua_value(x, "%s[%d]" % (where, i + 1)) for i, x in enumerate(v)) + "}"
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise ConfigError(1, "weft: config field %s has key %r: keys must be strings" % (where, k))
            key = k if _NAME.match(k) and k not in _LUA_KEYWORDS else "[%s]" % _lua_string(k)
            items.append("%s = %s" % (key, _lua_value(x, "%s.%s" % (where, k) if where else k)))
        return "{" + ", ".join(items) + "}"
    raise ConfigError(1, "weft: config field %s = %r (%s): allowed are bool, int, float, str, list and dict"
                      % (where or "<config>", v, type(v).__name__))


def lua_config(config):
    """The Lua text of a config dict: `return { ... }`."""
    if not isinstance(config, dict):
        raise TypeError("weft: a config is a path (str, os.PathLike) or a dict, not %s" % type(config).__name__)
    return "return " + _lua_value(config, "") + "\n"


def _override_text(v, key):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(1, "weft: override %s = %r: a number must be finite" % (key, v))
        return repr(v)
    raise ConfigError(1, "weft: override %s = %r (%s): allowed are bool, int, float, str, or a dict of them "
                      "for nested keys" % (key, v, type(v).__name__))


def overrides(kw, prefix=""):
    """Keyword overrides as the C API's "key=value" strings (nested dicts become dotted keys)."""
    out = []
    for k, v in kw.items():
        if not isinstance(k, str) or not _NAME.match(k):
            raise ConfigError(1, "weft: override key %r: a key is a name (letters, digits, _)" % (k,))
        key = prefix + k
        if isinstance(v, dict):
            out.extend(overrides(v, key + "."))
        else:
            out.append("%s=%s" % (key, _override_text(v, key)))
    return out


# ---- the context --------------------------------------------------------------------------

class Context:
    """A generator, a kernel cache and (once something launches) a CUDA device.  Calls on one
    context are serialised by its lock, as the C context is not thread-safe."""

    def __init__(self, device=0, cache_dir=None, source_dir=None):
        opts = _lib._CtxOptions(int(device), cache_dir.encode() if cache_dir else None,
                                source_dir.encode() if source_dir else None)
        h = ctypes.c_void_p()
        st = lib.weft_ctx_create(ctypes.byref(h), ctypes.byref(opts))
        if st:
            msg = _lib.text(lib.weft_ctx_error(h)) if h.value else None
            if h.value:
                lib.weft_ctx_destroy(h)
            raise error(st, msg or "weft: cannot create a context (%s)" % text_status(st))
        self._h = h
        self.device = int(device)
        self.lock = threading.RLock()

    def _error(self, st):
        return error(st, _lib.text(lib.weft_ctx_error(self._h)))

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib.weft_ctx_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # generate / compile
    def generate(self, config, **kw):
        ov, n = _lib.strings(overrides(kw))
        m = ctypes.POINTER(_lib._Manifest)()
        with self.lock:
            st = self._call("generate", config, ov, n, ctypes.byref(m))
            if st:
                raise self._error(st)
        return Manifest(m, owned=True)

    def compile(self, config, **kw):
        ov, n = _lib.strings(overrides(kw))
        k = ctypes.c_void_p()
        with self.lock:
            st = self._call("compile", config, ov, n, ctypes.byref(k))
            if st:
                raise self._error(st)
        return Kernel(self, k)

    def compile_manifest(self, manifest):
        if manifest._m is None or not manifest._owned:
            raise ValueError("weft: this manifest was already compiled (a kernel owns it) or is not a first kernel")
        k = ctypes.c_void_p()
        with self.lock:
            st = lib.weft_compile_manifest(self._h, manifest._m, ctypes.byref(k))
            manifest._owned = False   # the C side took it, even on failure
            manifest._m = None
            if st:
                raise self._error(st)
        return Kernel(self, k)

    def compile_tuned(self, path, shape, ranks=1, db=None, **kw):
        """The tuned config for this GPU, family, dtype, shape and rank count, else the config as
        given.  Returns (kernel, tuned, notice): notice says which and why."""
        ov, n = _lib.strings(overrides(kw))
        k = ctypes.c_void_p()
        tuned = ctypes.c_int(0)
        with self.lock:
            st = lib.weft_compile_tuned(self._h, os.fsencode(path), ov, n, shape.encode(), int(ranks),
                                        os.fsencode(db) if db else None, ctypes.byref(k), ctypes.byref(tuned))
            if st:
                raise self._error(st)
            notice = _lib.text(lib.weft_ctx_error(self._h))
        return Kernel(self, k), bool(tuned.value), notice

    def _call(self, what, config, ov, n, out):
        if isinstance(config, dict):
            text = lua_config(config).encode("utf-8")
            name = ("<dict %s>" % config.get("family", "?")).encode()
            f = lib.weft_generate_string if what == "generate" else lib.weft_compile_string
            return f(self._h, name, text, ov, n, out)
        if isinstance(config, (str, bytes, os.PathLike)):
            f = lib.weft_generate_file if what == "generate" else lib.weft_compile_file
            return f(self._h, os.fsencode(config), ov, n, out)
        raise TypeError("weft: a config is a path (str, os.PathLike) or a dict, not %s" % type(config).__name__)

    def generate_source(self, text, name="<string>", **kw):
        """Generate from Lua source text (a chunk that returns the config table)."""
        ov, n = _lib.strings(overrides(kw))
        m = ctypes.POINTER(_lib._Manifest)()
        with self.lock:
            st = lib.weft_generate_string(self._h, name.encode(), text.encode("utf-8"), ov, n, ctypes.byref(m))
            if st:
                raise self._error(st)
        return Manifest(m, owned=True)

    def compile_source(self, text, name="<string>", **kw):
        ov, n = _lib.strings(overrides(kw))
        k = ctypes.c_void_p()
        with self.lock:
            st = lib.weft_compile_string(self._h, name.encode(), text.encode("utf-8"), ov, n, ctypes.byref(k))
            if st:
                raise self._error(st)
        return Kernel(self, k)


_contexts = {}
_contexts_lock = threading.Lock()


def context(device=0):
    """The process's context for a device (created on first use; cache and sources from the environment)."""
    device = int(device)
    with _contexts_lock:
        c = _contexts.get(device)
        if c is None:
            c = _contexts[device] = Context(device)
        return c


# ---- manifests ----------------------------------------------------------------------------

class Arg:
    __slots__ = ("name", "type", "dtype", "role", "align", "congruent")

    def __init__(self, d):
        self.name, self.type, self.role = d["name"], d["type"], d["role"]
        self.dtype, self.align, self.congruent = d.get("dtype"), d.get("align", 0), d.get("congruent")

    def __repr__(self):
        return "Arg(%s: %s%s, %s)" % (self.name, self.type, "<%s>" % self.dtype if self.dtype else "", self.role)


class Manifest:
    """What the generator says about a kernel: its args, grid, limits, params, run spec (the JSON
    `weft gen` writes, as .data) and its CUDA C source."""

    def __init__(self, m, owned, keep=None):
        self._m = m
        self._owned = owned
        self._keep = keep          # the kernel that owns a borrowed manifest
        self.json = _lib.text(m.contents.json)
        self.source = _lib.text(m.contents.source)
        self.data = json.loads(self.json)
        d = self.data
        self.family, self.name, self.entry = d["family"], d["name"], d["entry"]
        self.args = [Arg(a) for a in d["args"]]
        self.params = {p["key"]: p["value"] for p in d.get("params", [])}
        self.block, self.cluster, self.smem = tuple(d["block"]), tuple(d["cluster"]), d["smem"]
        self.limits = d.get("limits", [])
        self.run = d.get("run", {})
        self.comm = d.get("comm")
        self.kernels = d.get("kernels", [self.name])

    def parts(self):
        """The config's kernels in launch order (this one first), as manifests."""
        if self._m is None:
            raise ValueError("weft: this manifest was compiled: use the kernel's parts")
        out = [self]
        i = 1
        while True:
            p = lib.weft_manifest_part(self._m, i)
            if not p:
                return out
            out.append(Manifest(p, owned=False, keep=self))
            i += 1

    def check_size(self, name, value):
        """None if size `name` = value is within the kernel's limits, else the reason."""
        if self._m is None:
            raise ValueError("weft: this manifest was compiled: use kernel.manifest")
        why = ctypes.create_string_buffer(512)
        if lib.weft_manifest_check_size(self._m, name.encode(), int(value), why, len(why)) == 0:
            return None
        return why.value.decode("utf-8", "replace")

    def __repr__(self):
        return "Manifest(%s)" % self.name

    def __del__(self):
        m, self._m = getattr(self, "_m", None), None
        if m is not None and getattr(self, "_owned", False):
            lib.weft_manifest_free(m)


# ---- kernels --------------------------------------------------------------------------------

_CTYPE = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float}


def _ptr_value(v, arg):
    if isinstance(v, int):
        return v
    p = getattr(v, "data_ptr", None)
    if p is not None:
        return p()
    raise TypeError("weft: argument %s is a pointer: pass an int (a device address) or a tensor, not %s"
                    % (arg.name, type(v).__name__))


class Kernel:
    """A compiled kernel (or a part of a multi-kernel config).  launch(*args, stream=None): one
    value per manifest argument, in order; pointers as ints or tensors (data_ptr()), sizes as ints,
    scalars as floats.  stream: a CUstream handle as int (torch: torch.cuda.current_stream().cuda_stream)."""

    def __init__(self, ctx, h, owner=None):
        self.ctx = ctx
        self._h = h
        self._owner = owner
        self.manifest = Manifest(lib.weft_kernel_manifest(h), owned=False, keep=self)
        args = self.manifest.args
        self._vals = [_CTYPE[a.type]() for a in args]
        self._argv = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                                            for v in self._vals])
        self._setters = [(v, a, a.type == "ptr") for v, a in zip(self._vals, args)]

    @property
    def handle(self):
        return self._h

    def parts(self):
        """The config's kernels in launch order (this one first)."""
        n = lib.weft_kernel_count(self._h)
        return [self] + [Kernel(self.ctx, ctypes.c_void_p(lib.weft_kernel_part(self._h, i)), owner=self)
                         for i in range(1, n)]

    @property
    def ptx(self):
        n = ctypes.c_size_t()
        p = lib.weft_kernel_ptx(self._h, ctypes.byref(n))
        return ctypes.string_at(p, n.value).decode("utf-8", "replace").rstrip("\0") if p else None

    @property
    def cubin(self):
        n = ctypes.c_size_t()
        p = lib.weft_kernel_cubin(self._h, ctypes.byref(n))
        return ctypes.string_at(p, n.value) if p else None

    @property
    def cache_hit(self):
        return bool(lib.weft_kernel_cache_hit(self._h))

    @property
    def compile_ms(self):
        return lib.weft_kernel_compile_ms(self._h)

    @property
    def log(self):
        return _lib.text(lib.weft_kernel_log(self._h))

    def resources(self):
        r = _lib._Resources()
        with self.ctx.lock:
            st = lib.weft_kernel_resources(self._h, ctypes.byref(r))
            if st:
                raise error(st, _lib.text(lib.weft_kernel_error(self._h)))
        return {"registers": r.registers, "local_bytes": r.local_bytes, "static_smem": r.static_smem,
                "max_threads": r.max_threads}

    def _bind(self, args):
        if len(args) != len(self._setters):
            raise TypeError("weft: %s takes %d arguments (%s), got %d" % (
                self.manifest.name, len(self._setters), ", ".join(a.name for a in self.manifest.args), len(args)))
        for (slot, arg, is_ptr), v in zip(self._setters, args):
            slot.value = _ptr_value(v, arg) if is_ptr else v

    def launch(self, *args, stream=None):
        with self.ctx.lock:
            self._bind(args)
            st = lib.weft_launch(self._h, self._argv, stream)
            if st:
                raise error(st, _lib.text(lib.weft_kernel_error(self._h)))

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h and self._owner is None:
            lib.weft_kernel_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "Kernel(%s)" % self.manifest.name


def generate(config, **kw):
    """The manifest of a config (path or dict) with overrides; no GPU needed."""
    return context().generate(config, **kw)


def compile(config, **kw):  # noqa: A001 (the package's verb)
    """Generate and compile (through the kernel cache) a config; no GPU needed."""
    return context().compile(config, **kw)


def version():
    return _lib.text(lib.weft_version())
