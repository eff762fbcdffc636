"""Shared fixtures for the package's CI tests (no GPU, no torch).

The package comes from PYTHONPATH (ctest: build/python; by hand: python/ with WEFT_LIB set).
Every test that compiles uses its own cache folder under tmp_path, so cache hits are its own.
"""
import os
import pathlib

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
