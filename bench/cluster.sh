#!/usr/bin/env bash
# The cluster allreduce primitive: pull (publish + cluster barrier + mapa/ld.shared::cluster)
# against push (st.async into every peer + mbarrier), per combine, with the whole GPU busy
# (264 CTAs of 128 threads, 64 combines per launch, mean of 200 back-to-back launches).
set -u
W=${WEFT:-build/weft}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-bench-cache}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
printf '%-8s %-6s %-6s %s\n' cluster width exchange "us per combine"
for c in 2 4 8 16; do
  np=""; [ $c -eq 16 ] && np="--set nonportable=true"
  for w in 1 2; do
    for x in pull push; do
      # shellcheck disable=SC2086
      line=$($W run examples/cluster_reduce.lua --set cluster=$c --set width=$w --set exchange=$x \
             --set need_tail_sync=false --set iters=64 --set op=sum $np --clusters $((264 / c)) --iters 200 \
             2>&1 | grep -E "^time:|FAIL|rror")
      us=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) us per combine.*/\1/p')
      printf '%-8s %-6s %-6s %s\n' $c $w $x "${us:-$line}"
    done
  done
done
