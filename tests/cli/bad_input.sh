#!/usr/bin/env bash
# Bad input: a clear message naming file:line and key, exit status 1, and no output file; input that
# runs but does nothing (a silent source): a warning as clear, and the run goes on.
set -uo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect STATUS PATTERN -- command...
  local want=$1 pat=$2; shift 3
  "$@" > "$tmp/out" 2>&1; local got=$?
  if [ "$got" != "$want" ] || ! grep -Eq "$pat" "$tmp/out"; then
    echo "FAIL: $* -> status $got (want $want), output:"; cat "$tmp/out"; fail=1
  else echo "ok: $* -> $got: $(head -c 200 "$tmp/out" | head -n 1)"; fi
}
cat > "$tmp/bad.cfg" <<'CFG'
grid = { n = [20, 20, -5]; d = [10.0, 10.0, 10.0]; };
time = { steps = 10; };
model = { type = "constant"; vp = 2000.0; };
sources = ( { position = [50.0, 50.0, 50.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
output = { file = "bad.h5"; };
CFG
cd "$tmp"
expect 1 'bad\.cfg:1: grid\.n' -- "$TORREWAVE" run "$tmp/bad.cfg"
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a bad job"; fail=1; }
expect 1 'bad\.cfg:1: grid\.n' -- "$TORREWAVE" check "$tmp/bad.cfg"
sed -i 's/-5/10/' "$tmp/bad.cfg"
expect 1 'solver\.kernel' -- "$TORREWAVE" run "$tmp/bad.cfg" --set solver.kernel=gpu-diamnd
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a bad kernel"; fail=1; }
expect 1 'time\.dt|stab' -- "$TORREWAVE" run "$tmp/bad.cfg" --set time.dt=0.01
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for an unstable dt"; fail=1; }
# a --set of model.type alone leaves the file's keys of the old type: the message says to give the group
expect 1 "bad\.cfg:[0-9]+: model\.vp: unknown key: .*keys allowed in a model of type \"gradient\" \(model\.type alone was changed by --set: give the whole group instead, --set 'model = \{ type = \"gradient\"; \.\.\. \}'\)" -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'model.type="gradient"'
expect 1 'does not exist' -- "$TORREWAVE" check "$tmp/bad.cfg" -o /nonexistent/dir/x.h5
expect 1 'No such file|cannot open|cannot read' -- "$TORREWAVE" run "$tmp/missing.cfg"
# A memory need beyond the machine is refused before anything is allocated, for check and run.
# (named where grid.n is given: the --set, or file:line in tests/bad_jobs/memory_beyond_host.cfg)
expect 1 'bad\.cfg: --set grid\.n=\[20000,20000,2000\]: grid\.n: the job needs .* of host memory and .* is available: got \[20000, 20000, 2000\]' -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'grid.n=[20000,20000,2000]'
expect 1 'grid\.n: the job needs .* of host memory and .* is available: got .*; allowed about' -- "$TORREWAVE" run "$tmp/bad.cfg" --set 'grid.n=[20000,20000,2000]'
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created for a job too large"; fail=1; }
# A snapshot region holding no cell on an axis (from = to = 15 m on a 10 m grid) is refused by check,
# run and reference alike, naming the cells on either side (its box was the plane x = 20 m, outside it).
for cmd in check run reference; do
  expect 1 'bad\.cfg: --set snapshots=.*: snapshots\.region: holds no cell on x: from\[0\] = 15\.0 and to\[0\] = 15\.0 lie between the cells at x = 10\.0 and 20\.0 m: got .*; allowed from\[0\] <= 10\.0 or to\[0\] >= 20\.0' -- "$TORREWAVE" "$cmd" "$tmp/bad.cfg" --set 'snapshots={every=5;region={from=[15.0,0.0,0.0];to=[15.0,190.0,90.0];};}'
done
test ! -e "$tmp/bad.h5" && test ! -e "$tmp/bad-reference.h5" || { echo "FAIL: output created for an empty snapshot region"; fail=1; }
# A NUL byte inside a job file: everything after it would be ignored — refused, where it is named.
(head -n 3 "$tmp/bad.cfg"; printf 'scheme = { order = 2; };\0\n'; tail -n +4 "$tmp/bad.cfg") > "$tmp/nul.cfg"
expect 1 'nul\.cfg:4: a NUL byte \(byte [0-9]+ of the file\): a job file is text' -- "$TORREWAVE" check "$tmp/nul.cfg"
# More CPU threads than 4 a CPU (libgomp crashed at 65536): refused before anything starts.
expect 1 'bad\.cfg: --set solver\.threads=65536: solver\.threads: over 4 threads per CPU on this machine.s [0-9]+ CPUs: got 65536; allowed 1\.\.[0-9]+' -- "$TORREWAVE" run "$tmp/bad.cfg" --set solver.threads=65536
expect 1 "OpenMP's default thread count is 65536" -- env OMP_NUM_THREADS=65536 "$TORREWAVE" check "$tmp/bad.cfg"
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created"; fail=1; }
# cpu-diamond's DTS and height: check refuses what run would, where the value is given (a job file's
# line: tests/bad_jobs/dts_beyond_tile.cfg)
expect 1 'bad\.cfg: --set solver=\{kernel="cpu-diamond";dts=1000;\}: solver\.dts: the diamond tile .*: got 1000; allowed 1\.\.64 for order 8' -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'solver={kernel="cpu-diamond";dts=1000;}'
expect 1 'bad\.cfg: --set solver\.tower_height=100000: solver\.tower_height: over the limit of 65536 steps .*got 100000; allowed 1\.\.65536' -- "$TORREWAVE" run "$tmp/bad.cfg" --set solver.kernel=cpu-diamond --set solver.tower_height=100000
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created"; fail=1; }
# cpu-diamond's window under a cap: check gives the ring and the tower height the run reports (it gave
# the planes alone: a height lowered to fit shows only in a warning, the default one nowhere), and the
# bytes each block moves, whose multiple the run's summary counts; with the height lowered and not.
for cap in 2M 2500K; do
  win=(--set scheme.order=2 --set solver.kernel='"cpu-diamond"' --set "solver.device_memory=\"$cap\"" --set time.steps=12 -o "$tmp/win.h5")
  "$TORREWAVE" check "$tmp/bad.cfg" "${win[@]}" > "$tmp/win.check" 2>&1
  "$TORREWAVE" run "$tmp/bad.cfg" "${win[@]}" -q > "$tmp/win.run" 2>&1
  said=$(sed -n 's/^torrewave: sliding window of \([0-9]*\) x-planes: .*tower height \([0-9]*\).*/\1 \2/p' "$tmp/win.run")
  moved=$(sed -n 's/^torrewave: window of [0-9]* x-planes: \([0-9]*\) planes in (\([^)]*\)).*/\1 \2/p' "$tmp/win.run")
  [ "${moved%% *}" = 60 ] && per="${moved#* }" || per='[0-9.]+ [KM]iB' # one block (60 planes): its bytes
  grep -Eq "window of ${said% *} x-planes, tower height ${said#* }: $per in and [0-9.]+ [KM]iB out a block" \
    "$tmp/win.check" && [ -n "$moved" ] ||
    { echo "FAIL: cap $cap: check's window is not the run's (planes, height: '$said'):"; cat "$tmp/win.check" "$tmp/win.run"; fail=1; }
  rm -f "$tmp/win.h5"
done
if ! "$TORREWAVE" info --kernels | grep -q ' gpu$'; then # (a kernel this machine lacks: named where it is given)
  expect 1 'bad\.cfg: --set solver\.kernel=gpu-diamond: solver\.kernel: "gpu-diamond" (needs a GPU|is not available in this build)' -- "$TORREWAVE" check "$tmp/bad.cfg" --set solver.kernel=gpu-diamond
fi
# Sources given by --set are named by it, as every other setting (were 'bad.cfg:0:'): the source,
# its wavelet file and sources sharing a cell.
src='{position=[5.0,5.0,5.0];wavelet={type="ricker";frequency=10.0;delay=0.0;amplitude=2e38;};}'
printf '1.0\nx\n' > "$tmp/w.txt"
expect 1 'bad\.cfg: --set sources=\(\{position=\[50\.0,50\.0,0\.0\];.*\): sources\[0\]\.position: on the free surface' -- "$TORREWAVE" check "$tmp/bad.cfg" --set boundary.free_surface=true --set 'sources=({position=[50.0,50.0,0.0];wavelet={type="ricker";frequency=10.0;};})'
expect 1 "bad\.cfg: --set sources=\(\{position=.*\): sources\[0\]\.wavelet\.file: '.*w\.txt' line 2: not a number" -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'sources=({position=[50.0,50.0,50.0];wavelet={type="file";file="w.txt";};})'
expect 1 'bad\.cfg: --set sources=\(\{position=.*\): sources\[0\] and sources\[1\]: the source term overflows float32 in a cell they share' -- "$TORREWAVE" run "$tmp/bad.cfg" --set 'grid.d=[1.0,1.0,1.0]' --set "sources=($src,$src)"
test ! -e "$tmp/bad.h5" || { echo "FAIL: output created"; fail=1; }
# A wavelet the run's steps never reach radiates nothing, which the run did not say: a file whose
# samples all lie after the last step or before t = 0, or are non-zero only after it, and a Ricker
# delayed past it. check and run warn (as for amplitude = 0: the job is valid, and runs), naming
# where, the source, the file, its span and the run's; a file within the run's time gets no warning.
span() { awk -v t0="$1" -v n="$2" -v from="${3:-0}" 'BEGIN { for (i = 0; i < n; i++) printf "%g %g\n", t0 + i * 0.002, (i >= from) }'; }
span 1.0 101 > "$tmp/late.txt" && span -1.0 101 > "$tmp/early.txt" && span 0.0 500 401 > "$tmp/zero.txt" && span 0.01 101 > "$tmp/in.txt"
ws() { echo "sources=({position=[50.0,50.0,50.0];wavelet={type=\"file\";file=\"$1\";};})"; }
silent="the run's steps at t = 0 \.\. 0\.0203785 s \(10 steps of 0\.00203785 s\): sampled there the wavelet is zero throughout, so that source radiates nothing \(every trace and snapshot will be zero\); allowed: samples within the run's time"
expect 0 "^warning: .*bad\.cfg: --set sources=\(\{.*\}\): sources\[0\]\.wavelet\.file '.*late\.txt': its samples lie at t = 1\.0 \.\. 1\.2 s, $silent" -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(ws late.txt)"
expect 0 "^warning: .*: sources\[0\]\.wavelet\.file '.*early\.txt': its samples lie at t = -1\.0 \.\. -0\.8 s, $silent" -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(ws early.txt)"
expect 0 "^torrewave: warning: .*: sources\[0\]\.wavelet\.file '.*zero\.txt': its samples lie at t = 0\.0 \.\. 0\.998 s \(non-zero at t = 0\.802 \.\. 0\.998 s\), $silent" -- "$TORREWAVE" run "$tmp/bad.cfg" -q --set "$(ws zero.txt)" -o silent.h5
test -s silent.h5 || { echo "FAIL: the job with a silent source did not run"; fail=1; }
expect 0 "^warning: .*: sources\[0\]\.wavelet: the Ricker wavelet of 10 Hz delayed 10\.0 s is zero \(in float32\) at every step of the run, t = 0 \.\. 0\.0203785 s" -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'sources=({position=[50.0,50.0,50.0];wavelet={type="ricker";frequency=10.0;delay=10.0;};})'
# ... and the advice follows the cause (review, session 19: every case blamed the timing): a Ricker
# within reach of the run whose amplitude underflows, a file of zeros, a file whose non-zero samples
# lie within the run's time but underflow float32
expect 0 "^warning: .*: sources\[0\]\.wavelet: the Ricker wavelet of 10 Hz delayed 0\.15 s, amplitude 1e-50, is zero in float32 at every step of the run, t = 0 \.\. 0\.0203785 s \(10 steps of 0\.00203785 s\): the run reaches its pulse \(the delay ± 2 periods\), but its values there underflow; .*allowed: a larger amplitude$" -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'sources=({position=[50.0,50.0,50.0];wavelet={type="ricker";frequency=10.0;delay=0.15;amplitude=1e-50;};})'
expect 0 "^warning: .*: sources\[0\]\.wavelet: the Ricker wavelet of 5000 Hz delayed 0\.001 s is zero \(in float32\) at every step of the run, t = 0 \.\. 0\.0203785 s \(10 steps of 0\.00203785 s\): its pulse, 0\.4 ms wide, falls between the steps \(the nearest at t = 0\.0 s, 5 periods from its peak\).*allowed: a frequency the steps resolve" -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'sources=({position=[50.0,50.0,50.0];wavelet={type="ricker";frequency=5000.0;delay=0.001;};})'
span 0.0 51 51 > "$tmp/zeros.txt" && awk 'BEGIN { for (i = 0; i < 51; i++) printf "%g 1e-50\n", i * 0.002 }' > "$tmp/tiny.txt"
expect 0 "^warning: .*: sources\[0\]\.wavelet\.file '.*zeros\.txt': it holds only zeros \(t = 0\.0 \.\. 0\.1 s\), so that source radiates nothing .*allowed: a wavelet with non-zero samples$" -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(ws zeros.txt)"
expect 0 "^warning: .*: sources\[0\]\.wavelet\.file '.*tiny\.txt': its samples lie at t = 0\.0 \.\. 0\.1 s, within the run's steps at t = 0 \.\. 0\.0203785 s \(10 steps of 0\.00203785 s\), but sampled there the wavelet is zero throughout in float32 \(its values underflow\).*allowed: larger values$" -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(ws tiny.txt)"
expect 0 '^ok$' -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(ws in.txt)"
! grep -q 'radiates nothing' "$tmp/out" || { echo "FAIL: a wavelet within the run's time was called silent"; cat "$tmp/out"; fail=1; }
# A layer whose top lies below the model's last cell is in no cell (a grid too shallow for the
# model, or a top in other units): run said nothing. check and run warn, naming the layer, its top
# and the last cell's depth; a top on the last cell is in the model.
lay() { echo "model={type=\"layered\";layers=({top=0.0;vp=1500.0;},{top=$1;vp=3000.0;});}"; }
expect 0 "^warning: .*bad\.cfg: --set model=.*: model\.layers\[1\]\.top = 500\.0 lies below the model's last cell \(z = 90\.0\): that layer is in no cell of the model; allowed: a top within grid\.origin\[2\] \.\. 90\.0, or a deeper grid" -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(lay 500.0)"
expect 0 '^ok$' -- "$TORREWAVE" check "$tmp/bad.cfg" --set "$(lay 90.0)"
! grep -q 'in no cell' "$tmp/out" || { echo "FAIL: a layer on the last cell was called empty"; cat "$tmp/out"; fail=1; }
# Extreme but valid numbers in a few characters, and still named: printed with "%.1f", a Ricker of
# 1e300 Hz made the dispersion warning and check's line over 300 digits long (and 8e-299 points per
# wavelength 0.0), a velocity of 3e38 m/s 39 digits.
short() { # short WHAT: no line of the output over 200 characters
  if awk 'length($0) > 200 { exit 1 }' "$tmp/out"; then echo "ok: $1: every line short"
  else echo "FAIL: $1: a line over 200 characters:"; cat "$tmp/out"; fail=1; fi
}
expect 0 '^warning: 8e-299 points per wavelength at 2\.5e\+300 Hz is low for order 8' -- "$TORREWAVE" check "$tmp/bad.cfg" --set 'sources=({position=[50.0,50.0,50.0];wavelet={type="ricker";frequency=1e300;delay=0.0;};})'
grep -q '^dispersion  *8e-299 points per wavelength at 2\.5e+300 Hz' "$tmp/out" || { echo "FAIL: check's dispersion line"; fail=1; }
short "a Ricker of 1e300 Hz"
expect 0 '^model .* vp 3e\+38 \.\. 3e\+38 m/s$' -- "$TORREWAVE" check "$tmp/bad.cfg" --set model.vp=3e38 --set 'model.vp_range=[1.0,3.3e38]'
short "a velocity of 3e38 m/s"
# --workers N x solver.threads is held to 4 threads a CPU in all, as solver.threads alone is: run and
# check refuse it naming both, and the survey leaves no folder.
ncpu=$(getconf _NPROCESSORS_ONLN)
cat > "$tmp/survey.cfg" <<CFG
grid = { n = [20, 20, 10]; d = [10.0, 10.0, 10.0]; };
time = { steps = 10; };
model = { type = "constant"; vp = 2000.0; };
shots = { positions = ( [50.0, 50.0, 50.0], [60.0, 50.0, 50.0] ); };
sources = ( { wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [100.0, 100.0, 10.0] ); };
solver = { kernel = "cpu";
           threads = $((4 * ncpu)); };
CFG
expect 1 "survey\.cfg:8: solver\.threads: --workers 2 x solver\.threads = $((8 * ncpu)) CPU threads, over 4 per CPU on this machine.s $ncpu CPUs: got $((4 * ncpu)); allowed at most $((2 * ncpu)) with --workers 2" -- "$TORREWAVE" run "$tmp/survey.cfg" --workers 2 -q -o "$tmp/shots"
test ! -e "$tmp/shots" || { echo "FAIL: a refused survey left its folder"; fail=1; }
expect 1 "survey\.cfg:8: solver\.threads: --workers 2 x solver\.threads" -- "$TORREWAVE" check "$tmp/survey.cfg" --workers 2
# a line of shots is no receiver line: its keys and count named as a shot line's, the count's range the
# shots' (it said allowed 1..100000000, where 20000000 shots are too many; tests/bad_jobs/shots_line_*.cfg)
expect 1 "shots_line_count_zero\.cfg:5: shots\.lines\[0\]\.count: must be a positive integer: got 0; allowed 1\.\.10000000\$" \
  -- "$TORREWAVE" check "$TW_SOURCE_DIR/tests/bad_jobs/shots_line_count_zero.cfg"
expect 1 "survey\.cfg: --set shots\.lines=.*: shots\.lines\[0\]\.count: must be a positive integer: got 20000000; allowed 1\.\.10000000\$" \
  -- "$TORREWAVE" check "$tmp/survey.cfg" --set 'shots.lines=({from=[0.0,0.0,10.0];to=[90.0,0.0,10.0];count=20000000;})'
# an override that leaves the survey without shots is named, with its key and value (it was located at
# the shots group's line in the file: tests/bad_jobs/shots_*_empty_override.cfg)
for cmd in check run; do
  expect 1 "survey\.cfg: --set shots\.positions=\(\): shots\.positions: leaves the survey without a shot \(shots\.lines is not given\): got \(\); allowed at least one position" \
    -- "$TORREWAVE" $cmd "$tmp/survey.cfg" --set 'shots.positions=()' -o "$tmp/noshots"
done
test ! -e "$tmp/noshots" || { echo "FAIL: a survey without shots left its folder"; fail=1; }
if [ $((4 * ncpu)) -lt 64 ]; then # solver.threads not given: at least one thread a worker
  expect 1 "survey\.cfg: --workers 64: 64 workers x 1 CPU thread each .* over 4 per CPU .*; allowed --workers at most $((4 * ncpu))" -- "$TORREWAVE" check "$tmp/survey.cfg" --workers 64 --set solver.threads=0
fi
# A job file is read only when it is a regular file: a FIFO (no writer: open(2) would block), a
# device, a folder are refused at once; so are a model or wavelet file of those kinds.
mkfifo "$tmp/fifo.cfg"
expect 1 'fifo\.cfg: cannot read the job file: it is a FIFO \(named pipe\); allowed a regular file' -- timeout 20 "$TORREWAVE" check "$tmp/fifo.cfg"
expect 1 '/dev/null: cannot read the job file: it is a character device' -- timeout 20 "$TORREWAVE" run /dev/null
expect 1 'cannot read the job file: it is a directory' -- timeout 20 "$TORREWAVE" check "$tmp"
sed 's/model = .*/model = { type = "raw"; file = "fifo.cfg"; };/' "$tmp/bad.cfg" > "$tmp/raw_fifo.cfg"
expect 1 'raw_fifo\.cfg:3: model\.file: cannot read ".*fifo\.cfg" \(it is a FIFO \(named pipe\), not a regular file\)' -- timeout 20 "$TORREWAVE" check "$tmp/raw_fifo.cfg"
# "--" ends the options, for every command (a job file named -x.cfg after it); "--name=value" is
# "--name value", and a flag takes no value.
cp "$tmp/bad.cfg" "$tmp/-x.cfg"
expect 2 'unknown option "-x\.cfg"' -- "$TORREWAVE" check -x.cfg
expect 0 '^ok$' -- "$TORREWAVE" check -- -x.cfg
expect 0 'Gcell/s' -- "$TORREWAVE" run -o dashdash.h5 -- -x.cfg
test -e "$tmp/dashdash.h5" || { echo "FAIL: run -- -x.cfg wrote no output"; fail=1; }
expect 2 'more than one job file \("bad\.cfg" and "--set"\)' -- "$TORREWAVE" check bad.cfg -- --set
expect 2 'verbose takes no value' -- "$TORREWAVE" check bad.cfg --verbose=yes
expect 2 "result '-x\\.h5': cannot open" -- "$TORREWAVE" compare -- dashdash.h5 -x.h5
expect 1 'holds no receiver traces' -- "$TORREWAVE" export --segy=x.sgy -- dashdash.h5
expect 2 'takes no operands, got "--kernels"' -- "$TORREWAVE" info -- --kernels
expect 2 'takes no operands, got "--orders"' -- "$TORREWAVE" bench -- --orders
# -h / --help anywhere among the options prints the command's help (exit 0), not after "--"
expect 0 '^usage: torrewave check JOB\.cfg' -- "$TORREWAVE" check bad.cfg --help
expect 0 '^usage: torrewave run JOB\.cfg' -- "$TORREWAVE" run bad.cfg -q -h
expect 0 '^usage: torrewave compare A\.h5 B\.h5' -- "$TORREWAVE" compare a.h5 --help
expect 1 'error: --help: cannot read the job file' -- "$TORREWAVE" check -- --help
expect 2 'orders: "2x" is not an even order' -- "$TORREWAVE" bench --orders 2x
expect 2 'orders: no order named' -- "$TORREWAVE" bench --orders ,
expect 2 'kernels: no kernel named' -- "$TORREWAVE" bench --kernels ,
expect 0 'commands:' -- "$TORREWAVE" help help
expect 2 'unknown command' -- "$TORREWAVE" frobnicate
expect 2 'no job file' -- "$TORREWAVE" run
expect 2 'unknown option' -- "$TORREWAVE" run "$tmp/bad.cfg" --bogus
expect 0 'usage: torrewave run' -- "$TORREWAVE" run --help
expect 0 'commands:' -- "$TORREWAVE" --help
exit $fail
