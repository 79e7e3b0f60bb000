#!/usr/bin/env bash
# SEG-Y through segyio (io/segy.c): output.segy = true writes OUT.sgy beside OUT.h5, and
# `torrewave export` writes the same bytes from the HDF5 file. python3-segyio reads it back and
# every header field the issue lists, and every sample, is checked against the HDF5 file
# (coordinates to the centimetre, samples bit for bit). Jobs SEG-Y cannot hold are refused before
# the run with what to change; a stale SEG-Y file of ours goes, a foreign one stays. Velocity cubes
# written by python3-segyio (inline and crossline sorted, IEEE, IBM, 4-byte integers,
# little-endian) are read as models exactly (output.model stores them back), and wrong sizes,
# unsorted cubes and bad values are reported.
# Without segyio in the build: the three SEG-Y features must fail with "built without segyio";
# that is checked, then the test is skipped (exit 77). Without python3-segyio: skipped.
set -uo pipefail
source "$TW_SOURCE_DIR/tests/cli_lib.sh"
T=$TORREWAVE
cd "$tmp"

cat > job.cfg <<'CFG'
grid = { n = [30, 24, 20]; d = [10.0, 10.0, 10.0]; origin = [-50.0, 20.0, 0.0]; };
time = { steps = 150; dt = 0.0007; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 4; };
boundary = { absorbing = 6; free_surface = true; };
sources = ( { position = [101.37, 118.42, 53.21]; interpolation = "trilinear";
              wavelet = { type = "ricker"; frequency = 20.0; }; } );
receivers = { interval = 3; interpolation = "trilinear";   # a nearest receiver at z = 0.01 would be on the free surface
              points = ( [101.37, 118.42, 153.99], [-49.99, 249.99, 0.01] );
              lines = ( { from = [-40.0, 118.42, 12.34]; to = [230.0, 118.42, 12.34]; count = 28; } );
              grids = ( { origin = [0.0, 50.0]; spacing = [55.5, 61.25]; count = [3, 2]; depth = 20.0; } ); };
output = { file = "shot.h5"; segy = true; };
solver = { kernel = "cpu"; };
CFG

if "$T" info | grep -q '^SEG-Y: not built'; then
  expect 1 'output.segy: this torrewave was built without segyio .*install segyio' -- "$T" check job.cfg
  test ! -e shot.h5 || { echo "FAIL: a run that cannot write its SEG-Y started"; fail=1; }
  "$T" run job.cfg -q --set output.segy=false 2> /dev/null
  expect 1 "SEG-Y 'shot.sgy': this torrewave was built without segyio" -- "$T" export shot.h5
  printf 'x' > vp.sgy
  expect 1 'model.type = "segy" .*built without segyio' -- "$T" check job.cfg --set 'model={type="segy";file="vp.sgy";}' --set output.segy=false
  [ $fail = 0 ] && { echo "SKIP: built without segyio (its three refusals checked)"; exit 77; }
  exit $fail
fi
py=""
for c in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import segyio, h5py, numpy' 2>/dev/null; then py=$c; break; fi
done
if [ -z "$py" ]; then echo "SKIP: no python3 with segyio, h5py, numpy (apt-get install python3-segyio python3-h5py)"; exit 77; fi

# ---------------------------------------------------------------- out
"$T" run job.cfg -q || exit 1
test -f shot.sgy || { echo "FAIL: no shot.sgy"; exit 1; }
if ls ./*.part-* > /dev/null 2>&1; then echo "FAIL: temporary file left"; exit 1; fi
expect 0 'shot.h5 -> again.sgy' -- "$T" export shot.h5 --segy again.sgy
cmp shot.sgy again.sgy && echo "ok: export writes the bytes the run wrote"
mv shot.sgy first.sgy
expect 0 'shot.h5 -> shot.sgy' -- "$T" export shot.h5
cmp shot.sgy first.sgy && echo "ok: export's default name is shot.sgy"
# A run stopped between its .h5 and its SEG-Y file (the test hook kills it there) leaves the new .h5
# and no SEG-Y file, never the new .h5 beside the earlier run's SEG-Y file; a survey reruns such a
# shot, and its SEG-Y file then holds that run's samples (export of its .h5, byte for byte).
TW_OUTPUT_CRASH_BEFORE_SEGY=1 "$T" run job.cfg -q --set time.steps=120 2>/dev/null
test -s shot.h5 && test ! -e shot.sgy || { echo "FAIL: after a stop between the two, shot.sgy: $(ls shot.*)"; fail=1; }
"$T" run job.cfg -q 2>/dev/null  # back to the first job's files
cat > sv.cfg <<'CFG'
grid = { n = [24, 20, 16]; d = [10.0, 10.0, 10.0]; };
time = { steps = 60; dt = 0.001; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 2; };
shots = { positions = ( [110.0, 90.0, 70.0] ); receivers = "fixed"; };
sources = ( { wavelet = { type = "ricker"; frequency = 20.0; amplitude = 1.0; }; } );
receivers = { lines = ( { from = [10.0, 90.0, 40.0]; to = [220.0, 90.0, 40.0]; count = 12; } ); };
output = { directory = "sv"; segy = true; };
solver = { kernel = "cpu"; };
CFG
"$T" run sv.cfg -q 2>/dev/null
sed 's/amplitude = 1.0/amplitude = 2.0/' sv.cfg > sv2.cfg
TW_OUTPUT_CRASH_BEFORE_SEGY=1 "$T" run sv2.cfg -q 2>/dev/null
expect 0 "1 run" -- "$T" run sv2.cfg
expect 0 'sv/shot-00000.h5 -> re.sgy' -- "$T" export sv/shot-00000.h5 --segy re.sgy
cmp sv/shot-00000.sgy re.sgy && echo "ok: the rerun shot's SEG-Y file is its own" ||
  { echo "FAIL: the shot's SEG-Y file is not its .h5's"; fail=1; }

# export's output obeys the outputs' rules: never the result itself, a FIFO or device, a link or a folder
cp shot.h5 keep.h5
expect 1 "SEG-Y output 'shot\.h5' is the result file being exported" -- "$T" export shot.h5 --segy shot.h5
cmp -s shot.h5 keep.h5 || { echo "FAIL: export replaced its own input"; fail=1; }
mkfifo pipe.sgy  # (not /dev/null: a regression would replace it, as root)
expect 1 "SEG-Y output 'pipe\.sgy' is a FIFO \(named pipe\): refusing to replace it" -- "$T" export shot.h5 --segy pipe.sgy
test -p pipe.sgy || { echo "FAIL: the FIFO was replaced"; fail=1; }
ln -s keep.h5 link.sgy
expect 1 "SEG-Y output 'link\.sgy' is a symbolic link" -- "$T" export shot.h5 --segy link.sgy
test -L link.sgy && cmp -s keep.h5 shot.h5 || { echo "FAIL: the link or its target changed"; fail=1; }
expect 1 "SEG-Y output: the file name is empty" -- "$T" export shot.h5 --segy ""
# export does not know the job, so it replaces only a SEG-Y file torrewave wrote (an earlier export or
# output.segy, "written by torrewave" in its textual header): a job file under that name (once
# destroyed by `export shot.h5 --segy job.cfg`), a SEG-Y file from elsewhere (a velocity cube) and a
# cut one of ours stay; ours is replaced.
cp job.cfg myjob.cfg
"$py" -c 'import segyio, numpy as np
s = segyio.spec(); s.format = 5; s.samples = range(4); s.tracecount = 1
with segyio.create("foreign.sgy", s) as f: f.trace[0] = np.zeros(4, np.float32)'
cp foreign.sgy foreign.keep && head -c 3300 again.sgy > cut.sgy && cp cut.sgy cut.keep
expect 1 "SEG-Y output 'myjob\.cfg' exists and is not a SEG-Y file torrewave wrote \(export replaces only those\): refusing to replace it; remove it first if it may go, or choose another name \(--segy FILE\)" \
  -- "$T" export shot.h5 --segy myjob.cfg
expect 1 "SEG-Y output 'foreign\.sgy' exists and is not a SEG-Y file torrewave wrote" -- "$T" export shot.h5 --segy foreign.sgy
expect 1 "SEG-Y output 'cut\.sgy' exists and is not a SEG-Y file torrewave wrote" -- "$T" export shot.h5 --segy cut.sgy
cmp -s job.cfg myjob.cfg && cmp -s foreign.sgy foreign.keep && cmp -s cut.sgy cut.keep ||
  { echo "FAIL: export replaced a file torrewave did not write"; fail=1; }
expect 0 'shot.h5 -> again.sgy' -- "$T" export shot.h5 --segy again.sgy  # ours: replaced
expect 2 "--segy needs a value" -- "$T" export shot.h5 --segy

cat > check.py <<'PY'
import sys
import h5py, numpy as np, segyio
from segyio import TraceField as F, BinField as B

h5 = h5py.File(sys.argv[1], "r")
rec = h5["receivers/coords"][...]
tr = h5["receivers/traces"][...]
src = h5["sources/coords"][0]
sdt = float(h5["receivers/traces"].attrs["dt"])
shot = int(h5.attrs["shot"])
us = round(sdt * 1e6)
assert abs(sdt * 1e6 - us) < 1e-6, sdt
checked = 0
def eq(what, got, want):
    global checked
    assert got == want, f"{what}: SEG-Y {got}, expected {want}"
    checked += 1
def near(what, stored, scalar, want, tol=0.005):
    global checked
    v = stored / -scalar if scalar < 0 else stored * scalar
    assert abs(v - want) <= tol, f"{what}: SEG-Y {stored} (scalar {scalar}) = {v}, expected {want}"
    checked += 1
with segyio.open(sys.argv[2], ignore_geometry=True) as f:
    b = f.bin
    eq("interval", b[B.Interval], us); eq("samples", b[B.Samples], tr.shape[1]); eq("format", b[B.Format], 5)
    eq("measurement system", b[B.MeasurementSystem], 1); eq("revision", b[B.SEGYRevision], 0x0100)
    eq("fixed length", b[B.TraceFlag], 1); eq("extended headers", b[B.ExtendedHeaders], 0)
    eq("traces per record", b[B.Traces], len(rec)); eq("polarity", b[B.ImpulseSignalPolarity], 2)
    eq("traces", f.tracecount, len(rec))
    assert np.allclose(f.samples, np.arange(tr.shape[1]) * us / 1000.0), f.samples[:4]
    text = segyio.tools.wrap(f.text[0])
    for want in ["TORREWAVE " + h5.attrs["version"], "JOB " + h5.attrs["job_file"], "RESULT " + sys.argv[1],
                 "GRID N 30 24 20, D 10 10 10 M, ORIGIN -50 20 0 M", "DT 0.0007 S, 150 STEPS, ORDER 4, KERNEL cpu",
                 f"{tr.shape[1]} SAMPLES EVERY {us} US", "SEG Y REV1", "END TEXTUAL HEADER"]:
        assert want in text.replace("\n", ""), f"textual header lacks {want!r}"
        checked += 1
    for i in range(len(rec)):
        h, g = f.header[i], rec[i]
        eq("sequence in line", h[F.TRACE_SEQUENCE_LINE], i + 1); eq("sequence in file", h[F.TRACE_SEQUENCE_FILE], i + 1)
        eq("field record", h[F.FieldRecord], shot + 1); eq("trace number", h[F.TraceNumber], i + 1)
        eq("energy source point", h[F.EnergySourcePoint], shot + 1); eq("trace id", h[F.TraceIdentificationCode], 1)
        dx, dy = g[0] - src[0], g[1] - src[1]
        off = np.hypot(dx, dy) * (-1 if dx < 0 or (dx == 0 and dy < 0) else 1)
        eq("offset", h[F.offset], int(np.floor(off + 0.5)) if off >= 0 else -int(np.floor(-off + 0.5)))
        cs, es = h[F.SourceGroupScalar], h[F.ElevationScalar]
        eq("coordinate scalar", cs, -100); eq("elevation scalar", es, -100)
        near("source x", h[F.SourceX], cs, src[0]); near("source y", h[F.SourceY], cs, src[1])
        near("group x", h[F.GroupX], cs, g[0]); near("group y", h[F.GroupY], cs, g[1])
        near("source depth", h[F.SourceDepth], es, src[2]); near("group elevation", h[F.ReceiverGroupElevation], es, -g[2])
        eq("coordinate units", h[F.CoordinateUnits], 1)
        eq("trace samples", h[F.TRACE_SAMPLE_COUNT], tr.shape[1]); eq("trace interval", h[F.TRACE_SAMPLE_INTERVAL], us)
        eq("value unit (Pa)", h[F.TraceValueMeasurementUnit], 1)
        s = f.trace[i]
        assert s.dtype == np.float32 and np.array_equal(s.view(np.uint32), tr[i].view(np.uint32)), f"trace {i} samples"
        checked += len(s)
    assert np.abs(tr).max() > 0, "the traces hold no wave"
print(f"ok: {sys.argv[2]}: {len(rec)} traces of {tr.shape[1]} samples: {checked} header fields and samples match {sys.argv[1]}")
PY
"$py" check.py shot.h5 shot.sgy || fail=1

# ---------------------------------------------------------------- refused before the run
rm -f shot.h5 shot.sgy shot.xdmf
expect 1 'job.cfg:12: output.segy: the sample interval receivers.interval x time.dt = 3 x 0.00066666 s is not a whole number of microseconds, which SEG-Y stores: got 1999.980000 us; set time.dt = 0.000666 \(dt rounded down' \
  -- "$T" check job.cfg --set time.dt=0.00066666
expect 1 'output.segy: the sample interval .*set time.dt = ' -- "$T" run job.cfg -q --set time.dt=0.00066666 --set time.steps=3
test ! -e shot.h5 || { echo "FAIL: a run whose SEG-Y cannot be written started"; fail=1; }
expect 1 'output.segy: more samples per trace than SEG-Y rev 1 holds \(32767\): got 40001 samples; raise receivers.interval to at least 2' \
  -- "$T" check job.cfg --set time.steps=40000 --set receivers.interval=1
expect 1 'output.segy: the job records no receivers' -- "$T" check job.cfg --set 'receivers={interval=1;}'
# a sample interval beyond SEG-Y's from an extreme but valid velocity (1e-30 m/s: dt ~ 4e30 s) was cast
# to long past its range and refused as not whole microseconds, the interval printed with 37 digits
expect 1 'output.segy: a sample interval longer than SEG-Y rev 1 holds \(32767 us\): got [0-9.]+e\+[0-9]+ us; lower receivers.interval or time.dt$' \
  -- "$T" check job.cfg --set model.vp=1e-30 --set 'model.vp_range=[1e-37,1e-20]' --set time.dt_margin=0.9
"$T" run job.cfg -q --set output.segy=false --set time.dt=0.00066666 --set time.steps=30 2> /dev/null
expect 1 "SEG-Y 'shot.sgy': result 'shot.h5': the sample interval 0.00199998 s is not a whole number of microseconds, which SEG-Y stores: got 1999.980000 us" \
  -- "$T" export shot.h5
test ! -e shot.sgy || { echo "FAIL: a refused export left a file"; fail=1; }

# ---------------------------------------------------------------- stale files
"$T" run job.cfg -q --set time.steps=30 2> /dev/null && test -f shot.sgy
"$T" run job.cfg -q --set time.steps=30 --set output.segy=false 2> /dev/null
test ! -e shot.sgy && echo "ok: rewritten without output.segy: our stale shot.sgy is gone" || fail=1
"$py" -c 'import segyio, numpy as np
s = segyio.spec(); s.format = 5; s.samples = range(4); s.tracecount = 1
with segyio.create("shot.sgy", s) as f: f.trace[0] = np.zeros(4, np.float32)'
"$T" run job.cfg -q --set time.steps=30 --set output.segy=false 2> /dev/null
test -e shot.sgy && echo "ok: a SEG-Y file torrewave did not write stays" || fail=1
# and a run with output.segy is refused, by check too, and leaves it (a field record line1.sgy beside
# a synthetic line1.h5: the run replaced it with its own traces, check silent)
cp shot.sgy theirs.keep
theirs="SEG-Y file 'shot\.sgy' of output 'shot\.h5' is there and torrewave did not write it: refusing to replace it; move it away, or choose another output name"
expect 1 "$theirs" -- "$T" check job.cfg --set time.steps=30
expect 1 "$theirs" -- "$T" run job.cfg -q --set time.steps=30
cmp -s shot.sgy theirs.keep && echo "ok: a SEG-Y file torrewave did not write is not replaced" ||
  { echo "FAIL: a run with output.segy replaced a SEG-Y file torrewave did not write"; fail=1; }
rm shot.sgy theirs.keep
# "q" and "q.h5" share the SEG-Y file "q.sgy", as they share the sidecar "q.xdmf": a run onto "q"
# without output.segy leaves q.h5's SEG-Y file alone (it removed it as a stale one of its own), and
# check and run onto "q" with output.segy are refused while q.h5 is there (the run replaced q.h5's
# SEG-Y file with its own traces); with q.h5 gone, q.sgy is stale and goes
mkdir -p share && "$T" run job.cfg -q -o share/q.h5 --set time.steps=30 2> /dev/null && cp share/q.sgy q.keep
"$T" run job.cfg -q -o share/q --set time.steps=60 --set output.segy=false 2> /dev/null
cmp -s share/q.sgy q.keep && echo "ok: a run onto share/q leaves share/q.h5's SEG-Y file" ||
  { echo "FAIL: a run onto share/q removed share/q.h5's SEG-Y file"; fail=1; }
share_err="SEG-Y file 'share/q\.sgy' of output 'share/q' is that of output 'q\.h5' \(written from that file, which is there\): a run would replace it and leave 'q\.h5' without its SEG-Y file; choose another output name"
expect 1 "$share_err" -- "$T" check job.cfg -o share/q --set time.steps=60
expect 1 "$share_err" -- "$T" run job.cfg -q -o share/q --set time.steps=60
cmp -s share/q.sgy q.keep || { echo "FAIL: a run onto share/q replaced share/q.h5's SEG-Y file"; fail=1; }
rm share/q.h5
"$T" run job.cfg -q -o share/q --set time.steps=60 --set output.segy=false 2> /dev/null
test ! -e share/q.sgy && echo "ok: q.h5 gone, its SEG-Y file is stale and goes" || { echo "FAIL: share/q.sgy stayed"; fail=1; }

# ---------------------------------------------------------------- in: velocity cubes
cat > cube.py <<'PY'
"""cube.py NAME inline|crossline|shuffled FORMAT big|little [bad]: a 12 x 9 x 7 velocity cube, vp(i, j, k) =
1500 + 10 i + 100 j + 7 k (exact in every format), inline numbers 101.., crosslines 21.. by 2."""
import sys
import numpy as np, segyio
name, sorting, fmt, endian = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
nx, ny, nz = 12, 9, 7
vp = 1500.0 + 10 * np.arange(nx)[:, None, None] + 100 * np.arange(ny)[None, :, None] + 7 * np.arange(nz)
if len(sys.argv) > 5:
    vp[4, 5, 6] = 0.0
s = segyio.spec()
s.ilines, s.xlines, s.samples, s.format, s.endian = range(101, 101 + nx), range(21, 21 + 2 * ny, 2), range(nz), fmt, endian
s.sorting = segyio.TraceSortingFormat.CROSSLINE_SORTING if sorting == "crossline" else segyio.TraceSortingFormat.INLINE_SORTING
order = [(i, j) for j in range(ny) for i in range(nx)] if sorting == "crossline" else [(i, j) for i in range(nx) for j in range(ny)]
if sorting == "shuffled":
    order = [order[k] for k in np.random.default_rng(1).permutation(len(order))]
with segyio.create(name, s) as f:
    for t, (i, j) in enumerate(order):
        f.header[t] = {segyio.su.iline: 101 + i, segyio.su.xline: 21 + 2 * j, segyio.su.cdpx: 1000 * i, segyio.su.cdpy: 1000 * j}
        f.trace[t] = vp[i, j].astype(np.float32)
np.save(name + ".npy", vp.astype(np.float32))
PY
cat > model.cfg <<'CFG'
grid = { n = [12, 9, 7]; d = [10.0, 10.0, 10.0]; };
time = { steps = 2; };
model = { type = "segy"; file = "cube.sgy"; };
sources = ( { position = [50.0, 40.0, 30.0]; wavelet = { type = "ricker"; frequency = 20.0; }; } );
output = { file = "model.h5"; model = true; };
solver = { kernel = "cpu"; };
CFG
for variant in "inline 5 big" "crossline 5 big" "inline 1 big" "inline 2 big" "crossline 5 little" "inline 1 little"; do
  set -- $variant
  "$py" -W ignore cube.py cube.sgy "$1" "$2" "$3" || { fail=1; continue; }
  "$T" run model.cfg -q 2> run.txt || { cat run.txt; fail=1; continue; }
  "$py" -c 'import h5py, numpy as np
f = h5py.File("model.h5"); got = f["model/vp"][...].transpose(2, 1, 0); want = np.load("cube.sgy.npy")
assert np.array_equal(got, want), np.argwhere(got != want)[:5]
assert f.attrs["vp_min"] == 1500 and f.attrs["vp_max"] == want.max(), (f.attrs["vp_min"], f.attrs["vp_max"])' \
    && echo "ok: model from a $1-sorted cube, format $2, $3-endian: read exactly" || fail=1
done
# output.model's /model/vp ([nz][ny][nx], attribute axes) reads back as an HDF5 model, exactly.
mv model.h5 stored.h5
"$T" run model.cfg -q --set 'model={type="hdf5";file="stored.h5";dataset="model/vp";}' 2> /dev/null || fail=1
"$py" -c 'import h5py, numpy as np
a, b = h5py.File("stored.h5")["model/vp"][...], h5py.File("model.h5")["model/vp"][...]
assert a.shape == (7, 9, 12) and np.array_equal(a, b)' && echo "ok: a stored model is read back as model.type = hdf5" || fail=1
"$py" cube.py cube.sgy inline 5 big
expect 1 "model.cfg:3: model.file: 'cube.sgy' is a cube of 12 inlines x 9 crosslines x 7 samples, but grid.n = \[12, 10, 7\]" \
  -- "$T" check model.cfg --set 'grid.n=[12,10,7]'
expect 1 "model.file: 'cube.sgy': the inline numbers \(trace-header bytes 17-20\) are not distinct and ordered: 0, 0" \
  -- "$T" check model.cfg --set model.inline_byte=17
"$py" cube.py cube.sgy shuffled 5 big
expect 1 "model.file: 'cube.sgy': not a 3-D cube sorted by inline and crossline" -- "$T" check model.cfg
"$py" cube.py cube.sgy inline 5 big bad
expect 1 "model.cfg:3: model: 'cube.sgy': velocity 0 at cell \(i, j, k\) = \(4, 5, 6\) is outside the physical range" \
  -- "$T" check model.cfg
printf 'not a SEG-Y file' > cube.sgy
expect 1 "model.file: 'cube.sgy': reading the binary header failed" -- "$T" check model.cfg
exit $fail
