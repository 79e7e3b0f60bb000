#!/usr/bin/env python3
"""diamond-trace.py — where the time of one persistent gpu-diamond launch goes.

usage: TW_DIAMOND_TRACE=trace.txt torrewave bench ...   (or any run with the gpu-diamond kernel)
       scripts/diamond-trace.py trace.txt [more traces...]

The trace (solver/gpu/gpu_diamond.cu, dia_trace_write) has one line per tower of the launch: ticket,
stage s, tower k, the times (ns) the block took the ticket, the tower's two parents (s+1, k±1)
were done, the tower was done, and the SM. This script prints, per trace:

  * the launch's span against its two lower bounds: the work (sum of the towers' run times over
    the blocks) and the critical path (the longest chain of dependent towers, run times summed);
  * the towers by class (interior; in a y layer; crossing an x layer; both) with their run time
    per step and the time their blocks waited for the parents;
  * a replay of the persistent schedule (blocks take tickets in order, wait for the parents) with
    the measured run times, and again with every layer tower as fast per step as the interior
    ones: how much of the span the layer towers' chain costs.
"""
import heapq
import statistics
import sys


def floordiv(a, b):
    return a // b  # Python's // is the floor for negative a too


def read(path):
    hdr, rows = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("# gpu-diamond trace:"):
                w = line.split(":", 1)[1].split()
                i = 0
                while i < len(w):
                    key = w[i]
                    vals = []
                    i += 1
                    while i < len(w) and w[i].lstrip("-").isdigit():
                        vals.append(int(w[i]))
                        i += 1
                    hdr[key] = vals if len(vals) > 1 else vals[0]
            elif line.startswith("#") or not line.strip():
                continue
            else:
                t, s, k, a, b, c, sm = (int(x) for x in line.split())
                rows.append((t, s, k, a, b, c, sm))
    return hdr, rows


def classify(h, s, k):
    """(active steps, in a y layer, steps in an x layer) of tower (s, k): the kernel's geometry."""
    R, r, N0, H = h["R"], h["r"], h["N0"], h["h"]
    lo = -floordiv(2 * R - 1 + R * s, r)
    hi = floordiv(N0 - 1 - R * s, r) + 1
    tlo, thi = max(lo, 0), min(hi, H)
    Y0 = R * k
    yz0, yz1 = h["yz"]
    xz0, xz1 = h["xz"]
    ylay = not (Y0 - (R - 1) >= yz0 and Y0 + (R - 1) < yz1)
    xst = sum(1 for tau in range(tlo, thi) if not (R * s + tau * r >= xz0 and R * s + tau * r + 2 * R <= xz1))
    return max(thi - tlo, 0), ylay, xst


def replay(rows, dur, blocks):
    """The persistent schedule with run times dur[ticket]: span of the launch."""
    free = [0.0] * blocks
    heapq.heapify(free)
    end = {}
    for t, s, k, *_ in rows:
        start = heapq.heappop(free)
        for p in ((s + 1, k + 1), (s + 1, k - 1)):
            if p in end:
                start = max(start, end[p])
        end[(s, k)] = start + dur[t]
        heapq.heappush(free, end[(s, k)])
    return max(end.values())


def critical_path(rows, dur):
    cp, via = {}, {}
    for t, s, k, *_ in rows:
        best, arg = 0.0, None
        for p in ((s + 1, k + 1), (s + 1, k - 1)):
            if p in cp and cp[p] > best:
                best, arg = cp[p], p
        cp[(s, k)] = best + dur[t]
        via[(s, k)] = arg
    return cp, via


def report(path):
    h, rows = read(path)
    rows.sort()
    B = h["blocks"]
    run = {t: c - b for t, s, k, a, b, c, sm in rows}
    wait = {t: b - a for t, s, k, a, b, c, sm in rows}
    span = max(c for *_, c, sm in rows) - min(a for t, s, k, a, *_ in rows)
    work = sum(run.values())
    cls = {}
    info = {}
    for t, s, k, *_ in rows:
        n, ylay, xst = classify(h, s, k)
        name = ("y layer" if ylay else "interior") + (", x layer" if xst else "")
        info[t] = (n, ylay, xst, name)
        cls.setdefault(name, []).append(t)
    print(f"== {path}")
    print(f"   order {2 * h['r']}, dts {h['dts']} (R {h['R']}), {h['Z']} z per thread, {h['threads']} threads, "
          f"height {h['h']}, grid {h['N0']}x{h['N1']}x{h['N2']}, layers x {h['xz']} y {h['yz']}")
    print(f"   {len(rows)} towers on {B} blocks; span {span / 1e6:.2f} ms")
    print(f"   work bound (sum of run times / blocks) {work / B / 1e6:.2f} ms = {100 * work / B / span:.1f} % of the span;"
          f" blocks waiting for parents {100 * sum(wait.values()) / (B * span):.1f} % of block time")
    cp, via = critical_path(rows, run)
    end = max(cp, key=cp.get)
    chain, node = [], end
    while node is not None:
        chain.append(node)
        node = via[node]
    key_of = {(s, k): t for t, s, k, *_ in rows}
    onpath = {}
    for node in chain:
        t = key_of[node]
        onpath[info[t][3]] = onpath.get(info[t][3], 0) + run[t]
    print(f"   critical path {cp[end] / 1e6:.2f} ms = {100 * cp[end] / span:.1f} % of the span ({len(chain)} towers: "
          + ", ".join(f"{n} {100 * v / cp[end]:.0f} %" for n, v in sorted(onpath.items())) + ")")
    print(f"   {'class':<22} {'towers':>7} {'steps':>7} {'run/step ns':>12} {'p10':>8} {'p90':>8} {'wait us':>8}")
    per_step = {}
    for name in sorted(cls):
        ts = [t for t in cls[name] if info[t][0] > 0]
        if not ts:
            continue
        ps = sorted(run[t] / info[t][0] for t in ts)
        per_step[name] = statistics.median(ps)
        print(f"   {name:<22} {len(ts):>7} {sum(info[t][0] for t in ts):>7} {statistics.median(ps):>12.0f} "
              f"{ps[len(ps) // 10]:>8.0f} {ps[9 * len(ps) // 10]:>8.0f} {statistics.mean(wait[t] for t in ts) / 1e3:>8.1f}")
    base = replay(rows, run, B)
    print(f"   replay of the schedule with the measured run times: {base / 1e6:.2f} ms ({100 * base / span:.1f} % of the span)")
    interior = per_step.get("interior")
    if interior:
        for what, pick in (("every layer tower", lambda i: i[1] or i[2]), ("the y-layer towers", lambda i: i[1]),
                           ("the x-layer towers", lambda i: i[2] and not i[1])):
            d2 = {t: (min(run[t], interior * info[t][0]) if pick(info[t]) else run[t]) for t in run}
            alt = replay(rows, d2, B)
            print(f"   ... with {what} at the interior's run time per step: {alt / 1e6:.2f} ms "
                  f"({100 * (base - alt) / base:.1f} % less)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
