#!/usr/bin/env python3
"""tests/python/gemm_table_rows_check.py: the shipped table's gemm rows (tune/h200.tsv) are what
its header's command makes from bench/data (bench/gemm_table_rows.py over the thirteenth
session's four runs), row for row; and a row that is not dtype, shape, config, time is refused
with its file and line.  Run from the repository root."""
import subprocess
import sys

RUNS = ["bench/data/gemm_llm_s13.tsv", "bench/data/gemm_llm_s13b.tsv", "bench/data/gemm_llm_s13c.tsv",
        "bench/data/gemm_llm_s13d.tsv"]


def main():
    tool = [sys.executable, "bench/gemm_table_rows.py"]
    made = subprocess.run(tool + ["--shapes-of", "tune/h200.tsv"] + RUNS, capture_output=True, text=True)
    if made.returncode != 0:
        print("FAIL: gemm_table_rows.py exited %d: %s" % (made.returncode, made.stderr))
        return 1
    with open("tune/h200.tsv") as fh:
        shipped = sorted(line.rstrip("\n") for line in fh if line.startswith("gemm\t"))
    rows = sorted(made.stdout.splitlines())
    if rows != shipped:
        diff = sorted(set(rows) ^ set(shipped))
        print("FAIL: %d made, %d shipped; first differences:\n%s" % (len(rows), len(shipped), "\n".join(diff[:4])))
        return 1
    if "1\tk=14336 m=1024 n=4096\t165.458\tb_layout=col;" not in made.stdout:
        print("FAIL: 1024 x 4096 x 14336 bf16: not the 128 x 128 row of geomean 165.458 us")
        return 1
    bad = subprocess.run(tool + ["bench/data/README.md"], capture_output=True, text=True)
    if bad.returncode != 2 or "bench/data/README.md:1: not dtype, shape, config, time_us" not in bad.stderr:
        print("FAIL: a bad row: exit %d, %r" % (bad.returncode, bad.stderr[:200]))
        return 1
    print("ok: %d gemm rows of tune/h200.tsv made again from %d runs" % (len(rows), len(RUNS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
