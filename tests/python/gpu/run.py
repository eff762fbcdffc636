#!/usr/bin/env python3
"""Runs the weft.torch GPU tests (test_torch_ops.py) with pytest; exits 77 (ctest's SKIP) when
this Python has no torch, no CUDA device, or a device older than sm_90, which weft needs.
Arguments go to pytest (e.g. -k graph)."""
import os
import sys

try:
    import torch
except ImportError as e:
    print("SKIP: no torch in %s (%s)" % (sys.executable, e))
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch %s sees no CUDA device" % torch.__version__)
    sys.exit(77)
cap = torch.cuda.get_device_capability()
if cap < (9, 0):
    print("SKIP: %s is sm_%d%d; weft's kernels need sm_90" % (torch.cuda.get_device_name(), cap[0], cap[1]))
    sys.exit(77)
try:
    import pytest
except ImportError:
    print("FAIL: torch and a GPU are here but pytest is not importable from %s; install pytest" % sys.executable)
    sys.exit(1)
print("torch %s, CUDA %s, %s (sm_%d%d), python %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(),
                                                     cap[0], cap[1], sys.version.split()[0]), flush=True)
here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-v", "-rfE", "--tb=long", os.path.join(here, "test_torch_ops.py")] + sys.argv[1:]))
