#!/usr/bin/env python3
"""bench/gemm_kernels_rows.py KERNELS.tsv... > ROWS.tsv: bench/gemm_llm.py's per-candidate table
(gemm_llm_kernels.tsv: shape, dtype, kernel, graph_us, ...) as the rows bench/gemm_rule_regret.lua
reads (dtype, "k=.. m=.. n=..", the config's "key=value" fields, graph_us), every candidate the run
timed, `--extra` schedules included (the tuning database holds only the checked rule candidates).

The config is read back from family gemm's kernel name (gen/core/weft.lua kernel_name: every field
in schema order, each as its tag and value).  A name of another form stops the conversion with the
file, the line and the name: a new field in the schema must be added here."""
import math
import re
import sys

NAME = re.compile(r"weft_gemm_(bf16|f16)_b(row|col)_(\d+)x(\d+)x(\d+)_s(\d+)_c(\d+)_(cooperativen|cooperative|pingpong|kturns)"
                  r"_cl(\d+)x(\d+)_sk(\d+)_skt([01])_ep(tma|direct)_g(\d+)_pdl([01])_sw([01])_l2p(\d+)(?:_stk([01]))?(?:_an([01]))?")
SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)( |$)")
FIELDS = ("dtype", "b_layout", "tile.m", "tile.n", "tile.k", "stages", "consumers", "mma", "cluster.m", "cluster.n",
          "split_k", "split_k_tail", "epilogue", "group", "pdl", "swap_ab", "l2_promotion", "stream_k", "any_n")
BOOLS = ("split_k_tail", "pdl", "swap_ab", "stream_k", "any_n")
MMA_NAMES = {"cooperativen": "cooperative_n"}   # (a name keeps [A-Za-z0-9]: cooperative_n's underscore goes)


def rows(path, lines):
    out = []
    for no, line in enumerate(lines, 1):
        f = line.rstrip("\n").split("\t")
        if no == 1 and f[0] == "shape":
            continue
        where = "%s:%d" % (path, no)
        if len(f) < 4:
            raise ValueError("%s: %d fields, want shape, dtype, kernel, graph_us, ..." % (where, len(f)))
        shape, name, us = SHAPE.match(f[0]), NAME.fullmatch(f[2]), f[3]
        if not shape:
            raise ValueError("%s: shape %r: want MxNxK" % (where, f[0]))
        if not name:
            raise ValueError("%s: kernel %r: not family gemm's name as this tool knows it (gen/core/weft.lua kernel_name)"
                             % (where, f[2]))
        try:
            if not (math.isfinite(float(us)) and float(us) > 0):
                raise ValueError
        except ValueError:
            raise ValueError("%s: graph_us %r: want a positive, finite number" % (where, us)) from None
        cfg = dict(zip(FIELDS, name.groups()))
        cfg["mma"] = MMA_NAMES.get(cfg["mma"], cfg["mma"])
        for b in BOOLS:
            cfg[b] = "true" if cfg[b] == "1" else "false"
        for opt in ("stream_k", "any_n"):   # (fields since the 14th and 23rd sessions: absent means false)
            if cfg[opt] == "false":
                del cfg[opt]
        dtype = cfg.pop("dtype")
        m, n, k = shape.group(1), shape.group(2), shape.group(3)
        out.append("%s\tk=%s m=%s n=%s\t%s\t%s" % (dtype, k, m, n, " ".join("%s=%s" % kv for kv in sorted(cfg.items())), us))
    return out


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: gemm_kernels_rows.py KERNELS.tsv... > ROWS.tsv\n")
        return 2
    result = []
    for path in argv[1:]:
        try:
            with open(path, encoding="utf-8") as fh:
                result += rows(path, fh.readlines())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            sys.stderr.write("gemm_kernels_rows.py: %s\n" % e)
            return 1
    sys.stdout.write("".join(r + "\n" for r in result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
