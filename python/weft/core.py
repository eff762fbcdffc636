"""Generate, compile and launch weft kernels from Python (over libweft's C API, runtime/core/weft.h).

A config is a path to a Lua config file (str or os.PathLike) or a dict (rendered to a Lua table:
{"family": "row_softmax", "dtype": "bf16", "tile": {"m": 128}}).  Overrides are keyword
arguments; a dict value overrides nested keys (tile={"m": 128} is "tile.m=128").
Generating and compiling need no GPU; launching does.
"""
import ctypes
import json
import math
import numbers
import os
import re
import operator
import threading
import weakref

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


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text):
    """text with the characters that could drive a terminal (C0 controls but newline and tab, DEL, C1
    controls) written as \\xNN, as the CLI shows them: a file name or a config's text in a message
    never recolours or clears the terminal it is printed to."""
    return _CONTROLS.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def error(status, message):
    cls = {1: ConfigError, 4: NoGPUError, 5: NoGPUError, 14: CommTimeoutError}.get(status, WeftError)
    return cls(status, printable(message) if message else "weft: %s" % text_status(status))


def text_status(status):
    return _lib.text(lib.weft_status_name(status))


# ---- configs ------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LUA_KEYWORDS = frozenset("and break do else elseif end false for function goto if in local nil not or "
                          "repeat return then true until while".split())


def _lua_string(s, what="a config string"):
    out = ['"']
    for b in _utf8(s, what):   # str's own encode: a subclass could return other bytes
        c = chr(b)
        if c == "\\" or c == '"':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\%03d" % b)   # newlines, control bytes, UTF-8 bytes: decimal escapes
    out.append('"')
    return "".join(out)


_INT64 = (-(1 << 63), (1 << 63) - 1)
_MAX_DEPTH = 32   # gen/core/config.lua's MAX_DEPTH: deeper is refused there anyway


def _int_text(v, what):
    # Lua reads a decimal past int64 as a float: 2**64 would arrive as 1.8e19, silently inexact.
    if not _INT64[0] <= v <= _INT64[1]:
        raise ConfigError(1, "weft: %s = %d: an integer must fit in 64 bits (%d..%d)" % ((what, v) + _INT64))
    # int's own repr, not the value's: a subclass (an IntEnum, a numpy integer) writes its own text,
    # and that text would reach the Lua chunk as code
    return int.__repr__(int(v))


def _float_text(v, what):
    if not math.isfinite(v):
        raise ConfigError(1, "weft: %s = %r: a number must be finite" % (what, v))
    return float.__repr__(float(v))   # as for ints: numpy's float64 repr is "np.float64(1.5)"


def _lua_value(v, where, depth=0, seen=()):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return _int_text(v, "config field " + (where or "<config>"))
    if isinstance(v, float):
        return _float_text(v, "config field " + (where or "<config>"))
    if isinstance(v, str):
        return _lua_string(v, "config field " + (where or "<config>") + " =")
    if isinstance(v, (list, tuple, dict)):
        # A cycle or runaway nesting would otherwise end in Python's RecursionError, naming nothing.
        if id(v) in seen:
            raise ConfigError(1, "weft: config field %s refers back to a table that contains it: a config must "
                              "be a tree of values" % (where or "<config>"))
        if depth >= _MAX_DEPTH:
            raise ConfigError(1, "weft: config field %s: tables nested more than %d deep: at most %d"
                              % (where or "<config>", _MAX_DEPTH, _MAX_DEPTH))
        seen = seen + (id(v),)
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_lua_value(x, "%s[%d]" % (where, i + 1), depth + 1, seen)
                               for i, x in enumerate(v)) + "}"
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise ConfigError(1, "weft: config field %s has key %r (%s): keys must be strings"
                                  % (where or "<config>", k, type(k).__name__))
            k = str.__str__(k)   # (a str subclass's own __str__ would write other text into the Lua)
            if "\0" in k:   # the generator's message about it would end at the NUL, naming nothing
                raise ConfigError(1, "weft: config field %s has key %r: a key holding a NUL character is no field"
                                  % (where or "<config>", k))
            # Any other key is a quoted string key: the generator then names it as an unknown field.
            key = k if _NAME.match(k) and k not in _LUA_KEYWORDS else "[%s]" % _lua_string(
                k, "config field %s has key" % (where or "<config>"))
            items.append("%s = %s" % (key, _lua_value(x, "%s.%s" % (where, k) if where else k, depth + 1, seen)))
        return "{" + ", ".join(items) + "}"
    raise ConfigError(1, "weft: config field %s = %r (%s): allowed are bool, int, float, str, list and dict"
                      % (where or "<config>", v, type(v).__name__))


def lua_config(config):
    """The Lua text of a config dict: `return { ... }`."""
    if not isinstance(config, dict):
        raise TypeError("weft: a config is a path (str, os.PathLike) or a dict, not %s" % type(config).__name__)
    return "return " + _lua_value(config, "") + "\n"


def whole(v, what, lo, hi):
    """v as an int in lo..hi, or TypeError / ValueError naming what: ctypes would cut a larger one
    to the C type silently (a device 2**32 + 3 became device 3, ranks 2**32 + 2 two ranks)."""
    if isinstance(v, bool):
        raise TypeError("weft: %s = %r: a whole number in %d..%d, not a bool" % (what, v, lo, hi))
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError("weft: %s = %r: a whole number in %d..%d, not %s" % (what, v, lo, hi, type(v).__name__)) from None
    if not lo <= i <= hi:
        raise ValueError("weft: %s = %d: a whole number in %d..%d" % (what, i, lo, hi))
    return i


def _no_nul(text, what):
    # C strings end at a NUL: "dtype=f32\0..." would silently arrive as dtype=f32.
    if "\0" in text:
        raise ConfigError(1, "weft: %s %r holds a NUL character: not allowed" % (what, text))
    _utf8(text, what)
    return text


def _utf8(text, what):
    """text as UTF-8, or ConfigError naming what: a lone surrogate ('\\ud800') has no UTF-8 form."""
    try:
        return str.encode(text, "utf-8")
    except UnicodeEncodeError as e:
        raise ConfigError(1, "weft: %s %r holds %r at %d, which is not text (a lone surrogate has no UTF-8 form)"
                          % (what, text[:80], text[e.start], e.start)) from None


def _override_text(v, key):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return _int_text(v, "override " + key)
    if isinstance(v, float):
        return _float_text(v, "override " + key)
    if isinstance(v, str):
        # Quoted, so that a str stays a str: the generator reads a bare "128" or "true" as a number or a
        # bool, and strips one pair of outer quotes whatever they hold.
        return '"%s"' % str.__str__(_no_nul(v, "override %s =" % key))   # (not a subclass's __str__)
    raise ConfigError(1, "weft: override %s = %r (%s): allowed are bool, int, float, str, or a dict of them "
                      "for nested keys" % (key, v, type(v).__name__))


MAX_OVERRIDES = 4096   # gen/core/config.lua's M.MAX_OVERRIDES: refused here before 10**6 strings are built


def overrides(kw, prefix=""):
    """Keyword overrides as the C API's "key=value" strings (nested dicts become dotted keys)."""
    if not prefix and len(kw) > MAX_OVERRIDES:
        raise ConfigError(1, "weft: %d overrides: at most %d" % (len(kw), MAX_OVERRIDES))
    out = []
    _flatten(kw, prefix, out)
    return out


def _flatten(kw, prefix, out):
    # Each key of a nested dict is one string: counted as it is made (len(out)), so that tile={10**6
    # keys} is refused at the 4097th, not after all of them; its whole count is not known then.
    for k, v in kw.items():
        if not isinstance(k, str) or not _NAME.match(k):
            raise ConfigError(1, "weft: override key %r: a key is a name (letters, digits, _)" % (prefix + str(k),))
        key = prefix + k
        if isinstance(v, dict):
            if not v:
                raise ConfigError(1, "weft: override %s = {}: an empty dict sets nothing (give its keys)" % key)
            _flatten(v, key + ".", out)
        else:
            if len(out) == MAX_OVERRIDES:
                raise ConfigError(1, "weft: more than %d overrides (each key of a nested dict is one; %s the %dth): "
                                  "at most %d" % (MAX_OVERRIDES, key, MAX_OVERRIDES + 1, MAX_OVERRIDES))
            out.append("%s=%s" % (key, _override_text(v, key)))


def _path(config):
    if not isinstance(config, (str, bytes, os.PathLike)):
        raise TypeError("weft: a config path is a str, bytes or os.PathLike, not %s" % type(config).__name__)
    p = os.fspath(config)
    b = os.fsencode(p)
    if b"\0" in b:
        raise ValueError("weft: config path %r holds a NUL character" % (p,))
    # The C side reads a directory as "read error"; say what it is.
    if os.path.isdir(b):
        raise WeftError(8, "weft: %s: is a directory: a config is a Lua file" % os.fsdecode(p))
    return b


def _source(text, name):
    if not isinstance(text, str) or not isinstance(name, str):
        raise TypeError("weft: Lua source and its name are str")
    if "\0" in text or "\0" in name:
        raise ValueError("weft: Lua source %s holds a NUL character" % name)
    return name.encode("utf-8"), text.encode("utf-8")


# ---- the context --------------------------------------------------------------------------

def _fs(p, what):
    if p is None:
        return None
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError("weft: %s = %r: a path (str, bytes or os.PathLike), not %s" % (what, p, type(p).__name__))
    b = os.fsencode(p)
    if b"\0" in b:
        raise ValueError("weft: %s %r holds a NUL character" % (what, p))
    return b


def _dict_name(config):
    """The chunk name of a dict config: it starts every message, so only a plain family name goes in
    it (the family field's own message shows any other value, quoted)."""
    fam = config.get("family")
    # (str.__str__: a str subclass's own __str__ or encode never reaches the C string)
    return ("<dict %s>" % str.__str__(fam) if isinstance(fam, str) and _NAME.match(fam) else "<dict>").encode()


def shape_text(shape):
    """A shape as weft's C API takes it: {"rows": 4096, "cols": 50257} -> "cols=50257 rows=4096"
    (names sorted, as the tuning database keys them); a str passes as it is (as a plain str: a
    subclass's __str__ or encode never reaches the C string)."""
    if isinstance(shape, str):
        return str.__str__(shape)
    if isinstance(shape, dict):
        parts = []
        for k in shape:   # (checked before sorting: a name that is not a str does not sort with the others)
            if not isinstance(k, str) or not _NAME.match(k):
                raise ValueError("weft: shape size name %r is not a name" % (k,))
        for k in sorted(shape):
            v = shape[k]
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("weft: shape %s = %r: a size is an int" % (k, v))
            parts.append("%s=%d" % (str.__str__(k), v))
        return " ".join(parts)
    raise TypeError("weft: a shape is a dict of sizes or a str (\"rows=4096 cols=50257\"), not %s" % type(shape).__name__)


def refuse_open_comms(comms, lead, tail="", keep=None):
    """ValueError where any of `comms` (those `keep` selects) is still open: "weft: <lead> N open
    communicator(s)<tail>: close them first".  The caller holds the lock a Comm registers itself
    under (its context's), so that none can open between this check and the free that follows."""
    n = sum(1 for c in list(comms) if c._h is not None and (keep is None or keep(c)))
    if n:
        raise ValueError("weft: %s %d open communicator(s)%s: close them first (Comm.close is collective)"
                         % (lead, n, tail))


def _take_handle(obj):
    """obj._h for the one close() that frees it; None for every other caller, at once.

    Reading _h and clearing it are two steps, and CPython may switch threads between them, so two
    threads closing one object at once (a context's close() closing its kernels while another
    thread closes one; threads sharing an Auto) each took the handle and each freed it.  The first
    caller takes a lock that is never released; dict.setdefault makes that lock once, atomically,
    even for an object whose __init__ failed early.  Nothing waits on it, so a close() at
    interpreter exit can never block on a thread that was stopped."""
    once = obj.__dict__.setdefault("_close_once", threading.Lock())
    if not once.acquire(False):
        return None
    h, obj._h = getattr(obj, "_h", None), None
    return h


class Auto:
    """What weft chose for a shape (weft_auto_choose).  source: "database", "database-nearest", "table",
    "table-nearest" or "rule"; detail: one line saying where from; time_us: the measured time of a
    database or table hit (at the shape it was measured at), else None; configs / names: the choice
    first, then the candidates first-use tuning may time (each config as Lua text)."""

    def __init__(self, ctx, h):
        self.ctx = ctx
        self._h = h
        self.source = _lib.text(lib.weft_auto_source(h))
        self.detail = _lib.text(lib.weft_auto_detail(h))
        t = lib.weft_auto_time_us(h)
        self.time_us = t if t >= 0 else None
        n = lib.weft_auto_count(h)
        self.configs = [_lib.text(lib.weft_auto_config(h, i)) for i in range(n)]
        self.names = [_lib.text(lib.weft_auto_name(h, i)) for i in range(n)]

    def _live(self):
        if self._h is None:
            raise ValueError("weft: this Auto is closed")
        return self._h

    def compile(self, i=0):
        """Candidate i (0: the choice), compiled through the kernel cache."""
        i = whole(i, "Auto.compile: candidate", -(1 << 31), (1 << 31) - 1)
        if not 0 <= i < len(self.names):
            raise IndexError("weft: Auto.compile: candidate = %d: this choice has %d (0..%d)"
                             % (i, len(self.names), len(self.names) - 1))
        k = ctypes.c_void_p()
        with self.ctx.lock:
            st = lib.weft_auto_compile(self.ctx._handle(), self._live(), i, ctypes.byref(k))
            if st:
                raise self.ctx._error(st)
            return self.ctx._kernel(k)

    def record(self, i, time_us, db=None):
        """First-use tuning's result: candidate i took time_us (a median) at this shape; stored in the
        tuning database, so the next auto() for this shape answers "database".  Needs the GPU."""
        with self.ctx.lock:
            i = whole(i, "record: candidate", 0, len(self.names) - 1 if self.names else 0)
            if isinstance(time_us, bool) or not isinstance(time_us, numbers.Real):
                raise TypeError("weft: record: time_us = %r: a number of microseconds, not %s"
                                % (time_us, type(time_us).__name__))
            t = float(time_us)
            if not 0 < t < float("inf"):
                raise ValueError("weft: record: time_us = %r: a positive number of microseconds" % time_us)
            st = lib.weft_auto_record(self.ctx._handle(), self._live(), i, t, _fs(db, "db"))
            if st:
                raise self.ctx._error(st)

    def close(self):
        with self.ctx.lock:   # (compile and record hold it: not freed under them)
            self._free()

    def _free(self):
        h = _take_handle(self)
        if h:
            lib.weft_auto_free(h)

    def __del__(self):
        try:
            self._free()   # (no lock: see Kernel.__del__)
        except Exception:
            pass

    def __repr__(self):
        return "Auto(%s: %s)" % (self.source, self.names[0] if self.names else "?")


class Context:
    """A generator, a kernel cache and (once something launches) a CUDA device.  Calls on one
    context are serialised by its lock, as the C context is not thread-safe."""

    def __init__(self, device=0, cache_dir=None, source_dir=None):
        self._h = None
        # The C handle once closed while kernels of it are still to be destroyed (see _release),
        # and how many kernels made here are not destroyed yet: a kernel goes before its context.
        self._closing_h = None
        self._open = 0
        self._open_lock = threading.Lock()
        self._comms = weakref.WeakSet()   # weft.dist.Comm objects over this context's kernels
        self.device = whole(device, "device", 0, 1023)
        opts = _lib._CtxOptions(self.device, _fs(cache_dir, "cache_dir"), _fs(source_dir, "source_dir"))
        h = ctypes.c_void_p()
        st = lib.weft_ctx_create(ctypes.byref(h), ctypes.byref(opts))
        if st:
            msg = _lib.text(lib.weft_ctx_error(h)) if h.value else None
            if h.value:
                lib.weft_ctx_destroy(h)
            raise error(st, msg or "weft: cannot create a context (%s)" % text_status(st))
        self._h = h
        self.lock = threading.RLock()
        # Kernels live in the C context: closing it first closes them, so none is left dangling.
        self._kernels = weakref.WeakSet()

    def _handle(self):
        if self._h is None:
            raise ValueError("weft: this context is closed")
        return self._h

    def _error(self, st):
        return error(st, _lib.text(lib.weft_ctx_error(self._h)))

    def check(self):
        """Raises CommTimeoutError naming the blocks when a kernel launched from this context
        stopped on a wait that timed out (stream-K's hand-over traps: the CUDA context is then
        unusable, and torch reports only a launch failure)."""
        with self.lock:
            st = lib.weft_ctx_check(self._handle())
            if st:
                raise self._error(st)

    def _kernel(self, k):
        kernel = Kernel(self, k)
        self._kernels.add(kernel)
        return kernel

    def close(self):
        if getattr(self, "_h", None) is None:
            return
        with self.lock:
            refuse_open_comms(self._comms, "this context still has")   # (their kernels would be freed under them)
            for k in list(self._kernels):
                k.close()
            h, self._h = self._h, None
            if h is not None:   # else another thread's close() got here first (under this lock)
                self._release(h)

    def _release(self, h):
        # A kernel still open here is one close() could not reach: garbage the collector is
        # finalizing (a Kernel is in a cycle with its Manifest, so the context and its kernels go
        # in one collection, at the latest at interpreter exit), and the collector clears weak
        # references before it runs any __del__, this context's included.  Its weft_kernel_destroy
        # is yet to come and must not follow weft_ctx_destroy: the last of them destroys the context.
        with self._open_lock:
            if self._open:
                self._closing_h, h = h, None
        if h:
            lib.weft_ctx_destroy(h)

    def _kernel_made(self):
        with self._open_lock:
            self._open += 1

    def _kernel_gone(self):
        with self._open_lock:
            self._open -= 1
            h = None
            if not self._open and self._closing_h is not None:
                h, self._closing_h = self._closing_h, None
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
            return self._kernel(k)

    def compile_manifest(self, manifest):
        if not isinstance(manifest, Manifest):
            raise TypeError("weft: compile_manifest takes a Manifest, not %s" % type(manifest).__name__)
        if not manifest._owned:   # (refused before its lock: a kernel's manifest's lock is its context's,
            # and taking another context's lock inside this one's could deadlock against the reverse call)
            raise ValueError("weft: this manifest was already compiled (a kernel owns it) or is not a first kernel")
        k = ctypes.c_void_p()
        with self.lock:
            h = self._handle()
            with manifest._lock:   # (no parts() or check_size() of it under way)
                if manifest._m is None or not manifest._owned:
                    raise ValueError("weft: this manifest was already compiled (a kernel owns it) or is not a first "
                                     "kernel")
                m, manifest._m, manifest._owned = manifest._m, None, False   # the C side takes it, even on failure
            st = lib.weft_compile_manifest(h, m, ctypes.byref(k))
            if st:
                raise self._error(st)
            return self._kernel(k)

    def compile_tuned(self, path, shape, ranks=1, db=None, **kw):
        """The tuned config for this GPU, family, dtype, shape and rank count, else the config as
        given.  path: a config file; shape as auto() takes it.  Returns (kernel, tuned, notice):
        notice says which and why."""
        ov, n = _lib.strings(overrides(kw))
        k = ctypes.c_void_p()
        tuned = ctypes.c_int(0)
        p, d = _path(path), _fs(db, "db")
        s = _no_nul(shape_text(shape), "shape").encode()
        with self.lock:
            st = lib.weft_compile_tuned(self._handle(), p, ov, n, s, whole(ranks, "ranks", 1, 65536), d, ctypes.byref(k),
                                        ctypes.byref(tuned))
            if st:
                raise self._error(st)
            notice = _lib.text(lib.weft_ctx_error(self._h))
            return self._kernel(k), bool(tuned.value), notice

    def auto(self, config, shape, ranks=1, candidates=0, db=None, **kw):
        """The config for a shape: the config's open fields (absent, or "auto") chosen from the tuning
        database (exact, then the nearest shape), the table shipped with weft, or the family's rule
        (gen/core/auto.lua).  shape: {"rows": 4096, "cols": 50257} or "rows=4096 cols=50257".
        candidates: how many of the rule's next choices to keep beside it (for first-use tuning).
        Needs no GPU (without one, the database is skipped).  Returns an Auto."""
        ranks, candidates = whole(ranks, "ranks", 1, 65536), whole(candidates, "candidates", 0, 16)
        ov, n = _lib.strings(overrides(kw))
        s = _no_nul(shape_text(shape), "shape").encode()
        a = ctypes.c_void_p()
        d = _fs(db, "db")
        with self.lock:
            h = self._handle()
            if isinstance(config, dict):
                text = lua_config(config).encode("utf-8")
                st = lib.weft_auto_choose_string(h, _dict_name(config), text, ov, n, s, ranks, candidates, d,
                                                 ctypes.byref(a))
            elif isinstance(config, (str, bytes, os.PathLike)):
                st = lib.weft_auto_choose(h, _path(config), ov, n, s, ranks, candidates, d, ctypes.byref(a))
            else:
                raise TypeError("weft: a config is a path (str, os.PathLike) or a dict, not %s" % type(config).__name__)
            if st:
                raise self._error(st)
        return Auto(self, a)

    def compile_auto(self, config, shape, ranks=1, db=None, **kw):
        """auto(), then its choice compiled: (kernel, auto)."""
        a = self.auto(config, shape, ranks=ranks, db=db, **kw)
        return a.compile(0), a

    def _call(self, what, config, ov, n, out):
        if isinstance(config, dict):
            text = lua_config(config).encode("utf-8")
            f = lib.weft_generate_string if what == "generate" else lib.weft_compile_string
            return f(self._handle(), _dict_name(config), text, ov, n, out)
        if isinstance(config, (str, bytes, os.PathLike)):
            f = lib.weft_generate_file if what == "generate" else lib.weft_compile_file
            return f(self._handle(), _path(config), ov, n, out)
        raise TypeError("weft: a config is a path (str, os.PathLike) or a dict, not %s" % type(config).__name__)

    def generate_source(self, text, name="<string>", **kw):
        """Generate from Lua source text (a chunk that returns the config table)."""
        ov, n = _lib.strings(overrides(kw))
        cname, src = _source(text, name)
        m = ctypes.POINTER(_lib._Manifest)()
        with self.lock:
            st = lib.weft_generate_string(self._handle(), cname, src, ov, n, ctypes.byref(m))
            if st:
                raise self._error(st)
        return Manifest(m, owned=True)

    def compile_source(self, text, name="<string>", **kw):
        ov, n = _lib.strings(overrides(kw))
        cname, src = _source(text, name)
        k = ctypes.c_void_p()
        with self.lock:
            st = lib.weft_compile_string(self._handle(), cname, src, ov, n, ctypes.byref(k))
            if st:
                raise self._error(st)
            return self._kernel(k)


_contexts = {}
_contexts_lock = threading.Lock()


def context(device=0):
    """The process's context for a device (created on first use; cache and sources from the environment)."""
    device = whole(device, "context: device", 0, 1023)
    with _contexts_lock:
        c = _contexts.get(device)
        if c is None or c._h is None:
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
    `weft gen` writes, as .data) and its CUDA C source.  The Python fields stay readable for good;
    parts() and check_size() read the C manifest, so they need its owner alive (this manifest until
    compiled, else the kernel)."""

    def __init__(self, m, owned, keep=None):
        self._m = m
        self._owned = owned
        self._keep = keep          # what owns a borrowed manifest: a Kernel, or the first Manifest
        # The lock under which the C side may be freed, held by parts() and check_size() from the
        # check that it is alive to their last C call (another thread's close came between the two:
        # freed memory read): a kernel's manifest, its context's (Kernel.close holds it); a first
        # manifest, its own (compile_manifest hands it over under it, inside the context's: always
        # that order); a part, its first manifest's.
        self._lock = keep._lock if isinstance(keep, Manifest) else keep.ctx.lock if isinstance(keep, Kernel) else \
            threading.RLock()
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

    def _live(self):
        # A part's memory is its first manifest's; a kernel's manifest is the kernel's.
        k = self._keep
        dead = self._m is None or (isinstance(k, Kernel) and k._h is None) or \
            (isinstance(k, Manifest) and k._live() is None)
        if dead:
            raise ValueError("weft: manifest %s: its C side was handed to a kernel or freed: use the kernel's "
                             "manifest (kernel.manifest, kernel.parts())" % self.name)
        return self._m

    def parts(self):
        """The config's kernels in launch order (this one first), as manifests."""
        with self._lock:
            m = self._live()
            out = [self]
            i = 1
            while True:
                p = lib.weft_manifest_part(m, i)
                if not p:
                    return out
                out.append(Manifest(p, owned=False, keep=self))
                i += 1

    def check_size(self, name, value):
        """None if size `name` = value is within the kernel's limits, else the reason."""
        sizes = [a.name for a in self.args if a.role == "size"]
        if name not in sizes:
            raise ValueError("weft: %s has no size argument %r: its sizes are %s" % (self.name, name,
                                                                                    ", ".join(sizes) or "none"))
        if isinstance(value, bool):
            raise TypeError("weft: check_size: %s = %r: a whole number, not a bool" % (name, value))
        try:
            v = operator.index(value)
        except TypeError:
            raise TypeError("weft: check_size: %s = %r: a whole number, not %s" % (name, value, type(value).__name__)) from None
        if not _INT64[0] <= v <= _INT64[1]:
            return "%s = %d does not fit in 64 bits" % (name, v)
        why = ctypes.create_string_buffer(512)
        with self._lock:
            if lib.weft_manifest_check_size(self._live(), name.encode(), v, why, len(why)) == 0:
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
_FLT_MAX = 3.4028234663852886e38   # the largest finite f32
_RANGE = {"ptr": (0, (1 << 64) - 1), "i32": (-(1 << 31), (1 << 31) - 1), "i64": _INT64, "f32": (-_FLT_MAX, _FLT_MAX)}
_PTR, _INT, _FLOAT = 0, 1, 2


def _slow_value(v, arg, kind, kernel):
    # Only for values that are not exactly int (pointer, size) or float (scalar): tensors, numpy
    # scalars, and the errors.  The common case never comes here.
    if kind == _FLOAT:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        raise TypeError("weft: %s: argument %s is a scalar (f32): pass a float, not %s"
                        % (kernel, arg.name, type(v).__name__))
    if not isinstance(v, bool):
        p = getattr(v, "data_ptr", None) if kind == _PTR else None
        if p is not None:
            if getattr(v, "is_cuda", True) is False:   # a host address would launch as a device one
                raise ValueError("weft: %s: argument %s is a tensor on %s, not on a CUDA device"
                                 % (kernel, arg.name, getattr(v, "device", "the host")))
            return p()
        try:
            return operator.index(v)
        except TypeError:
            pass
    if kind == _PTR:
        raise TypeError("weft: %s: argument %s is a pointer: pass an int (a device address) or a tensor, not %s"
                        % (kernel, arg.name, type(v).__name__))
    raise TypeError("weft: %s: argument %s is a size (%s): pass an int, not %s"
                    % (kernel, arg.name, arg.type, type(v).__name__))


def stream_handle(stream, what):
    """A CUstream as int from an int, None, or an object with .cuda_stream (torch.cuda.Stream).
    Kernel.launch and Comm.launch pass every stream through it: the one check of its type and range."""
    # ctypes would take a str or bytes as c_void_p too, and launch on the address of its text.
    s = getattr(stream, "cuda_stream", stream)
    if s is None or (isinstance(s, int) and not isinstance(s, bool)):
        if s is not None and not 0 <= s < (1 << 64):
            raise ValueError("weft: %s: stream = %d is not a CUstream handle" % (what, s))
        return s
    raise TypeError("weft: %s: stream is a CUstream handle as int, an object with .cuda_stream, or None; not %s"
                    % (what, type(stream).__name__))


class Kernel:
    """A compiled kernel (or a part of a multi-kernel config).  launch(*args, stream=None): one
    value per manifest argument, in order; pointers as ints or tensors (data_ptr()), sizes as ints,
    scalars as floats.  stream: a CUstream handle as int (torch: torch.cuda.current_stream().cuda_stream)."""

    def __init__(self, ctx, h, owner=None):
        self.ctx = ctx
        self._owner = owner
        self._parts = None
        self._h = h
        if owner is None:   # a first kernel: destroyed by close(), before its context (Context._release)
            ctx._kernel_made()
        self.manifest = Manifest(lib.weft_kernel_manifest(h), owned=False, keep=self)
        args = self.manifest.args
        self._vals = [_CTYPE[a.type]() for a in args]
        self._argv = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                                            for v in self._vals])
        kinds = {"ptr": _PTR, "i32": _INT, "i64": _INT, "f32": _FLOAT}
        self._setters = [(v, a, kinds[a.type]) + _RANGE[a.type] for v, a in zip(self._vals, args)]

    @property
    def handle(self):
        return self._h

    def parts(self):
        """The config's kernels in launch order (this one first).  They belong to this kernel:
        closing it closes them."""
        with self.ctx.lock:
            if self._parts is None:
                n = lib.weft_kernel_count(self._live())
                self._parts = [self] + [Kernel(self.ctx, ctypes.c_void_p(lib.weft_kernel_part(self._h, i)), owner=self)
                                        for i in range(1, n)]
            return list(self._parts)

    def _live(self):
        if self._h is None:
            raise ValueError("weft: kernel %s is closed" % self.manifest.name)
        return self._h

    # The accessors read the kernel and copy what they read under the context's lock, as launch()
    # does: close() on another thread would free it between the two.
    @property
    def ptx(self):
        n = ctypes.c_size_t()
        with self.ctx.lock:
            p = lib.weft_kernel_ptx(self._live(), ctypes.byref(n))
            return ctypes.string_at(p, n.value).decode("utf-8", "replace").rstrip("\0") if p else None

    @property
    def cubin(self):
        n = ctypes.c_size_t()
        with self.ctx.lock:
            p = lib.weft_kernel_cubin(self._live(), ctypes.byref(n))
            return ctypes.string_at(p, n.value) if p else None

    @property
    def cache_hit(self):
        with self.ctx.lock:
            return bool(lib.weft_kernel_cache_hit(self._live()))

    @property
    def compile_ms(self):
        with self.ctx.lock:
            return lib.weft_kernel_compile_ms(self._live())

    @property
    def log(self):
        with self.ctx.lock:
            return _lib.text(lib.weft_kernel_log(self._live()))

    def resources(self):
        r = _lib._Resources()
        with self.ctx.lock:
            st = lib.weft_kernel_resources(self._live(), ctypes.byref(r))
            if st:
                raise error(st, _lib.text(lib.weft_kernel_error(self._h)))
        return {"registers": r.registers, "local_bytes": r.local_bytes, "static_smem": r.static_smem,
                "max_threads": r.max_threads}

    def _bind(self, args):
        if len(args) != len(self._setters):
            raise TypeError("weft: %s takes %d arguments (%s), got %d" % (
                self.manifest.name, len(self._setters), ", ".join(a.name for a in self.manifest.args), len(args)))
        for (slot, arg, kind, lo, hi), v in zip(self._setters, args):
            if kind == _FLOAT:
                if type(v) is not float:
                    v = _slow_value(v, arg, kind, self.manifest.name)
                # ctypes would make 1e300 an inf; NaN (no comparison holds) and inf are no kernel's scalar
                if not lo <= v <= hi:
                    raise WeftError(7, "weft: %s: argument %s = %r is not a finite f32 (at most %g in size)"
                                    % (self.manifest.name, arg.name, v, hi))
            else:
                if type(v) is not int:
                    v = _slow_value(v, arg, kind, self.manifest.name)
                # ctypes would wrap silently: 2**32 + 5 rows would launch as 5.
                if not lo <= v <= hi:
                    raise WeftError(7, "weft: %s: argument %s = %d does not fit its type %s (%d..%d)"
                                    % (self.manifest.name, arg.name, v, arg.type, lo, hi))
            slot.value = v

    def launch(self, *args, stream=None):
        with self.ctx.lock:
            self._bind(args)
            stream = stream_handle(stream, self.manifest.name)
            st = lib.weft_launch(self._h, self._argv, stream)
            if st:
                if self._h is None:
                    raise ValueError("weft: kernel %s is closed" % self.manifest.name)
                raise error(st, _lib.text(lib.weft_kernel_error(self._h)))

    def _launch_trusted(self, args, stream):
        """launch() for callers that produced every value themselves (weft.torch): ints from tensor
        sizes already checked against the kernel's limits, data_ptr() pointers, a raw stream handle;
        one value per argument, in order.  The C side still checks pointers and limits."""
        with self.ctx.lock:
            for slot, v in zip(self._vals, args):
                slot.value = v
            st = lib.weft_launch(self._h, self._argv, stream)
            if st:
                if self._h is None:
                    raise ValueError("weft: kernel %s is closed" % self.manifest.name)
                raise error(st, _lib.text(lib.weft_kernel_error(self._h)))

    def close(self):
        """Frees the kernel (and its parts).  Waits for a launch or a read of it on another thread;
        refused while a communicator over it is open (close that first: Comm.close is collective)."""
        owner = self._owner or self
        with self.ctx.lock:   # (a Comm registers itself under it: none can appear between check and free)
            refuse_open_comms(self.ctx._comms, "kernel %s has" % self.manifest.name, " over it",
                              lambda c: c.kernel is owner or getattr(c.kernel, "_owner", None) is owner)
            self._free()

    def _free(self):
        h = _take_handle(self)
        for p in (getattr(self, "_parts", None) or [])[1:]:
            p._h = None
        if h and self._owner is None:
            try:
                lib.weft_kernel_destroy(h)
            finally:
                self.ctx._kernel_gone()

    def __del__(self):
        # No lock: nothing else holds this kernel now, and a finalizer must never wait (at
        # interpreter exit, on a thread that was stopped holding it).
        try:
            self._free()
        except Exception:
            pass

    def __repr__(self):
        return "Kernel(%s)" % self.manifest.name


def generate(config, **kw):
    """The manifest of a config (path or dict) with overrides; no GPU needed."""
    return context().generate(config, **kw)


def auto(config, shape, **kw):
    """Context.auto on the default context: the config chosen for a shape (no GPU needed)."""
    return context().auto(config, shape, **kw)


def compile(config, **kw):  # noqa: A001 (the package's verb)
    """Generate and compile (through the kernel cache) a config; no GPU needed."""
    return context().compile(config, **kw)


def version():
    return _lib.text(lib.weft_version())
