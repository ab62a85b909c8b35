#!/usr/bin/env bash
# install-deps.sh - the Debian 12 packages ddptop builds, runs and tests with.
# Uses sudo when not run as root. Safe to run again.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config git
  libdnnl-dev libopenblas-dev zlib1g-dev libcjson-dev libncurses-dev
  libcmocka-dev tmux python3 time clang-format
  clang libclang-rt-14-dev
  openmpi-bin libopenmpi-dev
  libgloo-dev g++
  dataset-fashion-mnist
  python3-torch # tests: a real DDP job profiled by torch.profiler (test_pytorch_job.sh)
)
SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
