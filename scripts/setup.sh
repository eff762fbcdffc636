#!/usr/bin/env bash
# Installs what weft needs from Debian/Ubuntu packages (when missing) and builds it into build/.
# Used by scripts/main.sh and scripts/test.sh; safe to run again (it only does what is missing).
# The CUDA toolkit (13.0: headers, NVRTC) is expected at /usr/local/cuda or on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake make gcc lua5.4 liblua5.4-dev libssl-dev libcmocka-dev libsqlite3-dev gnuplot-nox openmpi-bin libopenmpi-dev pkg-config
      python3 python3-pytest)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cuda_root=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_root" > build.log 2>&1 \
  || { cat build.log; exit 1; }
cmake --build build -j "$(nproc)" >> build.log 2>&1 || { tail -50 build.log; exit 1; }
echo "setup: built build/weft ($(build/weft --version))"
