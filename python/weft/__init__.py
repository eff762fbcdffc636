"""weft: fused CUDA kernels generated from Lua configs, compiled at run time (NVRTC), from Python.

    import weft
    k = weft.compile("examples/row_softmax.lua", cluster=4)     # no GPU needed
    k.manifest.args                                             # [Arg(y: ptr<f32>, out), ...]
    k.launch(y, x, rows, cols, stream=torch.cuda.current_stream().cuda_stream)
    a = weft.auto({"family": "row_softmax", "dtype": "bf16"}, {"rows": 4096, "cols": 50257})
    a.source, a.detail, a.configs[0]                            # where the choice came from, and it

weft.torch holds ops on torch tensors (import it explicitly: it needs torch).
The package is pure Python over libweft (found next to this file, or at $WEFT_LIB).
"""
from .core import (Arg, Auto, CommTimeoutError, ConfigError, Context, Kernel, Manifest, NoGPUError, WeftError,
                   auto, compile, context, generate, lua_config, overrides, shape_text, version)
from .dist import Comm, World

__version__ = version()

__all__ = ["Arg", "Auto", "Comm", "CommTimeoutError", "ConfigError", "Context", "Kernel", "Manifest", "NoGPUError",
           "WeftError", "World", "auto", "compile", "context", "generate", "lua_config", "overrides", "shape_text", "version",
           "__version__"]
