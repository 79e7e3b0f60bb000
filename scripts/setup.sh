#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for torrewave and build it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Installs what is missing with apt-get (needs root or sudo), then configures and builds with CMake.
# CUDA is used when nvcc is on the PATH or in /usr/local/cuda (WITH_CUDA=ON then); the CPU path builds
# without it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

pkgs=(build-essential cmake pkg-config libhdf5-dev libconfig-dev zlib1g-dev hdf5-tools python3 python3-h5py python3-matplotlib python3-numpy
      libsegyio-dev python3-segyio
      libopenmpi-dev openmpi-bin)  # MPI: surveys over several hosts (survey/); optional for the build
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "setup: built $build/app/torrewave"
