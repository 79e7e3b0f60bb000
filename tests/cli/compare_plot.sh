#!/usr/bin/env bash
# The examples stay runnable: their job files pass `torrewave check` (and the homogeneous one is
# accepted by `torrewave reference`), and examples/plot.py draws valid PNGs from a small run and its
# analytic reference, and from a run with an areal receiver grid and a free surface (gain, wiggles,
# time slices, the free-surface warning). The plotting part is skipped, with a message, without a python3 that has
# h5py and matplotlib ($PYTHON, else /usr/bin/python3, else python3).
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ex="$TW_SOURCE_DIR/examples"
for job in "$ex"/*/job.cfg; do
  "$TORREWAVE" check "$job" -o "$tmp/check.h5" --set solver.kernel=cpu > "$tmp/check.txt"
  grep -q '^ok' "$tmp/check.txt" || { cat "$tmp/check.txt"; exit 1; }
  echo "ok: check $job"
done
# A much smaller version of the homogeneous example (d doubled, thin layers): run, reference, compare, plot.
small=(--set 'grid.n=[40,32,32]' --set 'grid.d=[20.0,20.0,20.0]' --set 'snapshots.steps=[50,90]' --set boundary.absorbing=8
       --set solver.kernel=cpu -q)
"$TORREWAVE" reference "$ex/homogeneous/job.cfg" -o "$tmp/ref.h5" "${small[@]}"
"$TORREWAVE" run "$ex/homogeneous/job.cfg" -o "$tmp/run.h5" "${small[@]}" 2> /dev/null
"$TORREWAVE" compare "$tmp/run.h5" "$tmp/ref.h5" --rtol 0.5

py=""
for c in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import h5py, matplotlib, numpy' 2>/dev/null; then py=$c; break; fi
done
if [ -z "$py" ]; then
  echo "SKIP (plots): no python3 with h5py and matplotlib (apt-get install python3-h5py python3-matplotlib)"
  exit 0
fi
"$py" "$ex/plot.py" "$tmp/run.h5" --ref "$tmp/ref.h5" --out "$tmp/h" --slice z=320 | tee "$tmp/made.txt"
for f in "$tmp"/h-gather.png "$tmp"/h-traces.png "$tmp"/h-snapshots.png; do
  grep -qx "$f" "$tmp/made.txt" || { echo "FAIL: plot.py did not report $f"; exit 1; }
  # A PNG signature and more than a blank canvas's worth of bytes.
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "FAIL: $f is not a PNG"; exit 1; }
  [ "$(stat -c %s "$f")" -gt 20000 ] || { echo "FAIL: $f is suspiciously small"; exit 1; }
done
# A file without snapshots (the reference) still plots its traces; bad input is an error.
"$py" "$ex/plot.py" "$tmp/ref.h5" --out "$tmp/r" --no-gather > /dev/null
test -s "$tmp/r-traces.png" && test ! -e "$tmp/r-snapshots.png"
if "$py" "$ex/plot.py" "$tmp/missing.h5" --out "$tmp/x" 2> /dev/null; then echo "FAIL: plot.py accepted a missing file"; exit 1; fi
# A free surface, an areal receiver grid and points: gather against offset as AGC wiggles, time-slice
# maps, and a map-view slice asked on the free-surface plane moves off it with a warning.
"$TORREWAVE" run "$TW_SOURCE_DIR/configs/quickstart.cfg" -o "$tmp/g.h5" -q --set solver.kernel=cpu --set time.duration=0.2 \
  --set 'grid.n=[30,30,20]' --set 'grid.d=[20.0,20.0,20.0]' --set boundary.absorbing=6 --set 'snapshots.steps=[40]' \
  --set 'receivers={points=([100.0,100.0,40.0]);grids=({origin=[0.0,0.0];spacing=[40.0,40.0];count=[15,12];depth=20.0;});}' 2> /dev/null
"$py" "$ex/plot.py" "$tmp/g.h5" --out "$tmp/g" --gain agc --wiggle --slice z=0 > "$tmp/g.txt" 2> "$tmp/g.err"
cat "$tmp/g.txt" "$tmp/g.err"
grep -q "warning: z = 0 m is the free surface, where p = 0 by construction: showing the next plane, z = 20 m" "$tmp/g.err" ||
  { echo "FAIL: no free-surface warning"; exit 1; }
for f in "$tmp"/g-gather.png "$tmp"/g-timeslice.png "$tmp"/g-snapshots.png; do
  grep -qx "$f" "$tmp/g.txt" && [ "$(stat -c %s "$f")" -gt 20000 ] || { echo "FAIL: $f"; exit 1; }
done
echo "compare_plot: ok"
