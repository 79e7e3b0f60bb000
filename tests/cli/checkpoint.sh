#!/usr/bin/env bash
# Checkpoints end to end on the CPU kernels: runs killed with SIGKILL at random moments (and once
# in the middle of writing a checkpoint) and resumed, again and again, alternating cpu and
# cpu-diamond (and cpu-diamond's sliding window under solver.device_memory), end with traces and
# snapshots bitwise equal (h5diff, no tolerance) to an uninterrupted run; SIGTERM writes a
# checkpoint and exits 75, SIGUSR1 too; without checkpointing both stop with 130 as before; a
# resumable run's files are refused without --resume; corrupted, truncated, foreign, missing and
# mismatched checkpoints are refused with their messages; `check` prints the checkpoint's cost.
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
source "$(dirname "$0")/../ckpt_lib.sh"
T=$TORREWAVE
# Threads sleep at barriers instead of spinning: CI runs two tests at once on two cores (timing only).
export OMP_WAIT_POLICY=passive
cd "$tmp"
# 48 x 44 x 30 padded cells, 160 steps, order 4: a fraction of a second per run on 2 cores.
cat > ref.cfg <<'CFG'
grid = { n = [36, 32, 24]; d = [10.0, 10.0, 10.0]; };
time = { steps = 160; };
model = { type = "gradient"; vp0 = 1500.0; gradient = 1.0; };
scheme = { order = 4; };
boundary = { absorbing = 6; free_surface = true; };
sources = ( { position = [180.0, 160.0, 50.0]; wavelet = { type = "ricker"; frequency = 14.0; }; } );
receivers = { interval = 2; lines = ( { from = [0.0, 160.0, 10.0]; to = [350.0, 160.0, 10.0]; count = 36; } ); };
snapshots = { every = 50; decimate = 2; };
solver = { kernel = "cpu"; dts = 2; };  # cpu-diamond's tile R = 4 keeps its smallest window at 22 planes
CFG
cp ref.cfg job.cfg
echo 'checkpoint = { every = 16; };' >> job.cfg
t0=$(ms)
expect 0 'Gcell/s' -- "$T" run ref.cfg -q -o ref.h5
run_ms=$(( $(ms) - t0 ))  # kills land anywhere in a run of this length

# ---- SIGKILL at random moments, resumed each time on the next kernel of the list: the final output
# is the uninterrupted one. A kill before the first checkpoint leaves only a journal: start over.
RANDOM=18
killed_runs job.cfg k1.h5 $run_ms 4 cpu cpu-diamond
same ref.h5 k1.h5
gone k1.h5.ckpt k1.h5.ckpt.journal k1.h5.ckpt.tmp
killed_runs job.cfg k2.h5 $run_ms 4 cpu-diamond:600K:6 cpu cpu-diamond:600K:6 cpu-diamond cpu-diamond:600K:6
same ref.h5 k2.h5

# ---- the mirror image of ref.cfg (x and y exchanged: y is now the longer axis, which the kernels
# sweep as their x, so its checkpoints hold their planes): killed and resumed, bitwise its
# uninterrupted run, whose traces are bitwise those of ref.cfg (the same problem for the kernels).
sed -e 's/n = \[36, 32, 24\]/n = [32, 36, 24]/' -e 's/position = \[180.0, 160.0, 50.0\]/position = [160.0, 180.0, 50.0]/' \
    -e 's/from = \[0.0, 160.0, 10.0\]; to = \[350.0, 160.0, 10.0\]/from = [160.0, 0.0, 10.0]; to = [160.0, 350.0, 10.0]/' \
    ref.cfg > yref.cfg
cp yref.cfg yjob.cfg
echo 'checkpoint = { every = 16; };' >> yjob.cfg
expect 0 "sweep the job's y axis" -- "$T" run yref.cfg -o yref.h5
killed_runs yjob.cfg y1.h5 $run_ms 3 cpu cpu-diamond:600K:6 cpu
same yref.h5 y1.h5
if command -v h5diff >/dev/null 2>&1; then
  h5diff -q ref.h5 yref.h5 /receivers/traces && echo "ok: the mirror image's traces are bitwise ref's" ||
    { echo "FAIL: the mirror image's traces differ from ref's"; fail=1; }
fi

# ---- a crash while a checkpoint is written (the process kills itself half-way through the second
# one): the first stays whole and resumes. Both runs through cpu-diamond's window.
size=$((8 * 48 * 44 * 30))  # bytes of a checkpoint's field (the padded grid, two levels)
win=(--set 'solver.kernel="cpu-diamond"' --set 'solver.device_memory="600K"' --set solver.tower_height=6)
TW_CHECKPOINT_CRASH_AFTER=$((size * 3 / 2)) "$T" run job.cfg -q -o c.h5 "${win[@]}"; st=$?
[ $st = 137 ] || { echo "FAIL: the crash hook: status $st"; fail=1; }
expect 0 'sliding window of 22 x-planes' -- "$T" run job.cfg -o c.h5 --resume "${win[@]}"
cp "$tmp/out" c.out
expect 0 'resumed at step 16' -- cat c.out
same ref.h5 c.h5

# ---- SIGTERM and SIGUSR1: a checkpoint at the next block, status 75, no output, --resume finishes.
for sig in TERM USR1; do
  rm -f s.h5*
  # every 4 steps, the run held 1 s after each checkpoint (TW_CHECKPOINT_PAUSE), so it is still going
  # when the signal comes
  TW_CHECKPOINT_PAUSE=1 "$T" run job.cfg -q -o s.h5 --set 'checkpoint.every_seconds=1000.0' --set checkpoint.every=4 2> s.log &
  pid=$!
  signal_after_checkpoint $sig $pid s.h5.ckpt
  wait $pid; st=$?
  if [ $st = 75 ] && grep -q "checkpoint 's.h5.ckpt' written" s.log && [ -e s.h5.ckpt ] && [ ! -e s.h5 ]; then
    echo "ok: SIG$sig -> 75: $(grep checkpoint s.log)"
  else echo "FAIL: SIG$sig -> status $st, files: $(ls), log:"; cat s.log; fail=1; fi
  expect 1 "checkpoint 's.h5.ckpt' already exists \(step [0-9]+ of 160.*--resume" -- "$T" run job.cfg -q -o s.h5
  expect 0 'resumed at step' -- "$T" run job.cfg -o s.h5 --resume --set 'solver.kernel="cpu-diamond"'
  same ref.h5 s.h5
  gone s.h5.ckpt s.h5.ckpt.journal
done
# Without checkpointing: as before, 130 and nothing left.
"$T" run ref.cfg -q -o u.h5 --set time.steps=40000 &
pid=$!
for _ in $(seq 300); do ls u.h5.part* > /dev/null 2>&1 && break; sleep 0.02; done
sleep 0.2; kill -USR1 $pid; wait $pid; st=$?
[ $st = 130 ] && ! ls u.h5* > /dev/null 2>&1 && echo "ok: SIGUSR1 without checkpointing -> 130" ||
  { echo "FAIL: SIGUSR1 without checkpointing: $st, $(ls)"; fail=1; }
# Ctrl-C before the first checkpoint: 130, and the journal it began is gone too.
"$T" run job.cfg -q -o v.h5 --set time.steps=40000 --set checkpoint.every=39000 &
pid=$!
for _ in $(seq 300); do ls v.h5.part* > /dev/null 2>&1 && break; sleep 0.02; done
sleep 0.2; kill -INT $pid; wait $pid; st=$?
[ $st = 130 ] && ! ls v.h5* > /dev/null 2>&1 && echo "ok: SIGINT before the first checkpoint -> 130, nothing left" ||
  { echo "FAIL: SIGINT before the first checkpoint: $st, $(ls)"; fail=1; }
# Two runs onto one checkpoint.file (other outputs: their output locks do not meet) at once: the
# second is refused while the first holds it (it truncated the first's journal, and on completing
# removed the first's checkpoint files: the first could not resume).
"$T" run job.cfg -q -o sh1.h5 --set time.steps=40000 --set checkpoint.every=39000 --set 'checkpoint.file="sh.ckpt"' &
pid=$!
for _ in $(seq 300); do [ -s sh.ckpt.journal ] && break; sleep 0.02; done
expect 1 "checkpoint 'sh.ckpt' is in use by another torrewave run \(process $pid.*its own checkpoint.file" -- \
  "$T" run job.cfg -q -o sh2.h5 --set 'checkpoint.file="sh.ckpt"'
[ -s sh.ckpt.journal ] && [ ! -e sh2.h5 ] && echo "ok: the first run's journal is untouched" ||
  { echo "FAIL: the second run took the first's checkpoint files: $(ls)"; fail=1; }
kill -INT $pid; wait $pid

# ---- refusals. A checkpoint of step 16 to damage (the crash hook again).
mk() { rm -f r.h5*; TW_CHECKPOINT_CRASH_AFTER=$((size * 3 / 2)) "$T" run job.cfg -q -o r.h5; }
mk
expect 1 'the sources \(positions, interpolation, wavelets\) differ.*start over by removing' -- \
  "$T" run job.cfg -o r.h5 --resume \
  --set 'sources=({position=[190.0,160.0,50.0];wavelet={type="ricker";frequency=14.0;};})'
expect 1 'the grid .* differs: n \[36, 32, 24\].*\[36, 32, 25\]' -- \
  "$T" run job.cfg -o r.h5 --resume --set 'grid.n=[36,32,25]'
expect 1 'the velocity model.s values differ' -- "$T" run job.cfg -o r.h5 --resume --set model.vp0=1501.0
expect 1 'the snapshots .* differ' -- "$T" run job.cfg -o r.h5 --resume --set snapshots.every=60
expect 1 "no checkpoint 'nothing.h5.ckpt'" -- "$T" run job.cfg -o nothing.h5 --resume
# Another output on resuming (free to change): the default checkpoint name follows the output, so
# the message says where the checkpoint is looked for and how to name it (it said only "run without
# --resume to start over", which leaves the checkpoint behind); named, the resume goes on.
expect 1 "no checkpoint 'moved\.h5\.ckpt' \(checkpoint\.file is not given: it is the output's name \+ \.ckpt, .*--set 'checkpoint\.file=\"OTHER\.h5\.ckpt\"'\); run without --resume" \
  -- "$T" run job.cfg -o moved.h5 --resume
expect 1 "no checkpoint 'nothing\.ckpt'; run without --resume to start over$" \
  -- "$T" run job.cfg -o moved.h5 --resume --set 'checkpoint.file="nothing.ckpt"'
expect 0 "resumed at step 16" -- "$T" run job.cfg -o moved.h5 --resume --set 'checkpoint.file="r.h5.ckpt"'
[ ! -e r.h5.ckpt ] && [ -f moved.h5 ] || { echo "FAIL: the resume onto moved.h5: $(ls)"; fail=1; }
mk
expect 1 'has no checkpoint group' -- "$T" run ref.cfg -o r.h5 --resume
expect 2 '"--resume" is an option of run, not of check' -- "$T" check job.cfg --resume
printf 'XXXXXXXX' | dd of=r.h5.ckpt bs=1 seek=$((size / 2)) conv=notrunc status=none
expect 1 'is corrupted: x-planes [0-9]+\.\.[0-9]+ \(bytes [0-9]+\.\.[0-9]+\) fail their checksum' -- \
  "$T" run job.cfg -o r.h5 --resume
mk; truncate -s $((size / 3)) r.h5.ckpt
expect 1 'is truncated: .* of .* \([0-9]+ of [0-9]+ bytes' -- "$T" run job.cfg -o r.h5 --resume
mk; printf 'X' | dd of=r.h5.ckpt bs=1 seek=100 conv=notrunc status=none
expect 1 'is corrupted: its header fails its checksum' -- "$T" run job.cfg -o r.h5 --resume
mk; echo "hello" > r.h5.ckpt
expect 1 'not a torrewave checkpoint \(6 bytes' -- "$T" run job.cfg -o r.h5 --resume
expect 1 "already exists and cannot be read .*remove it" -- "$T" run job.cfg -o r.h5
# (the journal may run past what the checkpoint needs, by as many steps as ran while the crashing
# write was under way: damage the byte half-way through the part it needs, which the truncated
# journal's message names)
mk; truncate -s 100 r.h5.ckpt.journal
expect 1 "journal 'r.h5.ckpt.journal' is truncated" -- "$T" run job.cfg -o r.h5 --resume
need=$(sed -n 's/.*the checkpoint needs the first \([0-9]*\).*/\1/p' "$tmp/out")
mk; printf 'X' | dd of=r.h5.ckpt.journal bs=1 seek=$((${need:-200} / 2)) conv=notrunc status=none
expect 1 "journal 'r.h5.ckpt.journal' is corrupted" -- "$T" run job.cfg -o r.h5 --resume
# a FIFO under either name is refused at once (a read waited for a writer forever, and the run took
# SIGTERM for a stop at the next block, which never came: killed here after 20 s)
mk; rm r.h5.ckpt.journal && mkfifo r.h5.ckpt.journal
expect 1 "journal 'r.h5.ckpt.journal' is a FIFO \(named pipe\), not a journal file" -- \
  timeout -s KILL 20 "$T" run job.cfg -o r.h5 --resume
rm -f r.h5.ckpt* && mkfifo r.h5.ckpt
expect 1 "checkpoint 'r.h5.ckpt' is a FIFO \(named pipe\), not a checkpoint file" -- \
  timeout -s KILL 20 "$T" run job.cfg -o r.h5 --resume
expect 1 "already exists and cannot be read .*is a FIFO" -- timeout -s KILL 20 "$T" run job.cfg -o r.h5
# a checkpoint survives a failed resume, and an interrupted run says which one it keeps
# (checkpoints written on the step path, TW_CHECKPOINT_SYNC, and the run held 1 s after each,
# TW_CHECKPOINT_PAUSE, so that it is still going when the signal comes: the whole run takes ~0.1 s,
# and under load it ended before the signal, 1 in ~10)
mk; TW_CHECKPOINT_SYNC=1 TW_CHECKPOINT_PAUSE=1 "$T" run job.cfg -q -o r.h5 --resume --set checkpoint.every=4 2> int.log &
pid=$!
signal_after_checkpoint INT $pid r.h5.ckpt  # the resumed run's first checkpoint
wait $pid; st=$?
[ $st = 130 ] || { echo "FAIL: SIGINT -> $st"; fail=1; }
expect 0 "checkpoint 'r.h5.ckpt' of step [0-9]+ is kept: --resume continues" -- cat int.log
"$T" check job.cfg -o r.h5 > check.out 2>&1
expect 0 'checkpoint   r.h5.ckpt: 49[0-9.]+ KiB each .*every 16 steps' -- cat check.out
expect 0 'this disk wrote .*/s .*about [0-9.e-]+ s per checkpoint' -- cat check.out
expect 0 'a checkpoint exists: step [0-9]+ of 160, written by cpu' -- cat check.out
exit $fail
