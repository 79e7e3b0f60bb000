#!/usr/bin/env python3
"""window-trace.py — where the GPU sliding window's time goes.

usage: TW_WINDOW_TRACE=trace.txt torrewave bench --kernels gpu-diamond+cap=BYTES ...   (or any windowed run)
       scripts/window-trace.py trace.txt [-v]

The trace (solver/gpu/gpu_window.cu, trace_flush) has one line per in-copy chunk (i), out-copy chunk
(o) and group launch (k): window (a survey's sessions each have one), advance, kind, run_plan
iteration, planes [lo, hi), and the times (ms from the advance's first event) at which its stream
reached it (queued), got past its waits (start) and finished (end). Printed, over all windows and
advances (-v: per advance too):

  * busy: the share of the time each stream spent copying or computing (kernels on two streams can
    reach 200 %), and how long the in- and out-copies ran at the same time (the link is full duplex);
  * waits: kernels for their in-copies (the run summary's "copy wait", summed over the streams),
    in-copies for the release of their slots (out-copies of earlier planes), out-copies for the
    kernels that finish their planes.
"""
import sys


def main():
    args = [a for a in sys.argv[1:] if a != '-v']
    if len(args) != 1:
        sys.exit(__doc__)
    verbose = '-v' in sys.argv[1:]
    adv = {}
    for line in open(args[0]):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        adv.setdefault((int(f[0]), int(f[1])), []).append((f[2], float(f[6]), float(f[7]), float(f[8])))
    tot = dict.fromkeys(['T', 'k', 'i', 'o', 'kw', 'iw', 'ow', 'both'], 0.0)
    for a, spans in sorted(adv.items()):
        T = max(s[3] for s in spans) - min(s[1] for s in spans)
        part = {}
        for c in 'kio':
            part[c] = sum(s[3] - s[2] for s in spans if s[0] == c)
            part[c + 'w'] = sum(s[2] - s[1] for s in spans if s[0] == c)
        ins = [(s[2], s[3]) for s in spans if s[0] == 'i']
        outs = [(s[2], s[3]) for s in spans if s[0] == 'o']
        part['both'] = sum(max(0.0, min(e0, e1) - max(s0, s1)) for s0, e0 in ins for s1, e1 in outs)
        part['T'] = T
        for k in tot:
            tot[k] += part[k]
        if verbose:
            report(f'window {a[0]} advance {a[1]}', part)
    report('all', tot)


def report(name, p):
    T = p['T'] or 1.0
    pc = lambda k: 100.0 * p[k] / T
    print(f"{name}: {p['T']:.1f} ms; busy: kernels {pc('k'):.1f} %, in-copies {pc('i'):.1f} %, out-copies "
          f"{pc('o'):.1f} %, in and out at once {pc('both'):.1f} %; waits: kernels for in-copies {pc('kw'):.1f} %, "
          f"in-copies for slots {pc('iw'):.1f} %, out-copies for kernels {pc('ow'):.1f} %")


if __name__ == '__main__':
    main()
