"""Several ranks from Python: a world built on the caller's all-gather, and communicators that
launch the kernels which talk to other ranks (allreduce, all-gather + GEMM).

Every call here that the C API calls collective (World(), Comm(), Comm.close(), World.close())
must be made by every rank, in the same order.  Nothing collective ever runs from a garbage
collector: close them explicitly (or use `with`), since ranks collect at different times.
"""
import ctypes
import operator
import threading
import weakref

from . import _lib
from ._lib import lib
from .core import Kernel, WeftError, _take_handle, error, refuse_open_comms, stream_handle, whole


class World:
    """The ranks of a job, from rank numbers and an all-gather.

    allgather(data: bytes) -> bytes must return every rank's `data` concatenated in rank order
    (size * len(data) bytes) and be collective (torch.distributed.all_gather_object, a store, MPI).
    Where it raises, the call fails on every rank (WeftError naming the rank; on that rank, what it
    raised), or, where only this rank's status exchange failed, the next collective call does;
    a KeyboardInterrupt or SystemExit comes back as itself on its rank at once.
    Ranks that share a node are consecutive: local_rank / local_size among them."""

    def __init__(self, rank, size, local_rank, local_size, allgather):
        self._h = None
        # Held by every call that reads the world (agree, the ranks, close): close() on another
        # thread waits for them, not frees the world under them.
        self.lock = threading.RLock()
        self._comms = weakref.WeakSet()   # the communicators over this world
        if not callable(allgather):
            raise TypeError("weft: World's allgather must be callable (bytes -> bytes), not %s"
                            % type(allgather).__name__)
        nums = {}
        for name, v in (("rank", rank), ("size", size), ("local_rank", local_rank), ("local_size", local_size)):
            try:
                nums[name] = operator.index(v)
            except TypeError:
                raise TypeError("weft: World's %s must be an int, not %s" % (name, type(v).__name__)) from None
            # Out of C int range, ctypes would wrap it into some other, plausible, rank number.
            if not -(1 << 31) <= nums[name] < (1 << 31):
                raise ValueError("weft: World's %s = %d is out of range" % (name, nums[name]))
        self._allgather = allgather
        self._failure = None
        self.size = nums["size"]
        self._fn = _lib.ALLGATHER_FN(self._gather)   # kept alive as long as the world
        b = _lib._Bootstrap(nums["rank"], nums["size"], nums["local_rank"], nums["local_size"], self._fn, None)
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        st = lib.weft_world_create_with(ctypes.byref(b), ctypes.byref(h), err, len(err))
        if st:
            self._raise(st, err.value.decode("utf-8", "replace"))
        self._h = h
        if self._interrupted():   # (the other ranks' creation succeeded: C reports this rank's failure
            h = _take_handle(self)   # at their next call; this rank's side is freed, no talking)
            if h:
                lib.weft_world_destroy(h)
            raise self._take_failure()

    def _take_failure(self):
        f, self._failure = self._failure, None
        return f

    def _interrupted(self):
        # An interrupt in a call C still finished (only this rank's status exchange failed: C
        # reports that at the next collective call), raised now rather than held until then.
        return self._failure is not None and not isinstance(self._failure, Exception)

    def _raise(self, st, msg):
        """The error of a call whose all-gather may have failed on this rank.  What the callback
        raised is named in the message (the other ranks learn only that it failed, from C); a
        KeyboardInterrupt or SystemExit is raised as itself (Ctrl-C stops the program, as it
        would have without weft between), after C has unwound."""
        f = self._take_failure()
        if f is not None and not isinstance(f, Exception):
            raise f
        if f is not None:
            msg += " (this rank's all-gather raised %r)" % (f,)
        raise error(st, msg)

    def _gather(self, send, recv, nbytes, user):
        try:
            data = ctypes.string_at(send, nbytes) if nbytes else b""
            out = self._allgather(data)
            if not isinstance(out, (bytes, bytearray)) or len(out) != nbytes * self.size:
                raise ValueError("the all-gather returned %s of %d bytes, not %d x %d bytes" % (
                    type(out).__name__, len(out) if hasattr(out, "__len__") else -1, self.size, nbytes))
            if nbytes:
                ctypes.memmove(recv, bytes(out), len(out))
            return 0
        except BaseException as e:  # a callback must not unwind through C
            # C may call again in the same operation (its status exchange): the first failure
            # stays, but an interrupt (KeyboardInterrupt, SystemExit) is kept over an error
            if self._failure is None or (isinstance(self._failure, Exception) and not isinstance(e, Exception)):
                self._failure = e
            return 1

    @property
    def handle(self):
        return self._h

    def _live(self):
        if self._h is None:
            raise ValueError("weft: this world is closed")
        return self._h

    @property
    def rank(self):
        with self.lock:
            return lib.weft_world_rank(self._live())

    @property
    def local_rank(self):
        with self.lock:
            return lib.weft_world_local_rank(self._live())

    @property
    def local_size(self):
        with self.lock:
            return lib.weft_world_local_size(self._live())

    def agree(self, what, desc):
        """Collective: every rank passes the same description, else WeftError (MISMATCH) on every rank."""
        if not isinstance(what, str) or not isinstance(desc, str):
            raise TypeError("weft: agree(what, desc) takes two str, not %s and %s" % (type(what).__name__, type(desc).__name__))
        if "\0" in what or "\0" in desc:
            raise ValueError("weft: agree(%r, %r): a NUL character would cut the text short" % (what, desc))
        with self.lock:
            h = self._live()
            st = lib.weft_world_agree(h, what.encode(), desc.encode())
            if st:
                self._raise(st, _lib.text(lib.weft_world_error(h)))
            if self._interrupted():
                raise self._take_failure()

    def close(self):
        """Collective-free: releases this rank's side (no communication).  Its communicators must be
        closed first: closing one talks to the other ranks through this world.  Waits for an
        agree() that another thread is in (which ends when its all-gather does)."""
        with self.lock:   # (waits for an agree() on another thread)
            refuse_open_comms(self._comms, "this world still has")
            h = _take_handle(self)   # one free, whatever threads close it at once
            if h:
                lib.weft_world_destroy(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Comm:
    """A compiled kernel that talks to other ranks, bound to a world: its symmetric buffer (sized
    for max_elems elements), its device epoch counter and its error record.  Collective to create
    and to close.  launch() is ordered by device-side epochs, so it may be captured in a CUDA graph
    and replayed; check() after the stream is synchronised raises CommTimeoutError naming who."""

    def __init__(self, kernel, world, max_elems):
        self._h = None
        if not isinstance(kernel, Kernel) or not isinstance(world, World):
            raise TypeError("weft: Comm(kernel, world, max_elems) takes a weft Kernel and a World, not %s and %s"
                            % (type(kernel).__name__, type(world).__name__))
        self.kernel, self.world = kernel, world
        h = ctypes.c_void_p()
        with world.lock, kernel.ctx.lock:   # (always in this order: the world's, then the context's)
            if kernel.handle is None or world.handle is None:
                raise ValueError("weft: Comm over a closed %s" % ("kernel" if kernel.handle is None else "world"))
            max_elems = whole(max_elems, "Comm: max_elems", 1, 1 << 62)
            st = lib.weft_comm_create(kernel.handle, world.handle, max_elems, ctypes.byref(h))
            if st:   # (the world's all-gather exchanged the buffers' handles: it may be what failed)
                world._raise(st, _lib.text(lib.weft_kernel_error(kernel.handle)) or
                             _lib.text(lib.weft_ctx_error(kernel.ctx._h)))
            self._h = h
            self.max_elems = max_elems
            # registered under the locks: the world, the context and the kernel each refuse to
            # close under an open communicator, and none can close between its creation and this
            world._comms.add(self)
            kernel.ctx._comms.add(self)

    def _live(self):
        if self._h is None:
            raise ValueError("weft: this communicator is closed")
        return self._h

    def _lock(self):
        # Every call holds the kernel's context lock, as launch() does, so that close() on another
        # thread waits for it.  (A closed communicator, or one whose constructor failed, says so.)
        self._live()
        return self.kernel.ctx.lock

    @property
    def multicast(self):
        with self._lock():
            return bool(lib.weft_comm_multicast(self._live()))

    def set_timeout(self, seconds):
        """How long a wait on another rank's signal may take before the kernel reports it (seconds > 0)."""
        try:
            t = float(seconds) if not isinstance(seconds, (bool, str, bytes)) else None
        except (TypeError, ValueError):
            t = None
        if t is None or not 0 < t <= 86400:
            raise ValueError("weft: set_timeout(%r): a number of seconds above 0 and at most 86400 (a day)" % (seconds,))
        with self._lock():
            lib.weft_comm_set_timeout(self._live(), t)

    def launch(self, *args, stream=None):
        k = self.kernel
        with k.ctx.lock:
            k._bind(args)
            stream = stream_handle(stream, k.manifest.name)
            st = lib.weft_comm_launch(self._live(), k._argv, stream)
            if st:
                raise error(st, _lib.text(lib.weft_comm_error(self._h)))

    @property
    def epoch(self):
        """Launches finished so far on this rank (read from the device: synchronise first)."""
        with self._lock():
            return lib.weft_comm_epoch(self._live())

    def check(self):
        with self._lock():
            h = self._live()
            st = lib.weft_comm_check(h)
            if st:
                raise error(st, _lib.text(lib.weft_comm_error(h)))

    def close(self):
        """Collective: every rank closes its communicators in the same order."""
        if getattr(self, "_h", None) is None:
            return
        with self.world.lock, self.kernel.ctx.lock:
            h = _take_handle(self)   # one free, whatever threads close it at once
            if h:
                lib.weft_comm_destroy(h)   # (its last step a barrier through the world's all-gather)
                # Ctrl-C in that barrier: raised as itself, the communicator freed.  An error is
                # left to C, which reports it at the next collective call on every rank (raising
                # it here, on this rank alone, would stop this rank's closes and not its peers').
                if self.world._interrupted():
                    raise self.world._take_failure()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["World", "Comm", "WeftError"]
