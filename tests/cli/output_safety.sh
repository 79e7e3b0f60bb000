#!/usr/bin/env bash
# Nothing lost (issue #19): an output never replaces one of the job's inputs, a device, a FIFO, a
# symbolic link or a folder; two runs onto one output: the second fails at once naming the first,
# and the pair .h5/.xdmf comes from one run; temporaries of a killed run are listed by check and
# removed by the next run; what comes under an output's names while the run computes is refused
# before publishing, and the result kept; an interrupted run leaves nothing (lock included); a checkpoint is none
# of the output's files; check's figures;
# options without a value; the output against the free space; a reference needs receivers.
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
cd "$tmp"
T=$TORREWAVE
python3 - <<'PY'
import math, struct
open("vp.bin", "wb").write(struct.pack("<%df" % (24 * 24 * 16), *([2000.0] * (24 * 24 * 16))))
ricker = lambda t: (1 - 2 * (math.pi * 10 * (t - 0.15)) ** 2) * math.exp(-(math.pi * 10 * (t - 0.15)) ** 2)
open("w.txt", "w").write("".join("%.6g\n" % ricker(i * 0.002) for i in range(150)))
PY
# All of one command's output against several patterns: grep_all FILE PATTERN...
grep_all() {
  local f=$1; shift
  for pat in "$@"; do
    if grep -Eq -- "$pat" "$f"; then echo "ok: $(grep -E -- "$pat" "$f" | head -n 1 | cut -c1-160)"
    else echo "FAIL: no '$pat' in:"; cat "$f"; fail=1; fi
  done
}
cat > job.cfg <<'CFG'
grid = { n = [24, 24, 16]; d = [10.0, 10.0, 10.0]; };
time = { steps = 60; };
model = { type = "raw"; file = "vp.bin"; };
boundary = { absorbing = 6; };
sources = ( { position = [120.0, 120.0, 80.0]; wavelet = { type = "file"; file = "w.txt"; dt = 0.002; }; } );
receivers = { points = ( [60.0, 60.0, 40.0] ); };
snapshots = { every = 20; };
output = { file = "out.h5"; };
solver = { kernel = "cpu"; };
CFG
sums() { md5sum job.cfg vp.bin w.txt; }
sums > before.md5

# 1. Inputs are never outputs: the job file, the model, a wavelet file, another name of the model
#    (a hard link), and a sidecar that would land on an input (job file named like the sidecar).
expect 1 "output 'job\.cfg' is the job file" -- "$T" run job.cfg -o job.cfg
expect 1 "output 'vp\.bin' is the velocity model \('vp\.bin', model\.file\)" -- "$T" check job.cfg -o vp.bin
expect 1 "output 'vp\.bin' is the velocity model" -- "$T" run job.cfg -o vp.bin
expect 1 "output 'w\.txt' is a wavelet file \('w\.txt', sources\[0\]\.wavelet\.file\)" -- "$T" run job.cfg -o w.txt
ln vp.bin model-alias.h5
expect 1 "output 'model-alias\.h5' is the velocity model" -- "$T" run job.cfg -o model-alias.h5
cp job.cfg shot.xdmf
expect 1 "XDMF sidecar 'shot\.xdmf' of output 'shot\.h5' is the job file" -- "$T" run shot.xdmf -o shot.h5
md5sum -c --quiet before.md5 || { echo "FAIL: an input changed"; fail=1; }
cmp -s vp.bin model-alias.h5 && cmp -s job.cfg shot.xdmf || { echo "FAIL: an input changed"; fail=1; }

# 1b. A checkpoint is never one of the run's own files: checkpoints go when the run completes, and
#     a checkpoint named like the output (or its journal like it, or named like the sidecar or the
#     lock) would take the finished output with it. Refused by check and run, file:line or --set named.
cat > ck.cfg <<'CFG'
grid = { n = [16, 16, 12]; d = [10.0, 10.0, 10.0]; };
time = { steps = 30; };
model = { type = "constant"; vp = 2000.0; };
sources = ( { position = [80.0, 80.0, 60.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [40.0, 40.0, 40.0] ); };
checkpoint = { every = 10; file = "ck.h5"; };
output = { file = "ck.h5"; };
solver = { kernel = "cpu"; };
CFG
expect 1 "ck\.cfg:6: checkpoint\.file: the checkpoint 'ck\.h5' would be the run's output 'ck\.h5' \(.*\): got \"ck\.h5\"; allowed" \
  -- "$T" check ck.cfg
expect 1 "the checkpoint 'ck\.h5' would be the run's output" -- "$T" run ck.cfg
expect 1 "--set checkpoint\.file=\"res\": checkpoint\.file: the checkpoint journal 'res\.journal' would be the run's output 'res\.journal'" \
  -- "$T" run ck.cfg --set 'checkpoint.file="res"' -o res.journal
expect 1 "the checkpoint 'ck\.xdmf' would be the run's XDMF sidecar 'ck\.xdmf'" -- "$T" run ck.cfg --set 'checkpoint.file="ck.xdmf"'
expect 1 "the checkpoint '\./out2\.h5\.lock' would be the run's lock file 'out2\.h5\.lock'" \
  -- "$T" run ck.cfg -o out2.h5 --set 'checkpoint.file="./out2.h5.lock"'
# the checkpoint's own lock ("<ckpt>.lock", removed when the run ends) named like the output: -o q.lock
# with checkpoint.file "q" was accepted, said "-> q.lock", and removed q.lock with the lock
expect 1 "--set checkpoint\.file=\"q\": checkpoint\.file: the checkpoint's lock file 'q\.lock' would be the run's output 'q\.lock'" \
  -- "$T" run ck.cfg --set 'checkpoint.file="q"' -o q.lock
expect 1 "the checkpoint's lock file 'q\.lock' would be the run's output" -- "$T" check ck.cfg --set 'checkpoint.file="q"' -o q.lock
test ! -e ck.h5 && test ! -e res.journal && test ! -e ck.xdmf && test ! -e q.lock ||
  { echo "FAIL: a refused run wrote a file"; fail=1; }
expect 1 "the checkpoint '$PWD/ck\.h5' would be the run's output 'ck\.h5'" -- "$T" check ck.cfg --set "checkpoint.file=\"$PWD/ck.h5\""
expect 0 "analytic reference" -- "$T" reference ck.cfg -o ref.h5  # writes no checkpoint: nothing to refuse
# ... nor snapshots, so no sidecar: a file of another under its name stays, and is no reason to refuse
# (a job with snapshots: 'XDMF sidecar 'theirs.xdmf' ... torrewave did not write it: refusing to replace it')
echo '<Xdmf Version="3.0"/>' > theirs.xdmf && cp theirs.xdmf theirs.keep
expect 0 "analytic reference" -- "$T" reference ck.cfg -o theirs.h5 --set 'snapshots={every=10;}'
cmp -s theirs.xdmf theirs.keep || { echo "FAIL: reference changed a file under its sidecar's name"; fail=1; }
rm -f theirs.xdmf theirs.keep theirs.h5
expect 1 "the checkpoint 'vp\.bin' would be the velocity model \('vp\.bin', model\.file\), which a checkpoint would overwrite" \
  -- "$T" check job.cfg --set 'checkpoint={every=10;file="vp.bin";}'
md5sum -c --quiet before.md5 || { echo "FAIL: an input changed"; fail=1; }
expect 0 "-> ck\.h5" -- "$T" run ck.cfg --set 'checkpoint.file="ck.ckpt"'
echo notes > notes.txt  # a file that is not a checkpoint: neither run nor run --resume takes it, so check refuses
expect 1 "checkpoint 'notes\.txt' already exists and cannot be read .*run refuses to overwrite it" \
  -- "$T" check ck.cfg --set 'checkpoint.file="notes.txt"'
[ "$(cat notes.txt)" = notes ] || { echo "FAIL: notes.txt changed"; fail=1; }
# A checkpoint in a folder that does not exist: check said only "checkpoint folder of '...' is not
# writable" (its disk probe: no file, line or key), and run passed the validation, read the model and
# failed opening the journal. Refused by the validation, for both, where checkpoint.file is given.
for c in check run; do
  expect 1 "ck\.cfg: --set checkpoint\.file=\"no/such/ck\.ckpt\": checkpoint\.file: the checkpoint 'no/such/ck\.ckpt': its folder 'no/such' does not exist: got \"no/such/ck\.ckpt\"; allowed: a name in an existing, writable folder" \
    -- "$T" $c ck.cfg -o nock.h5 --set 'checkpoint.file="no/such/ck.ckpt"'
done
test ! -e nock.h5 || { echo "FAIL: a refused run wrote its output"; fail=1; }
test -s ck.h5 && test ! -e ck.ckpt && test ! -e ck.ckpt.journal || { echo "FAIL: the output is missing or the checkpoint is left"; fail=1; }

# 2. Not regular files: a device (as root this would have replaced /dev/null), a FIFO, a folder, a
#    symbolic link (refused: the rename would replace the link itself), a dangling one; empty names.
expect 1 "output '/dev/null' is a character device: refusing to replace it" -- "$T" run job.cfg -o /dev/null
test -c /dev/null || { echo "FAIL: /dev/null is no longer a character device"; fail=1; }
mkfifo fifo.h5
expect 1 "output 'fifo\.h5' is a FIFO" -- "$T" check job.cfg -o fifo.h5
mkdir folder
expect 1 "output 'folder' is a directory" -- "$T" run job.cfg -o folder
expect 1 "output 'folder/' names a folder" -- "$T" run job.cfg -o folder/
echo keep > target.h5
ln -s target.h5 link.h5
ln -s nowhere.h5 dangling.h5
expect 1 "output 'link\.h5' is a symbolic link \(to 'target\.h5'\): refusing to replace it" -- "$T" run job.cfg -o link.h5
expect 1 "output 'dangling\.h5' is a symbolic link" -- "$T" check job.cfg -o dangling.h5
test -L link.h5 && [ "$(cat target.h5)" = keep ] || { echo "FAIL: the link or its target changed"; fail=1; }
expect 1 "output: the file name is empty" -- "$T" run job.cfg -o ""
expect 1 "its folder 'no/such' does not exist" -- "$T" check job.cfg -o no/such/out.h5
expect 2 "-o needs a value" -- "$T" run job.cfg -o
expect 2 "--set needs a value" -- "$T" check job.cfg --set
if ls ./*.part-* ./*.lock >/dev/null 2>&1; then echo "FAIL: refused runs left files: $(ls)"; fail=1; fi

# 2b. What stands in the lock's or a killed run's temporary's place must be torrewave's own: a lock
#     file that is a symbolic link (dangling or not), a folder, a FIFO or a file holding no pid (a job
#     file named so: a run truncated it and removed it), and a "temporary" of a gone process that is a
#     folder or a link, are refused by check and by run alike, naming the path, and left as they are
#     (check passed them, then run failed; a FIFO lock hung check). A stale lock of a killed run (its
#     pid) is still taken over and removed.
mkdir odd && echo keep > odd/target && ln -s target odd/sl.h5.lock && ln -s nowhere odd/dl.h5.lock &&
  mkdir odd/fo.h5.lock && mkfifo odd/fi.h5.lock && cp job.cfg jf.h5.lock && mkdir odd/dp.h5.part-999999999 &&
  ln -s target odd/lp.h5.part-999999998 && echo 999999997 > odd/st.h5.lock
for c in check run; do
  expect 1 "output 'odd/sl\.h5': its lock file 'odd/sl\.h5\.lock' is a symbolic link \(to 'target'\), not a lock file torrewave wrote .*refusing to use or remove it; remove it yourself" \
    -- timeout 20 "$T" $c job.cfg -o odd/sl.h5
  expect 1 "its lock file 'odd/dl\.h5\.lock' is a symbolic link \(to 'nowhere'\)" -- timeout 20 "$T" $c job.cfg -o odd/dl.h5
  expect 1 "its lock file 'odd/fo\.h5\.lock' is a directory, not a lock file" -- timeout 20 "$T" $c job.cfg -o odd/fo.h5
  expect 1 "its lock file 'odd/fi\.h5\.lock' is a FIFO \(named pipe\), not a lock file" -- timeout 20 "$T" $c job.cfg -o odd/fi.h5
  expect 1 "its lock file 'jf\.h5\.lock' is a regular file that holds something other than a process id" \
    -- timeout 20 "$T" $c jf.h5.lock -o jf.h5
  expect 1 "output 'odd/dp\.h5': 'odd/dp\.h5\.part-999999999' is named like a temporary of an earlier run \(process 999999999, gone\), but is a directory, which torrewave never writes: refusing to remove it" \
    -- timeout 20 "$T" $c job.cfg -o odd/dp.h5
  expect 1 "'odd/lp\.h5\.part-999999998' is named like a temporary .* but is a symbolic link \(to 'target'\)" \
    -- timeout 20 "$T" $c job.cfg -o odd/lp.h5
done
test -L odd/sl.h5.lock && test -L odd/dl.h5.lock && test -d odd/fo.h5.lock && test -p odd/fi.h5.lock &&
  test -d odd/dp.h5.part-999999999 && test -L odd/lp.h5.part-999999998 && cmp -s job.cfg jf.h5.lock &&
  [ "$(cat odd/target)" = keep ] || { echo "FAIL: a refused lock or temporary changed: $(ls -l odd)"; fail=1; }
if ls odd/*.h5 jf.h5 odd/*.part-* 2>/dev/null | grep -v -e dp.h5.part -e lp.h5.part; then echo "FAIL: a refused run wrote"; fail=1; fi
expect 0 "^ok$" -- "$T" check job.cfg -o odd/st.h5
expect 0 "Gcell/s" -- "$T" run job.cfg -o odd/st.h5 -q
test -s odd/st.h5 && test ! -e odd/st.h5.lock || { echo "FAIL: a killed run's lock was not taken over"; fail=1; }
rm -rf odd jf.h5.lock
# ... and one of the job's inputs under the lock's name, that holds a number as a lock does (a wavelet
# of one sample): a run truncated it, wrote its pid there and removed it
echo 5 > one.h5.lock
for c in check run; do
  expect 1 "lock file 'one\.h5\.lock' of output 'one\.h5' is a wavelet file \('one\.h5\.lock', sources\[0\]\.wavelet\.file\): refusing to overwrite an input of the job" \
    -- "$T" $c job.cfg -o one.h5 --set 'sources=({position=[120.0,120.0,80.0];wavelet={type="file";file="one.h5.lock";};})'
done
[ "$(cat one.h5.lock 2>/dev/null)" = 5 ] && test ! -e one.h5 || { echo "FAIL: the wavelet file one.h5.lock changed"; fail=1; }
rm -f one.h5.lock
# 2c. A refused run removes nothing: killed runs' temporaries that are files, beside one that is not
#     (a folder), all stay (they were removed one by one, unreported, before the folder stopped the
#     run); with the folder gone, the next run removes every one and names each.
mkdir mix mix/o.h5.part-999999990 && echo x > mix/o.sgy.part-999999980 && echo x > mix/o.h5.check-999999981 &&
  for p in 999999991 999999992 999999993; do echo x > mix/o.h5.part-$p && echo x > mix/o.xdmf.part-$p; done
expect 1 "output 'mix/o\.h5': 'mix/o\.h5\.part-999999990' is named like a temporary .* but is a directory" -- "$T" run job.cfg -o mix/o.h5
[ "$(ls mix | wc -l)" = 9 ] && ! grep -q "removed '" "$tmp/out" || { echo "FAIL: a refused run removed temporaries: $(ls mix)"; fail=1; }
rmdir mix/o.h5.part-999999990
expect 0 "removed 'mix/o\.h5\.check-999999981', left by an earlier run of this output whose process is gone" -- "$T" run job.cfg -o mix/o.h5 -q
[ "$(grep -c "^torrewave: removed 'mix/o\.[a-z0-9]*\.[a-z]*-9999999[89][0-9]', left by an earlier run" "$tmp/out")" = 8 ] &&
  [ "$(ls mix)" = "$(printf 'o.h5\no.xdmf')" ] || { echo "FAIL: not every temporary removed and named: $(ls mix)"; cat "$tmp/out"; fail=1; }
rm -rf mix
# 2d. ... nor does a run refused by a check after the temporaries' (here a source on a free surface):
#     they go only once the whole validation has passed (they went first, unreported).
mkdir late && echo x > late/o.h5.part-999999970
expect 1 "sources\[0\]\.position: on the free surface" -- "$T" run job.cfg -o late/o.h5 \
  --set boundary.free_surface=true --set 'sources=({position=[120.0,120.0,0.0]; wavelet={type="ricker";frequency=10.0;};})'
[ "$(ls late)" = o.h5.part-999999970 ] && ! grep -q "removed '" "$tmp/out" ||
  { echo "FAIL: a run refused late removed temporaries: $(ls late)"; fail=1; }
rm -rf late
# 2e. What comes under the output's names while the run computes (the start's check passed) is
#     refused as at the start, just before publishing, and stays: here a folder, a second name of the
#     job file (an input) and a link as the sidecar, each made while the run is held after its first
#     checkpoint (TW_CHECKPOINT_PAUSE); the complete result is kept as o.kept-PID.h5 with its sidecar
#     o.kept-PID.xdmf (which names that .h5) and, with output.segy, o.kept-PID.sgy, all named by the
#     error; where a name of those is taken (a pid that recurs: the run is exec'd by a shell that made
#     one first), as o.kept-PID-2.*, and what was there stays. The error says what to do with the
#     complete result: remove or rename what is in the way, rename the kept files (and the .h5's name
#     in the sidecar), which makes them the output's — never --resume, which would compute its end
#     again: its checkpoint goes, as when a run completes (it stayed, and the error said that
#     --resume continues from it). Then, the obstacle gone, a run onto during/o.h5 succeeds and what
#     was kept stays, readable (before: the folder made the rename fail and the result was deleted;
#     the job file's name and the link were replaced; then the result was kept as o.h5.part-PID,
#     without its sidecar, and the next run onto o.h5 removed it as a killed run's temporary).
# during PATTERN STAYS UNDO COMMAND...: run job.cfg onto during/$O.h5 (O: o unless set; with $earlier,
# an earlier kept file $O.kept-PID.$earlier there first), COMMAND while it runs: it must fail with
# PATTERN, the error naming $way (what is in the way: $O.h5 unless set), keep the result and leave
# what COMMAND made (the test STAYS); then, after UNDO, a run onto during/$O.h5 must succeed and
# leave every kept file as it was
during() {
  local pat=$1 stays=$2 undo=$3 pid o=${O:-o}; shift 3
  local w=${way:-$o.h5}
  rm -rf "$D" && mkdir -p "$D" && echo keep > "$D/target"
  ( [ -z "$earlier" ] || echo earlier > "$D/$o.kept-$BASHPID.$earlier"
    export TW_CHECKPOINT_PAUSE=1
    exec "$T" run job.cfg -q -o "$D/$o.h5" --set 'checkpoint={every=20;}' "${segy[@]}" ) > during.log 2>&1 &
  pid=$!
  for _ in $(seq 200); do [ -e "$D/$o.h5".ckpt ] && break; sleep 0.05; done
  "$@"
  wait $pid; local st=$?
  local k="$o.kept-$pid${earlier:+-2}" sgy=""
  local re=${k//./\\.} dre=${D//./\\.} ore=${o//./\\.} # (k, D and o as regular expressions)
  [ ${#segy[@]} = 0 ] || sgy=", its SEG-Y file as '$re\.sgy'"
  pat="^torrewave: error: output '$dre/$ore\.h5': the run is complete, but nothing was published: the result is kept beside it as '$re\.h5', its XDMF sidecar as '$re\.xdmf'$sgy \(no later run removes what is kept\); to put it in place, remove or rename '${w//./\\.}', then take '\.kept-$pid${earlier:+-2}' out of the kept files' names \(and out of the \.h5's name in the sidecar's text\); its names no longer pass the start's check \(something came under them while it ran\): $pat"
  if [ $st = 1 ] && grep -Eq -- "$pat" during.log && ! grep -q -e '--resume' -e checkpoint during.log &&
     [ ! -e "$D/$o.h5.ckpt" ] && [ ! -e "$D/$o.h5.ckpt.journal" ] && h5ls "$D/$k.h5/receivers/traces" > /dev/null &&
     grep -q "in $re\.h5;" "$D/$k.xdmf" && ! grep -q ">$ore\.h5:" "$D/$k.xdmf" &&
     [ "$(grep -c ">$re\.h5:/snapshots/views/step_0000[246]0<" "$D/$k.xdmf")" = 3 ] &&
     { [ ${#segy[@]} = 0 ] || [ -s "$D/$k.sgy" ]; } && [ "$(cat "$D/target")" = keep ] &&
     { [ -z "$earlier" ] || [ "$(cat "$D/$o.kept-$pid.$earlier")" = earlier ]; } &&
     ! ls "$D"/*.part-* > /dev/null 2>&1; then echo "ok: $(cut -c1-200 during.log)"
  else echo "FAIL: status $st, the result not kept or a file changed: $(ls -l "$D")"; cat during.log; fail=1; fi
  eval "$stays" || { echo "FAIL: what came under the names did not stay ($stays): $(ls -l "$D")"; fail=1; }
  # with it gone, the next run onto $D/$o.h5: published, and the kept files stay
  local kept; kept=$(cd "$D" && md5sum "$o".kept-*)
  eval "$undo"
  "$T" run job.cfg -q -o "$D/$o.h5" "${segy[@]}" > again.log 2>&1 && [ -f "$D/$o.h5" ] &&
    [ "$(cd "$D" && md5sum "$o".kept-*)" = "$kept" ] && [ -f "$D/$k.h5" ] &&
    h5ls "$D/$k.h5/receivers/traces" > /dev/null && h5ls "$D/$k.h5/snapshots" > /dev/null ||
    { echo "FAIL: the next run onto '$D/$o.h5' failed, or a kept file went or changed: $(ls "$D")"; cat again.log
      fail=1; }
}
D=during segy=() earlier=""
during "output 'during/o\.h5' is a directory: refusing to replace it; outputs must be regular files or new names$" \
  '[ -d during/o.h5 ]' 'rmdir during/o.h5' mkdir during/o.h5
# ... and what the error says to do makes the kept result the output: the run's o.h5 in the way
# removed, '.kept-PID' taken out of the kept files' names and of the .h5's name in the sidecar
k=$(cd during && ls o.kept-*.h5) && k=${k%.h5} && rm during/o.h5 &&
  for f in during/"$k".*; do mv "$f" "during/o${f#during/$k}"; done &&
  sed -i "s/${k//./\\.}\.h5/o.h5/g" during/o.xdmf && h5ls during/o.h5/receivers/traces > /dev/null &&
  [ "$(grep -c '>o\.h5:/snapshots/views/step_0000[246]0<' during/o.xdmf)" = 3 ] && ! grep -q kept during/o.xdmf ||
  { echo "FAIL: the kept result, renamed as the error says, is not the output: $(ls during)"; fail=1; }
during "output 'during/o\.h5' is the job file \('job\.cfg'\): refusing to overwrite an input of the job" \
  '[ during/o.h5 -ef job.cfg ]' 'rm during/o.h5' ln job.cfg during/o.h5
segy=(--set output.segy=true --set time.dt=0.002) earlier=xdmf # (SEG-Y: a sample interval of whole microseconds)
way=o.xdmf during "XDMF sidecar 'during/o\.xdmf' of output 'during/o\.h5' is a symbolic link \(to 'target'\)" \
  '[ -L during/o.xdmf ] && [ ! -e during/o.h5 ] && [ ! -e during/o.sgy ]' 'rm during/o.xdmf' ln -s target during/o.xdmf
# ... in a folder of a long name, as on a cluster's file systems: the message names where the result
# is kept in full, the reason, and the kept checkpoint after them (review, session 19: with 145
# characters of folder the reason, which came first, pushed the kept name out of the message's 1024
# bytes; then, the folder named five times, 274 characters lost the checkpoint, 455 the reason)
D=during/project-campaign-2026/$(printf 'x%.0s' $(seq 200))/$(printf 'y%.0s' $(seq 200))
segy=(--set output.segy=true --set time.dt=0.002) earlier=""
during "output '.*/o\.h5' is a directory: refusing to replace it" '[ -d "$D/o.h5" ]' 'rmdir "$D/o.h5"' mkdir "$D/o.h5"
# ... an output's name at the limit (235 characters: the run derives names up to 20 longer): the
# kept SEG-Y file too (it was written under a temporary of its own name, 32 characters longer than
# the output's, over the file system's 255: the result was kept without it)
D=during O=$(printf 'b%.0s' $(seq 232)) segy=(--set output.segy=true --set time.dt=0.002) earlier=""
during "output '.*\.h5' is a directory" '[ -d "$D/$O.h5" ]' 'rmdir "$D/$O.h5"' mkdir "$D/$O.h5"
O=o
md5sum -c --quiet before.md5 || { echo "FAIL: an input changed"; fail=1; }
rm -rf during

# 3. check's figures: dt against the stability limit and c dt / d, the run-time estimate, the
#    output's size, the replacement of an existing output, warnings of settings that do nothing.
"$T" check job.cfg --set snapshots.every=100 --set receivers.interval=90 --set 'solver.device_memory="1G"' > check.txt
grep_all check.txt '^ok$' 'dt / stable limit = 0\.900 \(<= 1 is stable' 'c dt / d = 0\.[0-9]+ \(vmax, smallest d\)' \
  '^run time +about .* of computing \(calibrated here: cpu ran' \
  '^output +out\.h5: about .* \(traces .*, snapshots .*\); .* free there' \
  '^dispersion +[0-9.]+ points per wavelength at 2[0-9]\.[0-9] Hz \(where a wavelet file.s spectrum stays below 3\.3% of its peak' \
  'warning: snapshots\.every = 100 is beyond the last step \(60\): no snapshot will be written' \
  'warning: receivers\.interval = 90 is beyond the last step \(60\)' \
  'warning: solver\.device_memory is ignored by kernel cpu'
expect 0 'torrewave: warning: snapshots\.every = 100 is beyond' -- "$T" run job.cfg -o warn.h5 --set snapshots.every=100
expect 0 'Gcell/s' -- "$T" run job.cfg -q
expect 0 'out\.h5 exists: a run will replace it' -- "$T" check job.cfg
# check's host memory covers the run's peak (its resident set), snapshots included: a box of the
# whole model, the kernels sweeping y (a second copy in their axes), the writer's slab (session 25:
# 998 MiB peak against 733 MiB said).
cat > mem.cfg <<'CFG'
grid = { n = [300, 360, 300]; d = [10.0, 10.0, 10.0]; };
time = { steps = 2; };
model = { type = "constant"; vp = 2000.0; };
boundary = { absorbing = 10; free_surface = true; };
sources = ( { position = [1500.0, 1500.0, 100.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [600.0, 600.0, 40.0] ); };
snapshots = { steps = [2]; };
output = { file = "mem.h5"; };
solver = { kernel = "cpu"; };
CFG
python3 - "$T" <<'PY' || fail=1
import re, resource, subprocess, sys
said = subprocess.run([sys.argv[1], "check", "mem.cfg"], capture_output=True, text=True).stdout
m = re.search(r"^memory +host ([0-9.]+) (KiB|MiB|GiB)", said, re.M)
if not m:
    print("FAIL: no host memory in check's report:\n" + said); sys.exit(1)
need = float(m.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
run = subprocess.run([sys.argv[1], "run", "mem.cfg", "-q"], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024.0
ok = run.returncode == 0 and peak <= need
print("%s: check says %.0f MiB of host memory, the run peaked at %.0f MiB (status %d)"
      % ("ok" if ok else "FAIL", need / 2**20, peak / 2**20, run.returncode))
sys.exit(0 if ok else 1)
PY
rm -f mem.h5 mem.xdmf

# 4. Two runs onto one output: the second fails at once, naming the first's process; check warns;
#    the first completes and the pair is its own (the sidecar lists the .h5's snapshots).
sed -e 's/steps = 60/steps = 1500/' -e 's/every = 20/every = 500/' job.cfg > long.cfg
"$T" run long.cfg -o pair.h5 -q 2> first.log &
first=$!
for _ in $(seq 200); do [ -e pair.h5.lock ] && break; sleep 0.05; done
start=$(date +%s)
expect 1 "output 'pair\.h5' is being written by another torrewave run \(process $first, lock file 'pair\.h5\.lock'\)" -- "$T" run job.cfg -o pair.h5
expect 0 "warning: output 'pair\.h5' is being written by another torrewave run now \(process $first\)" -- "$T" check job.cfg -o pair.h5
[ $(( $(date +%s) - start )) -le 5 ] || { echo "FAIL: the second run did not fail at once"; fail=1; }
wait $first || { echo "FAIL: the first run failed: $(cat first.log)"; fail=1; }
grids=$(grep -c '<Grid Name="step_' pair.xdmf)
[ "$grids" = 3 ] && h5ls pair.h5/snapshots/p | grep -q '{3, ' ||
  { echo "FAIL: the sidecar ($grids grids) does not match pair.h5"; fail=1; }
test ! -e pair.h5.lock || { echo "FAIL: the lock file was left"; fail=1; }

# 5. A run killed with SIGKILL leaves its temporary: check lists it, the next run removes it and
#    says so; an interrupted run (SIGINT) leaves nothing, its lock file included.
# (a run long enough to be killed mid-way at any kernel speed)
sed -e 's/steps = 60/steps = 100000/' -e 's/every = 20/every = 50000/' job.cfg > longer.cfg
"$T" run longer.cfg -o killed.h5 -q &
victim=$!
for _ in $(seq 200); do ls killed.h5.part-* >/dev/null 2>&1 && break; sleep 0.05; done
kill -KILL $victim; wait $victim 2>/dev/null
test -e "killed.h5.part-$victim" || { echo "FAIL: no temporary after kill -9"; fail=1; }
expect 0 "^stale +killed\.h5\.part-$victim: left by an earlier run that was killed" -- "$T" check job.cfg -o killed.h5
expect 0 "removed 'killed\.h5\.part-$victim', left by an earlier run of this output whose process is gone" -- "$T" run job.cfg -o killed.h5 -q
if ls killed.h5.part-* killed.h5.lock >/dev/null 2>&1; then echo "FAIL: left: $(ls killed*)"; fail=1; fi
"$T" run long.cfg -o intr.h5 -q &
victim=$!
for _ in $(seq 200); do ls intr.h5.part-* >/dev/null 2>&1 && break; sleep 0.05; done
kill -INT $victim; wait $victim; st=$?
[ "$st" = 130 ] || { echo "FAIL: SIGINT exit status $st"; fail=1; }
if ls intr.* >/dev/null 2>&1; then echo "FAIL: an interrupted run left $(ls intr.*)"; fail=1; fi

# 6. Progress: no ETA until the rate is measured past the first block (it pays for warm-up).
"$T" run job.cfg -o eta.h5 2> eta.log
grep -m 1 '^step ' eta.log | grep -q 'ETA --$' || { echo "FAIL: first progress line: $(grep -m 1 '^step' eta.log)"; fail=1; }

# 7. The output must fit the free space (check and run), and a reference needs receivers.
avail=$(df -B1 --output=avail . | tail -n 1)
if [ "$avail" -lt 3000000000000 ]; then
  expect 1 "output 'huge\.h5' needs about .* but only .* is free" -- "$T" check job.cfg -o huge.h5 \
    --set 'grid.n=[100,100,100]' --set 'model={type="constant"; vp=2000.0;}' --set time.steps=1000000 --set snapshots.every=1
  expect 1 "output 'huge\.h5' needs about" -- "$T" run job.cfg -o huge.h5 \
    --set 'grid.n=[100,100,100]' --set 'model={type="constant"; vp=2000.0;}' --set time.steps=1000000 --set snapshots.every=1
  # snapshots of about 70 % of the free space: a warning
  n=$(( avail * 7 / 10 / (100 * 100 * 100 * 4) + 1 ))
  expect 0 "warning: the snapshots alone take .*, (6|7)[0-9]% of the .* free" -- "$T" check job.cfg \
    --set 'grid.n=[100,100,100]' --set 'model={type="constant"; vp=2000.0;}' --set time.steps=$n --set snapshots.every=1
else echo "skip: more than 3 TB free here"; fi
expect 1 "the job has no receivers, so there is no reference to compute" -- "$T" reference job.cfg --set 'receivers={}'
# check's output estimate is an upper bound of the file (HDF5 writes whole chunks: 300000 receivers
# over 8 steps fill a 9th sample's chunk column, the estimate was 20 % short of such a file).
cat > many.cfg <<'CFG'
grid = { n = [16, 16, 12]; d = [10.0, 10.0, 10.0]; };
time = { steps = 8; };
model = { type = "constant"; vp = 2000.0; };
sources = ( { position = [80.0, 80.0, 60.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { lines = ( { from = [0.0, 0.0, 0.0]; to = [150.0, 150.0, 110.0]; count = 300000; } ); };
output = { file = "many.h5"; };
solver = { kernel = "cpu"; };
CFG
est=$("$T" check many.cfg 2>/dev/null | sed -n 's/^output .*: about \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p')
"$T" run many.cfg -q 2>/dev/null
python3 - "$est" "$(stat -c %s many.h5)" <<'PY' || fail=1
import sys
v, u = sys.argv[1].split()
est = float(v) * {"K": 2**10, "M": 2**20, "G": 2**30}[u]
size = int(sys.argv[2])
print(("ok" if size <= est else "FAIL") + f": many.h5 is {size} B, check estimated {est:.0f} B")
sys.exit(0 if size <= est else 1)
PY
# A name too long for what the run derives from it (its sidecar's temporary adds up to 20
# characters): refused before the run (before, it computed, then failed publishing the sidecar).
long=$(printf 'a%.0s' $(seq 241)).h5
expect 1 "its name is 244 characters, and the run writes files named up to 20 more" -- "$T" check job.cfg -o "$long"
ok=$(printf 'b%.0s' $(seq 230)).h5
expect 0 "Gcell/s" -- "$T" run job.cfg -q -o "$ok"
# A survey's output.directory through a regular file: check refuses what run refuses, file:line named.
cat > sv.cfg <<'CFG'
grid = { n = [16, 16, 12]; d = [10.0, 10.0, 10.0]; };
time = { steps = 20; };
model = { type = "constant"; vp = 2000.0; };
shots = { positions = ( [80.0, 80.0, 60.0] ); receivers = "fixed"; };
sources = ( { wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [40.0, 40.0, 40.0] ); };
output = { directory = "plain.txt/sub"; };
solver = { kernel = "cpu"; };
CFG
echo keep > plain.txt
expect 1 "sv\.cfg:7: output\.directory 'plain\.txt/sub': 'plain\.txt' exists and is not a directory" -- "$T" check sv.cfg
expect 1 "sv\.cfg:7: output\.directory 'plain\.txt/sub': 'plain\.txt' exists and is not a directory" -- "$T" run sv.cfg
expect 1 "output\.directory 'plain\.txt': 'plain\.txt' exists and is not a directory" -- "$T" check sv.cfg -o plain.txt
[ "$(cat plain.txt)" = keep ] || { echo "FAIL: plain.txt changed"; fail=1; }
# A survey whose job the validation refuses (a shot on the free surface) fails as a bad job (1, the
# reason named), not as shots not run (3), and leaves no output directory it made.
expect 1 "sv\.cfg: --set shots\.positions=.*: shots\.positions\[1\]: on the free surface" -- "$T" run sv.cfg --set boundary.free_surface=true \
  --set 'shots.positions=([80.0,80.0,60.0],[80.0,80.0,2.0])' --set 'output.directory="fsdir"'
test ! -e fsdir || { echo "FAIL: the refused survey left its output directory"; fail=1; }
expect 1 "sv\.cfg: --set shots\.positions=.*: shots\.positions\[1\]: on the free surface" -- "$T" run sv.cfg --set boundary.free_surface=true \
  --set 'shots.positions=([80.0,80.0,60.0],[80.0,80.0,2.0])' -o par/sub/dir
test ! -e par || { echo "FAIL: the refused survey left the folders it made on the way"; fail=1; }
# ... and removes nothing from a directory that was there: a killed shot's temporary and lock file
# stay, unreported (they went, reported, before the medium's validation refused the job); once the
# job passes, the next run removes them.
mkdir kept && echo x > kept/shot-00000.h5.part-999999960 && echo 999999961 > kept/shot-00001.h5.lock
expect 1 "shots\.positions\[1\]: on the free surface" -- "$T" run sv.cfg --set boundary.free_surface=true \
  --set 'shots.positions=([80.0,80.0,60.0],[80.0,80.0,2.0])' -o kept
[ "$(ls kept | tr '\n' ' ')" = "shot-00000.h5.part-999999960 shot-00001.h5.lock " ] && ! grep -q removed "$tmp/out" ||
  { echo "FAIL: a refused survey removed a killed run's files: $(ls kept)"; cat "$tmp/out"; fail=1; }
expect 0 "^torrewave: removed 1 temporary files of an interrupted run$" -- "$T" run sv.cfg -o kept \
  --set 'shots.positions=([80.0,80.0,60.0],[80.0,80.0,20.0])'
[ "$(ls kept | tr '\n' ' ')" = "shot-00000.h5 shot-00001.h5 " ] || { echo "FAIL: left in kept: $(ls kept)"; fail=1; }
# A survey's shot whose name a folder took while it ran (waited for: its temporary there) is kept as
# a single run's result is, and its error says the same (it said "move it where you want it", and
# the start's advice: another output directory); done as it says, the shot is complete: the next
# run skips it.
mkdir svkept
"$T" run sv.cfg -q -o svkept --set time.steps=6000 --set snapshots.every=2000 > svkept.log 2>&1 &
pid=$!
for _ in $(seq 400); do ls svkept/shot-00000.h5.part-* > /dev/null 2>&1 && break; sleep 0.02; done
mkdir svkept/shot-00000.h5
wait $pid; st=$?
k="shot-00000.kept-$pid"
kre=${k//./\\.}
want="^shot 0 .*: FAILED on rank 0 cpu: output 'svkept/shot-00000\.h5': the run is complete, but nothing was"
want+=" published: the result is kept beside it as '$kre\.h5', its XDMF sidecar as '$kre\.xdmf' \(no later run"
want+=" removes what is kept\); to put it in place, remove or rename 'shot-00000\.h5', then take '\.kept-$pid' out"
want+=" of the kept files' names \(and out of the \.h5's name in the sidecar's text\); its names no longer pass the"
want+=" start's check \(something came under them while it ran\): output 'svkept/shot-00000\.h5' is a directory:"
want+=" refusing to replace it; outputs must be regular files or new names$"
if [ $st = 3 ] && grep -Eq "$want" svkept.log
then echo "ok: a survey's shot kept, the error saying what to do"
else echo "FAIL: status $st (want 3), or the kept shot's error is not the single run's:"; cat svkept.log; fail=1; fi
rmdir svkept/shot-00000.h5 && for f in svkept/"$k".*; do mv "$f" "svkept/shot-00000${f#svkept/$k}"; done &&
  sed -i "s/$kre\.h5/shot-00000.h5/g" svkept/shot-00000.xdmf
expect 0 "all 1 selected shots are complete in svkept" -- "$T" run sv.cfg -o svkept --set time.steps=6000 \
  --set snapshots.every=2000
expect 1 "sv\.cfg: --set solver\.dts=1000: solver\.dts: the diamond tile .*: got 1000" -- "$T" run sv.cfg --set solver.kernel=cpu-diamond --set solver.dts=1000 \
  --set 'output.directory="dtsdir"'
test ! -e dtsdir || { echo "FAIL: the refused survey left its output directory"; fail=1; }
long=$(printf 'c%.0s' $(seq 250))
expect 1 "checkpoint\.file: the checkpoint's name is 250 characters and its journal's 8 more" \
  -- "$T" check ck.cfg --set "checkpoint.file=\"$long\""
# A write refused for the file size limit (RLIMIT_FSIZE: a full disk as ulimit -f makes one) fails
# the run with status 1 and leaves the earlier output whole: HDF5 shut down at exit with the failed
# file's id dangling, and the run ended in a segmentation fault (status 139). torrewave ignores
# SIGXFSZ itself (main.c; session 26: before, the signal's default killed the run and left the
# temporary), so the limit is set here with the signal's default disposition.
expect 0 "Gcell/s" -- "$T" run job.cfg -o fsz.h5 -q
md5sum fsz.h5 > fsz.md5
for lim in 8 24; do
  ( trap - XFSZ; ulimit -f $lim; exec "$T" run job.cfg -o fsz.h5 -q --set output.model=true ) > fsz.out 2>&1
  st=$?
  if [ $st = 1 ] && grep -q "File too large" fsz.out && md5sum -c --quiet fsz.md5 && ! ls fsz.h5.part-* 2>/dev/null
  then echo "ok: file size limit $lim KiB: status 1, the earlier output whole, no temporary"
  else echo "FAIL: file size limit $lim KiB: status $st (want 1):"; cat fsz.out; ls fsz*; fail=1; fi
done
# Snapshots are stored while the kernel computes the next block (run.c, snap_store), unless
# TW_SNAPSHOT_ASYNC=0 stores them in between. Both give the same bits; a store that fails (here the
# second snapshot of 1.3 MB, past the size limit: larger than HDF5's chunk cache, so written at
# once) fails the run with status 1 and the write's reason, the earlier output whole, no temporary
# (session 25: the thread's failure was found at the next block, and HDF5 printed its own
# diagnostics from that thread).
sed -e 's/\[24, 24, 16\]/[72, 72, 64]/' -e 's/type = "raw"; file = "vp.bin";/type = "constant"; vp = 2000.0;/' \
  -e 's/steps = 60/steps = 30/' -e 's/every = 20/every = 10/' job.cfg > snap.cfg
expect 0 "Gcell/s" -- env TW_SNAPSHOT_ASYNC=0 "$T" run snap.cfg -o snap0.h5 -q
expect 0 "Gcell/s" -- "$T" run snap.cfg -o snap1.h5 -q
expect 0 "" -- "$T" compare snap0.h5 snap1.h5 --strict --rtol 0
# (each store held back 0.3 s: the traces of the blocks computed meanwhile are held, then written)
expect 0 "Gcell/s" -- env TW_SNAPSHOT_STORE_PAUSE=0.3 "$T" run snap.cfg -o snap2.h5 -q --set 'snapshots.steps=[5,10,30]'
expect 0 "Gcell/s" -- env TW_SNAPSHOT_ASYNC=0 "$T" run snap.cfg -o snap3.h5 -q --set 'snapshots.steps=[5,10,30]'
expect 0 "" -- "$T" compare snap2.h5 snap3.h5 --strict --rtol 0
md5sum snap1.h5 > snap1.md5
for a in 1 0; do
  ( trap '' XFSZ; ulimit -f 2000; TW_SNAPSHOT_ASYNC=$a exec "$T" run snap.cfg -o snap1.h5 -q ) > fsz.out 2>&1
  st=$?
  if [ $st = 1 ] && [ "$(wc -l < fsz.out)" = 1 ] &&
    grep -q "dataset /snapshots/p: writing z-slab .* failed: File too large" fsz.out && md5sum -c --quiet snap1.md5 &&
    ! ls snap1.h5.part-* 2>/dev/null
  then echo "ok: a snapshot's store past the size limit (TW_SNAPSHOT_ASYNC=$a): status 1, one line, output whole"
  else echo "FAIL: a snapshot's store past the size limit (TW_SNAPSHOT_ASYNC=$a): status $st (want 1):"; cat fsz.out
    ls snap1*; fail=1; fi
done
exit $fail
