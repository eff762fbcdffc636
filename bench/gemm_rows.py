"""bench/gemm_rows.py: the measured-candidate rows of bench/data, as the GEMM tools read them.

A row: dtype TAB "k=.. m=.. n=.." TAB the config's "key=value" fields separated by blanks TAB
time_us (bench/gemm_kernels_rows.py writes them; gemm_rule_regret.lua, gemm_pairs.py and
gemm_table_rows.py read them; gemm_rule_regret.sh dumps a database's rows for the Lua tool alone,
with weft tune's quoted strings and a fifth column, the base config the fields override; a
file of bench/data with that fifth column is read here without it).  Keys and values are plain tokens (letters,
digits, '_', '.'), as the generator's own field names and values are: a row with anything else
(quotes, blanks, a value kilobytes long) is refused, never passed on into a table."""
import math
import re

SHAPE = re.compile(r"^k=(\d+) m=(\d+) n=(\d+)$")
DTYPE = re.compile(r"^[a-z][a-z0-9]*$")
FIELD = re.compile(r"^([a-z][a-z0-9_.]*)=([A-Za-z0-9_.]{1,32})$")


class RowsError(ValueError):
    """A file that cannot be read, or a row that is not a row: the message names the file and line."""


def read(paths):
    """[(path, dtype, shape text, (m, n, k), {key: value}, time_us)] of every row of every file."""
    out = []
    for path in paths:
        try:
            fh = open(path)
        except OSError as e:
            raise RowsError("%s: %s" % (path, e.strerror)) from None
        with fh:
            for no, line in enumerate(fh, 1):
                f = line.rstrip("\n").split("\t")
                try:
                    if len(f) not in (4, 5) or not DTYPE.match(f[0]):   # (a fifth column: the base, read past)
                        raise ValueError
                    shape = SHAPE.match(f[1])
                    t = float(f[3])
                    fields = [FIELD.match(x) for x in f[2].split(" ")]
                    if not (shape and math.isfinite(t) and t > 0 and all(fields)):
                        raise ValueError
                except ValueError:
                    raise RowsError("%s:%d: not dtype, shape, config, time_us: %r" % (path, no, line[:120])) from None
                k, m, n = (int(x) for x in shape.groups())
                out.append((path, f[0], f[1], (m, n, k), dict(x.groups() for x in fields), t))
    return out
