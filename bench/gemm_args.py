"""bench/gemm_args.py: a family-gemm kernel's launch arguments in its manifest's order, for the
benchmarks that launch it directly (bench/gemm_llm.py, bench/gemm_clock.py): the sizes checked
against what the kernel was built for, and its arguments required to be c, a, b, m, n, k in
some order."""

GEMM_ARGS = ["a", "b", "c", "k", "m", "n"]


def config(dtype, kv, b_layout="col", fixed=None):
    """A family-gemm config dict (Context.compile / generate take it) from key=value pairs joined by
    commas: nested keys (tile.m) become nested dicts, integers and true/false their values, anything
    else a string; on top of the family, the dtype, the B layout and tile.k = 64.  fixed: keys the
    caller sets itself ({key: whose}), refused in kv.  ValueError names the pair that is not one."""
    fixed = fixed or {}
    cfg = {"family": "gemm", "dtype": dtype, "b_layout": b_layout, "tile": {"k": 64}}
    for item in filter(None, kv.split(",")):
        k, eq, v = item.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k:
            raise ValueError("%r: a config is key=value pairs joined by commas" % item)
        if k in fixed:
            raise ValueError("%r: %s is the %s's, not the config's" % (item, k, fixed[k]))
        d = cfg
        parts = k.split(".")
        for part in parts[:-1]:
            d = d.setdefault(part, {})
            if not isinstance(d, dict):
                raise ValueError("%r: %s is not a table" % (item, part))
        try:
            d[parts[-1]] = {"true": True, "false": False}.get(v, int(v) if v.lstrip("-").isdigit() else v)
        except ValueError:
            raise ValueError("%r: not a number" % item)
    return cfg


def launch_args(kernel, m, n, k):
    """A function (a, b, c) -> the argument tuple for kernel._launch_trusted (a, b, c: device
    pointers), or RuntimeError naming the size or the arguments that do not fit."""
    order = [x.name for x in kernel.manifest.args]
    if sorted(order) != GEMM_ARGS:   # (first: a kernel without m, n, k has no sizes to check)
        raise RuntimeError("kernel %s takes %s; a GEMM benchmark passes c, a, b, m, n, k"
                           % (kernel.manifest.name, ", ".join(order)))
    sizes = {"m": m, "n": n, "k": k}
    for size, value in sizes.items():
        why = kernel.manifest.check_size(size, value)
        if why:
            raise RuntimeError("%s = %d: %s" % (size, value, why))

    def args(a, b, c):
        d = dict(sizes, a=a, b=b, c=c)
        return tuple(d[x] for x in order)
    return args
