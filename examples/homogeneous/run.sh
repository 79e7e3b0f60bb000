#!/usr/bin/env bash
# Homogeneous example: run the job, compute its analytic reference, compare them, plot.
#   examples/homogeneous/run.sh [OUT_DIR]      (default: out/homogeneous under the repository)
# TORREWAVE: the binary (default: build/app/torrewave of this repository, else torrewave on PATH);
# PYTHON: a python3 with h5py and matplotlib; by default the first one found (examples/python.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/out/homogeneous}
T=${TORREWAVE:-$repo/build/app/torrewave}
[ -x "$T" ] || T=torrewave
source "$repo/examples/python.sh"
mkdir -p "$out"

"$T" check "$here/job.cfg" -o "$out/homogeneous.h5"
"$T" run "$here/job.cfg" -o "$out/homogeneous.h5"
"$T" reference "$here/job.cfg" -o "$out/reference.h5"
# The difference is the discretization error (and what the absorbing layers reflect), about 1e-2
# here: compare's default rtol (1e-5, for kernel-to-kernel checks) would call it a failure.
"$T" compare "$out/homogeneous.h5" "$out/reference.h5" --rtol 0.05 | tee "$out/compare.txt"
"$T" compare "$out/homogeneous.h5" "$out/reference.h5" --rtol 0.05 --json > "$out/compare.json"
[ -n "$PY" ] || { echo "run.sh: the run is in $out; plots skipped (see above)" >&2; exit 1; }
"$PY" "$repo/examples/plot.py" "$out/homogeneous.h5" --ref "$out/reference.h5" --out "$out/homogeneous" \
  --receivers 0,2,5,6,7 --slice z=320 --no-gather
