#!/usr/bin/env python3
"""Plot a torrewave result file (DESIGN §5 layout) to PNG files.

    plot.py RUN.h5 --out PREFIX [--ref REF.h5] [--receivers 0,5,9] [--slice y=1500] [--clip 99]

writes, for what the file holds:
    PREFIX-gather.png     the shot gather: traces as an image, receiver (or offset) by time
    PREFIX-traces.png     a few traces; with --ref, overlaid on the reference (e.g. the output of
                          `torrewave reference`) with their difference x10
    PREFIX-snapshots.png  each snapshot as a slice through a plane (default: the y plane through
                          the first source; --slice x=..., y=... or z=... in metres)

Needs python3 with h5py, numpy and matplotlib (Debian: apt-get install python3-h5py
python3-matplotlib). Draws off-screen (Agg), so it runs without a display.
"""
import argparse
import os
import sys

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    """The parts of a result file the plots need, as numpy arrays."""
    f = h5py.File(path, "r")
    r = {"path": path, "kernel": f.attrs.get("kernel", b"?"), "file": f}
    if isinstance(r["kernel"], bytes):
        r["kernel"] = r["kernel"].decode()
    if "receivers/traces" in f:
        r["traces"] = f["receivers/traces"][...]
        r["coords"] = f["receivers/coords"][...]
        r["sdt"] = float(f["receivers/traces"].attrs["dt"])
    if "sources/coords" in f:
        r["sources"] = f["sources/coords"][...]
    if "snapshots/p" in f:
        g = f["snapshots"]
        r["snap"] = f["snapshots/p"]
        r["snap_times"] = f["snapshots/times"][...]
        r["snap_steps"] = f["snapshots/steps"][...]
        r["snap_origin"] = np.asarray(g.attrs["origin"], dtype=float)
        r["snap_spacing"] = np.asarray(g.attrs["spacing"], dtype=float)
    return r


def line_axis(coords):
    """Label and positions along a receiver line: the coordinate that varies most when the
    receivers are evenly spaced along it (an image needs even spacing), else the index."""
    span = coords.max(axis=0) - coords.min(axis=0)
    a = int(np.argmax(span))
    pos = np.sort(coords[:, a])
    steps = np.diff(pos)
    if span[a] <= 0 or len(pos) < 2 or np.abs(steps - steps.mean()).max() > 1e-6 * span[a]:
        return "receiver", np.arange(len(coords), dtype=float)
    return "xyz"[a] + " (m)", coords[:, a]


def plot_gather(r, out, clip):
    tr = r["traces"]
    t = np.arange(tr.shape[1]) * r["sdt"]
    label, pos = line_axis(r["coords"])
    order = np.argsort(pos, kind="stable")
    v = np.percentile(np.abs(tr), clip) or 1.0
    fig, ax = plt.subplots(figsize=(8, 6))
    extent = [pos[order][0], pos[order][-1], t[-1], t[0]]
    im = ax.imshow(tr[order].T, aspect="auto", cmap="seismic", vmin=-v, vmax=v, extent=extent,
                   interpolation="bilinear")
    for s in r.get("sources", []):
        a = "xyz".index(label[0]) if label[0] in "xyz" else None
        if a is not None:
            ax.axvline(s[a], color="k", lw=0.6, ls=":")
    ax.set_xlabel(label)
    ax.set_ylabel("time (s)")
    ax.set_title(f"shot gather: {os.path.basename(r['path'])} ({len(tr)} receivers, clip {clip:g}th percentile)")
    fig.colorbar(im, ax=ax, label="p")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def pick_receivers(r, spec, count=6):
    if spec:
        return [int(s) for s in spec.split(",")]
    n = len(r["traces"])
    return sorted(set(np.linspace(0, n - 1, min(n, count)).round().astype(int).tolist()))


def match(ref, xyz):
    """Index of the reference receiver at coordinates xyz (compare pairs the same way), or None."""
    d = np.abs(ref["coords"] - xyz).max(axis=1)
    k = int(np.argmin(d))
    return k if d[k] <= 1e-6 * max(1.0, np.abs(xyz).max()) else None


def plot_traces(r, ref, out, spec):
    idx = pick_receivers(r, spec)
    t = np.arange(r["traces"].shape[1]) * r["sdt"]
    fig, axes = plt.subplots(len(idx), 1, figsize=(9, 1.7 * len(idx) + 0.8), sharex=True, squeeze=False)
    src = r.get("sources")
    for ax, i in zip(axes[:, 0], idx):
        xyz = r["coords"][i]
        lw, alpha = (3.0, 0.55) if ref is not None else (1.2, 1.0)  # wide under the dashed reference
        ax.plot(t, r["traces"][i], color="C0", lw=lw, alpha=alpha, label=f"{r['kernel']}")
        title = f"receiver {i} at ({xyz[0]:g}, {xyz[1]:g}, {xyz[2]:g}) m"
        if src is not None and len(src):
            title += f", {np.linalg.norm(xyz - src[0]):.0f} m from the source"
        if ref is not None:
            k = match(ref, xyz)
            if k is not None:
                n = min(len(t), ref["traces"].shape[1])
                a, b = r["traces"][i][:n], ref["traces"][k][:n]
                ax.plot(t[:n], b, color="k", lw=1.0, ls="--", label=f"{ref['kernel']}")
                ax.plot(t[:n], 10 * (a - b), color="C3", lw=0.8, label="difference x10")
                rel = np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-300)
                title += f": rel L2 {rel:.2e}"
        ax.set_title(title, fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
        ax.set_ylabel("p", fontsize=8)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def slice_plane(r, spec):
    """Axis (0, 1, 2) and index of the slice through the snapshots."""
    o, d, shape = r["snap_origin"], r["snap_spacing"], r["snap"].shape[1:]
    if spec:
        name, _, val = spec.partition("=")
        a = "xyz".index(name.strip())
        value = float(val)
    else:
        a = 1
        value = r["sources"][0][1] if "sources" in r and len(r["sources"]) else o[1] + d[1] * (shape[1] // 2)
    k = int(round((value - o[a]) / d[a]))
    return a, min(max(k, 0), shape[a] - 1)


def plot_snapshots(r, out, spec, clip, marks=()):
    a, k = slice_plane(r, spec)
    o, d = r["snap_origin"], r["snap_spacing"]
    shape = r["snap"].shape[1:]
    keep = [b for b in range(3) if b != a]  # the two in-plane axes, in x, y, z order
    n = len(r["snap_times"])
    cols = 2 if n == 4 else min(n, 3)
    rows = (n + cols - 1) // cols
    # Panels keep the plane's aspect ratio (equal axes), plus room for titles and labels.
    h_ax, w_ax = keep
    aspect = (shape[w_ax] * d[w_ax]) / (shape[h_ax] * d[h_ax])
    pw = 5.0 if cols <= 2 else 4.4
    ph = min(max(pw * aspect, 1.5), 6.0) + 0.9
    fig, axes = plt.subplots(rows, cols, figsize=(pw * cols, ph * rows + 0.5), squeeze=False)
    planes = [np.take(r["snap"][s], k, axis=a) for s in range(n)]
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    for s, (ax, pl) in enumerate(zip(axes.ravel(), planes)):
        v = np.percentile(np.abs(pl), clip) or 1.0
        h, w = keep  # image rows: the deeper axis (z when it is in the plane) goes down
        ext = [o[h] - d[h] / 2, o[h] + d[h] * (shape[h] - 0.5), o[w] + d[w] * (shape[w] - 0.5), o[w] - d[w] / 2]
        ax.imshow(pl.T, cmap="seismic", vmin=-v, vmax=v, extent=ext, aspect="equal", interpolation="bilinear")
        ax.set_xlabel(f"{'xyz'[h]} (m)", fontsize=8)
        ax.set_ylabel("depth z (m)" if w == 2 else f"{'xyz'[w]} (m)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title(f"step {r['snap_steps'][s]}, t = {r['snap_times'][s]:.3f} s", fontsize=9)
        for z in marks if w == 2 else ():
            ax.axhline(z, color="0.3", lw=0.7, ls="--")
        for src in r.get("sources", []):
            ax.plot(src[h], src[w], "k*", ms=7)
        if "coords" in r:
            c = r["coords"]
            near = np.abs(c[:, a] - (o[a] + k * d[a])) <= d[a]
            ax.plot(c[near, h], c[near, w], "v", color="g", ms=2.5, ls="none")
    fig.suptitle(f"{os.path.basename(r['path'])}: p on the plane {'xyz'[a]} = {o[a] + k * d[a]:g} m "
                 f"(each panel clipped at its {clip:g}th percentile)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("result", help="result file (torrewave run or reference)")
    p.add_argument("--out", required=True, help="prefix of the PNG files (PREFIX-gather.png, ...)")
    p.add_argument("--ref", help="a second result to overlay on the traces (e.g. torrewave reference)")
    p.add_argument("--receivers", help="receiver indices for the trace plot, e.g. 0,10,20 (default: 6 spread out)")
    p.add_argument("--slice", help="snapshot plane: x=..., y=... or z=... in metres (default: y through the source)")
    p.add_argument("--clip", type=float, default=99.0, help="colour scale clip percentile of |p| (default 99)")
    p.add_argument("--lines-z", help="depths (m) to mark on snapshot slices, e.g. layer tops 200,400")
    p.add_argument("--no-gather", action="store_true", help="skip the gather image")
    a = p.parse_args(argv)
    r = load(a.result)
    ref = load(a.ref) if a.ref else None
    made = []
    if "traces" in r and len(r["traces"]):
        if len(r["traces"]) > 1 and not a.no_gather:
            made.append(plot_gather(r, a.out + "-gather.png", a.clip))
        made.append(plot_traces(r, ref, a.out + "-traces.png", a.receivers))
    if "snap" in r and len(r["snap_times"]):
        marks = [float(v) for v in a.lines_z.split(",")] if a.lines_z else []
        made.append(plot_snapshots(r, a.out + "-snapshots.png", a.slice, a.clip, marks))
    if not made:
        sys.exit(f"plot.py: {a.result} holds no traces and no snapshots")
    for m in made:
        print(m)


if __name__ == "__main__":
    main()
