"""The README's Python example without torch runs as written, from the repository root (the
section "From Python and PyTorch", its first python block)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    i = text.index("## From Python and PyTorch")
    j = text.index("\n## ", i + 1)
    return re.findall(r"```python\n(.*?)```", text[i:j], re.S)


def test_readme_has_the_three_examples():
    blocks = readme_blocks()
    assert len(blocks) == 3
    assert "weft.torch as wt" in blocks[1] and "torchrun" in blocks[2]


def test_readme_python_without_torch_runs(tmp_path):
    code = readme_blocks()[0]
    assert "torch" not in code.replace("without torch", "")
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("weft_row_softmax_bf16_") and "Arg(y: ptr<bf16>, out)" in lines[0]
    assert "cols = 40000" in lines[1] and "1..32768" in lines[1]
    hit, cubin, entries = lines[2].split()
    assert hit in ("True", "False") and int(cubin) > 1000 and entries == "1"
