#!/usr/bin/env bash
# Checkpoints on the GPU kernels end to end (label gpu): runs killed with SIGKILL at random moments
# and resumed, alternating gpu-diamond (its own towers, forced: order 2, no absorbing layers) and
# gpu-stepwise, each in core and through the sliding window (solver.device_memory), end with traces
# and snapshots bitwise equal (h5diff) to an uninterrupted gpu-stepwise run; SIGTERM on the window
# writes a checkpoint and exits 75, and --resume on the other kernel finishes it bit for bit; a crash
# in the middle of a checkpoint leaves the previous one; order 8 with absorbing layers and a free
# surface (gpu-diamond runs the stepwise kernel there) too. Skipped (77) without a GPU.
set -uo pipefail
T=$TORREWAVE
"$T" info 2>/dev/null | grep -q "gpu-diamond" || { echo "SKIP: no GPU kernels in this build"; exit 77; }
"$T" info 2>/dev/null | grep -Eq '^GPUs: [1-9]' || { echo "SKIP: no GPU present"; exit 77; }
source "$(dirname "$0")/../cli_lib.sh"
source "$(dirname "$0")/../ckpt_lib.sh"
cd "$tmp"
# 400 x 400 x 200 cells (32 M, 256 MB per checkpoint), 4000 steps: about a second per run.
cat > ref.cfg <<'CFG'
grid = { n = [400, 400, 200]; d = [10.0, 10.0, 10.0]; };
time = { steps = 4000; };
model = { type = "gradient"; vp0 = 1500.0; gradient = 1.0; };
scheme = { order = 2; };
boundary = { absorbing = 0; free_surface = false; };
sources = ( { position = [2000.0, 2000.0, 1000.0]; wavelet = { type = "ricker"; frequency = 8.0; }; } );
receivers = { interval = 4; lines = ( { from = [0.0, 2000.0, 10.0]; to = [3990.0, 2000.0, 10.0]; count = 400; } ); };
snapshots = { every = 1000; decimate = 4; };
solver = { kernel = "gpu-stepwise"; tower_height = 16; };
CFG
cp ref.cfg job.cfg
echo 'checkpoint = { every = 1000; };' >> job.cfg
# gpu-diamond's own towers, asked for: on 400 x 400 columns (about 71 towers run at a time for 132
# SMs) its choice is the stepwise kernel (docs/design.md §2.10)
export TW_DIAMOND_MODE=persistent
t0=$(ms)
expect 0 'Gcell/s' -- "$T" run ref.cfg -q -o ref.h5
run_ms=$(( $(ms) - t0 ))
expect 0 'register tower' -- "$T" run ref.cfg -q -o dia.h5 --set 'solver.kernel="gpu-diamond"'
same ref.h5 dia.h5
expect 0 'window of [0-9]+ x-planes' -- "$T" run ref.cfg -q -o win.h5 --set 'solver.kernel="gpu-diamond"' \
  --set 'solver.device_memory="96M"'
same ref.h5 win.h5

RANDOM=18
killed_runs job.cfg k.h5 $run_ms 5 gpu-diamond gpu-stepwise gpu-diamond:96M gpu-stepwise:96M gpu-diamond \
  gpu-stepwise:96M
same ref.h5 k.h5
gone k.h5.ckpt k.h5.ckpt.journal k.h5.ckpt.tmp

# SIGTERM on gpu-diamond's window, resumed on gpu-stepwise in core (and the other way round).
for pair in "gpu-diamond:96M gpu-stepwise" "gpu-stepwise:96M gpu-diamond"; do
  set -- $pair
  rm -f s.h5*
  # (held 1 s after each checkpoint, TW_CHECKPOINT_PAUSE: still going when the signal comes)
  TW_CHECKPOINT_PAUSE=1 "$T" run job.cfg -q -o s.h5 --set "solver.kernel=\"${1%%:*}\"" --set "solver.device_memory=\"${1#*:}\"" 2> s.log &
  pid=$!
  signal_after_checkpoint TERM $pid s.h5.ckpt
  wait $pid; st=$?
  if [ $st = 75 ] && [ -e s.h5.ckpt ] && [ ! -e s.h5 ]; then echo "ok: SIGTERM on $1 -> 75: $(cat s.log)"
  else echo "FAIL: SIGTERM on $1 -> status $st, log:"; cat s.log; fail=1; fi
  expect 0 'resumed at step' -- "$T" run job.cfg -o s.h5 --resume --set "solver.kernel=\"$2\""
  same ref.h5 s.h5
done

# A crash half-way through the second checkpoint: the first resumes.
size=$((8 * 400 * 400 * 200))
TW_CHECKPOINT_CRASH_AFTER=$((size * 3 / 2)) "$T" run job.cfg -q -o c.h5 --set 'solver.kernel="gpu-diamond"'; st=$?
[ $st = 137 ] || { echo "FAIL: the crash hook: status $st"; fail=1; }
expect 0 'resumed at step 1000' -- "$T" run job.cfg -o c.h5 --resume
same ref.h5 c.h5

# Order 8, absorbing layers, free surface: gpu-diamond runs the stepwise kernel; SIGTERM on it,
# resumed on gpu-stepwise's window.
unset TW_DIAMOND_MODE
for f in ref.cfg job.cfg; do
  sed -e 's/order = 2;/order = 8;/' -e 's/absorbing = 0; free_surface = false;/absorbing = 16; free_surface = true;/' \
    -e 's/steps = 4000;/steps = 1200;/' -e 's/every = 1000;/every = 300;/g' "$f" > "o8-$f"
done
expect 0 'Gcell/s' -- "$T" run o8-ref.cfg -q -o o8-ref.h5
rm -f s.h5*
"$T" run o8-job.cfg -q -o s.h5 --set 'solver.kernel="gpu-diamond"' 2> s.log &
pid=$!
signal_after_checkpoint TERM $pid s.h5.ckpt
wait $pid; st=$?
[ $st = 75 ] && echo "ok: order 8 SIGTERM -> 75" || { echo "FAIL: order 8 SIGTERM -> $st:"; cat s.log; fail=1; }
expect 0 'resumed at step' -- "$T" run o8-job.cfg -o s.h5 --resume --set 'solver.device_memory="160M"'
same o8-ref.h5 s.h5
exit $fail
