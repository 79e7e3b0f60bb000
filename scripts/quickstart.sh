#!/usr/bin/env bash
# Fresh machine → a finished quick-start run: set up, build, run configs/quickstart.cfg into
# out/quickstart.h5 and draw its shot gather and snapshots to out/*.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
mkdir -p out
./build/app/torrewave check configs/quickstart.cfg -o out/quickstart.h5
./build/app/torrewave run configs/quickstart.cfg -o out/quickstart.h5
# Debian's python3 carries h5py and matplotlib (installed by setup.sh).
PY=${PYTHON:-/usr/bin/python3}
"$PY" examples/plot.py out/quickstart.h5 --out out/quickstart && ls out/quickstart*.png
