#!/usr/bin/env bash
# window_layered.sh — a measurement, not part of the solver (#16, docs/performance.md "Session 21"):
# configs/realistic.cfg on a square 2008² × 620 grid (2032² × 632 padded, three layers: every x-plane
# of c²dt² the same) at order 8 under a cap of 1/8 of its fields, with c²dt² taken from the ring
# (the default) and sent over the link every block (TW_WINDOW_C2_REPEATS=0), at the height rule's
# choice and at heights set by hand; then in core. Each line: wall, set-up, computing, Gcell/s, copy
# wait, blocks and slabs; the set-up's window phases (-v) go to the log.
#   TW=build-gpu-check/app/torrewave scripts/experiments/window_layered.sh   (on a GPU machine; ~4 min)
set -u
TW=${TW:-build-gpu-check/app/torrewave}
JF=${JF:-configs/realistic.cfg}
CAP=${CAP:-4026531840}
LOG=${LOG:-/tmp/window_layered.log}
sq=(--set "grid.n=[2008, 2008, 620]" --set solver.kernel=gpu-diamond)
one() { # label, environment, steps, more --set...
  local lab=$1 env=$2 steps=$3 out
  shift 3
  out=$(env $env "$TW" run "$JF" "${sq[@]}" --set time.steps="$steps" "$@" -o /tmp/window_layered.h5 -q -v 2>&1)
  echo "== $lab" >>"$LOG"
  echo "$out" >>"$LOG"
  echo "$lab: $(grep -oE 'in [0-9.]+ s \(set-up [0-9.]+ s, [0-9.]+ s computing, [0-9.]+ Gcell/s' <<<"$out");" \
    "$(grep -oE 'copy wait [0-9.]+%' <<<"$out"); $(grep -oE 'blocks of [0-9]+ steps[^;]*slabs of [0-9]+' <<<"$out" | head -1)"
}
for round in 1 2; do
  one "c2 from the ring, rule" X=1 480 --set solver.device_memory="$CAP"
  one "c2 over the link, rule" TW_WINDOW_C2_REPEATS=0 480 --set solver.device_memory="$CAP"
  for h in 40 44 48 52; do
    one "c2 from the ring, h $h" X=1 $(((480 + h - 1) / h * h)) --set solver.device_memory="$CAP" --set solver.tower_height=$h
  done
done
one "in core" X=1 480
