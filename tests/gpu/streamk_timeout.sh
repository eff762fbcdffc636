#!/usr/bin/env bash
# A stream-K contributor that never raises its flag must become an error that names the blocks,
# not a hang: WEFT_FAULT=streamk_mute:1 mutes CTA 1, whose part of tile 0 CTA 0 (its owner) waits
# for; with a 200 ms timeout the owner writes the context's error page and traps, and `weft run`
# reports it (weft_ctx_check).  Exit 77 (SKIP) where there is no GPU.
#   streamk_timeout.sh WEFT SRC OUT
set -u
WEFT=$1 SRC=$2 OUT=$3
[ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null || { echo "no GPU here: SKIP"; exit 77; }
rm -rf "$OUT" && mkdir -p "$OUT"
# 200 x 3072 x 12288 in swapped 200 x 64 tiles: 48 tiles of 192 k-blocks over 132 CTAs, tile 0 in
# CTAs 0, 1 and 2
WEFT_FAULT=streamk_mute:1 WEFT_SIGNAL_TIMEOUT_MS=200 WEFT_CACHE_DIR=$OUT/cache timeout 120 "$WEFT" run \
  "$SRC/examples/gemm.lua" --set stream_k=true --set swap_ab=true --set tile.m=200 --set tile.n=64 --set consumers=1 \
  --set stages=6 --set epilogue=direct --set b_layout=col --shapes-only --shape 200x3072x12288 --no-time >"$OUT/log" 2>&1
rc=$?
want="its block 0 waited 0.2 s for block 1's partial sum of tile (row block 0, column block 0) and trapped"
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -qF "$want" "$OUT/log"; then
  echo "weft run with a muted stream-K contributor exited $rc without naming the wait ($want):"; cat "$OUT/log"; exit 1
fi
echo "ok (weft run exited $rc): $want"
