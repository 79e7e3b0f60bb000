#!/usr/bin/env bash
# The GPU sliding window end to end (label gpu): `check` estimates the window and refuses a cap
# below the smallest window; `run` under a cap streams the grid through a window, says so in the
# run log (planes and bytes moved, copy wait), and its traces and snapshots are identical
# (`compare --rtol 1e-30`) to the in-core run, for gpu-diamond (its towers, and its default) and
# gpu-stepwise. Skipped (77) without a GPU.
set -uo pipefail
T=$TORREWAVE
"$T" info 2>/dev/null | grep -q "gpu-diamond" || { echo "SKIP: no GPU kernels in this build"; exit 77; }
"$T" info 2>/dev/null | grep -Eq '^GPUs: [1-9]' || { echo "SKIP: no GPU present"; exit 77; }
source "$(dirname "$0")/../cli_lib.sh"
# 424 x 128 x 52 padded cells (34 MB for p twice and c²dt²), long in x; a shot and a surface line.
cat > "$tmp/long.cfg" <<'CFG'
grid = { n = [400, 104, 40]; d = [10.0, 10.0, 10.0]; };
time = { steps = 150; };
model = { type = "gradient"; vp0 = 1500.0; gradient = 1.0; };
scheme = { order = 8; };
boundary = { absorbing = 12; free_surface = true; };
sources = ( { position = [1000.0, 300.0, 50.0]; wavelet = { type = "ricker"; frequency = 12.0; }; } );
receivers = { interval = 2; lines = ( { from = [0.0, 300.0, 10.0]; to = [3990.0, 300.0, 10.0]; count = 200; } ); };
snapshots = { every = 50; decimate = 2; };
output = { file = "long.h5"; };
solver = { kernel = "gpu-diamond"; tower_height = 20; };
CFG
cd "$tmp"
expect 1 'solver.device_memory = .* is below the smallest window' -- "$T" check long.cfg --set 'solver.device_memory="1M"'
expect 0 'window of [0-9]+ x-planes' -- "$T" check long.cfg --set 'solver.device_memory="24M"'
for k in gpu-diamond gpu-stepwise; do
  expect 0 'Gcell/s' -- "$T" run long.cfg -q --set "solver.kernel=\"$k\"" -o "$k-incore.h5"
  expect 0 'window of [0-9]+ x-planes: [0-9]+ planes in' -- "$T" run long.cfg -q --set "solver.kernel=\"$k\"" \
    --set 'solver.device_memory="24M"' -o "$k-window.h5"
  expect 0 '^PASS' -- "$T" compare "$k-incore.h5" "$k-window.h5" --rtol 1e-30
done
# gpu-diamond's own towers (order 2, no z layers; asked for: by default a grid this small runs the
# stepwise kernel), in core and windowed
export TW_DIAMOND_MODE=persistent
expect 0 'register tower' -- "$T" run long.cfg -q --set 'scheme.order=2' --set 'boundary.absorbing=0' \
  --set 'boundary.free_surface=false' -o towers-incore.h5
expect 0 'register tower.*window of' -- "$T" run long.cfg -q --set 'scheme.order=2' --set 'boundary.absorbing=0' \
  --set 'boundary.free_surface=false' --set 'solver.device_memory="24M"' -o towers-window.h5
expect 0 '^PASS' -- "$T" compare towers-incore.h5 towers-window.h5 --rtol 1e-30
unset TW_DIAMOND_MODE
exit $fail
