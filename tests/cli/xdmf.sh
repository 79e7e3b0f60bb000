#!/usr/bin/env bash
# The XDMF sidecar (io/xdmf.c): run a small job with snapshots (a sub-region, decimated) and the
# model stored (output.model), parse the .xdmf with an XML parser (python3 xml.etree), resolve
# every HDF dataset it names with h5py and check shapes, times, geometry (ParaView X, Y, Z = x, y,
# -depth) and that each view holds exactly its snapshot of /snapshots/p (and vp the model on the
# snapshot grid). Then output names that XML must escape (--, &, <, >, quotes, spaces, non-ASCII)
# give a well-formed sidecar that names the file exactly, and a name XDMF cannot carry (':') gets
# no sidecar and a message. ParaView itself: tests/cli/paraview.sh.
# Python: $PYTHON, else the first of /usr/bin/python3, python3 that imports h5py (skip if none).
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

py=""
for c in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import h5py, numpy' 2>/dev/null; then py=$c; break; fi
done
if [ -z "$py" ]; then echo "SKIP: no python3 with h5py and numpy (apt-get install python3-h5py)"; exit 77; fi

cp "$TW_SOURCE_DIR/tests/cli/snapshots.cfg" "$tmp/snap.cfg"
cd "$tmp"
"$TORREWAVE" run snap.cfg -q
test -f snap.h5 && test -f snap.xdmf

cat > check.py <<'PY'
"""check.py SIDECAR [H5NAME]: the sidecar parses, and every dataset it names is right."""
import os, sys
import xml.etree.ElementTree as ET
import h5py, numpy as np

xdmf = sys.argv[1]
root = ET.parse(xdmf).getroot()  # raises on anything that is not well-formed XML
assert root.tag == "Xdmf", root.tag
base = os.path.dirname(os.path.abspath(xdmf))
h5name = sys.argv[2] if len(sys.argv) > 2 else None
ints = lambda s: [int(v) for v in s.split()]
floats = lambda s: [float(v) for v in s.split()]

def resolve(item):
    """An HDF DataItem 'file.h5:/path' -> (h5py file, dataset path), checking its declared shape."""
    fname, _, dpath = item.text.strip().partition(":")
    if h5name is not None:
        assert fname == h5name, f"sidecar names {fname!r}, the file is {h5name!r}"
    path = os.path.join(base, fname)
    assert os.path.exists(path), f"XDMF names {fname!r}, not found next to {xdmf}"
    f = h5py.File(path, "r")
    assert dpath in f, f"XDMF names {dpath} in {fname}: no such dataset"
    assert list(f[dpath].shape) == ints(item.get("Dimensions")), (dpath, f[dpath].shape, item.get("Dimensions"))
    return f, dpath

items = [it for it in root.iter("DataItem") if it.get("Format") == "HDF"]
assert items, "the sidecar names no HDF dataset"
h5, _ = resolve(items[0])
p, steps, times = h5["snapshots/p"], h5["snapshots/steps"][:], h5["snapshots/times"][:]
assert p.attrs["axes"] == "snapshot z y x", p.attrs["axes"]
origin, spacing = h5["snapshots"].attrs["origin"], h5["snapshots"].attrs["spacing"]
coll = [g for g in root.iter("Grid") if g.get("CollectionType") == "Temporal"]
assert len(coll) == 1, "expected one temporal collection"
grids = coll[0].findall("Grid")
assert len(grids) == len(steps) == p.shape[0], (len(grids), steps, p.shape)
for n, g in enumerate(grids):
    t = float(g.find("Time").get("Value"))
    assert abs(t - times[n]) <= 1e-12 * max(1.0, abs(t)), f"grid {n}: time {t}, file {times[n]}"
    topo = ints(g.find("Topology").get("Dimensions"))
    assert topo == list(p.shape[1:]), f"grid {n}: topology {topo}, snapshots [nz, ny, nx] {p.shape[1:]}"
    geo = {d.get("Name"): floats(d.text) for d in g.find("Geometry").findall("DataItem")}
    # slowest axis first (z, y, x); ParaView's Z is -depth
    assert np.allclose(geo["Origin"], [-origin[2], origin[1], origin[0]]), (geo, origin)
    assert np.allclose(geo["Spacing"], [-spacing[2], spacing[1], spacing[0]]), (geo, spacing)
    attrs = {a.get("Name"): a.find("DataItem") for a in g.findall("Attribute")}
    f, dpath = resolve(attrs["p"])
    assert np.array_equal(f[dpath][...], p[n]), f"grid {n}: {dpath} is not /snapshots/p[{n}]"
    if "model" in h5:
        f, dpath = resolve(attrs["vp"])
        lo, dec = h5["snapshots"].attrs["first_cell"], int(h5["snapshots"].attrs["decimate"])
        nz, ny, nx = p.shape[1:]
        want = h5["model/vp"][lo[2]:lo[2] + dec * nz:dec, lo[1]:lo[1] + dec * ny:dec, lo[0]:lo[0] + dec * nx:dec]
        assert np.array_equal(f[dpath][...], want), f"grid {n}: {dpath} is not the model on the snapshot grid"
    print(f"ok: grid {n}: step {steps[n]}, t = {t:.6g} s, [nz, ny, nx] {topo}, p and {sorted(attrs)} match")
print(f"xdmf: {xdmf}: well-formed, {len(items)} dataset references resolve")
PY
"$py" check.py snap.xdmf snap.h5
# The decimated sub-region: x 120..350 every 20 m (12), y -50..226 every 24 m (12), z 16..152 every 16 m (9).
"$py" -c 'import h5py; f = h5py.File("snap.h5"); assert f["snapshots/p"].shape == (3, 9, 12, 12), f["snapshots/p"].shape
assert list(f["snapshots"].attrs["origin"]) == [120, -50, 16] and list(f["snapshots"].attrs["spacing"]) == [20, 24, 16]
assert abs(f["snapshots/p"][-1]).max() > 0, "the last snapshot holds no wave"; print("ok: snapshot region and decimation")'

# Names XML must escape: each run's sidecar parses and names its file exactly.
small=(--set 'grid.n=[12,10,8]' --set 'snapshots.every=30' --set 'snapshots.region={from=[100.0,-50.0,0.0];to=[210.0,58.0,56.0];}'
       --set 'sources=({position=[150.0,0.0,24.0];wavelet={type="ricker";frequency=25.0;};})'
       --set 'receivers={points=([180.0,0.0,24.0]);}' -q)
for name in 'a--b.h5' 'x&y <z> .h5' "q\"uo'te.h5" 'with space.h5' 'éé-日本.h5' '--.h5'; do
  mkdir -p names
  "$TORREWAVE" run snap.cfg "${small[@]}" -o "names/$name"
  x="names/${name%.h5}.xdmf"
  test -f "$x" || { echo "FAIL: no sidecar for '$name'"; exit 1; }
  "$py" check.py "$x" "$name" | tail -n 1
done
# A name XDMF cannot reference: the HDF5 file is complete, the sidecar refused with the reason.
if "$TORREWAVE" run snap.cfg "${small[@]}" -o "names/a:b.h5" 2> colon.txt; then echo "FAIL: ':' accepted"; exit 1; fi
cat colon.txt
grep -q "output 'names/a:b.h5' is complete, but its XDMF sidecar is not: .*contains ':'" colon.txt
test -f "names/a:b.h5" && test ! -e "names/a:b.xdmf"
# "q" and "q.h5" share the sidecar "q.xdmf": a run onto "q" with snapshots is refused while q.h5 is
# there (it would take q.h5's sidecar), one without snapshots leaves that sidecar alone
mkdir -p share && "$TORREWAVE" run snap.cfg -o share/q.h5 -q 2>/dev/null
! "$TORREWAVE" run snap.cfg -o share/q -q 2> share.txt
grep -q "XDMF sidecar 'share/q.xdmf' of output 'share/q' is that of output 'q.h5'" share.txt
sed '/^snapshots/,/}; };$/d' snap.cfg > nosnap.cfg
"$TORREWAVE" run nosnap.cfg -o share/q -q 2>/dev/null
grep -q 'q.h5:/snapshots' share/q.xdmf
# check names the sidecar of ours a run replaces, or removes (a run without snapshots: stale)
"$TORREWAVE" check snap.cfg -o share/q.h5 | grep -q "share/q.xdmf exists: a run will replace it (its XDMF sidecar)"
"$TORREWAVE" check nosnap.cfg -o share/q.h5 | grep -q "share/q.xdmf exists: a run removes it (the XDMF sidecar of an"
# A file torrewave did not write under the sidecar's name (a result named "r.xdmf" beside an output
# "r", a hand-written XDMF file) is refused by check and run and stays (a run onto "r" replaced the
# result r.xdmf with its sidecar, check silent); a run without snapshots leaves it too
mkdir -p own && "$TORREWAVE" run snap.cfg -o own/r.xdmf -q 2>/dev/null && cp own/r.xdmf own.keep
echo '<Xdmf Version="3.0"><!-- mine --></Xdmf>' > own/mine.xdmf && cp own/mine.xdmf mine.keep
for o in own/r own/mine.h5; do
  for cmd in check "run -q"; do
    ! "$TORREWAVE" $cmd snap.cfg -o "$o" > own.txt 2>&1
    grep -q "XDMF sidecar '${o%.h5}.xdmf' of output '$o' is there and torrewave did not write it: refusing to replace it; move it away, or choose another output name" own.txt ||
      { cat own.txt; echo "FAIL: $cmd -o $o: ${o%.h5}.xdmf not refused"; exit 1; }
  done
done
test ! -e own/r && test ! -e own/mine.h5
"$TORREWAVE" run nosnap.cfg -o own/r -q 2>/dev/null
cmp own/r.xdmf own.keep && cmp own/mine.xdmf mine.keep
# ... but an output that holds no snapshot writes no sidecar, so such a file is none of its business:
# `reference` (its file has no snapshots) and a run whose snapshots.every is beyond the last step run
# and leave it (both refused it: "refusing to replace it", a file they would not have replaced)
const=(--set 'model={type="constant";vp=2000.0;}')
"$TORREWAVE" reference snap.cfg -o own/mine.h5 -q "${const[@]}" 2> own.txt ||
  { cat own.txt; echo "FAIL: reference refused a foreign own/mine.xdmf it writes no sidecar over"; exit 1; }
"$TORREWAVE" run snap.cfg -o own/late.h5 -q --set snapshots.every=61 2> own.txt && rm own/late.h5 &&
  cp own/mine.xdmf own/late.xdmf && "$TORREWAVE" run snap.cfg -o own/late.h5 -q --set snapshots.every=61 2> own.txt ||
  { cat own.txt; echo "FAIL: a run writing no snapshot refused a foreign own/late.xdmf"; exit 1; }
cmp own/mine.xdmf mine.keep && cmp own/late.xdmf mine.keep && test -e own/mine.h5 && test -e own/late.h5
echo "xdmf: ok"
