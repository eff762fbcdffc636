"""Loads libweft and declares the C functions the package calls (runtime/core/weft.h).

The library is found at $WEFT_LIB if set, else as libweft.so.0 next to this file (where the
build tree's build/python/weft/ and an install put it).  Nothing here needs a GPU: the CUDA
driver is opened by libweft only when something is launched.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class _Manifest(ctypes.Structure):
    # The leading fields of weft_manifest; the rest is read from its JSON.
    _fields_ = [("family", ctypes.c_char_p), ("name", ctypes.c_char_p), ("entry", ctypes.c_char_p),
                ("source", ctypes.c_char_p), ("json", ctypes.c_char_p)]


class _CtxOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("cache_dir", ctypes.c_char_p), ("source_dir", ctypes.c_char_p)]


ALLGATHER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class _Bootstrap(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("size", ctypes.c_int), ("local_rank", ctypes.c_int),
                ("local_size", ctypes.c_int), ("allgather", ALLGATHER_FN), ("user", ctypes.c_void_p)]


class _Resources(ctypes.Structure):
    _fields_ = [("registers", ctypes.c_int), ("local_bytes", ctypes.c_int), ("static_smem", ctypes.c_int),
                ("max_threads", ctypes.c_int)]


_vp, _cp, _int, _st = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int
_pp = ctypes.POINTER(ctypes.c_char_p)
_mp = ctypes.POINTER(_Manifest)

# name: (restype, argtypes)
_PROTOS = {
    "weft_version": (_cp, []),
    "weft_status_name": (_cp, [_int]),
    "weft_ctx_create": (_st, [ctypes.POINTER(_vp), ctypes.POINTER(_CtxOptions)]),
    "weft_ctx_destroy": (None, [_vp]),
    "weft_ctx_error": (_cp, [_vp]),
    "weft_ctx_check": (_st, [_vp]),
    "weft_generate_file": (_st, [_vp, _cp, _pp, _int, ctypes.POINTER(_mp)]),
    "weft_generate_string": (_st, [_vp, _cp, _cp, _pp, _int, ctypes.POINTER(_mp)]),
    "weft_manifest_free": (None, [_mp]),
    "weft_manifest_part": (_mp, [_mp, _int]),
    "weft_manifest_check_size": (_int, [_mp, _cp, ctypes.c_longlong, ctypes.c_char_p, ctypes.c_size_t]),
    "weft_compile_file": (_st, [_vp, _cp, _pp, _int, ctypes.POINTER(_vp)]),
    "weft_compile_string": (_st, [_vp, _cp, _cp, _pp, _int, ctypes.POINTER(_vp)]),
    "weft_compile_manifest": (_st, [_vp, _mp, ctypes.POINTER(_vp)]),
    "weft_compile_tuned": (_st, [_vp, _cp, _pp, _int, _cp, _int, _cp, ctypes.POINTER(_vp),
                                 ctypes.POINTER(ctypes.c_int)]),
    "weft_auto_choose": (_st, [_vp, _cp, _pp, _int, _cp, _int, _int, _cp, ctypes.POINTER(_vp)]),
    "weft_auto_choose_string": (_st, [_vp, _cp, _cp, _pp, _int, _cp, _int, _int, _cp, ctypes.POINTER(_vp)]),
    "weft_auto_source": (_cp, [_vp]),
    "weft_auto_detail": (_cp, [_vp]),
    "weft_auto_time_us": (ctypes.c_double, [_vp]),
    "weft_auto_count": (_int, [_vp]),
    "weft_auto_config": (_cp, [_vp, _int]),
    "weft_auto_name": (_cp, [_vp, _int]),
    "weft_auto_compile": (_st, [_vp, _vp, _int, ctypes.POINTER(_vp)]),
    "weft_auto_record": (_st, [_vp, _vp, _int, ctypes.c_double, _cp]),
    "weft_auto_free": (None, [_vp]),
    "weft_kernel_manifest": (_mp, [_vp]),
    "weft_kernel_count": (_int, [_vp]),
    "weft_kernel_part": (_vp, [_vp, _int]),
    "weft_kernel_ptx": (_vp, [_vp, ctypes.POINTER(ctypes.c_size_t)]),
    "weft_kernel_cubin": (_vp, [_vp, ctypes.POINTER(ctypes.c_size_t)]),
    "weft_kernel_cache_hit": (_int, [_vp]),
    "weft_kernel_compile_ms": (ctypes.c_double, [_vp]),
    "weft_kernel_error": (_cp, [_vp]),
    "weft_kernel_log": (_cp, [_vp]),
    "weft_kernel_destroy": (None, [_vp]),
    "weft_kernel_resources": (_st, [_vp, ctypes.POINTER(_Resources)]),
    "weft_launch": (_st, [_vp, ctypes.POINTER(_vp), _vp]),
    "weft_world_create_with": (_st, [ctypes.POINTER(_Bootstrap), ctypes.POINTER(_vp), ctypes.c_char_p,
                                     ctypes.c_size_t]),
    "weft_world_destroy": (None, [_vp]),
    "weft_world_rank": (_int, [_vp]),
    "weft_world_size": (_int, [_vp]),
    "weft_world_local_rank": (_int, [_vp]),
    "weft_world_local_size": (_int, [_vp]),
    "weft_world_error": (_cp, [_vp]),
    "weft_world_agree": (_st, [_vp, _cp, _cp]),
    "weft_comm_create": (_st, [_vp, _vp, ctypes.c_longlong, ctypes.POINTER(_vp)]),
    "weft_comm_launch": (_st, [_vp, ctypes.POINTER(_vp), _vp]),
    "weft_comm_check": (_st, [_vp]),
    "weft_comm_epoch": (ctypes.c_longlong, [_vp]),
    "weft_comm_set_timeout": (None, [_vp, ctypes.c_double]),
    "weft_comm_error": (_cp, [_vp]),
    "weft_comm_multicast": (_int, [_vp]),
    "weft_comm_destroy": (None, [_vp]),
}


def _find():
    env = os.environ.get("WEFT_LIB")
    if env:
        if not os.path.isfile(env):
            raise OSError("weft: WEFT_LIB=%r is not a file (it should name libweft.so.0)" % env)
        return env
    here = os.path.join(_HERE, "libweft.so.0")
    if os.path.isfile(here):
        return here
    raise OSError("weft: libweft.so.0 not found: not at %s and WEFT_LIB is not set (build weft: the build "
                  "tree's package is build/python/weft, so set PYTHONPATH=<weft>/build/python; or set "
                  "WEFT_LIB to the library's path)" % here)


def _load():
    path = _find()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise OSError("weft: cannot load %s: %s" % (path, e)) from None
    for name, (res, args) in _PROTOS.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise OSError("weft: %s does not export %s (a libweft older than this package?)" % (path, name)) from None
        f.restype = res
        f.argtypes = args
    return lib, path


lib, path = _load()


def text(p):
    """A C string from the library as str (None stays None)."""
    return None if p is None else p.decode("utf-8", "replace")


def strings(items):
    """A (char **, count) pair for a list of str; the array keeps its strings alive."""
    if not items:
        return None, 0
    arr = (ctypes.c_char_p * len(items))(*[s.encode("utf-8") for s in items])
    return arr, len(items)
