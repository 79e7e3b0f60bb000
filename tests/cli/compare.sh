#!/usr/bin/env bash
# `torrewave reference` and `torrewave compare` end to end: a run against its analytic reference
# and against itself and another kernel, --rtol, --json, and every exit status (0 within rtol,
# 1 above, 2 incompatible / unreadable / usage; reference: 1 for a job it cannot solve).
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
cat > "$tmp/hom.cfg" <<'CFG'
grid = { n = [24, 24, 24]; d = [10.0, 10.0, 10.0]; };
time = { steps = 100; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 8; };
boundary = { absorbing = 6; };
sources = ( { position = [110.0, 120.0, 120.0]; wavelet = { type = "ricker"; frequency = 20.0; }; } );
receivers = { interval = 2; points = ( [190.0, 120.0, 120.0], [110.0, 200.0, 120.0] );
              lines = ( { from = [150.0, 60.0, 60.0]; to = [150.0, 180.0, 60.0]; count = 4; } ); };
snapshots = { every = 50; decimate = 2; };
output = { file = "hom.h5"; };
solver = { kernel = "cpu"; };
CFG
cd "$tmp"
T=$TORREWAVE
expect 0 'Gcell/s' -- "$T" run hom.cfg -q
expect 0 'analytic reference, 6 receivers' -- "$T" reference hom.cfg
test -f hom-reference.h5 || { echo "FAIL: default reference name hom-reference.h5 not written"; fail=1; }
expect 0 '-> ref\.h5' -- "$T" reference hom.cfg -o ref.h5

# Against itself: identical; against the reference: the discretization error (~1e-2) is above the
# default rtol 1e-5 and below 0.5.
expect 0 '^PASS' -- "$T" compare hom.h5 hom.h5
expect 1 'receivers/traces .*ABOVE rtol' -- "$T" compare hom.h5 ref.h5
expect 1 '^FAIL: 1 of 1 dataset' -- "$T" compare hom.h5 ref.h5
expect 0 '6 paired by coordinates' -- "$T" compare hom.h5 ref.h5 --rtol 0.5
expect 0 'snapshots: 0 common steps \(A has 2, B 0\)' -- "$T" compare hom.h5 ref.h5 --rtol 0.5
expect 0 'snapshots/p step 100' -- "$T" compare hom.h5 hom.h5

# --json: valid JSON with the documented keys.
"$T" compare hom.h5 ref.h5 --json > cmp.json; st=$?
[ "$st" = 1 ] || { echo "FAIL: --json exit status $st, want 1"; fail=1; }
py=${PYTHON:-python3}
if command -v "$py" >/dev/null 2>&1; then
  if "$py" - cmp.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "fail", r["status"]
assert r["receivers"]["pairs"] == 6 and r["failed"] == 1, r["receivers"]
d = r["datasets"][0]
assert d["dataset"] == "receivers/traces" and 1e-4 < d["rel_l2"] < 0.5 and d["pass"] is False, d
assert 0 <= d["worst"]["receiver_a"] < 6 and len(d["worst"]["position"]) == 3, d["worst"]
assert r["a"]["kernel"] == "cpu" and r["b"]["kernel"] == "reference", (r["a"], r["b"])
print(f"ok: --json: rel L2 {d['rel_l2']:.3e}, worst receiver {d['worst']['receiver_a']} at t = {d['worst']['time']:.4f} s")
PY
  then :; else echo "FAIL: --json output:"; cat cmp.json; fail=1; fi
else
  grep -q '"status": "fail"' cmp.json || { echo "FAIL: --json output:"; cat cmp.json; fail=1; }
fi

# Where snapshots differ is named by the model cell and its coordinates, with the cell of the stored
# (decimated, cropped) snapshot beside it, labelled (the table said "cell [1, 3, 2]" of the decimated
# array, read as a model cell: here model cell [6, 11, 10]). One value of a copy is changed (h5py).
if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import h5py' 2>/dev/null; then
  bump() { # bump FILE STEP_INDEX X Y Z: add 1 to that value of /snapshots/p ([nsnap][nz][ny][nx])
    "$py" -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r+"); a = [int(v) for v in sys.argv[2:]]
p = f["snapshots/p"]; p[a[0], a[3], a[2], a[1]] += 1.0' "$@"
  }
  region='snapshots={every=50;decimate=3;region={from=[30.0,20.0,40.0];to=[200.0,210.0,190.0];};}'
  expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o reg.h5 --set "$region"
  cp reg.h5 reg-bumped.h5 && bump reg-bumped.h5 1 1 3 2
  expect 1 'snapshots/p step 100 .* model cell \[6, 11, 10\] at \(60, 110, 100\) m \(snapshot cell \[1, 3, 2\]: first_cell \[3, 2, 4\], decimate 3\)' -- "$T" compare reg.h5 reg-bumped.h5
  "$T" compare reg.h5 reg-bumped.h5 --json > bump.json
  "$py" - bump.json <<'PY' || { echo "FAIL: --json of a snapshot difference:"; cat bump.json; fail=1; }
import json, sys
w = json.load(open(sys.argv[1]))["datasets"][2]["worst"]
assert w["model_cell"] == [6, 11, 10] and w["snapshot_cell"] == [1, 3, 2] and w["position"] == [60, 110, 100], w
assert "cell" not in w, w
print("ok: --json: a snapshot difference at model cell", w["model_cell"], "snapshot cell", w["snapshot_cell"])
PY
  cp hom.h5 hom-bumped.h5 && bump hom-bumped.h5 0 3 4 5  # the whole model, every 2nd cell
  expect 1 'snapshots/p step 50 .* model cell \[6, 8, 10\] at \(60, 80, 100\) m \(snapshot cell \[3, 4, 5\]: decimate 2\)' -- "$T" compare hom.h5 hom-bumped.h5
  expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o all.h5 --set snapshots.decimate=1
  cp all.h5 all-bumped.h5 && bump all-bumped.h5 0 3 4 5  # every cell: the snapshot's cell is the model's
  expect 1 'snapshots/p step 50 .* model cell \[3, 4, 5\] at \(30, 40, 50\) m; 1 of' -- "$T" compare all.h5 all-bumped.h5
else
  echo "note: no python3 with h5py: the place of a snapshot difference is not checked here (test_compare checks it)"
fi

# Another kernel (bitwise equal on the CPU), when this build has it.
if "$T" run hom.cfg -q -o diamond.h5 --set solver.kernel=cpu-diamond > /dev/null 2>&1; then
  expect 0 '^PASS' -- "$T" compare hom.h5 diamond.h5 --rtol 1e-7
else
  echo "note: no cpu-diamond kernel in this build: kernel-to-kernel comparison skipped"
fi

# Incompatible files: exit 2 with the reason.
expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o n.h5 --set 'grid.n=[26,24,24]'
expect 2 'grid n differs: A \[24, 24, 24\], B \[26, 24, 24\]' -- "$T" compare hom.h5 n.h5
expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o dt.h5 --set time.dt=0.001
expect 2 'dt differs' -- "$T" compare hom.h5 dt.h5
expect 2 '"status": "incompatible"' -- "$T" compare hom.h5 dt.h5 --json
expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o moved.h5 --set 'receivers.points=([190.0,130.0,120.0])' --set 'receivers.lines=()'
expect 2 'no common receivers' -- "$T" compare hom.h5 moved.h5 --traces-only
# Both files with snapshots but none at a common step: nothing of them compared is no pass (2);
# --traces-only compares the traces alone.
expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o other.h5 --set 'snapshots.every=7'
expect 2 'no snapshot step is in both \(A has 2 snapshots from step 50, B [0-9]+ from step 7\)' -- "$T" compare hom.h5 other.h5
expect 0 '^PASS' -- "$T" compare hom.h5 other.h5 --traces-only
# and says the snapshots were not compared, not that the files have no step in common (it said
# "0 common steps" of a file compared with itself)
expect 0 '^snapshots: not compared \(--traces-only; A has 2, B 2\)$' -- "$T" compare hom.h5 hom.h5 --traces-only
expect 0 '"snapshots": \{"a": 2, "b": 2, "common": 0, "compared": false\}' -- "$T" compare hom.h5 hom.h5 --traces-only --json
expect 0 '"snapshots": \{"a": 2, "b": 2, "common": 2, "compared": true\}' -- "$T" compare hom.h5 hom.h5 --json
# --strict: files that differ in what they hold (fewer receivers or samples, other snapshot steps)
# are not comparable, so exit 0 with --rtol 1e-30 means the same numbers.
expect 0 'Gcell/s' -- "$T" run hom.cfg -q -o short.h5 --set time.steps=60
expect 0 '^PASS' -- "$T" compare hom.h5 short.h5 --rtol 1e-30 --traces-only
expect 2 '--strict: A has [0-9]+ samples per trace, B [0-9]+' -- "$T" compare hom.h5 short.h5 --rtol 1e-30 --traces-only --strict
expect 2 '--strict: receivers without a partner' -- "$T" compare hom.h5 moved.h5 --traces-only --strict
expect 2 '--strict: snapshots: 0 common steps, A has 2, B [0-9]+' -- "$T" compare hom.h5 other.h5 --strict
expect 0 '^PASS' -- "$T" compare hom.h5 hom.h5 --rtol 1e-30 --strict
expect 2 'cannot open: No such file' -- "$T" compare hom.h5 missing.h5
# A result that is no regular file is refused at once: HDF5's open of a FIFO without a writer waited
# for one forever (compare and export hung).
mkfifo pipe.h5 && mkdir folder.h5
expect 2 "result 'pipe\.h5' is a FIFO \(named pipe\), not a result file" -- timeout 20 "$T" compare pipe.h5 hom.h5
expect 2 "result 'folder\.h5' is a directory, not a result file" -- timeout 20 "$T" compare hom.h5 folder.h5
if ! "$T" info | grep -q '^SEG-Y: not built'; then  # (without segyio, export refuses before it opens)
  expect 1 "result 'pipe\.h5' is a FIFO \(named pipe\)" -- timeout 20 "$T" export pipe.h5 --segy pipe.sgy
  test ! -e pipe.sgy || { echo "FAIL: a refused export left pipe.sgy"; fail=1; }
fi
expect 2 'needs two result files' -- "$T" compare hom.h5
expect 2 'unknown option' -- "$T" compare hom.h5 ref.h5 --frobnicate
expect 2 '--rtol takes a number >= 0, got "-1"' -- "$T" compare hom.h5 ref.h5 --rtol -1
# --rtol 0: the help's "X <= 1e-30: when no value differs" (was refused as not positive, and the
# library reads 0 as its default 1e-5)
expect 0 'PASS: the same numbers in every dataset' -- "$T" compare hom.h5 hom.h5 --rtol 0
expect 1 'VALUES DIFFER' -- "$T" compare hom.h5 ref.h5 --rtol 0 --traces-only

# Jobs the reference cannot solve: refused with the reason, named where it is given (the job file's
# line, or the --set; they named the job file alone), nothing written.
expect 1 "^torrewave: error: hom\.cfg: --set boundary\.free_surface=true: boundary\.free_surface is true: the analytic" \
  -- "$T" reference hom.cfg -o fs.h5 --set boundary.free_surface=true
test ! -e fs.h5 || { echo "FAIL: refused reference left fs.h5"; fail=1; }
sed 's/^boundary = { absorbing = 6; };$/boundary = { absorbing = 6;\n  free_surface = true; };/' hom.cfg > fs.cfg
expect 1 '^torrewave: error: fs\.cfg:6: boundary\.free_surface is true' -- "$T" reference fs.cfg -o fs.h5
expect 1 '^torrewave: error: hom\.cfg: --set model=\{[^}]*\}: model\.type is "gradient"' \
  -- "$T" reference hom.cfg -o g.h5 --set 'model={type="gradient";vp0=2000.0;gradient=0.5;}'
sed 's/"constant"; vp = 2000.0;/"gradient"; vp0 = 2000.0; gradient = 0.5;/' hom.cfg > g.cfg
expect 1 '^torrewave: error: g\.cfg:3: model\.type is "gradient"' -- "$T" reference g.cfg -o g.h5
expect 1 '^torrewave: error: hom\.cfg: --set receivers\.points=\(\[113\.0,120\.0,120\.0\]\): receivers\.points\[0\]: receiver 0 at \(113, 120, 120\) m .*singular' \
  -- "$T" reference hom.cfg -o s.h5 --set 'receivers.points=([113.0,120.0,120.0])'
expect 1 '^torrewave: error: hom\.cfg:8: receivers\.lines\[0\]: receiver 1 of it: receiver 3 at \(150, 100, 60\) m .*singular' \
  -- "$T" reference hom.cfg -o s.h5 --set 'sources=({position=[150.0,100.0,60.0]; wavelet={type="ricker"; frequency=20.0;};})'
# Positions at UTM coordinates with 10 digits, as the job gives them (%g's 6 made the receiver at
# [500020.5, 5000020.5, 20.0] "(500020, 5.00002e+06, 20)", and the unpartnered receivers of A and B,
# 0.5 m apart, alike)
cat > utm.cfg <<'CFG'
grid = { n = [9, 9, 9]; d = [10.0, 10.0, 10.0]; origin = [500000.0, 5000000.0, 0.0]; };
time = { steps = 20; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 4; };
boundary = { absorbing = 2; };
sources = ( { position = [500040.0, 5000040.0, 40.0]; wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { interpolation = "trilinear"; points = ( [500020.5, 5000020.5, 20.0], [500060.0, 5000060.0, 60.0] ); };
CFG
"$T" run utm.cfg -q -o u1.h5 2> /dev/null
"$T" run utm.cfg -q -o u2.h5 --set 'receivers.points=([500020.0,5000020.0,20.0],[500060.0,5000060.0,60.0])' 2> /dev/null
"$T" run utm.cfg -q -o u3.h5 --set 'sources=({position=[500040.0,5000040.0,40.0];wavelet={type="ricker";frequency=10.0;amplitude=2.0;};})' 2> /dev/null
expect 0 'receiver of A without a partner: 0 \(500020\.5, 5000020\.5, 20\)$' -- "$T" compare u1.h5 u2.h5
expect 0 'receiver of B without a partner: 0 \(500020, 5000020, 20\)$' -- "$T" compare u1.h5 u2.h5
expect 1 'receiver 0 at \(500020\.5, 5000020\.5, 20\) m, t = ' -- "$T" compare u1.h5 u3.h5
"$T" run utm.cfg -q -o u4.h5 --set 'grid.origin=[500000.5,5000000.0,0.0]' 2> /dev/null
expect 2 'grid origin differs: A \[500000, 5000000, 0\] m, B \[500000\.5, 5000000, 0\] m' -- "$T" compare u1.h5 u4.h5
expect 1 'receiver 1 at \(500040\.3, 5000040, 40\) m and sources\[0\] at \(500040, 5000040, 40\) m are 0 m apart' \
  -- "$T" reference utm.cfg -o u5.h5 --set 'receivers.points=([500020.5,5000020.5,20.0],[500040.3,5000040.0,40.0])' \
  --set receivers.interpolation=nearest
expect 0 'usage: torrewave compare' -- "$T" compare --help
expect 0 'usage: torrewave reference' -- "$T" help reference
exit $fail
