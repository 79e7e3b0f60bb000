#!/usr/bin/env python3
"""scripts/fuzz/jobs.py — an adversarial corpus of job files for the CPU kernels (--gpu: and the GPU kernels).

Writes valid but unusual jobs — tiny grids (one cell, n below the stencil, 1-cell-thick axes), flat,
tall, odd and prime sizes, x or y the longer axis; orders 2–8; absorbing layers from none to wider
than the model; free surface on and off; sources and receivers on the model's edges and corners and
just under the free surface, trilinear and nearest, 40 receivers on one cell, 7 sources in one
column; receiver intervals of 1 up to beyond the last step, lines and grids; snapshots decimated, in
boxes of one cell at the model's corners; 1-step runs and runs that end inside a time block;
constant, layered, gradient, raw and HDF5 models, wavelet files; unequal spacings; a grid far from
its origin in cells (UTM coordinates, 10 cm cells); the extremes of velocities, frequencies and
delays — and runs each one as the reference (cpu, 1 thread) and as:

  cpu with 2 threads; cpu-diamond with 1 and 2 threads at its default tile and height, at small and
  odd solver.dts / solver.tower_height, at the largest (R = 256, 65536 steps), with checkpoints
  every k steps; kernel auto; cpu with a cap (ignored); and cpu-diamond through the sliding window:
  solver.device_memory at the smallest cap `torrewave check` names, with the default height (lowered
  to fit) and with heights given.

For every job it checks (docs/design.md §1.7, §3, §10):
  1. every variant runs, or every variant refuses with exit status 1 and a message that starts with
     where (file:line or the --set) and names the key; `check` agrees with `run` (a run whose field
     overflows is the exception `check` cannot see, unless check called its sources silent);
  2. every output holds the reference's numbers bit for bit: `torrewave compare --strict --rtol
     1e-30` and h5diff on traces, snapshots, steps, cells and wavelets; the same datasets and shapes;
     the smallest cap runs and one byte less is refused;
  3. the reference's shapes: receivers x samples (sample 0 zero, every value finite), every listed
     snapshot step written, the whole model's snapshot n cells a side, no box past the model;
  4. no run outlives 60 s (ASan: 600 s) or dies on a signal; with --asan, every N-th job runs again
     under the ASan + UBSan build, whose output must hold no sanitizer report (libgomp's own thread
     pool, reported now and then at exit, is suppressed) and the same numbers;
  5. no temporaries are left; a refused run leaves no output, and a file in the output's place that
     a run must not replace (the job file, a hard link of it, a symbolic link, a folder) or that a
     refused, overflowing or interrupted run names stays as it was.
With --gpu (on a machine with a GPU) every job also runs (--gpu add) or runs only (--gpu only, the
reference still cpu) on: gpu-stepwise, gpu-diamond as it chooses and auto; its register towers
forced (TW_DIAMOND_MODE=persistent twice and stage once, random dts and heights; one z cell a thread
at orders 2-4), its generic tower, checkpoints every k steps; gpu-stepwise and gpu-diamond through
the window at the smallest cap (check names the GPU's about: a run there names the kernel's own;
one byte less refused), towers forced there, one of them one stage a launch; kills resumed on a GPU
kernel; mirror images and snapshot regions on gpu-diamond; surveys on both GPU kernels (two
workers on the one GPU). --gpu only leaves out what does not depend on the kernel (invalid jobs,
signals, the model fed back, SEG-Y, foreign files, a survey's inputs and restart).
Besides: mirror images (x and y exchanged: the same numbers transposed, §1.7 rule 9); the model
stored by output.model fed back as hdf5 and raw models (the analytic model's bits); output.segy and
export; a third of the jobs killed (TW_CHECKPOINT_CRASH_AFTER) while writing their second checkpoint
and resumed on another kernel, thread count or window (the reference's bits, nothing left); surveys
(fixed and moving receivers, shots on the edges and on a line, snapshots, output.model and
output.segy (left out where the build has no segyio), two workers, both kernels, the window)
against single-shot runs, then run again (nothing rerun, no file touched; a shot whose sidecar is
gone alone rerun), --force --shots and --shots into a new folder, and with a wavelet file under a shot's names (its file, sidecar, SEG-Y file, lock,
temporaries; a hard link) refused by check and run naming the shot, the file and the input, nothing
touched; snapshot regions with corners on, near (1e-13 and 1e-5 cells) and between nodes, decimated,
at UTM coordinates: a region with no node on an axis refused by check, run and --set, naming the
axis and from and to as given, else the snapshot is the whole model's at exactly the nodes inside;
files torrewave did not write as OUT.xdmf and (output.segy) OUT.sgy refused by check and run and
left, a copy of ours beside another output refused, our own replaced; SIGTERM with checkpoints
resumed on the other kernel (the uninterrupted run's bits),
SIGINT and kill -9 (an older output kept, temporaries cleared by the next run); and invalid jobs
(bad types, negative and huge sizes, 1e999, misspelled keys, empty lists, mixed arrays, grids beyond
memory, by the file and by --set): exit status 1 or 2, a message with file:line, key, value and what
is allowed, no output, an older output untouched.

Usage: scripts/fuzz/jobs.py [--build build] [--asan build-asan] [--work /tmp/twfuzz] [--cores 2]
                            [--random 200] [--regions 40] [--seed 1] [--only SUBSTRING] [--refusals]
                            [--keep] [--ref-variant base|v3|v4] [--gpu add|only]
--ref-variant NAME runs the reference runs alone (each job's cpu 1-thread run, a survey's single
shots, a region's, the signal checks') with TW_CPU_VARIANT=NAME, every other run on the default
variant (the best the CPU runs): each bitwise comparison is then one across variants too.
The default corpus (about 470 valid jobs, 40 of them snapshot regions, and 86 invalid ones; 19500
runs) takes 8 to 14 minutes on 2 cores shared with other work, with --asan. Exit status 0 when every check held; each failure is listed, its folder kept in
the work folder with the job and the command lines (cmd.txt). Needs python3 and hdf5-tools (h5ls,
h5dump, h5diff), nothing else. Runs at most --cores CPU threads at a time (OMP_WAIT_POLICY=passive).
"""
import argparse
import math
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# LeakSanitizer's suppressions, scripts/test.sh's too: libgomp's thread pool, reported now and then at exit
LSAN_SUPP = os.path.join(ROOT, "tests", "lsan.supp")
TIMEOUT = 60
SANITIZER = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer")
# A refusal names where (file:line, or the --set that gave the value) and then the key.
REFUSAL = re.compile(r"^torrewave: error: \S+?(:\d+| --set [^:]*| -o [^:]*)?: ")

# ----------------------------------------------------------------------------------------- job text


def fmt(v):
    """A value in libconfig syntax: a dict is a group, a list of numbers an array, any other list a
    list; a float always with its point (libconfig tells 10 from 10.0)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        s = repr(v)
        return s if ("." in s or "e" in s or "n" in s) else s + ".0"
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, dict):
        return "{ " + " ".join(f"{k} = {fmt(x)};" for k, x in v.items()) + " }"
    if isinstance(v, list):
        if v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            return "[" + ", ".join(fmt(x) for x in v) + "]"
        return "( " + ", ".join(fmt(x) for x in v) + " )"
    raise TypeError(v)


def render(job):
    """One top-level group a line, so that an error's line names the group."""
    return "".join(f"{k} = {fmt(v)};\n" for k, v in job.items())


def swap_xy(job):
    """The mirror image: x and y exchanged in the grid, the boundary and every position."""
    def sw(v):
        return [v[1], v[0]] + list(v[2:])

    j = {k: (dict(v) if isinstance(v, dict) else v) for k, v in job.items()}
    g = j["grid"]
    for k in ("n", "d", "origin"):
        if k in g:
            g[k] = sw(g[k])
    b = j.get("boundary")
    if b and isinstance(b.get("absorbing"), dict):
        a = b["absorbing"]
        b["absorbing"] = {"x": a["y"], "y": a["x"], "z": a["z"]}
    j["sources"] = [dict(s, position=sw(s["position"])) for s in j["sources"]]
    if "receivers" in j:
        r = j["receivers"]
        if "points" in r:
            r["points"] = [sw(p) for p in r["points"]]
        if "lines" in r:
            r["lines"] = [dict(ln, **{"from": sw(ln["from"]), "to": sw(ln["to"])}) for ln in r["lines"]]
        assert "grids" not in r  # (their receivers would come in another order)
    if "snapshots" in j and "region" in j["snapshots"]:
        reg = j["snapshots"]["region"]
        j["snapshots"]["region"] = {"from": sw(reg["from"]), "to": sw(reg["to"])}
    return j


# ----------------------------------------------------------------------------------------- the corpus


def ricker(f=25.0, **kw):
    return dict({"type": "ricker", "frequency": f}, **kw)


def src(pos, interp=None, w=None):
    s = {"position": [float(x) for x in pos], "wavelet": w or ricker()}
    if interp:
        s["interpolation"] = interp
    return s


def base(n, d=(10.0, 10.0, 10.0), order=8, steps=12, absorbing=3, free=False, model=None, origin=None):
    job = {"grid": {"n": list(n), "d": [float(x) for x in d]}}
    if origin is not None:
        job["grid"]["origin"] = [float(x) for x in origin]
    job["time"] = {"steps": steps}
    job["model"] = model or {"type": "constant", "vp": 2000.0}
    job["scheme"] = {"order": order}
    job["boundary"] = {"absorbing": absorbing, "free_surface": free}
    mid = [(o or 0.0) + (k // 2) * dd for k, dd, o in zip(n, d, origin or (0, 0, 0))]
    if free and n[2] > 1:
        mid[2] = (origin or (0, 0, 0))[2] + max(1, n[2] // 2) * d[2]
    job["sources"] = [src(mid)]
    return job


def corners(job):
    """The 8 corners of the model, its centre and an edge midpoint, as receiver points."""
    g = job["grid"]
    o = g.get("origin", [0.0, 0.0, 0.0])
    hi = [o[a] + (g["n"][a] - 1) * g["d"][a] for a in range(3)]
    pts = [[x, y, z] for x in (o[0], hi[0]) for y in (o[1], hi[1]) for z in (o[2], hi[2])]
    pts.append([(o[a] + hi[a]) / 2 for a in range(3)])
    pts.append([o[0], (o[1] + hi[1]) / 2, hi[2]])
    return pts


def deep(pts, job, trilinear=False):
    """Points off the free surface (a receiver with every tap on it is refused): a nearest one a
    cell down, a trilinear one straddling the surface."""
    g = job["grid"]
    z0 = g.get("origin", [0.0, 0.0, 0.0])[2]
    if not job["boundary"].get("free_surface") or g["n"][2] < 2:
        return pts
    z1 = z0 + g["d"][2] * (0.3 if trilinear else 1.0)
    return [[p[0], p[1], max(p[2], z1)] for p in pts]


def named_cases():
    """Hand-made edge cases: (name, job, extra) with extra a dict of checks/flags."""
    cases = []

    def add(name, job, **extra):
        cases.append((name, job, extra))

    # Tiny grids: a single cell, n below the stencil, 1-cell-thick axes, every order.
    for order in (2, 4, 6, 8):
        for n in ([1, 1, 1], [2, 1, 1], [1, 1, 5], [3, 2, 1], [2, 3, 4], [5, 5, 5]):
            for ab in (0, 1, 9):
                job = base(n, order=order, absorbing=ab, steps=9)
                job["receivers"] = {"points": corners(job)}
                add(f"tiny-o{order}-n{'x'.join(map(str, n))}-a{ab}", job)
    # Flat and tall, odd and prime sizes; x or y the longer axis (the kernels swap x and y).
    shapes = [[61, 2, 1], [2, 61, 1], [47, 43, 1], [1, 53, 3], [3, 1, 97], [1, 1, 211], [13, 17, 11], [31, 7, 19],
              [7, 31, 19], [29, 29, 2], [97, 3, 5], [3, 97, 5], [64, 1, 64], [1, 64, 64]]
    for order in (2, 8):
        for n in shapes:
            job = base(n, order=order, absorbing=4, steps=17)
            job["receivers"] = {"points": corners(job), "interpolation": "trilinear"}
            job["snapshots"] = {"every": 5}
            add(f"shape-o{order}-{'x'.join(map(str, n))}", job, mirror=n[0] != n[1])
    # Absorbing layers wider than the model, per axis, and none.
    for ab in ({"x": 0, "y": 30, "z": 1}, {"x": 25, "y": 0, "z": 0}, 40, 0, {"x": 1, "y": 1, "z": 33}):
        for free in (False, True):
            job = base([6, 5, 4], order=6, absorbing=ab, free=free, steps=21)
            job["receivers"] = {"points": deep(corners(job), job)}
            job["snapshots"] = {"steps": [1, 2, 20, 21], "decimate": 2}
            add(f"absorb-{'-'.join(map(str, ab.values())) if isinstance(ab, dict) else ab}-fs{int(free)}", job)
    # Free surface: sources just below, trilinear sources and receivers straddling the surface,
    # receivers on the surface (trilinear; nearest there is refused), a 2-cell-deep grid.
    for order in (2, 4, 6, 8):
        for nz in (2, 3, 9):
            job = base([9, 8, nz], order=order, free=True, steps=15, absorbing=2)
            job["sources"] = [src([40.0, 30.0, 10.0]), src([0.0, 70.0, 0.1], "trilinear"),
                              src([80.0, 0.0, 4.9], "trilinear")]
            job["receivers"] = {"points": [[0.0, 0.0, 1e-3], [80.0, 70.0, 1e-3], [40.0, 30.0, 0.5], [40.0, 30.0, 9.99]],
                                "interpolation": "trilinear"}
            job["snapshots"] = {"every": 1, "region": {"from": [0.0, 0.0, 0.0], "to": [80.0, 70.0, 0.0]}}
            add(f"free-o{order}-nz{nz}", job)
            job = base([9, 8, nz], order=order, free=True, steps=15, absorbing=2)
            job["receivers"] = {"points": [[40.0, 30.0, 5.0], [40.0, 30.0, 10.0 * (nz - 1)]]}
            add(f"free-nearest-o{order}-nz{nz}", job)
    # Many receivers on one cell, several sources in one column and on one cell, amplitudes.
    for order in (2, 8):
        job = base([11, 9, 13], order=order, steps=19)
        col = [src([50.0, 40.0, z]) for z in (0.0, 10.0, 20.0, 60.0, 120.0)]
        col += [src([50.0, 40.0, 60.0], w=ricker(30.0, amplitude=-2.5)), src([50.0, 40.0, 61.0], "trilinear")]
        job["sources"] = col
        job["receivers"] = {"points": [[50.0, 40.0, 60.0]] * 40 + [[52.0, 41.0, 59.0]] * 5 + [[50.0, 40.0, 0.0]]}
        add(f"stacked-o{order}", job, dup_receivers=True)
        job = dict(job, receivers=dict(job["receivers"], interpolation="trilinear"))
        add(f"stacked-tri-o{order}", job, dup_receivers=True)
    # Receiver intervals: 1, odd, equal to the steps, beyond them; lines and grids.
    for interval in (1, 3, 7, 12, 13, 1000):
        job = base([15, 12, 10], order=4, steps=12)
        job["receivers"] = {"interval": interval,
                            "lines": [{"from": [0.0, 0.0, 0.0], "to": [140.0, 110.0, 90.0], "count": 17},
                                      {"from": [10.0, 10.0, 10.0], "to": [10.0, 10.0, 10.0], "count": 3}],
                            "grids": [{"origin": [0.0, 0.0], "spacing": [35.0, 55.0], "count": [5, 3], "depth": 90.0}]}
        add(f"interval-{interval}", job)
    # Snapshots: decimation, boxes at the edges, one cell, a plane, step 0, the last step.
    regions = [([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), ([140.0, 110.0, 90.0], [140.0, 110.0, 90.0]),
               ([0.0, 0.0, 0.0], [140.0, 110.0, 90.0]), ([13.0, 0.0, 44.0], [140.0, 3.0, 90.0]),
               ([0.0, 50.0, 0.0], [140.0, 50.0, 90.0]), ([1.0, 1.0, 1.0], [11.0, 11.0, 11.0])]
    for i, (lo, hi) in enumerate(regions):
        for dec in (1, 2, 3, 7, 1000):
            job = base([15, 12, 10], order=2 + 2 * (i % 4), steps=11)
            job["snapshots"] = {"steps": [1, 5, 11], "decimate": dec, "region": {"from": lo, "to": hi}}
            add(f"snap-r{i}-dec{dec}", job)
    for every in (1, 4, 11, 12):
        job = base([15, 12, 10], order=8, steps=11)
        job["snapshots"] = {"every": every}
        add(f"snap-every-{every}", job)
    # Durations: one step, two, a prime number, given as a duration, with dt given.
    for steps in (1, 2, 3, 31, 33, 65, 67):
        job = base([21, 19, 7], order=8, steps=steps)
        job["receivers"] = {"points": corners(job)}
        add(f"steps-{steps}", job)
    for dur, dt in ((0.007, 0.001), (0.0001, None), (0.003, 0.001), (0.0042, 0.0007)):
        job = base([21, 19, 7], order=4)
        job["time"] = {"duration": dur}
        if dt:
            job["time"]["dt"] = dt
        job["receivers"] = {"points": corners(job)}
        add(f"duration-{dur}-{dt}", job)
    # Models: layered (tops on and between cell centres, above the model, below it), gradient
    # (positive, negative), and steep contrasts that lower dt.
    layered = [
        [{"top": -20.0, "vp": 1500.0}, {"top": 30.0, "vp": 2500.0}, {"top": 35.0, "vp": 4000.0}],
        [{"top": -100.0, "vp": 1500.0}, {"top": 1e6, "vp": 3000.0}],
        [{"top": 0.0, "vp": 343.0}, {"top": 5.0, "vp": 6000.0}, {"top": 15.0, "vp": 100.0},
         {"top": 15.0001, "vp": 19999.0}],
    ]
    for i, layers in enumerate(layered):
        for order in (2, 6):
            job = base([10, 13, 9], order=order, model={"type": "layered", "layers": layers}, steps=14,
                       origin=[0.0, 0.0, -20.0] if i == 0 else None)
            job["receivers"] = {"points": corners(job), "interpolation": "trilinear"}
            add(f"layered-{i}-o{order}", job, mirror=True)
    for vp0, grad in ((1500.0, 0.5), (5000.0, -40.0), (100.0, 0.0), (19000.0, 10.0)):
        job = base([12, 9, 11], order=4, model={"type": "gradient", "vp0": vp0, "gradient": grad}, steps=14)
        job["receivers"] = {"points": corners(job)}
        job["snapshots"] = {"steps": [7]}
        add(f"gradient-{vp0}-{grad}", job, mirror=True)
    # Wavelet files: one sample, two columns starting before t = 0, sampled coarser and finer than
    # the run (the anti-alias low-pass), a comma and comments.
    wfiles = {"one.txt": "1.0\n",
              "early.txt": "".join(f"{-0.004 + i * 0.0005:.6f} {math.sin(i / 3.0):.6g}\n" for i in range(60)),
              "fine.txt": "# fine\n" + "".join(f"{math.exp(-((i - 40) / 8.0) ** 2):.7g}\n" for i in range(200)),
              "coarse.txt": "".join(f"{i * 0.01:.2f}, {(-1) ** i * 0.5:g}\n" for i in range(8))}
    for wname, wdt in (("one.txt", None), ("early.txt", None), ("fine.txt", 0.00005), ("coarse.txt", None)):
        for order in (4, 8):
            job = base([12, 11, 10], order=order, steps=23)
            w = {"type": "file", "file": wname}
            if wdt:
                w["dt"] = wdt
            job["sources"] = [src([50.0, 50.0, 40.0], w=w), src([0.0, 0.0, 0.0], "trilinear", w=w)]
            job["receivers"] = {"points": corners(job)}
            add(f"wavelet-{wname[:-4]}-o{order}", job, files=wfiles)
    # A source strong enough that float32 overflows during the run: every kernel stops with the
    # same error, and an older result in the output's place stays.
    for order in (2, 8):
        job = base([9, 9, 9], d=(1.0, 1.0, 1.0), order=order, steps=60, absorbing=0)
        job["sources"] = [src([4.0, 4.0, 4.0], w=ricker(2.0, delay=0.0, amplitude=3.0e38))]
        job["receivers"] = {"points": corners(job)}
        add(f"overflow-o{order}", job)
    # Extremes of the values allowed: velocities at float32's ends (vp_range widened), Ricker
    # frequencies and delays whose π²f²τ² overflows double.
    for vp, rng in ((3.0e38, [1.0, 3.4e38]), (1e-30, [1e-37, 1.0])):
        job = base([7, 6, 5], order=4, steps=9, model={"type": "constant", "vp": vp, "vp_range": rng})
        job["receivers"] = {"points": corners(job)}
        add(f"vp-extreme-{vp}", job)
    for w in (ricker(1e160), ricker(1e300, delay=0.0), ricker(25.0, delay=1e300)):
        job = base([7, 6, 5], order=4, steps=9)
        job["sources"][0]["wavelet"] = w
        job["receivers"] = {"points": corners(job)}
        add(f"ricker-extreme-{w['frequency']}-{w.get('delay')}", job)
    # A grid far from its origin in cells: UTM coordinates, 10 cm cells; everything on the edges.
    for n in ([9, 12, 10], [12, 9, 2], [2, 2, 13]):
        job = base(n, d=(0.1, 0.1, 0.1), order=8, steps=11, origin=[500000.0, 5000000.0, 1234.5],
                   model={"type": "constant", "vp": 300.0})
        job["sources"][0]["wavelet"] = ricker(150.0)
        job["receivers"] = {"points": corners(job)}
        job["snapshots"] = {"every": 5}
        add(f"utm-{'x'.join(map(str, n))}", job)
        job = dict(job, snapshots={"every": 5, "region": {"from": corners(job)[7], "to": corners(job)[7]}})
        add(f"utm-corner-{'x'.join(map(str, n))}", job)
    # Unequal spacings, a far origin, negative coordinates.
    for d in ((1.0, 100.0, 10.0), (25.0, 3.0, 0.5), (1e-3, 1e-3, 1e-3), (1000.0, 1000.0, 1000.0)):
        job = base([9, 10, 8], d=d, order=8, steps=10, origin=[-1e5, 3.5e6, -7.0])
        job["receivers"] = {"points": corners(job), "interpolation": "trilinear"}
        job["sources"][0]["wavelet"] = ricker(2000.0 / (10 * max(d)))
        add(f"spacing-{d[0]}-{d[1]}-{d[2]}", job, mirror=True)
    return cases


def random_cases(count, seed):
    rnd = random.Random(seed)
    cases = []
    for i in range(count):
        order = rnd.choice((2, 4, 6, 8))
        n = [rnd.choice((1, 2, 3, 4, 5, 7, 11, 13, 17, 23, 31, 37)) for _ in range(3)]
        ax = rnd.randrange(3)
        n[ax] = rnd.choice((n[ax], 41, 53, 67))
        while n[0] * n[1] * n[2] > 40000:
            n[rnd.randrange(3)] //= 2
        n = [max(1, k) for k in n]
        d = [rnd.choice((5.0, 10.0, 12.5)) for _ in range(3)] if rnd.random() < 0.3 else [10.0] * 3
        o = [0.0, 0.0, 0.0]
        if rnd.random() < 0.15:  # far from the origin in cells: UTM coordinates, a fine grid
            d = [rnd.choice((0.1, 0.3, 0.7)) for _ in range(3)]
            o = [rnd.choice((5e5, -3.3e5)), rnd.choice((5e6, 4.1e6)), rnd.choice((0.0, 1234.5))]
        free = rnd.random() < 0.35
        absorbing = rnd.choice((0, 1, 2, 5, 13, {"x": rnd.randrange(8), "y": rnd.randrange(8), "z": rnd.randrange(8)}))
        steps = rnd.choice((1, 2, 5, 8, 13, 24, 33, 40))
        mt = rnd.choice(("constant", "constant", "layered" if o[2] == 0 else "constant", "gradient"))
        if mt == "layered":
            top = d[2] * rnd.randrange(1, max(2, n[2])) + rnd.choice((0.0, 0.5 * d[2]))  # on a cell, or between
            model = {"type": "layered",
                     "layers": [{"top": 0.0, "vp": 1800.0}, {"top": top, "vp": rnd.choice((900.0, 3500.0))}]}
        elif mt == "gradient":
            model = {"type": "gradient", "vp0": 1500.0, "gradient": rnd.choice((0.0, 0.7, 3.0))}
        else:
            model = {"type": "constant", "vp": rnd.choice((1500.0, 2000.0, 4500.0))}
        job = base(n, d=d, order=order, steps=steps, absorbing=absorbing, free=free, model=model,
                   origin=o if any(o) else None)
        hi = [(k - 1) * dd for k, dd in zip(n, d)]

        def point(edge_bias=0.5):
            p = []
            for a in range(3):
                r = rnd.random()
                if r < edge_bias / 2:
                    p.append(o[a])
                elif r < edge_bias:
                    p.append(o[a] + hi[a])
                elif rnd.random() < 0.5:
                    p.append(o[a] + float(rnd.randrange(n[a])) * d[a])
                else:
                    p.append(round(o[a] + rnd.uniform(0, hi[a]), 3))
            return p

        def ok_source(p, interp):
            if not free:
                return True
            z = p[2] - o[2]
            return (z >= 0.5 * d[2] and interp != "trilinear") or (interp == "trilinear" and z > 0)

        srcs = []
        for _ in range(rnd.choice((1, 1, 2, 3))):
            interp = rnd.choice((None, "nearest", "trilinear"))
            p = point(0.3)
            if rnd.random() < 0.3 and srcs:
                p[:2] = srcs[0]["position"][:2]  # one column
            if not ok_source(p, interp):
                p[2] = o[2] + min(hi[2], d[2])
            w = ricker(rnd.choice((8.0, 25.0, 60.0)) * 10.0 / max(d), amplitude=rnd.choice((1.0, -3.0, 1e6)))
            srcs.append(src(p, interp, w))
        job["sources"] = srcs
        rinterp = rnd.choice(("nearest", "trilinear"))
        pts = [point() for _ in range(rnd.choice((0, 1, 4, 9)))]
        if rnd.random() < 0.3:
            pts += [srcs[0]["position"]] * rnd.choice((2, 7))
        pts = deep(pts, job, rinterp == "trilinear")
        rec = {"interpolation": rinterp, "interval": rnd.choice((1, 1, 2, 3, 7, steps, steps + 1))}
        if pts:
            rec["points"] = pts
        if rnd.random() < 0.3:
            a, b = point(), point()
            a, b = deep([a, b], job, rinterp == "trilinear")
            count = rnd.choice((1, 2, 5))
            # (a line of one point is its `from`: a `to` elsewhere is refused, which would waste the job)
            rec["lines"] = [{"from": a, "to": b if count > 1 else a, "count": count}]
        if len(rec) > 2:
            job["receivers"] = rec
        if rnd.random() < 0.4:
            snap = {"decimate": rnd.choice((1, 1, 2, 3, 5))}
            if rnd.random() < 0.5:
                snap["every"] = rnd.choice((1, 3, steps))
            else:
                snap["steps"] = sorted(set(rnd.choice((1, max(1, steps // 2), steps)) for _ in range(3)))
            if rnd.random() < 0.5:
                a, b = point(0.6), point(0.6)
                snap["region"] = {"from": [min(x, y) for x, y in zip(a, b)], "to": [max(x, y) for x, y in zip(a, b)]}
            job["snapshots"] = snap
        cases.append((f"random-{seed}-{i:03d}", job, {}))
    return cases


# Offsets from a node, in cells, for region corners: on it, within rounding (2 ulps: on it), just
# off it either way (1e-5 cells: well past the rounding, even at UTM coordinates), between nodes.
REGION_DELTAS = (0.0, 0.0, 1e-13, -1e-13, 1e-5, -1e-5, 0.5, 0.3, -0.3, 0.999)


def region_cases(count, seed):
    """Snapshot regions whose corners lie on, near and between nodes, decimated, on grids near the
    origin and at UTM coordinates: (name, job, first, last) with first and last the nodes the region
    holds on each axis (x, y, z) — last < first on an axis: the region holds no cell there, refused."""
    rnd = random.Random(f"regions-{seed}")
    cases = []
    for i in range(count):
        n = [rnd.choice((1, 2, 3, 5, 8, 13)) for _ in range(3)]
        d = [rnd.choice((10.0, 0.1, 12.5, 3.0)) for _ in range(3)]
        o = [rnd.choice((0.0, -40.0, 5e5, 5e6, 1234.5)) for _ in range(3)]
        job = base(n, d=d, order=rnd.choice((2, 4, 8)), steps=rnd.choice((3, 7)), absorbing=rnd.choice((0, 2)),
                   origin=o, model={"type": "constant", "vp": 300.0 * min(d) / 0.1 if min(d) < 1 else 2000.0})
        job["sources"][0]["wavelet"] = ricker(2000.0 / (10 * max(d)) if min(d) >= 1 else 150.0)
        frm, to, first, last = [], [], [], []
        for a in range(3):
            while True:
                i0, i1 = sorted(rnd.randrange(n[a]) for _ in range(2))
                df, dt = rnd.choice(REGION_DELTAS), rnd.choice(REGION_DELTAS)
                if rnd.random() < 0.3:
                    i1 = i0  # one node, or a slab between two
                if (i0 == 0 and df < -1e-12) or (i1 == n[a] - 1 and dt > 1e-12) or i0 + df > i1 + dt:
                    continue  # outside the model, or inverted: other refusals
                break
            frm.append(o[a] + (i0 + df) * d[a])
            to.append(o[a] + (i1 + dt) * d[a])
            first.append(i0 if df <= 1e-12 else i0 + 1)
            last.append(i1 if dt >= -1e-12 else i1 - 1)
        steps = job["time"]["steps"]
        job["snapshots"] = {"steps": sorted({1, steps}), "decimate": rnd.choice((1, 1, 2, 3, 7)),
                            "region": {"from": frm, "to": to}}
        cases.append((f"region-{seed}-{i:03d}", job, first, last))
    return cases


def invalid_cases():
    """(name, text, pattern, overrides): jobs that must be refused, the message matching pattern."""
    good = render(base([10, 9, 8], steps=5))
    cases = []

    def edit(old, new):
        assert old in good, old
        return good.replace(old, new)

    def add(name, change, pat, sets=()):
        """change: (old, new) text of the good job, or a line to append (line 7)."""
        cases.append((name, edit(*change) if isinstance(change, tuple) else good + change, pat, sets))

    n, d, steps, vp = "n = [10, 9, 8]", "d = [10.0, 10.0, 10.0]", "steps = 5", "vp = 2000.0"
    const, pos, freq = 'type = "constant"; vp = 2000.0', "position = [50.0, 40.0, 40.0]", "frequency = 25.0"
    got = r": .*got {}; (allowed|expected)"
    mixed = r": integers and floating-point numbers mixed in one array: got "
    # grid: bad types, negative and huge sizes, inf, mixed arrays, beyond memory
    add("n-negative", (n, "n = [10, -9, 8]"), r":1: grid\.n\[1\]" + got.format("-9"))
    add("n-zero", (n, "n = [0, 9, 8]"), r":1: grid\.n\[0\]" + got.format("0"))
    add("n-float", (n, "n = [10.5, 9, 8]"), r":1: grid\.n" + mixed + r"\[10\.5, 9, 8\]")
    add("n-string", (n, 'n = "10"'), r":1: grid\.n" + got.format('"10"'))
    add("n-two", (n, "n = [10, 9]"), r":1: grid\.n" + got.format(r"\[10, 9\]"))
    add("n-empty", (n, "n = []"), r":1: grid\.n" + got.format(r"\[\]"))
    add("n-huge", (n, "n = [1048576, 1048576, 1048576]"), r":1: grid\.n: too many cells")
    add("n-beyond", (n, "n = [1048577, 1, 1]"), r":1: grid\.n\[0\]" + got.format("1048577"))
    add("n-beyond-32-bits", (n, "n = [10, 3000000000, 8]"), r":1: grid\.n\[1\]" + got.format("3000000000"))
    add("n-big-memory", (n, "n = [20000, 20000, 2000]"), r":1: grid\.n: the job needs .* memory.*got \[20000, ")
    add("d-inf", (d, "d = [10.0, 1e999, 10.0]"), r":1: grid\.d\[1\]" + got.format("inf"))
    add("d-negative", (d, "d = [10.0, 10.0, -10.0]"), r":1: grid\.d\[2\]" + got.format("-10.0"))
    add("d-tiny", (d, "d = [1e-300, 10.0, 10.0]"), r":1: grid\.d\[0\]" + got.format("1e-300"))
    add("d-int-float", (d, "d = [10, 10.0, 12.5]"), r":1: grid\.d" + mixed)
    add("origin-inf", (d, d + "; origin = [0.0, -1e999, 0.0]"), r":1: grid\.origin\[1\]" + got.format("-inf"))
    # time: inf, negative, huge, dt and duration
    add("steps-inf", (steps, "steps = 1e999"), r":2: time\.steps" + got.format("inf"))
    add("steps-negative", (steps, "steps = -1"), r":2: time\.steps" + got.format("-1"))
    add("steps-huge", (steps, "steps = 100000000000"), r":2: time\.steps" + got.format("100000000000"))
    add("duration-inf", (steps, "duration = 1e999"), r":2: time\.duration" + got.format("inf"))
    add("duration-inf-dt", (steps, "duration = 1e999; dt = 0.001"), r":2: time\.duration" + got.format("inf"))
    add("duration-tiny-dt", (steps, "duration = 1.0; dt = 1e-300"), r":2: time\.duration: too many time steps")
    add("dt-inf", (steps, steps + "; dt = 1e999"), r":2: time\.dt" + got.format("inf"))
    add("dt-zero", (steps, steps + "; dt = 0.0"), r":2: time\.dt" + got.format("0.0"))
    add("dt-margin-zero", (steps, steps + "; dt_margin = 0.0"), r":2: time\.dt_margin" + got.format("0.0"))
    # model
    add("vp-inf", (vp, "vp = 1e999"), r":3: model\.vp" + got.format("inf"))
    add("vp-string", (vp, 'vp = "fast"'), r":3: model\.vp" + got.format('"fast"'))
    add("vp-range-inf", (vp, vp + "; vp_range = [100.0, 1e999]"), r":3: model\.vp_range\[1\]" + got.format("inf"))
    add("vp-range-empty", (vp, vp + "; vp_range = []"), r":3: model\.vp_range" + got.format(r"\[\]"))
    add("vp-beyond-float32", (vp, "vp = 1e39; vp_range = [1.0, 1e300]"),
        r":3: model\.vp_range\[1\]" + got.format("1e\\+300"))
    for bad_name, v in (("nan", "nan"), ("inf", "inf"), ("negative", "-2000.0"), ("zero", "0.0")):
        add(f"raw-{bad_name}", (const, f'type = "raw"; file = "vp_{v}.bin"'),
            r":3: model: 'vp_.*\.bin': .* at cell \(i, j, k\) = \(3, 4, 5\).*allowed")
    add("layers-empty", (const, 'type = "layered"; layers = ()'), r":3: model\.layers" + got.format(r"\(\)"))
    add("layers-inf-top", (const, 'type = "layered"; layers = ( { top = 1e999; vp = 2000.0; } )'),
        r":3: model\.layers\[0\]\.top" + got.format("inf"))
    add("gradient-inf", (const, 'type = "gradient"; vp0 = 2000.0; gradient = 1e999'),
        r":3: model\.gradient" + got.format("inf"))
    # scheme, boundary
    add("order-string", ("order = 8", 'order = "8"'), r":4: scheme\.order" + got.format('"8"'))
    add("order-zero", ("order = 8", "order = 0"), r":4: scheme\.order" + got.format("0"))
    add("absorbing-inf", ("absorbing = 3", "absorbing = 1e999"), r":5: boundary\.absorbing" + got.format("inf"))
    add("absorbing-huge", ("absorbing = 3", "absorbing = 2000000000"),
        r":5: boundary\.absorbing" + got.format("2000000000"))
    add("free-string", ("free_surface = false", 'free_surface = "yes"'),
        r":5: boundary\.free_surface" + got.format('"yes"'))
    add("misspelled-nested", ("free_surface", "free_surfce"), r":5: boundary\.free_surfce: unknown key.*did you mean")
    # sources
    add("sources-empty", (good[good.index("sources = "):].split("\n")[0], "sources = ();"),
        r":6: sources" + got.format(r"\(\)"))
    add("source-pos-inf", (pos, "position = [50.0, 1e999, 40.0]"),
        r":6: sources\[0\]\.position\[1\]" + got.format("inf"))
    add("source-pos-neg-inf", (pos, "position = [50.0, -1e999, 40.0]"),
        r":6: sources\[0\]\.position\[1\]" + got.format("-inf"))
    add("source-in-layer", (pos, "position = [-5.0, 40.0, 40.0]"), r":6: sources\[0\]\.position: outside the model")
    add("source-beyond-edge", (pos, "position = [90.000001, 40.0, 40.0]"),
        r":6: sources\[0\]\.position: outside the model")
    add("frequency-inf", (freq, "frequency = 1e999"), r":6: sources\[0\]\.wavelet\.frequency" + got.format("inf"))
    add("amplitude-inf", (freq, freq + "; amplitude = 1e999"),
        r":6: sources\[0\]\.wavelet\.amplitude" + got.format("inf"))
    add("delay-inf", (freq, freq + "; delay = 1e999"), r":6: sources\[0\]\.wavelet\.delay" + got.format("inf"))
    add("delay-neg-inf", (freq, freq + "; delay = -1e999"), r":6: sources\[0\]\.wavelet\.delay" + got.format("-inf"))
    add("wavelet-dt-inf", ('type = "ricker"; ' + freq, 'type = "file"; file = "w.txt"; dt = 1e999'),
        r":6: sources\[0\]\.wavelet\.dt" + got.format("inf"))
    # line 7: receivers, snapshots, solver, output, checkpoint; misspelled keys
    add("misspelled-top", "recievers = { points = ( [0.0, 0.0, 0.0] ); };\n",
        r":7: recievers: unknown key.*'receivers'")
    add("misspelled-solver", 'solver = { kernal = "cpu"; };\n',
        r":7: solver\.kernal: unknown key.*did you mean 'kernel'")
    add("receivers-interval-inf", "receivers = { interval = 1e999; points = ( [0.0, 0.0, 0.0] ); };\n",
        r":7: receivers\.interval" + got.format("inf"))
    add("receivers-line-count-neg",
        "receivers = { lines = ( { from = [0.0, 0.0, 0.0]; to = [1.0, 1.0, 1.0]; count = -3; } ); };\n",
        r":7: receivers\.lines\[0\]\.count" + got.format("-3"))
    add("receivers-grid-count-huge", "receivers = { grids = ( { origin = [0.0, 0.0]; spacing = [1.0, 1.0]; "
        "count = [100000, 100000]; depth = 0.0; } ); };\n",
        r":7: receivers\.grids\[0\]\.count: .*got \[100000, 100000\].*must lie inside the model")
    add("receivers-point-2d", "receivers = { points = ( [0.0, 0.0] ); };\n",
        r":7: receivers\.points\[0\]" + got.format(r"\[0\.0, 0\.0\]"))
    add("snapshots-empty-steps", "snapshots = { steps = []; };\n", r":7: snapshots\.steps" + got.format(r"\[\]"))
    add("snapshots-empty-group", "snapshots = { };\n", r":7: snapshots\.every: required key is missing")
    add("snapshots-every-neg", "snapshots = { every = -1; };\n", r":7: snapshots\.every" + got.format("-1"))
    add("snapshots-step-neg", "snapshots = { steps = [-1]; };\n", r":7: snapshots\.steps\[0\]" + got.format("-1"))
    add("snapshots-decimate-huge", "snapshots = { every = 1; decimate = 10000000000; };\n",
        r":7: snapshots\.decimate" + got.format("10000000000"))
    add("snapshots-region-inf",
        "snapshots = { every = 1; region = { from = [0.0, 0.0, 0.0]; to = [1e999, 1.0, 1.0]; }; };\n",
        r":7: snapshots\.region\.to\[0\]" + got.format("inf"))
    add("snapshots-region-between-cells",  # no cell inside on x: its box was the next cell, outside it
        "snapshots = { every = 1; region = { from = [1.0, 0.0, 0.0]; to = [9.0, 10.0, 10.0]; }; };\n",
        r":7: snapshots\.region: holds no cell on x: from\[0\] = 1\.0 and to\[0\] = 9\.0 lie between the cells at "
        r"x = 0\.0 and 10\.0 m" + got.format(r"\{ from = .* \}"))
    add("threads-string", 'solver = { threads = "2"; };\n', r":7: solver\.threads" + got.format('"2"'))
    for i, mem in enumerate(('"-5M"', '"1e999"', "1e999", '"99999999999T"')):
        add(f"device-memory-{i}", f'solver = {{ kernel = "cpu-diamond"; device_memory = {mem}; }};\n',
            r":7: solver\.device_memory: must be a memory size")
    add("dts-neg", 'solver = { kernel = "cpu-diamond"; dts = -1; };\n', r":7: solver\.dts" + got.format("-1"))
    add("tower-height-zero", 'solver = { kernel = "cpu-diamond"; tower_height = 0; };\n',
        r":7: solver\.tower_height" + got.format("0"))
    add("output-file-empty", 'output = { file = ""; };\n', r":7: output\.file" + got.format('""'))
    add("output-model-string", 'output = { model = "yes"; };\n', r":7: output\.model" + got.format('"yes"'))
    add("checkpoint-every-inf", "checkpoint = { every_seconds = 1e999; };\n",
        r":7: checkpoint\.every_seconds" + got.format("inf"))
    add("list-for-group", ("time = { steps = 5; }", "time = ( 5 )"), r":2: time: must be a group")
    add("duplicate-key", ("time = { steps = 5; }", "time = { steps = 5; steps = 6; }"),
        r":2: time\.steps: given twice in its group: got a second 'steps' \(the first on line 2\)")
    # the same values given by --set: named by it
    at = r"job\.cfg: --set [^:]*: "
    add("set-steps-inf", "", at + r"time\.steps" + got.format("inf"), ["time.steps=1e999"])
    add("set-d-nan", "", at + r"cannot parse the value: got \[1\.0,nan,1\.0\]", ["grid.d=[1.0,nan,1.0]"])
    add("set-sources-empty", "", at + r"sources: must hold at least one source", ["sources=()"])
    add("set-n-huge", "", at + r"grid\.n: too many cells", ["grid.n=[1048576,1048576,1048576]"])
    add("set-order-odd", "", at + r"scheme\.order" + got.format("5"), ["scheme.order=5"])
    add("set-cap-tiny", "", at + r"solver\.device_memory = .* is too small.*the smallest cap that works is",
        ["solver.kernel=cpu-diamond", "solver.device_memory=1"])
    add("set-dts-beyond", "", at + r"solver\.dts: .*allowed 1\.\.64 for order 8",
        ["solver.kernel=cpu-diamond", "solver.dts=65"])
    add("set-unknown", "", at + r"solver\.kernal: unknown key.*did you mean 'kernel'", ["solver.kernal=cpu"])
    add("set-position-mixed", "", r"--set sources=.*: sources\[0\]\.position" + mixed,
        ['sources=({position=[1,1.0,1];wavelet={type="ricker";frequency=25.0;};})'])
    return cases


# ----------------------------------------------------------------------------------------- running


class Cores:
    """At most `total` CPU threads busy at a time: a run with t threads takes t tokens."""

    def __init__(self, total):
        self.total, self.free, self.cv = total, total, threading.Condition()

    def take(self, n):
        with self.cv:
            self.cv.wait_for(lambda: self.free >= min(n, self.total))
            self.free -= min(n, self.total)

    def give(self, n):
        with self.cv:
            self.free += min(n, self.total)
            self.cv.notify_all()


class Runner:
    def __init__(self, args):
        self.args = args
        self.tw = os.path.abspath(os.path.join(args.build, "app", "torrewave"))
        self.tw_asan = os.path.abspath(os.path.join(args.asan, "app", "torrewave")) if args.asan else None
        self.cores = Cores(args.cores)
        # --ref-variant: the environment of the reference runs alone (None: the default variant)
        self.ref_env = {"TW_CPU_VARIANT": args.ref_variant} if args.ref_variant else None
        self.lock = threading.Lock()
        self.failures = []
        self.refusals = []  # (job, message): valid-looking jobs that every kernel refuses
        self.stats = {"cases": 0, "runs": 0, "compares": 0, "refused": 0, "windowed": 0, "asan_runs": 0,
                      "mirrors": 0, "invalid": 0, "resumes": 0,
                      "regions": 0, "regions_refused": 0, "beside": 0, "survey_inputs": 0}

    def count(self, key, n=1):
        with self.lock:
            self.stats[key] += n

    def run(self, cmd, cwd, threads=1, log=None, asan=False, env_extra=None):
        """Run one command; returns (rc, output). rc 124 when it timed out."""
        env = dict(os.environ, OMP_WAIT_POLICY="passive", **(env_extra or {}))
        env.pop("OMP_NUM_THREADS", None)
        if asan:
            # libgomp's thread pool (a malloc inside libgomp, no frame of ours) is reported now and
            # then when a worker thread is still starting at exit: not a leak of torrewave's
            env["LSAN_OPTIONS"] = "suppressions=" + LSAN_SUPP
            env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
        if log is not None:
            log.append(" ".join([f"{k}={v}" for k, v in (env_extra or {}).items()] + [shlex_quote(c) for c in cmd]))
        self.count("asan_runs" if asan else "runs")
        self.cores.take(threads)
        try:
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                out, _ = p.communicate(timeout=TIMEOUT * (10 if asan else 1))
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
                rc = 124
        finally:
            self.cores.give(threads)
        return rc, out.decode("utf-8", "replace")

    def fail(self, case, what, detail=""):
        with self.lock:
            self.failures.append((case, what, detail.strip()[-1500:]))
            print(f"FAIL {case}: {what}", file=sys.stderr, flush=True)  # (as it happens: a long campaign may be cut)


def shlex_quote(s):
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def h5_datasets(path):
    out = subprocess.run(["h5ls", "-r", path], capture_output=True, text=True).stdout
    sets = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+Dataset \{([^}]*)\}", line)
        if m:
            dims = [int(x.split("/")[0]) for x in m.group(2).split(",") if x.strip() and x.strip() != "SCALAR"]
            sets[m.group(1)] = dims
    return sets


def h5_read(path, dset, fmt_char, tmpdir):
    """A dataset's values, read through h5dump's binary output (little-endian)."""
    b = os.path.join(tmpdir, "dump.bin")
    r = subprocess.run(["h5dump", "-d", dset, "-b", "LE", "-o", b, path], capture_output=True)
    if r.returncode:
        return None
    with open(b, "rb") as f:
        raw = f.read()
    os.unlink(b)
    size = struct.calcsize("<" + fmt_char)
    return struct.unpack(f"<{len(raw) // size}{fmt_char}", raw)


def leftovers(d):
    """What a run must not leave: temporaries, locks, kept results."""
    return sorted(f for f in os.listdir(d) if (".part" in f or f.endswith(".lock") or ".kept-" in f))


def expected_receivers(job):
    r = job.get("receivers")
    if not r:
        return 0
    return len(r.get("points", [])) + sum(ln["count"] for ln in r.get("lines", [])) + \
        sum(g["count"][0] * g["count"][1] for g in r.get("grids", []))


GPU = None  # --gpu: None, "add" or "only"
ABOUT = re.compile(r"smallest window the GPU kernels can run for this job, about ([\d.]+) (B|KiB|MiB|GiB|TiB)")
SMALLEST = re.compile(r"the smallest cap that works is (\d+) bytes")


def solver_sets(kernel, threads, extra=None):
    s = ["--set", f"solver.kernel={kernel}", "--set", f"solver.threads={threads}"]
    for k, v in (extra or {}).items():
        s += ["--set", f"solver.{k}={v}"]
    return s


def kernel_variants(job, rnd):
    """(name, --set arguments, threads, environment) of the runs that must give the reference's bits."""
    variants = [("cpu-t2", solver_sets("cpu", 2), 2, None),
                ("cd-t1", solver_sets("cpu-diamond", 1), 1, None),
                ("cd-t2", solver_sets("cpu-diamond", 2), 2, None)]
    for _ in range(2):  # small and odd tiles and heights
        dts, th = rnd.choice((1, 1, 2, 3, 5)), rnd.choice((1, 2, 3, 5, 7, 13, 33))
        t = rnd.choice((1, 2))
        sets = solver_sets("cpu-diamond", t, {"dts": dts, "tower_height": th})
        variants.append((f"cd-dts{dts}-th{th}-t{t}", sets, t, None))
    # kernel auto, and the cap on kernel cpu (ignored there, with a warning)
    variants.append(("auto", solver_sets("auto", 2), 2, None))
    variants.append(("cpu-cap", solver_sets("cpu", 1, {"device_memory": 1}), 1, None))
    # the largest tile (R = 256 cells) and tower allowed
    biggest = {"dts": 512 // job["scheme"]["order"], "tower_height": 65536}
    variants.append(("cd-max", solver_sets("cpu-diamond", 2, biggest), 2, None))
    # checkpoints end the kernels' calls every k steps (and are removed on success)
    k = rnd.choice((1, 2, 3, 5))
    variants.append((f"cd-ckpt{k}", solver_sets("cpu-diamond", 2) + ["--set", f"checkpoint.every={k}"], 2, None))
    if GPU == "only":  # (drawn all the same: the GPU variants' random choices do not depend on --gpu)
        variants = []
    if GPU:
        variants += gpu_variants(job, rnd)
    return variants


def gpu_variants(job, rnd):
    """--gpu: the GPU kernels on the same job. gpu-stepwise; gpu-diamond as it chooses (most jobs
    here: the stepwise kernel) and auto; the register tower forced (TW_DIAMOND_MODE=persistent, the
    largest instantiated dts at or below the one given; order 8 has none: the generic tower), per
    stage, with one z cell a thread, and the generic tower, at random tiles and heights; checkpoints
    every k steps."""
    order = job["scheme"]["order"]
    v = [("gs", solver_sets("gpu-stepwise", 1), 1, None),
         ("gd", solver_sets("gpu-diamond", 1), 1, None),
         ("g-auto", solver_sets("auto", 1), 1, None)]
    for mode in ("persistent", "persistent", "stage"):
        dts, th = rnd.choice((1, 2, 3, 4, 6)), rnd.choice((1, 2, 3, 5, 7, 13, 33, 100))
        v.append((f"gd-{mode}-dts{dts}-th{th}", solver_sets("gpu-diamond", 1, {"dts": dts, "tower_height": th}), 1,
                  {"TW_DIAMOND_MODE": mode}))
    if order <= 4:  # (orders 2 and 4 have towers of two z cells a thread)
        v.append(("gd-z1", solver_sets("gpu-diamond", 1), 1, {"TW_DIAMOND_MODE": "persistent", "TW_DIAMOND_ZPT": "1"}))
    if order == 2:  # (its dts-3 tower of two z also sweeps y: forced whatever the grid's shape)
        v.append(("gd-sy", solver_sets("gpu-diamond", 1, {"dts": 3}), 1,
                  {"TW_DIAMOND_MODE": "persistent", "TW_DIAMOND_SWEEP": "y"}))
    dts = rnd.choice((1, 2, 5))
    v.append((f"gd-generic-dts{dts}", solver_sets("gpu-diamond", 1, {"dts": dts}), 1, {"TW_DIAMOND_MODE": "generic"}))
    k = rnd.choice((1, 2, 3, 5))
    v.append((f"gd-ckpt{k}", solver_sets("gpu-diamond", 1) + ["--set", f"checkpoint.every={k}"], 1,
              {"TW_DIAMOND_MODE": "persistent"}))
    v.append((f"gs-ckpt{k}", solver_sets("gpu-stepwise", 1) + ["--set", f"checkpoint.every={k}"], 1, None))
    return v


def gpu_smallest_cap(tw, d, kernel, given, env, out):
    """`check` names the GPU kernels' smallest window about (the stepwise slabs', from the host: out is
    its message); a run at that cap names the kernel's own exactly where that is more. Returns (cap,
    the SMALLEST match when the run named it, else None; the run's output); cap 0 when the run
    refused without naming one."""
    a = ABOUT.search(out)
    cap = int(float(a.group(1)) * 1024 ** ("B KiB MiB GiB TiB".split().index(a.group(2))) * 1.01) + 1
    rc, out = tw(["run", "job.cfg", "-q", "-o", "probe.h5"] + solver_sets(kernel, 1, dict(given, device_memory=cap)),
                 env_extra=env)
    for f in ("probe.h5", "probe.xdmf"):
        if os.path.exists(os.path.join(d, f)):
            os.unlink(os.path.join(d, f))
    if rc == 0:
        return cap, None, out
    m = SMALLEST.search(out)
    return (int(m.group(1)), m, out) if m else (0, None, out)


def window_variants(d, rnd, refused, bad, tw):
    """cpu-diamond (--gpu: also gpu-diamond and gpu-stepwise; --gpu only: those alone) at the
    smallest cap `check` names: the default height (lowered to fit), and heights and tiles given;
    one byte less must be refused. (name, --set arguments, threads, environment)"""
    variants = []
    heights = [{}, {"dts": 1, "tower_height": rnd.choice((1, 2, 3, 5))},
               {"dts": rnd.choice((2, 3, 7)), "tower_height": rnd.choice((4, 9, 40))}]
    runs = [] if GPU == "only" else [("", "cpu-diamond", given, None) for given in heights]
    if GPU:
        runs += [("-gs", "gpu-stepwise", {}, None), ("-gd", "gpu-diamond", {}, None),
                 ("-gdt", "gpu-diamond", heights[1], {"TW_DIAMOND_MODE": "persistent"}),
                 ("-gdt", "gpu-diamond", heights[2], {"TW_DIAMOND_MODE": "persistent", "TW_DIAMOND_STAGES": "1"})]
    for wi, (tag, kernel, given, env) in enumerate(runs):
        rc, out = tw(["check", "job.cfg"] + solver_sets(kernel, 1, dict(given, device_memory=1)), env_extra=env)
        m = SMALLEST.search(out)
        if refused:
            if rc == 0:
                bad(f"check accepts device_memory = 1 byte ({kernel})", out)
            continue
        if kernel.startswith("gpu") and rc == 1 and ABOUT.search(out):
            cap, m, out = gpu_smallest_cap(tw, d, kernel, given, env, out)
            if not cap:
                bad(f"{kernel} at the cap check named: refused, no smallest cap named", out)
                continue
        elif not m:
            if rc != 1 or "solver.dts" not in out:  # (a dts above the tile limit is cpu-diamond's own refusal)
                bad(f"device_memory = 1 byte: no smallest cap named ({kernel})", out)
            continue
        if m:
            cap = int(m.group(1))
            rc, out = tw(["run", "job.cfg", "-q", "-o", "under.h5"] +
                         solver_sets(kernel, 1, dict(given, device_memory=cap - 1)), env_extra=env)
            if rc == 0 or os.path.exists(os.path.join(d, "under.h5")):
                bad(f"{kernel}: one byte under the smallest cap {cap} runs", out)
        variants.append((f"win{tag}{wi}-cap", solver_sets(kernel, 2, dict(given, device_memory=cap)), 2, env))
        variants.append((f"win{tag}{wi}-cap-t1", solver_sets(kernel, 1, dict(given, device_memory=cap + 4096)), 1, env))
    return variants


def check_case(R, name, job, extra):
    """Every variant of one valid job; failures go to R.fail."""
    d = os.path.join(R.args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "job.cfg")
    with open(cfg, "w") as f:
        f.write(render(job))
    for fname, text in extra.get("files", {}).items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)
    log = []
    R.count("cases")
    ok = True

    def bad(what, detail=""):
        nonlocal ok
        ok = False
        R.fail(name, what, detail)

    def tw(args, threads=1, asan=False, env_extra=None):
        rc, out = R.run([R.tw_asan if asan else R.tw] + args, d, threads, log, asan, env_extra)
        if rc == 124:
            bad("timeout", " ".join(args) + "\n" + out)
        elif rc < 0 or rc > 3:
            bad(f"exit status {rc} (a signal or crash)", " ".join(args) + "\n" + out)
        if SANITIZER.search(out):
            bad("sanitizer report", " ".join(args) + "\n" + out)
        return rc, out

    # the reference and check
    rc_chk, out_chk = tw(["check", "job.cfg", "-o", "ref.h5"] + solver_sets("cpu", 1))
    rc_ref, out_ref = tw(["run", "job.cfg", "-q", "-o", "ref.h5"] + solver_sets("cpu", 1), env_extra=R.ref_env)
    if (rc_chk == 0) != (rc_ref == 0) and "wavefield became non-finite" not in out_ref:  # (only a run sees that)
        bad("check and run disagree", f"check {rc_chk}: {out_chk}\nrun {rc_ref}: {out_ref}")
    if "wavefield became non-finite" in out_ref and "radiates nothing" in out_chk:
        bad("check calls the sources silent, and the run's field overflows", f"{out_chk}\nrun: {out_ref}")
    refused = rc_ref != 0
    if refused:
        R.count("refused")
        err = [l for l in out_ref.splitlines() if l.startswith("torrewave: error")]
        with R.lock:
            R.refusals.append((name, err[0] if err else out_ref))
        if rc_ref != 1 or not err or not REFUSAL.match(err[0]):
            bad("refusal without a located message or with exit status != 1", out_ref)
        if os.path.exists(os.path.join(d, "ref.h5")):
            bad("a refused run left its output")
        with open(os.path.join(d, "old.h5"), "wb") as f:
            f.write(b"an older result\n")
        before = file_state(os.path.join(d, "old.h5"))
        rc, out = tw(["run", "job.cfg", "-q", "-o", "old.h5"] + solver_sets("cpu-diamond", 1))
        if rc == 0 or file_state(os.path.join(d, "old.h5")) != before:
            bad("a refused run changed the older file in its output's place", out)
    else:
        shape_checks(R, name, job, d, bad)
    left = leftovers(d)
    if left:
        bad("temporaries left after the reference run", " ".join(left))

    rnd = random.Random(name)
    variants = kernel_variants(job, rnd) + window_variants(d, rnd, refused, bad, tw)
    ref = os.path.join(d, "ref.h5")
    for vname, sets, threads, env in variants:
        out_h5 = f"{vname}.h5"
        rc, out = tw(["run", "job.cfg", "-q", "-o", out_h5] + sets, threads, env_extra=env)
        path = os.path.join(d, out_h5)
        if refused:
            if rc == 0:
                bad(f"{vname} runs a job the reference refuses", out_ref + "\n" + out)
            continue
        if rc != 0:
            documented = vname.startswith(("cd-dts", "gd-")) and re.search(r"solver\.(dts|tower_height)", out)
            if not documented:
                bad(f"{vname} refuses a job the reference runs", out)
            continue
        if vname.startswith("win") and "window of" in out:  # (a cap that holds the whole grid: no window)
            R.count("windowed")
        same_numbers(R, vname, ref, path, d, bad)
        if leftovers(d):
            bad(f"{vname}: temporaries left", " ".join(leftovers(d)))
        os.unlink(path)
        for side in (path[:-3] + ".xdmf",):
            if os.path.exists(side):
                os.unlink(side)

    if not refused and extra.get("mirror"):
        mirror_check(R, job, d, bad, tw)
    # (--gpu only leaves out what does not depend on the kernel: the CPU campaign has it)
    if not refused and GPU != "only" and job["model"]["type"] in ("gradient", "layered") and R.args.roundtrip:
        model_roundtrip(R, job, d, bad, tw)
    if R.tw_asan and (zlib.crc32(name.encode()) % R.args.asan_every == 0):
        under = [("asan-cpu", solver_sets("cpu", 1), 1, None), ("asan-cd", solver_sets("cpu-diamond", 2), 2, None)]
        for vname, sets, threads, _ in under + [v for v in variants if v[0].startswith("win0")][:1]:
            rc, out = tw(["run", "job.cfg", "-q", "-o", "asan.h5"] + sets, threads, asan=True)
            if (rc == 0) != (not refused):
                bad(f"{vname} under ASan: exit status {rc}", out)
            if rc == 0:
                same_numbers(R, vname, ref, os.path.join(d, "asan.h5"), d, bad)
                os.unlink(os.path.join(d, "asan.h5"))
    if not refused and zlib.crc32(name.encode()) % 3 == 0:
        resume_check(R, d, bad, tw, log, rnd)
    if not refused and GPU != "only" and zlib.crc32(name.encode()) % 7 == 0:
        output_safety(d, bad, tw)
    if not refused and GPU != "only" and expected_receivers(job) and zlib.crc32(name.encode()) % 5 == 0:
        segy_check(R, d, bad, tw)
    if not refused and GPU != "only" and zlib.crc32(name.encode()) % 4 == 1:
        beside_check(R, d, bad, tw, "/snapshots/p" in h5_datasets(ref))  # (snapshots.every past the end: none)

    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    if ok and not R.args.keep:
        shutil.rmtree(d, ignore_errors=True)


def same_numbers(R, vname, ref, path, d, bad):
    """compare --strict --rtol 1e-30, and h5diff on every dataset of the result."""
    R.count("compares")
    sa, sb = h5_datasets(ref), h5_datasets(path)
    if "/receivers/traces" in sa or "/snapshots/p" in sa:  # (else compare has nothing to pair: exit 2)
        rc, out = R.run([R.tw, "compare", "--strict", "--rtol", "1e-30", ref, path], d)
        if rc != 0:
            bad(f"{vname}: compare --strict --rtol 1e-30 exit {rc}", out)
    if sa != sb:
        bad(f"{vname}: other datasets or shapes than the reference", f"{sa}\n{sb}")
    for dset in ("/receivers/traces", "/snapshots/p", "/snapshots/steps", "/receivers/cells", "/sources/wavelets"):
        if dset not in sa:
            continue
        r = subprocess.run(["h5diff", "-q", ref, path, dset, dset], capture_output=True, text=True)
        if r.returncode != 0:
            det = subprocess.run(["h5diff", "-r", ref, path, dset, dset], capture_output=True, text=True)
            bad(f"{vname}: h5diff {dset} differs", (det.stdout + det.stderr)[:1500])


def shape_checks(R, name, job, d, bad):
    """The reference output's shapes and values."""
    path = os.path.join(d, "ref.h5")
    sets = h5_datasets(path)
    nrec = expected_receivers(job)
    rec = job.get("receivers", {})
    interval = rec.get("interval", 1)
    steps = None
    attr = subprocess.run(["h5dump", "-a", "/steps", path], capture_output=True, text=True).stdout
    m = re.search(r"\(0\): (\d+)", attr)
    if m:
        steps = int(m.group(1))
    elif "steps" in job["time"]:
        steps = job["time"]["steps"]
    if nrec:
        dims = sets.get("/receivers/traces")
        if dims is None:
            bad("no /receivers/traces", str(sets))
        elif steps is not None and dims != [nrec, steps // interval + 1]:
            bad("/receivers/traces shape",
                f"{dims}, expected [{nrec}, {steps // interval + 1}] (steps {steps}, interval {interval})")
        else:
            vals = h5_read(path, "/receivers/traces", "f", d)
            if vals is None or any(not math.isfinite(v) for v in vals):
                bad("receiver traces unreadable or not finite")
            elif any(v != 0.0 for v in vals[::dims[1]]):
                bad("sample 0 (p at t = 0) is not zero")
    if "snapshots" in job and steps is not None:
        sn = job["snapshots"]
        want = sorted(set(sn["steps"])) if "steps" in sn else list(range(sn["every"], steps + 1, sn["every"]))
        st = h5_read(path, "/snapshots/steps", "q", d) if want else ()
        if st is None:
            bad("no /snapshots/steps", str(sets))
        elif want:
            if any(s < 0 for s in st):
                bad("a snapshot step was never written", str(st))
            if list(st) != want:
                bad("snapshot steps", f"{st}, expected {want}")
            p = sets.get("/snapshots/p")
            if p is None or p[0] != len(st):
                bad("/snapshots/p shape", f"{p} for {len(st)} steps")
                return
            g, dec = job["grid"]["n"], sn.get("decimate", 1)
            if "region" not in sn:
                whole = [len(st)] + [(g[a] + dec - 1) // dec for a in (2, 1, 0)]
                if p != whole:
                    bad("/snapshots/p shape", f"{p}, expected {whole}")
            attr = subprocess.run(["h5dump", "-a", "/snapshots/first_cell", path], capture_output=True,
                                  text=True).stdout
            m = re.search(r"\(0\): (-?\d+), (-?\d+), (-?\d+)", attr)
            if not m:
                bad("no /snapshots first_cell attribute", attr)
                return
            first, cnt = [int(x) for x in m.groups()], [p[3], p[2], p[1]]
            if any(first[a] < 0 or first[a] + (cnt[a] - 1) * dec > g[a] - 1 for a in range(3)):
                bad("the snapshot box reaches outside the model",
                    f"first cell {first}, {cnt} cells, decimate {dec}, n {g}")


def mirror_check(R, job, d, bad, tw):
    """The job with x and y exchanged computes the same numbers, transposed (only where the padded
    x and y lengths differ: the kernels sweep the longer one)."""
    g = job["grid"]["n"]
    a = job["boundary"]["absorbing"]
    ax = (a, a) if isinstance(a, int) else (a["x"], a["y"])
    if g[0] + 2 * ax[0] == g[1] + 2 * ax[1]:
        return
    R.count("mirrors")
    with open(os.path.join(d, "mirror.cfg"), "w") as f:
        f.write(render(swap_xy(job)))
    rc, out = tw(["run", "mirror.cfg", "-q", "-o", "mirror.h5"] + solver_sets("gpu-diamond" if GPU else "cpu-diamond", 2))
    if rc != 0:
        bad("the mirror image is refused", out)
        return
    A, B = os.path.join(d, "ref.h5"), os.path.join(d, "mirror.h5")
    ta, tb = h5_read(A, "/receivers/traces", "f", d), h5_read(B, "/receivers/traces", "f", d)
    if ta != tb:
        bad("the mirror image's traces differ", f"{len(ta or ())} vs {len(tb or ())} values")
    if "snapshots" in job:
        sa, sb = h5_datasets(A).get("/snapshots/p"), h5_datasets(B).get("/snapshots/p")
        pa, pb = h5_read(A, "/snapshots/p", "f", d), h5_read(B, "/snapshots/p", "f", d)
        ns, nz, ny, nx = sa
        if sb != [ns, nz, nx, ny]:
            bad("the mirror image's snapshot shape", f"{sa} vs {sb}")
            return
        for s in range(ns):
            for k in range(nz):
                for j in range(ny):
                    for i in range(nx):
                        if pa[((s * nz + k) * ny + j) * nx + i] != pb[((s * nz + k) * nx + i) * ny + j]:
                            bad("the mirror image's snapshots differ", f"snapshot {s} cell x {i} y {j} z {k}")
                            return


def model_roundtrip(R, job, d, bad, tw):
    """The analytic model stored by output.model, fed back as an hdf5 model and as a raw file:
    the same velocities, so the same bits."""
    rc, out = tw(["run", "job.cfg", "-q", "-o", "stored.h5", "--set", "output.model=true"] + solver_sets("cpu", 1))
    if rc != 0:
        bad("output.model = true refused", out)
        return
    n = job["grid"]["n"]
    vp = h5_read(os.path.join(d, "stored.h5"), "/model/vp", "f", d)  # [nz][ny][nx]
    if vp is None or len(vp) != n[0] * n[1] * n[2]:
        bad("/model/vp unreadable", str(h5_datasets(os.path.join(d, "stored.h5"))))
        return
    raw = [vp[(k * n[1] + j) * n[0] + i] for i in range(n[0]) for j in range(n[1]) for k in range(n[2])]
    with open(os.path.join(d, "vp.raw"), "wb") as f:
        f.write(struct.pack(f"<{len(raw)}f", *raw))
    for mt, model in (("hdf5", '{type="hdf5";file="stored.h5";dataset="/model/vp";}'),
                      ("raw", '{type="raw";file="vp.raw";}')):
        rc, out = tw(["run", "job.cfg", "-q", "-o", f"model-{mt}.h5", "--set", f"model={model}"] +
                     solver_sets("cpu-diamond", 2), 2)
        if rc != 0:
            bad(f"the stored model as {mt} refused", out)
            continue
        same_numbers(R, f"model-{mt}", os.path.join(d, "ref.h5"), os.path.join(d, f"model-{mt}.h5"), d, bad)


def segy_check(R, d, bad, tw):
    """output.segy at the reference's dt rounded down to whole microseconds, and export of that
    result: both write their SEG-Y file (segyio; a build without it says so)."""
    attr = subprocess.run(["h5dump", "-a", "/dt", os.path.join(d, "ref.h5")], capture_output=True, text=True).stdout
    m = re.search(r"\(0\): ([0-9.e+-]+)", attr)
    dt_us = math.floor(float(m.group(1)) * 1e6) if m else 0
    if dt_us < 1:
        return
    rc, out = tw(["run", "job.cfg", "-q", "-o", "segy.h5", "--set", f"time.dt={dt_us}e-6", "--set", "output.segy=true"]
                 + solver_sets("cpu-diamond", 1))
    if "built without segyio" in out or (rc == 1 and "job.cfg: --set output.segy=true: output.segy: " in out):
        return  # (SEG-Y's own limits: 32767 samples, 32767 us)
    if rc or not os.path.exists(os.path.join(d, "segy.sgy")):
        bad(f"output.segy at dt = {dt_us} us: exit {rc}", out)
        return
    rc, out = tw(["export", "segy.h5", "--segy", "again.sgy"])
    if rc or os.path.getsize(os.path.join(d, "again.sgy")) != os.path.getsize(os.path.join(d, "segy.sgy")):
        bad(f"export: exit {rc}, or a SEG-Y file of another size than output.segy's", out)
    beside_check(R, d, bad, tw, False, ["--set", f"time.dt={dt_us}e-6", "--set", "output.segy=true"] +
                 solver_sets("cpu", 1))


PADDED = re.compile(r"padded grid\s+(\d+) x (\d+) x (\d+) ")


def resume_check(R, d, bad, tw, log, rnd):
    """A run killed (SIGKILL, by TW_CHECKPOINT_CRASH_AFTER) while writing its second checkpoint,
    resumed with --resume on another kernel, thread count or window: the reference's bits; the
    checkpoint, its journal and the killed run's temporaries gone. Checkpoints written synchronously
    (TW_CHECKPOINT_SYNC), so that the kill comes at the same step every time."""
    attr = subprocess.run(["h5dump", "-a", "/steps", os.path.join(d, "ref.h5")], capture_output=True, text=True).stdout
    m = re.search(r"\(0\): (\d+)", attr)
    steps = int(m.group(1)) if m else 0
    rc, out = tw(["check", "job.cfg"] + solver_sets("cpu", 1))
    g = PADDED.search(out)
    if steps < 2 or not g:
        return
    cells = int(g.group(1)) * int(g.group(2)) * int(g.group(3))
    # a checkpoint file is a 4096-byte header, 8 bytes a cell and a few more: the first one written
    # whole stays under this, the second's header and first chunk reach it
    crash = {"TW_CHECKPOINT_CRASH_AFTER": str(8192 + 8 * cells + 1), "TW_CHECKPOINT_SYNC": "1"}
    k = rnd.randrange(1, max(2, steps // 2 + 1))
    ck = ["--set", f'checkpoint={{every={k};file="c.ckpt";}}']
    kernels = [solver_sets("cpu", 1), solver_sets("cpu-diamond", 2),
               solver_sets("cpu-diamond", 1, {"dts": rnd.choice((1, 2)), "tower_height": rnd.choice((1, 3, 5))})]
    windowed = ["cpu-diamond"]
    if GPU == "only":
        kernels = [solver_sets("cpu", 1)]
    if GPU:
        kernels += [solver_sets("gpu-stepwise", 1), solver_sets("gpu-diamond", 1)]
        windowed = ["gpu-diamond"] if GPU == "only" else windowed + ["gpu-diamond"]
    for kernel in windowed:
        out = tw(["check", "job.cfg"] + solver_sets(kernel, 1, {"device_memory": 1}))[1]
        cap = SMALLEST.search(out)
        if cap:
            kernels.append(solver_sets(kernel, 2, {"device_memory": int(cap.group(1))}))
        elif kernel.startswith("gpu") and ABOUT.search(out):
            c = gpu_smallest_cap(tw, d, kernel, {}, None, out)[0]
            if c:
                kernels.append(solver_sets(kernel, 2, {"device_memory": c}))
    first, then = rnd.sample(kernels, 2)
    rc, out = R.run([R.tw, "run", "job.cfg", "-q", "-o", "r.h5"] + first + ck, d, 2, log, env_extra=crash)
    R.count("resumes")
    if 2 * k < steps and rc != -signal.SIGKILL or 2 * k > steps and rc != 0 or rc not in (0, -signal.SIGKILL):
        bad(f"checkpoint every {k} of {steps} steps, killed in the second: exit {rc}", out)
        return
    if rc == -signal.SIGKILL:
        if os.path.exists(os.path.join(d, "r.h5")) or not os.path.exists(os.path.join(d, "c.ckpt")):
            bad(f"killed in its second checkpoint (every {k}): an output, or no checkpoint", " ".join(os.listdir(d)))
            return
        rc, out = tw(["run", "job.cfg", "-q", "-o", "r.h5", "--resume"] + then + ck, 2)
        if rc:
            bad(f"--resume after a kill in the second checkpoint (every {k}): exit {rc}", out)
            return
    same_numbers(R, f"resumed (checkpoint every {k})", os.path.join(d, "ref.h5"), os.path.join(d, "r.h5"), d, bad)
    if any(f.startswith("c.ckpt") for f in os.listdir(d)) or leftovers(d):
        bad("the checkpoint or temporaries stayed after the resumed run completed", " ".join(os.listdir(d)))
    for f in ("r.h5", "r.xdmf"):
        if os.path.exists(os.path.join(d, f)):
            os.unlink(os.path.join(d, f))


def file_state(p):
    """What must not change of a file a run may not replace: its type, inode, size, time and bytes."""
    st = os.lstat(p)
    data = b""
    if os.path.isfile(p) and not os.path.islink(p):
        with open(p, "rb") as f:
            data = f.read()
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, data)


def output_safety(d, bad, tw):
    """Files in the output's place that the run must refuse to replace stay as they were."""
    with open(os.path.join(d, "victim.h5"), "wb") as f:
        f.write(b"not torrewave's\n")
    os.symlink("victim.h5", os.path.join(d, "link.h5"))
    os.mkdir(os.path.join(d, "folder.h5"))
    os.link(os.path.join(d, "job.cfg"), os.path.join(d, "hard.h5"))  # the job file under another name
    before = {p: file_state(os.path.join(d, p)) for p in ("job.cfg", "victim.h5", "link.h5", "folder.h5", "hard.h5")}
    for o in ("job.cfg", "link.h5", "folder.h5", "hard.h5"):
        rc, out = tw(["run", "job.cfg", "-q", "-o", o])
        if rc != 1:
            bad(f"-o {o}: exit status {rc}, expected a refusal", out)
    # a job refused for a bad value must not touch the output it names
    rc, out = tw(["run", "job.cfg", "-q", "-o", "victim.h5", "--set", "time.steps=0"])
    if rc != 1:
        bad("time.steps = 0: not refused", out)
    after = {p: file_state(os.path.join(d, p)) for p in before}
    for p in before:
        if before[p] != after[p]:
            bad(f"{p} changed by a refused run")
    left = leftovers(d)
    if left:
        bad("temporaries after refused runs", " ".join(left))


def check_region(R, name, job, first, last):
    """A snapshot region near and between nodes: with no node on an axis, check, run (the region in
    the file or by --set) and the other kernel refuse it, naming snapshots.region, the axis and its
    from and to as given (float(text) == the value), and leave no output; else the snapshot holds
    exactly the nodes inside it, decimated from the first (first_cell, shape), the values of the
    whole model's snapshot at those cells, on both kernels and through the window."""
    d = os.path.join(R.args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    whole = dict(job, snapshots={"steps": job["snapshots"]["steps"]})
    with open(os.path.join(d, "job.cfg"), "w") as f:
        f.write(render(job))
    with open(os.path.join(d, "whole.cfg"), "w") as f:
        f.write(render(whole))
    # the region's to given by --set over a file whose region, from it to the model's end, holds cells
    g = job["grid"]
    end = [g["origin"][a] + (g["n"][a] - 1) * g["d"][a] for a in range(3)]
    part = dict(job, snapshots=dict(job["snapshots"], region={"from": job["snapshots"]["region"]["from"], "to": end}))
    with open(os.path.join(d, "part.cfg"), "w") as f:
        f.write(render(part))
    R.count("cases")
    R.count("regions")
    ok = True
    log = []

    def bad(what, detail=""):
        nonlocal ok
        ok = False
        R.fail(name, what, detail)

    def tw(args, threads=1, env_extra=None):
        rc, out = R.run([R.tw] + args, d, threads, log, env_extra=env_extra)
        if rc == 124 or rc < 0 or rc > 3:
            bad(f"exit status {rc}", " ".join(args) + "\n" + out)
        return rc, out

    reg = job["snapshots"]["region"]
    dec = job["snapshots"]["decimate"]
    empty = [a for a in range(3) if last[a] < first[a]]
    over = ["--set", "snapshots=" + fmt(job["snapshots"]).replace(" ", "")]
    runs = [(["check", "job.cfg", "-o", "a.h5"], "job.cfg:7"), (["run", "job.cfg", "-q", "-o", "a.h5"], "job.cfg:7"),
            (["run", "job.cfg", "-q", "-o", "b.h5"] + solver_sets("cpu-diamond", 2), "job.cfg:7"),
            (["run", "whole.cfg", "-q", "-o", "c.h5"] + over, "whole.cfg: --set snapshots="),
            (["run", "part.cfg", "-q", "-o", "c.h5", "--set", "snapshots.region.to=" + fmt(reg["to"]).replace(" ", "")],
             "part.cfg: --set snapshots.region.to=")]
    if empty:
        R.count("regions_refused")
        a = empty[0]
        want = re.compile(r"snapshots\.region(?:\.to)?: holds no cell on %s: from\[%d\] = (\S+) and to\[%d\] = (\S+) "
                          r"lie between the cells at %s = \S+ and \S+ m" % ("xyz"[a], a, a, "xyz"[a]))
        for args, where in runs:
            rc, out = tw(args, 2 if "solver.threads=2" in args else 1)
            err = [ln for ln in out.splitlines() if ln.startswith("torrewave: error")]
            m = want.search(err[0]) if err else None
            if rc != 1 or not m or not err[0].startswith("torrewave: error: " + where):
                bad(f"{args[0]} {args[-1]}: a region with no node on {'xyz'[a]} (nodes {first[a]}..{last[a]}): "
                    f"exit {rc}, not refused at {where} naming the axis", out)
            elif float(m.group(1)) != reg["from"][a] or float(m.group(2)) != reg["to"][a]:
                bad(f"the refusal states from[{a}] = {m.group(1)}, to[{a}] = {m.group(2)}: given {reg['from'][a]!r}, "
                    f"{reg['to'][a]!r}", err[0])
        if any(os.path.exists(os.path.join(d, f)) for f in ("a.h5", "b.h5", "c.h5")) or leftovers(d):
            bad("a refused region left an output or temporaries", " ".join(os.listdir(d)))
    else:
        rc, out = tw(["run", "job.cfg", "-q", "-o", "a.h5"], env_extra=R.ref_env)
        rc2, out2 = tw(["run", "whole.cfg", "-q", "-o", "w.h5"])
        rc3, out3 = tw(["check", "job.cfg", "-o", "a.h5"])
        if rc or rc2 or rc3:
            bad(f"a region holding nodes {first}..{last}: run exit {rc}, check exit {rc3}", out + out2 + out3)
        else:
            A, W = os.path.join(d, "a.h5"), os.path.join(d, "w.h5")
            attr = subprocess.run(["h5dump", "-a", "/snapshots/first_cell", A], capture_output=True, text=True).stdout
            m = re.search(r"\(0\): (-?\d+), (-?\d+), (-?\d+)", attr)
            shp, wshp = h5_datasets(A).get("/snapshots/p"), h5_datasets(W).get("/snapshots/p")
            cnt = [(last[a] - first[a]) // dec + 1 for a in range(3)]
            got = [int(x) for x in m.groups()] if m else None
            if got != first or not shp or shp[1:] != cnt[::-1]:
                bad(f"region from {reg['from']} to {reg['to']}, decimate {dec}: first cell {got} and shape {shp}; "
                    f"expected first cell {first}, shape {cnt[::-1]} (nodes {first}..{last})")
            else:
                pa, pw = h5_read(A, "/snapshots/p", "f", d), h5_read(W, "/snapshots/p", "f", d)
                ns, (wz, wy, wx) = shp[0], wshp[1:]
                for s_ in range(ns):
                    for k in range(cnt[2]):
                        for j in range(cnt[1]):
                            for i in range(cnt[0]):
                                x, y, z = first[0] + i * dec, first[1] + j * dec, first[2] + k * dec
                                at = ((s_ * wz + z) * wy + y) * wx + x
                                if pa[((s_ * cnt[2] + k) * cnt[1] + j) * cnt[0] + i] != pw[at]:
                                    bad("the region's snapshot is not the whole model's at its cells",
                                        f"snapshot {s_} cell [{x}, {y}, {z}]")
                                    break
            both = [("cd-t2", solver_sets("cpu-diamond", 2), 2, None)] if GPU != "only" else []
            if GPU:
                both.append(("gd", solver_sets("gpu-diamond", 1), 1, None))
            for vname, sets, threads, env in both + \
                    window_variants(d, random.Random(name), False, bad, lambda args, **kw: tw(args, **kw))[:1]:
                rc, out = tw(["run", "job.cfg", "-q", "-o", "v.h5"] + sets, threads, env_extra=env)
                if rc:
                    bad(f"{vname} refuses the region", out)
                    continue
                same_numbers(R, vname, A, os.path.join(d, "v.h5"), d, bad)
                os.unlink(os.path.join(d, "v.h5"))
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    if ok and not R.args.keep:
        shutil.rmtree(d, ignore_errors=True)


def job_steps(d):
    """The reference run's number of steps (its /steps attribute), 0 when unknown."""
    attr = subprocess.run(["h5dump", "-a", "/steps", os.path.join(d, "ref.h5")], capture_output=True, text=True).stdout
    m = re.search(r"\(0\): (\d+)", attr)
    return int(m.group(1)) if m else 0


THEIRS = re.compile(r"(XDMF sidecar|SEG-Y file) '([^']+)' of output '([^']+)' is there and torrewave did not write "
                    r"it: refusing to replace it")


def beside_check(R, d, bad, tw, snapshots, segy_sets=None):
    """Files under the names derived from the output's (OUT.xdmf; with output.segy, OUT.sgy): one
    torrewave did not write is refused by check and run, named, and stays, with no output; one of
    ours describing another output that is there is refused too; our own, from an earlier run onto
    the same output, is replaced. Without snapshots (output.segy) a foreign one is no business of
    the run's: it runs and the file stays. segy_sets: the --set arguments of a SEG-Y run, else the
    sidecar is tried."""
    R.count("beside")
    ext, sets, what = (".sgy", segy_sets, "SEG-Y file") if segy_sets else (".xdmf", [], "XDMF sidecar")
    rnd = random.Random(d + ext)
    for stem, o in (("their", "their.h5"), ("bare", "bare")):  # (-o bare: its sidecar bare.xdmf too)
        side = os.path.join(d, stem + ext)
        with open(side, "wb") as f:
            f.write(rnd.choice((b'<?xml version="1.0"?>\n<Xdmf Version="3.0"><!-- mine --></Xdmf>\n',
                                b"a field record\n" * 300, b"")))
        before = file_state(side)
        for cmd in (["check", "job.cfg", "-o", o], ["run", "job.cfg", "-q", "-o", o]):
            rc, out = tw(cmd + sets)
            if snapshots or segy_sets:
                m = THEIRS.search(out)
                if rc != 1 or not m or m.group(1) != what or m.group(2) != stem + ext or m.group(3) != o:
                    bad(f"{cmd[0]} -o {o} beside a {what} torrewave did not write: exit {rc}, not refused naming it",
                        out)
            elif rc != 0:
                bad(f"{cmd[0]} -o {o} without snapshots beside a foreign {stem + ext}: exit {rc}", out)
        if snapshots and not segy_sets:  # outputs without a snapshot have no sidecar: none of their business
            steps = job_steps(d)
            for cmd in (["reference", "job.cfg", "-q", "-o", o], ["run", "job.cfg", "-q", "-o", o, "--set",
                                                                   f"snapshots={{every={steps + 1};}}"]):
                rc, out = tw(cmd)
                if THEIRS.search(out) or (cmd[0] == "run" and rc != 0):
                    bad(f"{cmd[0]} -o {o}, writing no snapshot, beside a foreign {stem + ext}: exit {rc}", out)
                if os.path.exists(os.path.join(d, o)):
                    os.unlink(os.path.join(d, o))
        if file_state(side) != before:
            bad(f"a {what} torrewave did not write, {stem + ext}, changed")
        made = os.path.exists(os.path.join(d, o))
        if (snapshots or segy_sets) and made or leftovers(d):
            bad(f"-o {o} refused for {stem + ext}: an output or temporaries left", " ".join(os.listdir(d)))
        for f in (o, side):
            if os.path.exists(os.path.join(d, f) if f == o else f):
                os.unlink(os.path.join(d, f) if f == o else f)
    if not (snapshots or segy_sets):
        return
    # ours: run twice onto one output (the second replaces the first's file); a copy of it beside
    # another output is that output's, refused while the output it describes is there
    for i in range(2):
        rc, out = tw(["run", "job.cfg", "-q", "-o", "ours.h5"] + sets)
        if rc or not os.path.exists(os.path.join(d, "ours" + ext)):
            bad(f"run {i + 1} onto ours.h5: exit {rc}, or no {what}", out)
            return
    shutil.copy(os.path.join(d, "ours" + ext), os.path.join(d, "copy" + ext))
    before = file_state(os.path.join(d, "copy" + ext))
    rc, out = tw(["run", "job.cfg", "-q", "-o", "copy.h5"] + sets)
    if rc != 1 or f"{what} 'copy{ext}' of output 'copy.h5' is that of output 'ours.h5'" not in out or \
            file_state(os.path.join(d, "copy" + ext)) != before or os.path.exists(os.path.join(d, "copy.h5")):
        bad(f"a copy of ours.h5's {what} beside copy.h5: exit {rc}, not refused as ours.h5's, or changed", out)
    for f in ("ours.h5", "ours.xdmf", "ours.sgy", "copy" + ext, "copy.h5"):
        if os.path.exists(os.path.join(d, f)):
            os.unlink(os.path.join(d, f))


def check_invalid(R, name, text, pat, sets=()):
    d = os.path.join(R.args.work, "invalid-" + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "job.cfg"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "w.txt"), "w") as f:
        f.write("0.0\n1.0\n0.0\n")
    m = re.search(r'file = "(vp_(\S+)\.bin)"', text)
    if m:  # a raw model of the job's 10 x 9 x 8 cells, one bad value at cell (3, 4, 5)
        vals = [2000.0] * (10 * 9 * 8)
        vals[(3 * 9 + 4) * 8 + 5] = float(m.group(2))
        with open(os.path.join(d, m.group(1)), "wb") as f:
            f.write(struct.pack(f"<{len(vals)}f", *vals))
    with open(os.path.join(d, "out.h5"), "wb") as f:
        f.write(b"an older result\n")
    before = file_state(os.path.join(d, "out.h5"))
    R.count("invalid")
    ok = True
    log = []
    over = [a for kv in sets for a in ("--set", kv)]
    for cmd in (["check", "job.cfg", "-o", "out.h5"], ["run", "job.cfg", "-q", "-o", "out.h5"],
                ["run", "job.cfg", "-q", "-o", "new.h5", "--set", "solver.kernel=cpu-diamond"]):
        cmd = cmd + over
        rc, out = R.run([R.tw] + cmd, d, 1, log)
        err = [l for l in out.splitlines() if l.startswith("torrewave: error")]
        msg = err[0] if err else out
        why = None
        if rc not in (1, 2):
            why = f"exit status {rc}"
        elif not REFUSAL.match(msg) or "job.cfg" not in msg:
            why = "the message does not start with the job file and line"
        elif not re.search(pat, msg):
            why = f"the message does not match /{pat}/"
        elif not re.search(r"(got|allowed|did you mean|expected|syntax error|the smallest cap that works)", msg):
            why = "the message says neither what was given nor what is allowed"
        if R.tw_asan and cmd[0] == "run" and cmd[-1] != "solver.kernel=cpu-diamond":
            rca, outa = R.run([R.tw_asan] + cmd, d, 1, log, asan=True)
            if SANITIZER.search(outa) or rca != rc:
                why = f"under ASan: exit status {rca} (plain {rc})"
                out = outa
        if why:
            ok = False
            R.fail("invalid-" + name, why, " ".join(cmd) + "\n" + out)
    if file_state(os.path.join(d, "out.h5")) != before:
        ok = False
        R.fail("invalid-" + name, "the existing output was modified")
    if os.path.exists(os.path.join(d, "new.h5")) or leftovers(d):
        ok = False
        R.fail("invalid-" + name, "output or temporaries left", " ".join(os.listdir(d)))
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    if ok and not R.args.keep:
        shutil.rmtree(d, ignore_errors=True)


def survey_cases(seed):
    """Surveys: (name, job, shots, mode, offsets). Shots on the model's corners and edges, receivers
    fixed or moving (offsets from the shot, every spread inside the model)."""
    rnd = random.Random(seed)
    cases = []
    for i in range(8):
        n = [rnd.choice((5, 9, 13, 21)) for _ in range(3)]
        order = rnd.choice((2, 4, 6, 8))
        free = rnd.random() < 0.4
        job = base(n, order=order, steps=rnd.choice((7, 16, 33)), absorbing=rnd.choice((0, 2, 5)), free=free)
        hi = [(k - 1) * 10.0 for k in n]
        mode = rnd.choice(("fixed", "moving"))
        reach = [0.0, 0.0, 0.0] if mode == "fixed" else [rnd.choice((0.0, 10.0)) for _ in range(3)]
        z0 = 10.0 if free else 0.0
        lo_ = [reach[0], reach[1], max(z0, reach[2])]
        top = [hi[a] - reach[a] for a in range(3)]
        shots = [[lo_[0], lo_[1], lo_[2]], [top[0], top[1], top[2]], [lo_[0], top[1], lo_[2]],
                 [rnd.choice((lo_[0], top[0])), rnd.uniform(lo_[1], top[1]), top[2]]]
        if mode == "fixed":
            offsets = deep(corners(job), job)
        else:
            offsets = [[0.0, 0.0, 0.0], [reach[0], -reach[1], reach[2]],
                       [-reach[0], reach[1], -reach[2] if not free else 0.0]]
        job["sources"] = [{"wavelet": ricker(rnd.choice((15.0, 30.0)))}]
        # (its own generator: the draws above give the surveys of a seed as before)
        more = random.Random(f"survey-{seed}-{i}")
        line = None
        if more.random() < 0.5:  # the first two shots again as a line's ends, and its midpoint (exact)
            line = {"from": shots[0], "to": shots[1], "count": more.choice((1, 2, 3))}
            if line["count"] == 1:
                line["to"] = shots[0]
        if more.random() < 0.5:
            snap = {"decimate": more.choice((1, 2, 3))}
            if more.random() < 0.5:
                snap["every"] = more.choice((1, 5, job["time"]["steps"]))
            else:
                snap["steps"] = sorted({1, job["time"]["steps"]})
            if more.random() < 0.5:
                snap["region"] = {"from": [10.0, 0.0, 0.0], "to": [hi[0], 10.0 * more.randrange(n[1]), hi[2]]}
            job["snapshots"] = snap
        if more.random() < 0.3:
            job["output"] = {"model": True}
        if more.random() < 0.4:  # SEG-Y: a sample interval of whole microseconds (stable: vp 2000, d 10)
            job["time"]["dt"] = more.choice((0.001, 0.0005))
            job["output"] = dict(job.get("output", {}), segy=True)
        cases.append((f"survey-{seed}-{i}", job, shots, mode, offsets, line))
    return cases


def line_shots(line):
    c = line["count"]
    return [line["from"]] if c == 1 else \
        [[a + (b - a) * i / (c - 1) for a, b in zip(line["from"], line["to"])] for i in range(c)]


def check_survey(R, name, job, shots, mode, offsets, line=None):
    """Every shot file of the survey, on both kernels with two workers (cpu-diamond through the
    window), is bit for bit the single-shot run of its source position (cpu, one thread), its SEG-Y
    file (output.segy) as large as the single run's. Run again, the survey runs nothing and changes
    no file; --force --shots reruns those shots alone, --shots into a new folder writes only them."""
    d = os.path.join(R.args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ok = True
    log = []
    R.count("cases")

    def bad(what, detail=""):
        nonlocal ok
        ok = False
        R.fail(name, what, detail)

    if job.get("output", {}).get("segy") and not R.have_segy:  # (a build without segyio refuses output.segy)
        job = dict(job, output={k: v for k, v in job["output"].items() if k != "segy"})
    sv = dict(job, shots={"positions": shots, "receivers": mode}, receivers={"points": offsets})
    if line:
        sv["shots"] = {"positions": shots, "lines": [line], "receivers": mode}
        shots = shots + line_shots(line)
    with open(os.path.join(d, "survey.cfg"), "w") as f:
        f.write(render(sv))
    singles = []
    for i, p in enumerate(shots):
        pts = offsets if mode == "fixed" else [[p[a] + o[a] for a in range(3)] for o in offsets]
        one = dict(job, sources=[dict(job["sources"][0], position=p)], receivers={"points": pts})
        with open(os.path.join(d, f"single-{i}.cfg"), "w") as f:
            f.write(render(one))
        rc, out = R.run([R.tw, "run", f"single-{i}.cfg", "-q", "-o", f"single-{i}.h5"] + solver_sets("cpu", 1),
                        d, 1, log, env_extra=R.ref_env)
        singles.append(rc == 0)
        if rc:
            bad(f"the single-shot job of shot {i} refused", out)
    kernels = []
    if GPU != "only":
        probe = [R.tw, "check", "survey.cfg"] + solver_sets("cpu-diamond", 1, {"device_memory": 1})
        m = SMALLEST.search(R.run(probe, d, 1, log)[1])
        kernels = [("cpu", {}), ("cpu-diamond", {"device_memory": int(m.group(1))} if m else {})]
    if GPU:  # (two workers on the one GPU)
        kernels += [("gpu-stepwise", {}), ("gpu-diamond", {})]
    for kernel, extra in kernels:
        out_dir = f"shots-{kernel}"
        rc, out = R.run([R.tw, "run", "survey.cfg", "-q", "-o", out_dir, "--workers", "2"] +
                        solver_sets(kernel, 1, extra), d, 2, log)
        if rc != (0 if all(singles) else 3):
            bad(f"the survey on {kernel}: exit {rc}", out)
            continue
        for i in range(len(shots)):
            f = os.path.join(d, out_dir, f"shot-{i:05d}.h5")
            if singles[i] and os.path.exists(f):
                same_numbers(R, f"{kernel} shot {i}", os.path.join(d, f"single-{i}.h5"), f, d, bad)
            elif singles[i]:
                bad(f"{kernel}: no file for shot {i}", " ".join(os.listdir(os.path.join(d, out_dir))))
            sgy, one = f[:-3] + ".sgy", os.path.join(d, f"single-{i}.sgy")
            if singles[i] and job.get("output", {}).get("segy") and os.path.exists(one) and \
                    (not os.path.exists(sgy) or os.path.getsize(sgy) != os.path.getsize(one)):
                bad(f"{kernel}: shot {i}'s SEG-Y file missing or of another size than the single run's")
    if all(singles) and os.path.isdir(os.path.join(d, "shots-cpu")):
        survey_restart(R, d, shots, bad, log)
    if GPU != "only":  # (the inputs' checks do not depend on the kernel)
        survey_inputs(R, d, sv, len(shots), bad, log)
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    if ok and not R.args.keep:
        shutil.rmtree(d, ignore_errors=True)


def survey_inputs(R, d, sv, nshots, bad, log):
    """A shot's file that is one of the job's inputs — a wavelet file under a shot's name, its
    sidecar's, its SEG-Y file's, its lock's or a killed run's temporary's, or a hard link of it
    there: check and run refuse the survey before any shot runs, naming the shot, the file and the
    input; nothing in the folder is written or removed, the input stays whole. The same names that
    are no input: the survey runs them over (the shot files are its own)."""
    R.count("survey_inputs")
    rnd = random.Random(os.path.basename(d) + "-inputs")
    k = rnd.randrange(nshots)
    exts = [".h5", ".h5.lock", ".h5.part-999999", ".xdmf.part-4242"]
    if "snapshots" in sv:
        exts.append(".xdmf")
    if sv.get("output", {}).get("segy"):
        exts.append(".sgy")
    ext = rnd.choice(exts)
    link = rnd.random() < 0.4
    folder = os.path.join(d, "in-shots")
    os.makedirs(folder, exist_ok=True)
    name = f"shot-{k:05d}{ext}"
    with open(os.path.join(d, "w.txt"), "w") as f:
        f.write("0.0\n1.0\n-0.5\n0.0\n")
    if link:
        os.link(os.path.join(d, "w.txt"), os.path.join(folder, name))
        given = "w.txt"
    else:
        shutil.copy(os.path.join(d, "w.txt"), os.path.join(folder, name))
        given = f"in-shots/{name}"
    wav = ["--set", f'sources=({{wavelet={{type="file";file="{given}";}};}})']
    before = {f: file_state(os.path.join(folder, f)) for f in os.listdir(folder)}
    keep = file_state(os.path.join(d, "w.txt"))
    what = {".h5": "output", ".xdmf": "XDMF sidecar", ".sgy": "SEG-Y file", ".h5.lock": "lock file"}.get(ext,
                                                                                                "temporary file")
    of = "" if ext == ".h5" else f" of output 'in-shots/shot-{k:05d}.h5'"
    want = re.compile(r"shot %d \[[^]]*\]: %s 'in-shots/%s'%s is a wavelet file \('%s', "
                      r"sources\[0\]\.wavelet\.file\): refusing to overwrite an input of the job" %
                      (k, re.escape(what), re.escape(name), re.escape(of), re.escape(given)))
    for cmd in (["check", "survey.cfg", "-o", "in-shots"], ["run", "survey.cfg", "-q", "-o", "in-shots"]):
        rc, out = R.run([R.tw] + cmd + wav + solver_sets("cpu", 1), d, 1, log)
        if rc != 1 or not want.search(out):
            bad(f"{cmd[0]}: shot {k}'s {name} is the wavelet file ({'a hard link' if link else 'itself'}): exit {rc}, "
                f"not refused naming shot {k}, the file and the input", out)
    after = {f: file_state(os.path.join(folder, f)) for f in os.listdir(folder)}
    if after != before or file_state(os.path.join(d, "w.txt")) != keep:
        bad(f"a survey refused for shot {k}'s input {name} wrote or removed files, or changed the input",
            " ".join(sorted(after)))
    # the wavelet file elsewhere: the name is no input, and the survey runs (exit 0) over it
    rc, out = R.run([R.tw, "run", "survey.cfg", "-q", "-o", "in-shots", "--shots", str(k), "--set",
                     'sources=({wavelet={type="file";file="w2.txt";};})'] + solver_sets("cpu", 1), d, 1,
                    log) if shutil.copy(os.path.join(d, "w.txt"), os.path.join(d, "w2.txt")) else (None, "")
    if ext in (".h5.lock",) and rc != 0:
        return  # (a lock file holding what a wavelet holds is none of ours: its own refusal)
    if ext in (".xdmf", ".sgy"):  # not ours under the sidecar's or SEG-Y file's name: refused, it stays
        # (exit 1: the survey refuses it before any shot runs, 5d9b77b; exit 3: that shot fails alone)
        if rc not in (1, 3) or not THEIRS.search(out) or file_state(os.path.join(folder, name)) != before[name]:
            bad(f"shot {k} beside a {name} torrewave did not write: exit {rc}, not failed naming it, or it changed",
                out)
        return
    if rc != 0 or not os.path.exists(os.path.join(folder, f"shot-{k:05d}.h5")) or leftovers(folder):
        bad(f"shot {k} beside a {name} that is no input: exit {rc}", out + " ".join(os.listdir(folder)))
    if file_state(os.path.join(d, "w.txt")) != keep:
        bad(f"the survey over {name} (a hard link of w.txt) changed w.txt")


def survey_restart(R, d, shots, bad, log):
    """The complete survey run again: nothing rerun, no file touched; --force --shots K reruns shot
    K alone (the same numbers); --shots into a new folder writes those shots' files alone; a shot
    whose sidecar was removed runs again, alone."""
    out_dir = os.path.join(d, "shots-cpu")
    files = sorted(os.listdir(out_dir))
    before = {f: file_state(os.path.join(out_dir, f)) for f in files}
    cmd = [R.tw, "run", "survey.cfg", "-q", "-o", "shots-cpu"] + solver_sets("cpu", 1)
    rc, out = R.run(cmd, d, 1, log)
    if rc or {f: file_state(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))} != before:
        bad(f"the complete survey run again: exit {rc}, or its files changed", out)
    k = len(shots) - 1
    shutil.copy(os.path.join(out_dir, f"shot-{k:05d}.h5"), os.path.join(d, "old-last.h5"))
    rc, out = R.run(cmd + ["--force", "--shots", str(k)], d, 1, log)
    after = {f: file_state(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}
    changed = sorted(f for f in after if after[f] != before.get(f))
    if rc or not all(f.startswith(f"shot-{k:05d}.") for f in changed) or set(after) != set(before):
        bad(f"--force --shots {k}: exit {rc}, or files other than shot {k}'s changed: {changed}", out)
    same_numbers(R, f"--force shot {k}", os.path.join(d, "old-last.h5"), os.path.join(out_dir, f"shot-{k:05d}.h5"),
                 d, bad)
    pick = sorted({0, k, len(shots) // 2})
    sel = ",".join(str(i) for i in pick)
    rc, out = R.run([R.tw, "run", "survey.cfg", "-q", "-o", "shots-sub", "--shots", sel] + solver_sets("cpu", 1),
                    d, 1, log)
    got = sorted(f for f in os.listdir(os.path.join(d, "shots-sub")) if f.endswith(".h5")) \
        if os.path.isdir(os.path.join(d, "shots-sub")) else []
    if rc or got != [f"shot-{i:05d}.h5" for i in pick]:
        bad(f"--shots {sel}: exit {rc}, files {got}", out)
    for f in got:
        same_numbers(R, f"--shots {f}", os.path.join(out_dir, f), os.path.join(d, "shots-sub", f), d, bad)
    # a shot file without its sidecar (.xdmf with snapshots, .sgy with output.segy) is not complete:
    # run again, that shot alone runs
    sub = os.path.join(d, "shots-sub")
    sides = [f for f in sorted(os.listdir(sub)) if f.endswith((".xdmf", ".sgy"))] if got else []
    if sides:
        os.unlink(os.path.join(sub, sides[0]))
        shot = sides[0].split(".")[0]
        before = {f: file_state(os.path.join(sub, f)) for f in os.listdir(sub)}
        rc, out = R.run([R.tw, "run", "survey.cfg", "-q", "-o", "shots-sub", "--shots", sel] + solver_sets("cpu", 1),
                        d, 1, log)
        after = {f: file_state(os.path.join(sub, f)) for f in os.listdir(sub)}
        changed = sorted(f for f in after if after[f] != before.get(f))
        if rc or sides[0] not in after or not all(f.startswith(shot + ".") for f in changed):
            bad(f"{sides[0]} removed, run again: exit {rc}, changed {changed}", out)
        same_numbers(R, f"{shot} rerun", os.path.join(out_dir, shot + ".h5"), os.path.join(sub, shot + ".h5"), d, bad)


def signal_checks(R):
    """Runs stopped part way: SIGTERM with checkpoints (exit 75) resumed on the other kernel, through
    the window, gives the uninterrupted run's bits; SIGINT (130) and kill -9 leave an older file in
    the output's place as it was, and the next run removes what the killed one left."""
    name = "signals"
    d = os.path.join(R.args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    job = base([48, 40, 36], order=8, steps=6000, absorbing=6, free=True,
               model={"type": "gradient", "vp0": 1500.0, "gradient": 2.0})
    job["receivers"] = {"lines": [{"from": [0.0, 0.0, 10.0], "to": [470.0, 390.0, 10.0], "count": 25}], "interval": 3}
    job["snapshots"] = {"steps": [100, 5999], "decimate": 2}
    with open(os.path.join(d, "job.cfg"), "w") as f:
        f.write(render(job))
    ok = True
    log = []

    def bad(what, detail=""):
        nonlocal ok
        ok = False
        R.fail(name, what, detail)

    def start(args):
        log.append(" ".join(args))
        R.count("runs")
        return subprocess.Popen([R.tw] + args, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=dict(os.environ, OMP_WAIT_POLICY="passive"), start_new_session=True)

    def stopped(args, sig, after):
        R.cores.take(1)
        try:
            p = start(args)
            time.sleep(after)
            p.send_signal(sig)
            out, _ = p.communicate(timeout=TIMEOUT)
            return p.returncode, out.decode("utf-8", "replace")
        finally:
            R.cores.give(1)

    rc, out = R.run([R.tw, "run", "job.cfg", "-q", "-o", "ref.h5"] + solver_sets("cpu", 1), d, 1, log,
                    env_extra=R.ref_env)
    if rc:
        bad("the reference run failed", out)
        return
    for first, then in (("cpu", "cpu-diamond"), ("cpu-diamond", "cpu")):
        ck = ["--set", "checkpoint={every=70;file=\"c.ckpt\";}"]
        rc, out = stopped(["run", "job.cfg", "-q", "-o", "r.h5"] + solver_sets(first, 1) + ck, signal.SIGTERM, 0.6)
        if rc != 75:
            bad(f"SIGTERM on {first} with checkpoints: exit {rc}, expected 75", out)
            continue
        if os.path.exists(os.path.join(d, "r.h5")) or not os.path.exists(os.path.join(d, "c.ckpt")):
            bad(f"SIGTERM on {first}: an output, or no checkpoint", " ".join(os.listdir(d)))
        probe = solver_sets(then, 1, {"device_memory": 1})
        m = SMALLEST.search(R.run([R.tw, "check", "job.cfg"] + probe, d, 1, log)[1]) if then == "cpu-diamond" else None
        extra = {"device_memory": int(m.group(1))} if m else {}
        rc, out = R.run([R.tw, "run", "job.cfg", "-q", "-o", "r.h5", "--resume"] + solver_sets(then, 2, extra) + ck,
                        d, 2, log)
        if rc:
            bad(f"--resume on {then}: exit {rc}", out)
            continue
        same_numbers(R, f"{first}-stopped-{then}-resumed", os.path.join(d, "ref.h5"), os.path.join(d, "r.h5"), d, bad)
        if any(f.startswith("c.ckpt") for f in os.listdir(d)):
            bad("the checkpoint stayed after the resumed run completed", " ".join(os.listdir(d)))
        os.unlink(os.path.join(d, "r.h5"))
    with open(os.path.join(d, "old.h5"), "wb") as f:
        f.write(b"an older result\n")
    before = file_state(os.path.join(d, "old.h5"))
    for sig, want in ((signal.SIGINT, 130), (signal.SIGKILL, -9)):
        rc, out = stopped(["run", "job.cfg", "-q", "-o", "old.h5"] + solver_sets("cpu-diamond", 1), sig, 0.5)
        if rc != want:
            bad(f"signal {sig.name}: exit {rc}, expected {want}", out)
        if file_state(os.path.join(d, "old.h5")) != before:
            bad(f"signal {sig.name}: the older file in the output's place changed")
        left = leftovers(d)
        if sig == signal.SIGINT and left:
            bad("SIGINT left temporaries", " ".join(left))
    rc, out = R.run([R.tw, "run", "job.cfg", "-o", "old.h5"] + solver_sets("cpu-diamond", 2), d, 2, log)
    if rc or leftovers(d):
        bad(f"the run after kill -9: exit {rc}, left {leftovers(d)}", out)
    elif "remov" not in out:
        bad("the run after kill -9 did not say it removed the killed run's temporary", out)
    else:
        same_numbers(R, "after-kill", os.path.join(d, "ref.h5"), os.path.join(d, "old.h5"), d, bad)
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    if ok and not R.args.keep:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--asan", default=None, help="an ASan + UBSan build (scripts/test.sh's build-asan)")
    ap.add_argument("--asan-every", type=int, default=6, help="run every N-th job under ASan (by name)")
    ap.add_argument("--work", default="/tmp/twfuzz")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--random", type=int, default=200, help="random jobs besides the hand-made ones")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--regions", type=int, default=40, help="snapshot regions near and between nodes")
    ap.add_argument("--only", default=None, help="only the jobs whose name holds this (a comma list: any of these)")
    ap.add_argument("--no-roundtrip", dest="roundtrip", action="store_false")
    ap.add_argument("--refusals", action="store_true", help="list the generated jobs every kernel refused, and why")
    ap.add_argument("--keep", action="store_true", help="keep every job's folder (failing ones are always kept)")
    ap.add_argument("--ref-variant", choices=("base", "v3", "v4"), default=None,
                    help="run the reference runs alone with TW_CPU_VARIANT=NAME (the others on the default)")
    ap.add_argument("--gpu", choices=("add", "only"), default=None,
                    help="also run the GPU kernels on every job (add), or only them against the CPU reference")
    args = ap.parse_args()
    global GPU
    GPU = args.gpu
    os.makedirs(args.work, exist_ok=True)
    R = Runner(args)
    info = subprocess.run([R.tw, "info"], capture_output=True, text=True).stdout
    R.have_segy = "SEG-Y: built" in info  # (surveys leave output.segy out where it is not)
    if GPU:  # (every GPU run would fail alike: say why once)
        m = re.search(r"^GPUs: (\d+)", info, re.M)
        if not m or int(m.group(1)) == 0 or "gpu-diamond" not in info:
            print(f"jobs.py: --gpu needs a build with CUDA ({R.tw}) on a machine with a GPU: "
                  f"{(m.group(0) if m else 'torrewave info says no GPU count')}", file=sys.stderr)
            return 2
    t0 = time.time()
    ref = f"the reference runs with TW_CPU_VARIANT={args.ref_variant}, the others on the default variant" \
        if args.ref_variant else "every run on the default CPU variant"
    if GPU:
        ref += "; GPU kernels " + ("beside the CPU kernels" if GPU == "add" else "alone, against the CPU reference")
    print(f"jobs.py: {ref}", file=sys.stderr)
    valid = named_cases() + random_cases(args.random, args.seed)
    invalid = invalid_cases()
    names = [c[0] for c in valid + invalid]
    assert len(names) == len(set(names)), "two jobs of one name would share a folder"
    def picked(name):  # --only: a comma list of substrings
        return not args.only or any(o in name for o in args.only.split(","))

    valid = [c for c in valid if picked(c[0])]
    invalid = [c for c in invalid if picked(c[0])]
    if GPU == "only":  # (invalid jobs and signals do not depend on the kernel)
        invalid = []
    with ThreadPoolExecutor(max_workers=args.cores) as ex:
        futs = [ex.submit(check_case, R, *c) for c in valid] + [ex.submit(check_invalid, R, *c) for c in invalid]
        futs += [ex.submit(check_survey, R, *c) for c in survey_cases(args.seed) if picked(c[0])]
        futs += [ex.submit(check_region, R, *c) for c in region_cases(args.regions, args.seed)
                 if picked(c[0])]
        if GPU != "only" and picked("signals"):
            futs.append(ex.submit(signal_checks, R))
        index = {f: i for i, f in enumerate(futs)}
        last = time.time()
        for n, f in enumerate(as_completed(futs), 1):  # (as they end: a campaign cut short still says how far it got)
            try:
                f.result()
            except Exception as e:  # a bug of this script: say which job
                R.fail(f"job {index[f]}", f"script error: {e!r}")
            if n % 50 == 0 or n == len(futs) or time.time() - last > 30:
                last = time.time()
                print(f"{n}/{len(futs)} jobs, {len(R.failures)} failures, {time.time() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    s = R.stats
    print(f"{s['cases']} valid jobs ({s['refused']} refused by every kernel), {s['invalid']} invalid; "
          f"{s['runs']} runs, {s['asan_runs']} under ASan, {s['compares']} bitwise comparisons, "
          f"{s['windowed']} windowed runs, {s['mirrors']} mirror images, {s['resumes']} killed and resumed; "
          f"{s['regions']} snapshot regions near nodes ({s['regions_refused']} holding none, refused), "
          f"{s['beside']} foreign sidecars and SEG-Y files, {s['survey_inputs']} surveys with an input as a "
          f"shot's file; {ref}; "
          f"{time.time() - t0:.0f} s")
    if args.refusals:
        for case, msg in sorted(R.refusals):
            print(f"refused {case}: {msg}")
    for case, what, detail in R.failures:
        print(f"FAIL {case}: {what}")
        if detail:
            print("    " + detail.replace("\n", "\n    "))
    return 1 if R.failures else 0


if __name__ == "__main__":
    sys.exit(main())
