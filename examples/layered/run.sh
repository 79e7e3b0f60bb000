#!/usr/bin/env bash
# Layered example: run the job, then draw the shot gather, a few traces and snapshot slices.
#   examples/layered/run.sh [OUT_DIR]      (default: out/layered under the repository)
# TORREWAVE: the binary (default: build/app/torrewave of this repository, else torrewave on PATH);
# PYTHON: a python3 with h5py and matplotlib; by default the first one found (examples/python.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/out/layered}
T=${TORREWAVE:-$repo/build/app/torrewave}
[ -x "$T" ] || T=torrewave
source "$repo/examples/python.sh"
mkdir -p "$out"

"$T" check "$here/job.cfg" -o "$out/layered.h5"
"$T" run "$here/job.cfg" -o "$out/layered.h5"
# The analytic reference does not apply here (layers, free surface): `torrewave reference` says so.
"$T" reference "$here/job.cfg" -o "$out/no-reference.h5" 2>&1 | sed 's/^/(expected) /' || true
[ -n "$PY" ] || { echo "run.sh: the run is in $out; plots skipped (see above)" >&2; exit 1; }
"$PY" "$repo/examples/plot.py" "$out/layered.h5" --out "$out/layered" --receivers 35,45,60,90,119 \
  --slice y=300 --lines-z 200,400 --clip 99.5
# The same gather as wiggles with automatic gain control: the weak deep reflections show.
"$PY" "$repo/examples/plot.py" "$out/layered.h5" --out "$out/layered-agc" --only gather --wiggle --gain agc
