"""weft.World over an in-process all-gather: N Python threads as N ranks (no MPI, no GPU).

A hang must fail the test, not block CI: every join has a timeout, and faulthandler dumps the
stacks if the module runs past its budget.
"""
import faulthandler
import re
import threading

import pytest

import weft
from conftest import assert_close_waits

JOIN_S = 60


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(240, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class Gather:
    """An all-gather across n threads: each deposits its bytes, a barrier, each reads them all."""

    def __init__(self, n):
        self.n = n
        self.slots = [None] * n
        self.barrier = threading.Barrier(n, timeout=JOIN_S)
        self.calls = [0] * n

    def fn(self, rank, fail_on=None, wrong_len=False, exc=RuntimeError):
        def allgather(data):
            self.calls[rank] += 1
            self.slots[rank] = data
            self.barrier.wait()
            out = b"".join(self.slots)
            self.barrier.wait()   # nobody overwrites its slot before everyone has read
            if fail_on is not None and fail_on(self.calls[rank]):
                raise exc("rank %d: transport failed" % rank)
            return out[:-1] if wrong_len else out
        return allgather


def on_ranks(n, body):
    """body(rank) on n threads; returns [result or exception] by rank."""
    out = [None] * n

    def run(r):
        try:
            out[r] = body(r)
        except BaseException as e:  # noqa: B902 (compared by the test)
            out[r] = e

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_S)
        assert not t.is_alive(), "a rank hung"
    return out


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_world_fields_and_agree(n):
    g = Gather(n)
    local = 2 if n % 2 == 0 else 1

    def body(r):
        with weft.World(r, n, r % local, local, g.fn(r)) as w:
            fields = (w.rank, w.size, w.local_rank, w.local_size, weft._lib.lib.weft_world_size(w.handle))
            w.agree("test", "bytes=4096 kernel=abc")
            return fields

    out = on_ranks(n, body)
    assert out == [(r, n, r % local, local, n) for r in range(n)]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_agree_mismatch_same_message_everywhere(n):
    g = Gather(n)

    def body(r):
        w = weft.World(r, n, 0, 1, g.fn(r))
        try:
            w.agree("sizes", "m=1024" if r != n - 1 else "m=2048")
        finally:
            w.close()

    out = on_ranks(n, body)
    assert all(isinstance(e, weft.WeftError) and e.status_name == "MISMATCH" for e in out), out
    msgs = {str(e) for e in out}
    assert len(msgs) == 1
    msg = msgs.pop()
    assert "m=1024" in msg and "m=2048" in msg and "sizes" in msg


@pytest.mark.parametrize("n, bad", [
    (2, lambda r, n: (r, n, r, n if r == 0 else n + 1)),          # local_size differs
    (4, lambda r, n: (r if r != 2 else 7, n, 0, 1)),              # a rank number out of range
    (4, lambda r, n: (0 if r < 2 else r, n, 0, 1)),               # two ranks claim rank 0
    (2, lambda r, n: (r, n, 5, 1)),                               # local_rank beyond local_size
])
def test_bad_rank_numbers_same_invalid_everywhere(n, bad):
    g = Gather(n)

    def body(r):
        rank, size, lr, ls = bad(r, n)
        weft.World(rank, size, lr, ls, g.fn(r)).close()

    out = on_ranks(n, body)
    assert all(isinstance(e, weft.WeftError) and e.status_name == "INVALID" for e in out), out
    assert len({str(e) for e in out}) == 1, [str(e) for e in out]
    assert "rank" in str(out[0])


def test_bad_arguments_before_any_gather():
    with pytest.raises(TypeError, match="rank must be an int"):
        weft.World("0", 1, 0, 1, lambda d: d)
    with pytest.raises(ValueError, match="size = 4294967297 is out of range"):
        weft.World(0, (1 << 32) + 1, 0, 1, lambda d: d)
    with pytest.raises(TypeError, match="callable"):
        weft.World(0, 1, 0, 1, None)
    with pytest.raises(weft.WeftError) as e:
        weft.World(0, 0, 0, 1, lambda d: d)
    assert e.value.status_name == "INVALID"


@pytest.mark.parametrize("n", [2, 4])
def test_allgather_raising_on_one_rank_fails_every_rank(n):
    g = Gather(n)

    def body(r):
        # rank 1's transport fails on its first call: creation fails everywhere, nobody hangs
        weft.World(r, n, 0, 1, g.fn(r, fail_on=(lambda c: c == 1) if r == 1 else None)).close()

    out = on_ranks(n, body)
    assert all(isinstance(e, weft.WeftError) for e in out), out
    assert "transport failed" in str(out[1])
    assert all("callback returned 1 on rank 1" in str(e) for e in out), out
    assert {e.status_name for e in out} == {"IO"}


def agree_failing_on(n, rank, exc=RuntimeError):
    """Every rank makes a World and agrees once; `rank`'s transport raises `exc` once creation is
    done, in agree.  [result or exception] by rank."""
    g = Gather(n)

    def body(r):
        armed = []
        w = weft.World(r, n, 0, 1, g.fn(r, fail_on=lambda c: r == rank and bool(armed), exc=exc))
        armed.append(True)
        try:
            w.agree("what", "same")
        finally:
            w.close()

    return on_ranks(n, body)


@pytest.mark.parametrize("n", [2, 4])
def test_allgather_raising_in_agree(n):
    out = agree_failing_on(n, 0)
    assert all(isinstance(e, weft.WeftError) for e in out), out
    assert "transport failed" in str(out[0])
    assert all("on rank 0" in str(e) for e in out), out
    assert {e.status_name for e in out} == {"IO"}


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("n", [1, 2])
def test_an_interrupt_in_the_allgather_is_raised_as_itself(n, exc):
    # Ctrl-C (or sys.exit) inside the callback: that rank gets the KeyboardInterrupt back once C has
    # unwound, not a WeftError (it was "this rank's all-gather raised KeyboardInterrupt"); the other
    # ranks get the usual WeftError naming it.  In creation, then in agree.
    g = Gather(n)

    def body(r):
        weft.World(r, n, 0, 1, g.fn(r, fail_on=(lambda c: c == 1) if r == n - 1 else None, exc=exc)).close()

    out = on_ranks(n, body)
    assert isinstance(out[n - 1], exc), out
    assert all(isinstance(e, weft.WeftError) and ("on rank %d" % (n - 1)) in str(e) for e in out[:n - 1]), out
    out = agree_failing_on(n, n - 1, exc)
    assert isinstance(out[n - 1], exc), out
    assert all(isinstance(e, weft.WeftError) for e in out[:n - 1]), out


def test_an_interrupt_is_not_lost_to_a_later_error_or_a_pending_status():
    n = 2
    # The callback raises KeyboardInterrupt, then (C calls it again in the same operation, for the
    # status exchange) a RuntimeError: the interrupt is what comes back (the second had replaced it).
    g = Gather(n)

    def body(r):
        inner, calls = g.fn(r), []

        def cb(data):
            out = inner(data)
            calls.append(1)
            if r == n - 1 and len(calls) <= 2:
                raise (KeyboardInterrupt if len(calls) == 1 else RuntimeError)("rank %d" % r)
            return out
        weft.World(r, n, 0, 1, cb).close()

    out = on_ranks(n, body)
    assert isinstance(out[n - 1], KeyboardInterrupt) and isinstance(out[0], weft.WeftError), out
    # Only the status exchange fails, on one rank: C finishes the creation everywhere and would
    # report it at the next collective call; the interrupt comes back at once (it was held until then).
    g = Gather(n)

    def body2(r):
        weft.World(r, n, 0, 1, g.fn(r, fail_on=(lambda c: c == 2) if r == n - 1 else None, exc=KeyboardInterrupt)).close()
        return "made"

    out = on_ranks(n, body2)
    assert out[0] == "made" and isinstance(out[n - 1], KeyboardInterrupt), out


def test_allgather_wrong_length_is_an_error():
    n = 2
    g = Gather(n)

    def body(r):
        weft.World(r, n, 0, 1, g.fn(r, wrong_len=(r == 0))).close()

    out = on_ranks(n, body)
    assert all(isinstance(e, weft.WeftError) for e in out), out
    m = re.search(r"all-gather returned bytes of (\d+) bytes, not 2 x (\d+) bytes", str(out[0]))
    assert m and int(m.group(1)) == 2 * int(m.group(2)) - 1, str(out[0])
    assert all("callback returned 1 on rank 0" in str(e) for e in out), out


def test_closed_world():
    w = weft.World(0, 1, 0, 1, lambda d: d)
    w.close()
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.agree("a", "b")
    for field in ("rank", "local_rank", "local_size"):   # (they read -1 and 0 from the freed handle)
        with pytest.raises(ValueError, match="this world is closed"):
            getattr(w, field)


def test_close_waits_for_agree_on_another_thread():
    # close() freed the world while another thread's agree() was inside its all-gather: a hang or
    # a crash on return (an attack review of the package).  Now close() waits for it.
    armed, entered, release = threading.Event(), threading.Event(), threading.Event()

    def gather(data):
        if armed.is_set():   # (World() gathers too, in its constructor: not that one)
            entered.set()
            release.wait(10)
        return data

    w = weft.World(0, 1, 0, 1, gather)
    armed.set()
    res = []
    assert_close_waits(lambda: res.append(w.agree("x", "y")), w.close, entered, release, "agree()")
    assert res == [None] and w.handle is None


def test_agree_and_comm_argument_types():
    # agree(None, ...) raised "argument of type 'NoneType' is not iterable"; Comm(None, ...) an
    # AttributeError from inside the constructor
    w = weft.World(0, 1, 0, 1, lambda d: d)
    try:
        with pytest.raises(TypeError, match="agree.what, desc. takes two str, not NoneType and str"):
            w.agree(None, "b")
        with pytest.raises(TypeError, match="takes a weft Kernel and a World, not NoneType and World"):
            weft.Comm(None, w, 16)
    finally:
        w.close()


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), 86401, "5", None, True])
def test_comm_timeout_checked(seconds):
    # (a Comm needs a GPU; the value is checked before the handle) 1e30 s was converted to the
    # kernel's nanoseconds out of range, and 0 or NaN were ignored without a word
    c = weft.Comm.__new__(weft.Comm)
    c._h = None
    with pytest.raises(ValueError, match=re.escape("set_timeout(%r): a number of seconds above 0 and at most 86400" % (seconds,))):
        c.set_timeout(seconds)
    with pytest.raises(ValueError, match="this communicator is closed"):
        c.set_timeout(2.5)
