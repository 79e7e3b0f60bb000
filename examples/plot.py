#!/usr/bin/env python3
"""Plot a torrewave result file to PNG files, as a geophysicist reads them.

    plot.py RUN.h5 --out PREFIX [--ref REF.h5] [--receivers 0,5,9] [--slice y=1500]
            [--clip 99] [--panel-clip] [--gain none|t2|agc] [--agc-window 0.1] [--wiggle]
            [--time-slice 0.3,0.5] [--lines-z 200,400] [--only gather,traces,...] [--no-gather]

writes, for what the file holds:
    PREFIX-gather.png      the shot gather: receivers along a line by their position on it, any
                           other layout (points, areal grids) by signed horizontal offset; as an
                           image, or with --wiggle as wiggle traces; --gain t2 or agc
    PREFIX-traces.png      a few traces; with --ref, overlaid on the reference (e.g. the output of
                           `torrewave reference`) with their difference x10
    PREFIX-timeslice.png   receivers on an areal x-y grid: maps of p at a few times (--time-slice)
    PREFIX-snapshots.png   each snapshot on one plane (default: the vertical plane y through the
                           first source; --slice x=..., y=... or z=... in metres), all panels on one
                           colour scale (--panel-clip: each its own); map views (z=...) with y up

Units: p in Pa for a source strength s(t) in kg/s^2 (a wavelet of amplitude 1; see README.md
"Output"), times in s, lengths in m. Needs python3 with h5py, numpy and matplotlib (Debian:
apt-get install python3-h5py python3-matplotlib). Draws off-screen (Agg): no display needed.
"""
import argparse
import os
import sys

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

P_LABEL = "p (Pa)"


def warn(msg):
    print(f"plot.py: warning: {msg}", file=sys.stderr)


def load(path):
    """The parts of a result file the plots need, as numpy arrays (snapshots stay on disk)."""
    f = h5py.File(path, "r")
    s = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    r = {"path": path, "kernel": s(f.attrs.get("kernel", "?")), "file": f,
         "free_surface": int(f.attrs.get("free_surface", 0)),
         "top": float(np.asarray(f.attrs.get("origin", [0, 0, 0]))[2])}
    if "receivers/traces" in f:
        r["traces"] = f["receivers/traces"][...]
        r["coords"] = f["receivers/coords"][...]
        r["sdt"] = float(f["receivers/traces"].attrs["dt"])
    if "sources/coords" in f:
        r["sources"] = f["sources/coords"][...]
    if "snapshots/p" in f:
        g, p = f["snapshots"], f["snapshots/p"]
        r["snap"] = p
        # files since the ParaView layout store [nsnap][nz][ny][nx] and say so; older ones [nx][ny][nz]
        r["snap_zyx"] = s(p.attrs.get("axes", "")) == "snapshot z y x"
        r["snap_shape"] = p.shape[1:][::-1] if r["snap_zyx"] else p.shape[1:]
        r["snap_times"] = f["snapshots/times"][...]
        r["snap_steps"] = f["snapshots/steps"][...]
        r["snap_origin"] = np.asarray(g.attrs["origin"], dtype=float)
        r["snap_spacing"] = np.asarray(g.attrs["spacing"], dtype=float)
    return r


def plane(r, s, a, k):
    """Snapshot s on the plane of model axis a (0 x, 1 y, 2 z) at index k, as [first][second]
    of the two remaining axes in x, y, z order; reads only that plane from the file."""
    if r["snap_zyx"]:
        idx = [s, slice(None), slice(None), slice(None)]
        idx[3 - a] = k
        return np.asarray(r["snap"][tuple(idx)]).T  # remaining file axes are reversed: transpose
    idx = [s, slice(None), slice(None), slice(None)]
    idx[1 + a] = k
    return np.asarray(r["snap"][tuple(idx)])


# ---------------------------------------------------------------- receiver layouts

def line_axis(coords):
    """(label, positions) when the receivers lie evenly spaced on a straight line parallel to an
    axis, else None."""
    if len(coords) < 2:
        return None
    span = coords.max(axis=0) - coords.min(axis=0)
    a = int(np.argmax(span))
    if span[a] <= 0 or any(span[b] > 1e-9 * span[a] for b in range(3) if b != a):
        return None
    pos = np.sort(coords[:, a])
    steps = np.diff(pos)
    if np.abs(steps - steps.mean()).max() > 1e-6 * span[a]:
        return None
    return ("x", "y", "depth z")[a] + " (m)", coords[:, a]


def areal_grid(coords):
    """(xs, ys, index[ny][nx]) when the receivers (or a subset at one depth) form a full regular
    x-y grid of at least 2 x 2, else None."""
    for z in np.unique(coords[:, 2]):
        sel = np.flatnonzero(coords[:, 2] == z)
        xs, ys = np.unique(coords[sel, 0]), np.unique(coords[sel, 1])
        if len(xs) >= 2 and len(ys) >= 2 and len(xs) * len(ys) == len(sel):
            idx = np.empty((len(ys), len(xs)), dtype=int)
            idx[np.searchsorted(ys, coords[sel, 1]), np.searchsorted(xs, coords[sel, 0])] = sel
            return xs, ys, z, idx
    return None


def signed_offset(coords, src):
    """Horizontal source-receiver distance, negative where the receiver lies at smaller x (at
    equal x: smaller y): the convention of torrewave's SEG-Y offset header."""
    dx, dy = coords[:, 0] - src[0], coords[:, 1] - src[1]
    sign = np.where((dx < 0) | ((dx == 0) & (dy < 0)), -1.0, 1.0)
    return sign * np.hypot(dx, dy)


def gather_axis(r):
    """(label, position of each receiver) for the gather's horizontal axis."""
    la = line_axis(r["coords"])
    if la:
        return la
    src = r["sources"][0] if "sources" in r and len(r["sources"]) else np.zeros(3)
    return "signed offset (m)", signed_offset(r["coords"], src)


# ---------------------------------------------------------------- gain

def apply_gain(tr, sdt, gain, window):
    """t2: p·t² (spherical divergence and absorption, roughly); agc: p divided by its RMS over a
    sliding window of `window` seconds (each trace on its own)."""
    t = np.arange(tr.shape[1]) * sdt
    if gain == "t2":
        return tr * t ** 2, "p t^2 (Pa s^2)"
    if gain == "agc":
        n = max(3, int(round(window / sdt)) | 1)
        kernel = np.ones(n) / n
        rms = np.sqrt(np.apply_along_axis(lambda x: np.convolve(x * x, kernel, mode="same"), 1, tr.astype(float)))
        floor = 1e-6 * max(rms.max(), 1e-300)
        return tr / np.maximum(rms, floor), f"p / RMS over {n * sdt:.3g} s (AGC, no unit)"
    return tr, P_LABEL


def edges(pos):
    """Cell edges around sorted positions (for pcolormesh with uneven spacing)."""
    if len(pos) == 1:
        return np.array([pos[0] - 0.5, pos[0] + 0.5])
    mid = (pos[1:] + pos[:-1]) / 2
    return np.concatenate([[2 * pos[0] - mid[0]], mid, [2 * pos[-1] - mid[-1]]])


def plot_gather(r, out, a):
    tr, label = apply_gain(r["traces"], r["sdt"], a.gain, a.agc_window)
    t = np.arange(tr.shape[1]) * r["sdt"]
    xlabel, pos = gather_axis(r)
    order = np.argsort(pos, kind="stable")
    pos, tr = pos[order], tr[order]
    v = np.percentile(np.abs(tr), a.clip) or 1.0
    fig, ax = plt.subplots(figsize=(8, 6))
    if a.wiggle:
        keep = np.arange(0, len(pos), max(1, len(pos) // 120))  # at most ~120 wiggles
        gap = (pos[-1] - pos[0]) / (len(keep) - 1) if len(keep) > 1 and pos[-1] > pos[0] else 1.0  # mean spacing
        for i in keep:
            w = np.clip(tr[i] / v, -1.5, 1.5) * gap * 0.9
            ax.plot(pos[i] + w, t, color="k", lw=0.4)
            ax.fill_betweenx(t, pos[i], pos[i] + w, where=w > 0, color="k", lw=0)
        ax.set_xlim(pos[0] - gap, pos[-1] + gap)
        ax.set_ylim(t[-1], t[0])
        style = f"wiggles, clip {v:.3g} = 0.9 trace spacing"
    else:
        im = ax.pcolormesh(edges(pos), edges(t), tr.T, cmap="seismic", vmin=-v, vmax=v, shading="flat")
        ax.set_ylim(t[-1] + r["sdt"] / 2, t[0] - r["sdt"] / 2)
        fig.colorbar(im, ax=ax, label=label, extend="both")
        style = "image"
    for s in r.get("sources", [])[:1]:
        x0 = s["xyz".index(xlabel[0])] if xlabel[0] in "xy" else 0.0 if "offset" in xlabel else None
        if x0 is not None:
            ax.axvline(x0, color="0.3", lw=0.6, ls=":")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("time (s)")
    gain = {"none": "no gain", "t2": "gain t^2", "agc": "AGC"}[a.gain]
    ax.set_title(f"shot gather: {os.path.basename(r['path'])}, {len(tr)} receivers ({style}, {gain}, "
                 f"clip {a.clip:g}th percentile)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- traces

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
        ax.set_ylabel(P_LABEL, fontsize=8)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- areal receiver grids

def plot_time_slices(r, out, grid, spec, a):
    xs, ys, z, idx = grid
    tr = r["traces"]
    nt = tr.shape[1]
    if spec:
        times = [float(v) for v in spec.split(",")]
    else:  # four times spread over the record
        times = [q * (nt - 1) * r["sdt"] for q in (0.2, 0.4, 0.6, 0.8)]
    steps = [min(max(int(round(t / r["sdt"])), 0), nt - 1) for t in times]
    maps = [tr[idx, s] for s in steps]
    v = np.percentile(np.abs(np.array(maps)), a.clip) or 1.0
    cols = min(len(maps), 4)
    rows = (len(maps) + cols - 1) // cols
    aspect = (ys[-1] - ys[0]) / max(xs[-1] - xs[0], 1e-9)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols + 1.2, min(max(3.6 * aspect, 1.8), 6) * rows + 0.8),
                             squeeze=False, constrained_layout=True)
    for ax in axes.ravel()[len(maps):]:
        ax.axis("off")
    for ax, m, s in zip(axes.ravel(), maps, steps):
        im = ax.pcolormesh(edges(xs), edges(ys), m, cmap="seismic", vmin=-v, vmax=v, shading="flat")
        ax.set_aspect("equal")  # y up: pcolormesh puts larger y higher
        ax.set_xlabel("x (m)", fontsize=8)
        ax.set_ylabel("y (m)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title(f"t = {s * r['sdt']:.3f} s", fontsize=9)
        for src in r.get("sources", []):
            ax.plot(src[0], src[1], "k*", ms=7)
    fig.colorbar(im, ax=axes.ravel().tolist(), label=P_LABEL, extend="both", shrink=0.9)
    fig.suptitle(f"{os.path.basename(r['path'])}: p on the receiver grid at depth {z:g} m "
                 f"({len(xs)} x {len(ys)} receivers, one colour scale)", fontsize=10)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- snapshots

def slice_plane(r, spec):
    """Axis (0, 1, 2) and index of the slice through the snapshots; moved off the free-surface
    plane (p = 0 there by construction) with a warning."""
    o, d, shape = r["snap_origin"], r["snap_spacing"], r["snap_shape"]
    if spec:
        name, _, val = spec.partition("=")
        a = "xyz".index(name.strip())
        value = float(val)
    else:
        a = 1
        value = r["sources"][0][1] if "sources" in r and len(r["sources"]) else o[1] + d[1] * (shape[1] // 2)
    k = min(max(int(round((value - o[a]) / d[a])), 0), shape[a] - 1)
    if a == 2 and r["free_surface"] and abs(o[2] + k * d[2] - r["top"]) < 1e-6 * d[2]:
        if shape[2] > 1:
            warn(f"z = {o[2] + k * d[2]:g} m is the free surface, where p = 0 by construction: showing the "
                 f"next plane, z = {o[2] + (k + 1) * d[2]:g} m (choose another with --slice z=...)")
            k += 1
        else:
            warn(f"the snapshots hold only the free-surface plane z = {r['top']:g} m, where p = 0")
    return a, k


def plot_snapshots(r, out, spec, clip, per_panel, marks=()):
    a, k = slice_plane(r, spec)
    o, d, shape = r["snap_origin"], r["snap_spacing"], r["snap_shape"]
    h, w = [b for b in range(3) if b != a]  # image columns, rows (z goes down, y goes up)
    n = len(r["snap_times"])
    cols = 2 if n == 4 else min(n, 3)
    rows = (n + cols - 1) // cols
    aspect = (shape[w] * d[w]) / (shape[h] * d[h])
    pw = 5.0 if cols <= 2 else 4.4
    ph = min(max(pw * aspect, 1.5), 6.0) + 0.9
    fig, axes = plt.subplots(rows, cols, figsize=(pw * cols + (0 if per_panel else 1.0), ph * rows + 0.5),
                             squeeze=False, constrained_layout=True)
    planes = [plane(r, s, a, k) for s in range(n)]
    common = np.percentile(np.abs(np.array(planes)), clip) or 1.0
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    depth = w == 2
    for s, (ax, pl) in enumerate(zip(axes.ravel(), planes)):
        v = (np.percentile(np.abs(pl), clip) or 1.0) if per_panel else common
        top, bottom = o[w] - d[w] / 2, o[w] + d[w] * (shape[w] - 0.5)
        ext = [o[h] - d[h] / 2, o[h] + d[h] * (shape[h] - 0.5)] + ([bottom, top] if depth else [top, bottom])
        im = ax.imshow(pl.T, cmap="seismic", vmin=-v, vmax=v, extent=ext, aspect="equal", interpolation="bilinear",
                       origin="upper" if depth else "lower")
        ax.set_xlabel(f"{'xyz'[h]} (m)", fontsize=8)
        ax.set_ylabel("depth z (m)" if depth else f"{'xyz'[w]} (m)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title(f"step {r['snap_steps'][s]}, t = {r['snap_times'][s]:.3f} s", fontsize=9)
        if per_panel:
            fig.colorbar(im, ax=ax, label=P_LABEL, extend="both", shrink=0.85)
        for z in marks if depth else ():
            ax.axhline(z, color="0.3", lw=0.7, ls="--")
        for src in r.get("sources", []):
            ax.plot(src[h], src[w], "k*", ms=7)
        if "coords" in r:
            c = r["coords"]
            near = np.abs(c[:, a] - (o[a] + k * d[a])) <= d[a]
            ax.plot(c[near, h], c[near, w], "v", color="g", ms=2.5 if near.sum() <= 200 else 1.0, ls="none")
    if not per_panel:
        fig.colorbar(im, ax=axes.ravel().tolist(), label=P_LABEL, extend="both", shrink=0.9)
    scale = (f"each panel clipped at its {clip:g}th percentile" if per_panel
             else f"one colour scale, clip {common:.3g} Pa")
    fig.suptitle(f"{os.path.basename(r['path'])}: p on the plane {'xyz'[a]} = {o[a] + k * d[a]:g} m ({scale})",
                 fontsize=10)
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
    p.add_argument("--panel-clip", action="store_true", help="snapshots: each panel its own colour scale")
    p.add_argument("--gain", choices=("none", "t2", "agc"), default="none", help="gather gain (default none)")
    p.add_argument("--agc-window", type=float, default=0.1, help="AGC window in seconds (default 0.1)")
    p.add_argument("--wiggle", action="store_true", help="gather as wiggle traces instead of an image")
    p.add_argument("--time-slice", help="times (s) of the receiver-grid maps, e.g. 0.3,0.5 (default: four)")
    p.add_argument("--lines-z", help="depths (m) to mark on vertical snapshot slices, e.g. layer tops 200,400")
    p.add_argument("--no-gather", action="store_true", help="skip the gather image")
    p.add_argument("--only", help="draw only these: a comma list of gather, traces, timeslice, snapshots")
    a = p.parse_args(argv)
    want = set(a.only.split(",")) if a.only else {"gather", "traces", "timeslice", "snapshots"}
    if a.no_gather:
        want.discard("gather")
    if not os.path.exists(a.result):
        sys.exit(f"plot.py: {a.result}: no such file")
    r = load(a.result)
    ref = load(a.ref) if a.ref else None
    made = []
    if "traces" in r and len(r["traces"]):
        if len(r["traces"]) > 1 and "gather" in want:
            made.append(plot_gather(r, a.out + "-gather.png", a))
        if "traces" in want:
            made.append(plot_traces(r, ref, a.out + "-traces.png", a.receivers))
        grid = areal_grid(r["coords"]) if "timeslice" in want else None
        if grid is not None:
            made.append(plot_time_slices(r, a.out + "-timeslice.png", grid, a.time_slice, a))
    if "snap" in r and len(r["snap_times"]) and "snapshots" in want:
        marks = [float(v) for v in a.lines_z.split(",")] if a.lines_z else []
        made.append(plot_snapshots(r, a.out + "-snapshots.png", a.slice, a.clip, a.panel_clip, marks))
    if not made:
        sys.exit(f"plot.py: {a.result} holds no traces and no snapshots")
    for m in made:
        print(m)


if __name__ == "__main__":
    main()
