#!/usr/bin/env bash
# Surveys end to end on the CPU kernels:
#   1. a survey of 7 shots (positions and a line), fixed and moving receivers, run without MPI (two
#      worker threads) and by `mpirun --oversubscribe -np 2`: every shot file's traces and snapshots
#      are bit for bit those of the single-shot job at that shot's position, same kernel (h5diff, or
#      torrewave compare --rtol 1e-300 where hdf5-tools is missing);
#   2. a survey killed midway (SIGKILL: the process, then one rank of mpirun), run again: only the
#      shots without a complete file run, the complete ones are not rewritten, no temporary file is
#      left, and every file equals the uninterrupted survey's; a shot whose XDMF sidecar a kill lost
#      (the .h5 is renamed into place before it) is run again;
#   3. a shot that fails (a directory in the way of its file; under a name of a killed run's
#      temporaries something no run writes, a folder, a link or a FIFO: refused with a single run's
#      message, its advice a survey's (another directory, not output.file), and left, with that
#      shot's other temporaries): reported with its index and reason, the other shots complete, exit
#      status 3; fixed, a rerun runs those shots alone;
#   4. the job validation's warnings (a source of amplitude 0, few points per wavelength, cpu-diamond's
#      tower lowered for solver.device_memory): run says those `check` gives, in its words and order,
#      each once (not per shot, worker or rank), with --workers 2, with -q and under mpirun -np 2;
#   5. a file of a shot that is one of the job's inputs (the model, a wavelet file; under the shot's
#      own name, its sidecar's, its SEG-Y file's or a killed run's temporary's, or a hard link of
#      it): `check` and `run` refuse the job before any shot runs, naming the shot, the file and the
#      input, and the input stays whole (check said ok; run failed that shot, exit 3, and removed a
#      wavelet file named like a temporary, exit 0);
#   6. a file torrewave did not write under a shot's XDMF sidecar or SEG-Y name: `check` and `run`
#      refuse the job before any shot runs, naming the shot and the file (check said ok; run failed
#      the shot, exit 3, and the rerun it advised failed it again); a complete shot's stays unrefused.
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
T=$TORREWAVE
source "$TW_SOURCE_DIR/tests/survey_lib.sh"
sv_init
cd "$tmp"

shots=("50.0 140.0 20.0" "250.0 60.0 40.0" "50.0 100.0 30.0" "100.0 100.0 30.0" "150.0 100.0 30.0"
       "200.0 100.0 30.0" "250.0 100.0 30.0")  # job order: the positions, then the line
SV_HEAD='grid = { n = [30, 28, 20]; d = [10.0, 10.0, 10.0]; };
model = { type = "layered"; layers = ( { top = 0.0; vp = 1800.0; }, { top = 100.0; vp = 2600.0; } ); };
scheme = { order = 4; };  boundary = { absorbing = 6; free_surface = true; };
snapshots = { steps = [40, 80]; decimate = 2; };'
SV_SHOTS='shots = { positions = ( [50.0, 140.0, 20.0], [250.0, 60.0, 40.0] );
          lines = ( { from = [50.0, 100.0, 30.0]; to = [250.0, 100.0, 30.0]; count = 5; } );'
SV_WAVELET='wavelet = { type = "ricker"; frequency = 20.0; };'
SV_FIXED='receivers = { interval = 2; lines = ( { from = [0.0, 140.0, 10.0]; to = [290.0, 140.0, 10.0]; count = 30; } ); };'
SV_OFFSETS=("-30 0 -10" "-20 0 -10" "-10 0 -10" "0 0 -10" "10 0 -10" "20 0 -10" "30 0 -10")
# job FILE KERNEL RECEIVERS STEPS [X Y Z]
job() {
  local f=$1 k=$2 rm=$3 steps=$4
  shift 4
  sv_job "$f" "$k" "$rm" "$@"
  echo "time = { steps = $steps; };" >> "$f"
}
singles() { # singles KERNEL RECEIVERS: the single-shot files s-K-R-I.h5
  local i
  for i in "${!shots[@]}"; do
    job single.cfg "$1" "$2" 80 ${shots[$i]}
    "$T" run single.cfg -q -o "s-$1-$2-$i.h5" || { echo "FAIL: single shot $i ($1, $2)"; fail=1; }
  done
}

# ---------------------------------------------------------------- 1. bit for bit against single shots
for km in cpu:fixed cpu-diamond:moving; do
  k=${km%:*} rm=${km#*:}
  (
    singles $k $rm
    job survey.cfg $k $rm 80
    sv_both "$k-$rm" 7 "r1 cpu"
    exit $fail
  ) || fail=1
done
echo "part 1 done (fail=$fail)"

# ---------------------------------------------------------------- 2. killed midway, run again
job slow.cfg cpu fixed 400
"$T" run slow.cfg -q -o whole || { echo "FAIL: the uninterrupted survey"; fail=1; }
# kill KILLER... : start the survey into dir `killed`, SIGKILL once two shots are complete (their
# sidecars there) and a third is under way; then run it again and check what ran.
killed_run() {
  local what=$1; shift
  rm -rf killed
  "$@" &
  local pid=$! n=0
  # (process: also wait for a temporary file, to check that the rerun removes it; rank: two shots
  # complete are enough — under mpirun on a loaded 2-core machine the polls missed every moment with
  # a temporary file in about one run of four, and the survey finished before the kill)
  for _ in $(seq 1500); do
    n=$(ls killed/shot-*.xdmf 2>/dev/null | wc -l)  # (complete shots: the sidecar is renamed last)
    [ "$n" -ge 2 ] && { [ "$what" = rank ] || ls killed/*.part-* >/dev/null 2>&1; } && break
    sleep 0.01
  done
  if [ "$what" = rank ]; then kill -9 "$(pgrep -P "$pid" | head -n 1)"; else kill -9 "$pid"; fi
  wait "$pid" 2>/dev/null
  local done_before part
  # (complete: the .h5 with its sidecar, as the rerun's plan counts them; a kill between the two renames,
  # in the .h5's directory fsync, leaves the .h5 alone, a shot the rerun runs again: see "lost" below)
  done_before=$(cd killed && for f in shot-*.h5; do [ -f "${f%.h5}.xdmf" ] && echo "$f"; done | sort | tr '\n' ' ')
  part=$(ls killed/*.part-* 2>/dev/null | wc -l)
  echo "killed ($what): complete before the rerun: $done_before; temporary files left: $part, lock files: $(ls killed/*.lock 2>/dev/null | wc -l)"
  [ -n "$done_before" ] && [ "$(echo "$done_before" | wc -w)" -lt "${#shots[@]}" ] &&
    { [ "$what" = rank ] || [ "$part" -ge 1 ]; } || { echo "FAIL: the kill did not land midway ($what)"; fail=1; }
  local inodes; inodes=$(cd killed && stat -c '%n %i %Y' $done_before 2>/dev/null)
  "$T" run slow.cfg -o killed -v > rerun.out 2>&1 || { echo "FAIL: the rerun failed"; cat rerun.out; fail=1; }
  local ran want
  ran=$(sed -n 's/^shot \([0-9]*\) .*: done on .*/\1/p' rerun.out | sort -n | tr '\n' ' ')
  want=$(for i in "${!shots[@]}"; do [[ " $done_before " == *" shot-0000$i.h5 "* ]] || echo $i; done | tr '\n' ' ')
  [ "$ran" = "$want" ] || { echo "FAIL: the rerun ran shots '$ran', expected '$want'"; cat rerun.out; fail=1; }
  grep -q "$(echo "$done_before" | wc -w) complete (skipped)" rerun.out || { echo "FAIL: plan line"; cat rerun.out; fail=1; }
  [ "$(cd killed && stat -c '%n %i %Y' $done_before 2>/dev/null)" = "$inodes" ] ||
    { echo "FAIL: a complete shot file was rewritten"; fail=1; }
  ! ls killed/*.part-* killed/*.lock >/dev/null 2>&1 || { echo "FAIL: temporary or lock files left: $(ls killed)"; fail=1; }
  for i in "${!shots[@]}"; do same "killed/shot-0000$i.h5" "whole/shot-0000$i.h5" "killed ($what), shot $i"; done
}
killed_run process "$T" run slow.cfg -q -o killed --workers 1
if [ $mpi = 1 ]; then killed_run rank mpirun -np 2 "$T" run slow.cfg -q -o killed; fi
# Killed between a shot's .h5 and its XDMF sidecar (renamed into place just after it, design §10.4):
# the .h5 alone is no complete shot; the rerun runs it again (once it was kept without its sidecar).
rm -rf lost && cp -r whole lost && mv lost/shot-00003.xdmf lost/shot-00003.xdmf.part-999999993
expect 0 "6 complete \(skipped\), 1 to run" -- "$T" run slow.cfg -o lost
cmp -s lost/shot-00003.xdmf whole/shot-00003.xdmf && ! ls lost/*.part-* > /dev/null 2>&1 ||
  { echo "FAIL: the shot without its sidecar was not rerun: $(ls lost)"; fail=1; }
same lost/shot-00003.h5 whole/shot-00003.h5 "rerun for its sidecar, shot 3"
echo "part 2 done (fail=$fail)"

# ---------------------------------------------------------------- 3. a shot that fails
job survey.cfg cpu fixed 80
mkdir -p failing/shot-00003.h5 failing/shot-00005.h5.part-999999999 && ln -s nothing failing/shot-00001.xdmf.part-999999998 &&
  mkfifo failing/shot-00006.h5.check-999999997
# beside them, files killed runs left: shot 5's stay with its folder (a refused run removes nothing),
# shot 2's go
echo x > failing/shot-00005.xdmf.part-999999996 && echo x > failing/shot-00005.h5.part-999999995 &&
  echo x > failing/shot-00002.h5.part-999999994
expect 3 'shot 3 \[100, 100, 30\]: FAILED .*shot-00003\.h5.* is a directory' -- "$T" run survey.cfg -o failing
grep -q '4 shots failed: 1, 3, 5, 6$' "$tmp/out" || { echo "FAIL: no list of the failed shots"; cat "$tmp/out"; fail=1; }
cp "$tmp/out" failing.out
grep -q '^torrewave: removed 1 temporary files of an interrupted run$' failing.out && [ ! -e failing/shot-00002.h5.part-999999994 ] &&
  [ -f failing/shot-00005.xdmf.part-999999996 ] && [ -f failing/shot-00005.h5.part-999999995 ] ||
  { echo "FAIL: the plan removed a refused shot's temporaries, or not another's: $(ls failing)"; cat failing.out; fail=1; }
# the message of a single run onto that shot's file, but for its advice: a survey's shot file is named
# by its directory (-o or output.directory), never by output.file
single_fix='choose another output name (-o, or output.file in the job)'
survey_fix='choose another output directory (-o, or output.directory in the job)'
for i in 1 5 6; do
  job single.cfg cpu fixed 80 ${shots[$i]}
  "$T" run single.cfg -q -o "failing/shot-0000$i.h5" > single.out 2>&1
  msg=$(sed -n 's/^torrewave: error: //p' single.out) pos=${shots[$i]//.0/}
  grep -qF "shot $i [${pos// /, }]: FAILED on rank 0 cpu: ${msg/"$single_fix"/"$survey_fix"}" failing.out &&
    [[ "$msg" == *"which torrewave never writes"*"$single_fix" ]] ||
    { echo "FAIL: shot $i: not a single run's refusal with a survey's advice ($(cat single.out)):"; cat failing.out; fail=1; }
done
grep -qF "shot-00003.h5' is a directory: refusing to replace it; outputs must be regular files or new names: remove it, or $survey_fix" failing.out &&
  ! grep -q 'output\.file' failing.out ||
  { echo "FAIL: a failed shot's advice is not a survey's:"; cat failing.out; fail=1; }
[ "$(ls -d failing/shot-0000?.h5 | wc -l)" = 4 ] && [ -d failing/shot-00003.h5 ] && [ -d failing/shot-00005.h5.part-999999999 ] &&
  [ -L failing/shot-00001.xdmf.part-999999998 ] && [ -p failing/shot-00006.h5.check-999999997 ] ||
  { echo "FAIL: files: $(ls failing)"; fail=1; }
rmdir failing/shot-00003.h5 failing/shot-00005.h5.part-999999999 &&
  rm failing/shot-00001.xdmf.part-999999998 failing/shot-00006.h5.check-999999997
expect 0 '3 complete \(skipped\), 4 to run' -- "$T" run survey.cfg -o failing
grep -q '^torrewave: removed 2 temporary files of an interrupted run$' "$tmp/out" && ! ls failing/*.part-* >/dev/null 2>&1 ||
  { echo "FAIL: the rerun left shot 5's temporaries: $(ls failing)"; cat "$tmp/out"; fail=1; }
for i in 1 3 5 6; do same "failing/shot-0000$i.h5" "s-cpu-fixed-$i.h5" "the failed shot $i, rerun"; done
if [ $mpi = 1 ]; then
  mkdir -p failing2/shot-00001.h5 failing2/shot-00004.h5.part-999999999
  expect 3 'shot 1 .*FAILED.*is a directory' -- mpirun -np 2 "$T" run survey.cfg -o failing2
  grep -q "shot 4 .*FAILED.*'failing2/shot-00004\.h5\.part-999999999' is named like a temporary" "$tmp/out" &&
    grep -q '2 shots failed: 1, 4$' "$tmp/out" || { echo "FAIL: mpirun: shot 4"; cat "$tmp/out"; fail=1; }
fi
expect 2 'takes a number 1..64' -- "$T" run survey.cfg --workers 0
expect 1 'shot 9 does not exist: the job has 7 shots' -- "$T" run survey.cfg --shots 9
# a list of the wrong form is the command line's error (usage, 2), whatever the job; a shot past the
# job's, the job's (1)
expect 2 '"a" is not a shot index or range' -- "$T" run survey.cfg --shots a
expect 2 'the range 3-1 is reversed' -- "$T" check survey.cfg --shots 3-1
echo "part 3 done (fail=$fail)"

# ---------------------------------------------------------------- 4. the validation's warnings, once
SV_WAVELET='wavelet = { type = "ricker"; frequency = 20.0; amplitude = 0.0; };'
job warn.cfg cpu-diamond fixed 80
dm=(--set 'solver.device_memory="900K"')
"$T" check warn.cfg "${dm[@]}" > warn.check 2>&1
want=$(sed -n 's/^warning: //p' warn.check)
[[ "$want" == *"sources[0].wavelet.amplitude = 0: that source radiates nothing"* &&
   "$want" == *"points per wavelength"* && "$want" == *"cpu-diamond lowers its tower height"* ]] ||
  { echo "FAIL: check does not give the three warnings the runs are compared with:"; cat warn.check; fail=1; }
warned() { # warned DIR COMMAND...: the survey into DIR runs its 7 shots, and says check's warnings, each once
  local dir=$1; shift
  "$@" > "$dir.out" 2>&1 || { echo "FAIL: $dir: status $?"; cat "$dir.out"; fail=1; }
  [ "$(sed -n 's/^torrewave: warning: //p' "$dir.out")" = "$want" ] && [ "$(ls "$dir"/shot-0000?.h5 | wc -l)" = 7 ] ||
    { echo "FAIL: $dir: not check's warnings, each once (or not 7 shot files: $(ls "$dir")):"; cat "$dir.out"; fail=1; }
}
warned warn-workers "$T" run warn.cfg -o warn-workers --workers 2 "${dm[@]}"
warned warn-quiet "$T" run warn.cfg -q -o warn-quiet "${dm[@]}"
if [ $mpi = 1 ]; then warned warn-mpi mpirun -np 2 "$T" run warn.cfg -o warn-mpi "${dm[@]}"; fi

# ---------------------------------------------------------------- 5. a shot's file is an input
job survey.cfg cpu fixed 80
awk 'BEGIN { for (i = 0; i < 21; i++) printf "%.6f\n", (i == 10) - 0.3 * (i == 9 || i == 11) }' > wavelet.txt
python3 -c "import struct, sys; sys.stdout.buffer.write(struct.pack('<f', 2000.0) * (30 * 28 * 20))" > vp.bin
raw=(--set 'model={type="raw";file="vp.bin";}')
wav() { echo "sources=({wavelet={type=\"file\";file=\"$1\";};})"; }
cp vp.bin vp.keep && cp wavelet.txt wavelet.keep
# refused DIR SHOT PATTERN ARGS...: check and run of survey.cfg into DIR refuse shot SHOT's file as an
# input (PATTERN: the file, its output and the input), exit 1, nothing written or removed in DIR, the
# inputs whole
refused() {
  local dir=$1 shot=$2 pat=$3 pos before; shift 3
  pos=${shots[$shot]//.0/} before=$(ls "$dir")
  local want="shot $shot \[${pos// /, }\]: $pat.*: refusing to overwrite an input of the job; choose another output directory"
  expect 1 "$want" -- "$T" check survey.cfg -o "$dir" "$@"
  expect 1 "$want" -- "$T" run survey.cfg -q -o "$dir" "$@"
  if [ $mpi = 1 ]; then
    expect 1 "$want" -- mpirun -np 2 "$T" run survey.cfg -q -o "$dir" "$@"
    [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] || { echo "FAIL: mpirun -np 2: the refusal is not said once"; fail=1; }
  fi
  [ "$(ls "$dir")" = "$before" ] || { echo "FAIL: $dir: a refused survey wrote or removed files: $(ls "$dir")"; fail=1; }
  cmp -s vp.bin vp.keep && cmp -s wavelet.txt wavelet.keep || { echo "FAIL: $dir: an input changed"; fail=1; }
}
mkdir in-model in-link in-side in-temp
ln vp.bin in-link/shot-00004.h5 # (a hard link: another name of the model)
cp vp.bin in-model/shot-00004.h5 && cp vp.bin vp.keep
refused in-model 4 "output 'in-model/shot-00004\.h5' is the velocity model \('in-model/shot-00004\.h5', model\.file\)" \
  --set 'model={type="raw";file="in-model/shot-00004.h5";}'
cp vp.bin vp.keep
refused in-link 4 "output 'in-link/shot-00004\.h5' is the velocity model \('vp\.bin', model\.file\)" "${raw[@]}"
cp wavelet.txt in-side/shot-00002.xdmf && cp wavelet.txt in-temp/shot-00006.h5.part-999999
refused in-side 2 "XDMF sidecar 'in-side/shot-00002\.xdmf' of output 'in-side/shot-00002\.h5' is a wavelet file \('in-side/shot-00002\.xdmf', sources\[0\]\.wavelet\.file\)" \
  --set "$(wav in-side/shot-00002.xdmf)"
refused in-temp 6 "temporary file 'in-temp/shot-00006\.h5\.part-999999' of output 'in-temp/shot-00006\.h5' is a wavelet file" \
  --set "$(wav in-temp/shot-00006.h5.part-999999)" --shots 0-1
cmp -s in-side/shot-00002.xdmf wavelet.txt && cmp -s in-temp/shot-00006.h5.part-999999 wavelet.txt ||
  { echo "FAIL: a wavelet file under a shot's name changed or went: $(ls in-side in-temp)"; fail=1; }
if "$T" info | grep -q '^SEG-Y: built'; then
  ln wavelet.txt in-link/shot-00001.sgy
  refused in-link 1 "SEG-Y file 'in-link/shot-00001\.sgy' of output 'in-link/shot-00001\.h5' is a wavelet file \('wavelet\.txt'" \
    --set "$(wav wavelet.txt)" --set output.segy=true --set time.dt=0.0017
fi
# ... and beside them, the same names that are no input: the survey runs
expect 0 "7 of 7 shots run.*7 done, 0 failed" -- "$T" run survey.cfg -o in-model
echo "part 5 done (fail=$fail)"

# ---------------------------------------------------------------- 6. a shot's sidecar torrewave did not write
# Under a shot's XDMF sidecar or SEG-Y name, a file torrewave did not write (a hand-made .xdmf, a field
# record shot-00002.sgy): `check` and `run` refuse the job before any shot runs, naming the shot and
# the file, and it stays (check said ok; run failed those shots, exit 3, advising to run the same
# command again, which failed them again); a complete shot's, which no run rewrites, is left alone.
theirs() { # theirs DIR SHOT FILE ARGS...: check and run into DIR refused at shot SHOT's FILE, DIR unchanged
  local dir=$1 shot=$2 file=$3 pos before; shift 3
  pos=${shots[$shot]//.0/} before=$(ls "$dir")
  local want="shot $shot \\[${pos// /, }\\]: .* '$dir/$file' of output '$dir/shot-0000$shot\\.h5' is there and torrewave did not write it: refusing to replace it; move it away, or choose another output directory"
  expect 1 "$want" -- "$T" check survey.cfg -o "$dir" "$@"
  expect 1 "$want" -- "$T" run survey.cfg -q -o "$dir" "$@"
  if [ $mpi = 1 ]; then expect 1 "$want" -- mpirun -np 2 "$T" run survey.cfg -q -o "$dir" "$@"; fi
  [ "$(ls "$dir")" = "$before" ] || { echo "FAIL: $dir: a refused survey wrote or removed files: $(ls "$dir")"; fail=1; }
}
mkdir own-side && echo '<Xdmf Version="3.0"/>' > own-side/shot-00003.xdmf && cp own-side/shot-00003.xdmf side.keep
theirs own-side 3 'shot-00003\.xdmf'
cmp -s own-side/shot-00003.xdmf side.keep || { echo "FAIL: a sidecar torrewave did not write changed"; fail=1; }
expect 0 "7 of 7 shots run.*7 done, 0 failed" -- "$T" run survey.cfg -o own-done
cp side.keep own-done/shot-00002.xdmf
expect 0 '^ok$' -- "$T" check survey.cfg -o own-done
expect 0 "all 7 selected shots are complete" -- "$T" run survey.cfg -o own-done
expect 1 "shot 2 .*own-done/shot-00002\\.xdmf' of output .* torrewave did not write it" -- \
  "$T" run survey.cfg -q -o own-done --shots 2 --force
cmp -s own-done/shot-00002.xdmf side.keep || { echo "FAIL: a complete shot's sidecar of another changed"; fail=1; }
if "$T" info | grep -q '^SEG-Y: built'; then
  mkdir own-sgy && cp survey.cfg own-sgy/shot-00001.sgy
  theirs own-sgy 1 'shot-00001\.sgy' --set output.segy=true --set time.dt=0.0017
fi
echo "part 6 done (fail=$fail)"

# Each worker holds its own session's fields: 4 workers of a survey whose one session takes ~0.4 of
# this machine's available memory do not fit (check said the one session's need for any --workers;
# 1, 2, 4 workers peaked at 132, 225, 410 MB where it said 128 MiB). The grid is sized from
# MemAvailable (about 20 B a padded cell for one worker, 12 more a further one), its extent kept.
avail=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
if [ -n "$avail" ]; then
  k=$(awk -v a="$avail" 'BEGIN { printf "%d", (2 * 0.4 * a / 20) ^ (1 / 3) }')
  d=$(awk -v k="$k" 'BEGIN { printf "%.6f", 9990.001 / (k - 1) }')  # the model's 9990 m kept
  big=(--set "grid.n=[$k,$k,$((k / 2 + 1))]" --set "grid.d=[$d,$d,$d]" --set 'solver.kernel="cpu"')
  expect 0 '^ok$' -- "$T" check "$TW_SOURCE_DIR/configs/realistic-survey.cfg" "${big[@]}" --workers 1
  expect 1 '--workers 4: 4 sessions need about .* of host memory .* allowed --workers at most [123],' -- \
    "$T" check "$TW_SOURCE_DIR/configs/realistic-survey.cfg" "${big[@]}" --workers 4
  expect 1 '--workers 4: 4 sessions need about .* allowed --workers at most [123],' -- \
    "$T" run "$TW_SOURCE_DIR/configs/realistic-survey.cfg" "${big[@]}" --workers 4 -q -o big-survey
  [ ! -e big-survey ] || { echo "FAIL: the refused survey left big-survey/"; ls -la big-survey; fail=1; }
  # ... and each worker its own cpu-diamond window ring under solver.device_memory (3 workers of a
  # small survey under a 40 MiB cap peaked at 214, 379, 543 MB: 165 MB a further worker, 125 of
  # fields and 40 of ring; the ring was counted once). Fields F = 12 B a padded cell, a cap of 0.9 F:
  # 4 workers need about 99 B a cell, where the ring counted once made it 67; sized to 82 B a cell
  # of the available memory, so that the one count fits and the right one does not.
  c=$(awk -v a="$avail" 'BEGIN { printf "%d", a / 82 }')
  k=$(awk -v c="$c" 'BEGIN { printf "%d", (2 * c) ^ (1 / 3) }')
  d=$(awk -v k="$k" 'BEGIN { printf "%.6f", 9990.001 / (k - 1) }')
  cap=$(awk -v c="$c" 'BEGIN { printf "%dM", 10.8 * c / 1048576 }')
  ring=(--set "grid.n=[$k,$k,$((k / 2 + 1))]" --set "grid.d=[$d,$d,$d]" --set 'solver.kernel="cpu-diamond"'
        --set "solver.device_memory=\"$cap\"")
  expect 0 'window of [0-9]+ x-planes' -- \
    "$T" check "$TW_SOURCE_DIR/configs/realistic-survey.cfg" "${ring[@]}" --workers 1
  expect 1 '--workers 4: 4 sessions need about .* allowed --workers at most [123],' -- \
    "$T" check "$TW_SOURCE_DIR/configs/realistic-survey.cfg" "${ring[@]}" --workers 4
  # ... and each rank on a host holds its own medium and sessions: two ranks of one worker each, each
  # needing about 0.7 of the available memory (1/sqrt(2): as far below it as the two are above), passed
  # (each rank was checked against the host's memory alone) and together would take 1.4 of it. Sized as
  # above: one rank alone passes, two on this host do not; check under the launch counts them as run
  # does; run refuses them once (rank 0 says it), every rank with exit status 1, before any medium.
  if [ $mpi = 1 ]; then
    k=$(awk -v a="$avail" 'BEGIN { printf "%d", (2 * 0.65 * a / 20) ^ (1 / 3) }')
    d=$(awk -v k="$k" 'BEGIN { printf "%.6f", 9990.001 / (k - 1) }')
    two=("$TW_SOURCE_DIR/configs/realistic-survey.cfg" --set "grid.n=[$k,$k,$((k / 2 + 1))]" --set "grid.d=[$d,$d,$d]"
         --set 'solver.kernel="cpu"')
    ranks_want='1 worker on each of the 2 ranks on host [^:]+: 2 sessions need about .* of host memory \(each rank holds its own medium: the job .*\) and .* is available; allowed at most 1 ranks on this host with 1 worker each'
    expect 0 '^ok$' -- "$T" check "${two[@]}"
    expect 1 "$ranks_want" -- mpirun -np 2 "$T" check "${two[@]}"
    # (run only once check refuses: a build that checks each rank alone would build both media, beyond
    # the host's memory)
    if grep -Eq "$ranks_want" "$tmp/out"; then
      # (each rank's status is kept in st-RANK and the wrapper exits 0: a rank that exits non-zero makes
      # mpirun abort the launch and kill the other ranks, so that the other rank's wrapper, still between
      # its torrewave and its echo, was killed now and then and left no st-1 — about one run in 20 on a
      # loaded 2-core machine; timeout: a rank that hangs is not waited for 600 s)
      rm -f st-0 st-1
      expect 0 "$ranks_want" -- timeout 60 mpirun -np 2 bash -c '"$0" "$@"; echo $? > st-$OMPI_COMM_WORLD_RANK' \
        "$T" run "${two[@]}" -q -o two-ranks
      [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] && [ "$(cat st-0 st-1 2>/dev/null | tr '\n' ' ')" = "1 1 " ] ||
        { echo "FAIL: two ranks' memory: not said once, or the ranks' statuses ($(cat st-0 st-1 2>/dev/null)) not 1 1"; fail=1; }
      [ ! -e two-ranks ] || { echo "FAIL: the refused survey left two-ranks/"; fail=1; }
    fi
  fi
fi
exit $fail
