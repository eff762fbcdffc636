#!/usr/bin/env bash
# bench/gemm_rule_regret.sh DB [WORST [NAME=VALUE ...]]: the gemm rule's first pick against the best measured, over
# the gemm rows of a tuning database (bench/gemm_session.sh's llm.db, weft tune's database).  Host
# only: dumps the rows with the sqlite3 shell into a private temporary folder and runs
# bench/gemm_rule_regret.lua in weft's Lua environment (build/tests/weft-lua, from the build).
# The database does not hold the device's DRAM rate or SM count: MEM_GBS=N (and SMS=N, default
# 132) scores the rows for that device (an H100: MEM_GBS=3352); without them, for an H200.
set -euo pipefail
if [ $# -lt 1 ]; then echo "usage: bash bench/gemm_rule_regret.sh DB [WORST [NAME=VALUE ...]]" >&2; exit 2; fi
db=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lua=${WEFT_LUA:-$root/build/tests/weft-lua}
[ -f "$db" ] || { echo "gemm_rule_regret.sh: $db: no such file" >&2; exit 1; }
[ -x "$lua" ] || { echo "gemm_rule_regret.sh: $lua: not built (cmake --build build)" >&2; exit 1; }
command -v sqlite3 > /dev/null || { echo "gemm_rule_regret.sh: the sqlite3 shell is missing (apt-get install sqlite3)" >&2; exit 1; }
for v in MEM_GBS SMS; do
  case ${!v:-1} in ''|*[!0-9]*) echo "gemm_rule_regret.sh: $v=${!v}: must be a whole number" >&2; exit 2;; esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${MEM_GBS:-}" ]; then
  printf 'rows.tsv\t%s\t%s\t%s\n' "the database's GPU" "${SMS:-132}" "$MEM_GBS" > "$tmp/machines.txt"
fi
# (the database's config text has one field per line: joined by blanks for the Lua reader; the
# sweep's base config, Lua text, as the fifth column: weft tune's rows hold only the overrides)
sqlite3 -readonly -separator $'\t' "$db" \
  "select dtype, shape, replace(config, char(10), ' '), time_us, replace(replace(base, char(10), ' '), char(9), ' ')
   from results where family = 'gemm'" > "$tmp/rows.tsv"
"$lua" "$root" "$root/bench/gemm_rule_regret.lua" "$tmp/rows.tsv" "${2:-10}" "${@:3}"
