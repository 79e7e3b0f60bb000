#!/usr/bin/env bash
# ParaView opens the XDMF sidecar the right way up (io/xdmf.c). Runs where ParaView's pvpython
# (or pvbatch) is installed (Debian: apt-get install paraview python3-paraview; ~600 MB, so CI
# does not), skipped with a message elsewhere. With the reader `paraview OUT.xdmf` picks by
# default (OpenDataFile), and with each of Xdmf3ReaderS, Xdmf3ReaderT and the legacy XDMF Reader,
# at every time step: p and vp are read, the grid's bounds are x, y and -depth in metres (ParaView
# X, Y, Z; Z = -depth puts the surface on top), and at sample points (corners and inside) the
# point's coordinates are (x_i, y_j, -z_k) and its p is p at model cell (i, j, k) of the HDF5 file.
# Also: an output name with a space, '&' and non-ASCII characters opens.
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pv=""
for c in pvpython pvbatch; do command -v "$c" >/dev/null 2>&1 && { pv=$c; break; }; done
if [ -z "$pv" ]; then echo "SKIP: no pvpython/pvbatch (Debian: apt-get install paraview python3-paraview)"; exit 77; fi
py=""
for c in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import h5py, numpy' 2>/dev/null; then py=$c; break; fi
done
if [ -z "$py" ]; then echo "SKIP: no python3 with h5py and numpy (apt-get install python3-h5py)"; exit 77; fi

cd "$tmp"
cp "$TW_SOURCE_DIR/tests/cli/snapshots.cfg" snap.cfg
"$TORREWAVE" run snap.cfg -q
"$TORREWAVE" run snap.cfg -q -o 'a b&é.h5'

# Expectations from the HDF5 file, in model order p[s][i][j][k] and x_i, y_j, z_k.
"$py" - <<'PY'
import json, h5py, numpy as np
f = h5py.File("snap.h5", "r")
p = f["snapshots/p"][...].transpose(0, 3, 2, 1)          # [nsnap][nz][ny][nx] -> [nsnap][nx][ny][nz]
g = f["snapshots"].attrs
o, d, n = g["origin"], g["spacing"], p.shape[1:]
lo, dec = g["first_cell"], int(g["decimate"])
vp = f["model/vp"][...].transpose(2, 1, 0)[lo[0]::dec, lo[1]::dec, lo[2]::dec][:n[0], :n[1], :n[2]]
pts = [(0, 0, 0), (n[0] - 1, 0, 0), (0, n[1] - 1, 0), (0, 0, n[2] - 1), (n[0] - 1, n[1] - 1, n[2] - 1),
       (n[0] // 2, n[1] // 3, n[2] // 2), (3, 7, 5)]
# the sample points of the last snapshot include its largest |p| (a wave, not zeros)
pts.append(tuple(int(v) for v in np.unravel_index(np.abs(p[-1]).argmax(), n)))
json.dump({"times": f["snapshots/times"][:].tolist(), "n": list(n),
           "xyz": [(o[a] + d[a] * np.arange(n[a])).tolist() for a in range(3)],
           "pts": pts, "p": [[float(p[s][q]) for q in pts] for s in range(len(p))],
           "vp": [float(vp[q]) for q in pts],
           "range": [[float(p[s].min()), float(p[s].max())] for s in range(len(p))]}, open("expect.json", "w"))
PY

cat > pv.py <<'PY'
import json, os
from paraview import simple
from paraview.simple import servermanager
e = json.load(open("expect.json"))
nx, ny, nz = e["n"]
xs, ys, zs = e["xyz"]

def check(reader, label):
    ts = list(reader.TimestepValues)
    assert len(ts) == len(e["times"]) and all(abs(a - b) < 1e-9 for a, b in zip(ts, e["times"])), (label, ts)
    for s, t in enumerate(ts):
        reader.UpdatePipeline(t)
        d = servermanager.Fetch(reader)
        if d.IsA("vtkMultiBlockDataSet"):
            d = d.GetBlock(0)
        p, vp = d.GetPointData().GetArray("p"), d.GetPointData().GetArray("vp")
        assert p is not None and vp is not None, f"{label}: no p or vp at t = {t}"
        assert tuple(d.GetDimensions()) == (nx, ny, nz), (label, d.GetDimensions())
        want = (xs[0], xs[-1], ys[0], ys[-1], -zs[-1], -zs[0])
        assert all(abs(a - b) < 1e-6 for a, b in zip(d.GetBounds(), want)), (label, d.GetBounds(), want)
        lo, hi = p.GetRange()
        assert abs(lo - e["range"][s][0]) <= 1e-6 * abs(lo) + 1e-30 and abs(hi - e["range"][s][1]) <= 1e-6 * abs(hi) + 1e-30
        for q, (i, j, k) in enumerate(e["pts"]):
            pid = i + nx * (j + ny * k)          # VTK: X fastest
            xyz = d.GetPoint(pid)
            assert all(abs(a - b) < 1e-6 for a, b in zip(xyz, (xs[i], ys[j], -zs[k]))), (label, (i, j, k), xyz)
            assert p.GetValue(pid) == e["p"][s][q], (label, t, (i, j, k), p.GetValue(pid), e["p"][s][q])
            assert vp.GetValue(pid) == e["vp"][q], (label, (i, j, k), vp.GetValue(pid), e["vp"][q])
    print(f"ok: {label}: {len(ts)} time steps, p and vp on X = x [{xs[0]:g}, {xs[-1]:g}], Y = y [{ys[0]:g}, "
          f"{ys[-1]:g}], Z = -depth [{-zs[-1]:g}, {-zs[0]:g}] m, {len(e['pts'])} points match the HDF5 file")

path = os.path.abspath("snap.xdmf")
default = simple.OpenDataFile(path)
name = default.GetXMLName()
assert name in ("Xdmf3ReaderS", "Xdmf3ReaderT"), f"ParaView's default reader for .xdmf is {name}"
check(default, f"default reader ({name})")
check(simple.Xdmf3ReaderS(FileName=[path]), "Xdmf3ReaderS")
check(simple.Xdmf3ReaderT(FileName=[path]), "Xdmf3ReaderT")
legacy = simple.XDMFReader(FileNames=[path])
legacy.PointArrayStatus = ["p", "vp"]
check(legacy, "XDMF Reader (legacy)")
odd = simple.Xdmf3ReaderS(FileName=[os.path.abspath("a b&\u00e9.xdmf")])
odd.UpdatePipeline(odd.TimestepValues[-1])
d = servermanager.Fetch(odd)
assert d.GetPointData().GetArray("p") is not None, "the file named 'a b&\u00e9' has no p in ParaView"
print("ok: 'a b&\u00e9.xdmf' opens with p")
print("paraview: ok")
PY
"$pv" pv.py > pv.txt 2>&1 || { cat pv.txt; echo "FAIL: $pv"; exit 1; }
cat pv.txt
# The Xdmf3 readers print this when they skip an array (an XDMF hyperslab, for one).
if grep -q "unrecognized array type" pv.txt; then echo "FAIL: ParaView skipped an array"; exit 1; fi
