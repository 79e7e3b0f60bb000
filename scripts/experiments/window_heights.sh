#!/usr/bin/env bash
# window_heights.sh — a measurement, not part of the solver (#16, docs/performance.md "Session 20"):
# the GPU window's rate at order 8 over tower heights on grids whose ring leaves little room for
# slabs, to set the height rule of gpu_stepwise.cu (gs_window_height) by measurement. Each height
# runs with steps a multiple of it (a partial block moves the whole grid once more).
#   TW=build/app/torrewave scripts/experiments/window_heights.sh   (on a GPU machine; ~5 min)
set -u
TW=${TW:-build-gpu-check/app/torrewave}
# grid, cap (bytes), absorbing cells, heights ("auto": the backend's rule)
cases=(
  "2048x2048x640 $((2048 * 2048 * 640 * 12 / 8)) 20 32,40,44,48,52,56,auto"
  "3424x1024x268 1410000000 20 32,38,44,48,52,auto"
  "1024x1024x512 800000000 20 16,20,25,29,auto"
)
for c in "${cases[@]}"; do
  read -r grid cap ab hs <<<"$c"
  for h in $(tr , ' ' <<<"$hs"); do
    if [ "$h" = auto ]; then k="gpu-diamond+cap=$cap"; steps=240; else k="gpu-diamond+cap=$cap+h=$h"; steps=$(((240 + h - 1) / h * h)); fi
    line=$("$TW" bench --kernels "$k" --orders 8 --grid "$grid" --absorb "$ab" --steps "$steps" --reps 2 --no-ceiling 2>&1 |
      grep -E "^ *gpu-diamond\+cap.*Gcell/s" | head -1)
    rate=$(awk '{print $2}' <<<"$line")
    wait=$(grep -oE "copy wait [0-9.]+ %" <<<"$line")
    mb=$(grep -oE "[0-9]+ MB in" <<<"$line")
    echo "$grid cap $cap h $h steps $steps: $rate Gcell/s, $wait, $mb per step"
  done
done
