"""Shared fixtures for the package's CI tests (no GPU, no torch).

The package comes from PYTHONPATH (ctest: build/python; by hand: python/ with WEFT_LIB set).
Every test that compiles uses its own cache folder under tmp_path, so cache hits are its own.
"""
import os
import pathlib
import threading
import time

import pytest

# Subprocesses run elsewhere (cwd = tmp_path): a relative PYTHONPATH/WEFT_LIB would not find the package.
for _v in ("PYTHONPATH", "WEFT_LIB"):
    if os.environ.get(_v):
        os.environ[_v] = os.pathsep.join(os.path.abspath(p) for p in os.environ[_v].split(os.pathsep))

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
def ctx(tmp_path):
    import weft
    c = weft.Context(cache_dir=tmp_path / "cache")
    yield c
    c.close()


@pytest.fixture
def softmax():
    return str(EXAMPLES / "row_softmax.lua")


def pytest_report_header(config):
    return "weft tests: WEFT_LIB=%s PYTHONPATH=%s" % (os.environ.get("WEFT_LIB"), os.environ.get("PYTHONPATH"))


def assert_close_waits(use, close, entered, release, what):
    """use() runs on a thread until it sets `entered` (then waits for `release`); close() on another
    thread must still be waiting 0.2 s later (before, it freed the object under use()), and both
    end once released.  (A loaded machine can only make a close() that does not wait look as if it
    did, never the reverse.)"""
    user = threading.Thread(target=use)
    user.start()
    assert entered.wait(10)
    closer = threading.Thread(target=close)
    closer.start()
    time.sleep(0.2)
    assert closer.is_alive(), "close() did not wait for " + what
    release.set()
    user.join(10)
    closer.join(10)
    assert not user.is_alive() and not closer.is_alive()
