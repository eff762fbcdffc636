"""weft: fused CUDA kernels generated from Lua configs, compiled at run time (NVRTC), from Python.

    import weft
    k = weft.compile("examples/row_softmax.lua", cluster=4)     # no GPU needed
    k.manifest.args                                             # [Arg(y: ptr<f32>, out), ...]
    k.launch(y, x, rows, cols, stream=torch.cuda.current_stream().cuda_stream)

weft.torch holds ops on torch tensors (import it explicitly: it needs torch).
The package is pure Python over libweft (found next to this file, or at $WEFT_LIB).
"""
from .core import (Arg, CommTimeoutError, ConfigError, Context, Kernel, Manifest, NoGPUError, WeftError,
                   compile, context, generate, lua_config, overrides, version)
from .dist import Comm, World

__version__ = version()

__all__ = ["Arg", "Comm", "CommTimeoutError", "ConfigError", "Context", "Kernel", "Manifest", "NoGPUError",
           "WeftError", "World", "compile", "context", "generate", "lua_config", "overrides", "version",
           "__version__"]
