#!/usr/bin/env python3
"""Whether out-of-step readers bunch up: reads a per-block timestamp file of the L2 probe taken with
SAMPLES=S (validation/l2_probe.cu; columns block, sm, start_ns, then S timestamps per pass), or the model's
in the same layout (`attnsim probe --samples FILE`), and prints, at a few moments of the kernel, where the
blocks are on the buffer (as a fraction of it, each block's start offset included for spread mode, which
the file's name tells: it must contain "spread"): the number of gaps wider than 2% of the buffer between
neighbouring blocks (groups of blocks reading together) and the widest gap.

  python3 validation/convoys.py validation/data/h100_l2_probe_samples_spread_32MiB_x3_132b.csv
"""
import bisect
import csv
import re
import sys


def interpolate(t, xs, ys):
    if t <= xs[0]:
        return ys[0]
    if t >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, t)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y1 if x1 == x0 else y0 + (y1 - y0) * (t - x0) / (x1 - x0)


def main(path):
    rows = list(csv.reader(open(path)))
    header, data = rows[0], [[int(x) for x in r] for r in rows[1:]]
    samples = int(re.search(r"_of_(\d+)_ns", header[3]).group(1))
    marks = len(header) - 3
    spread = "spread" in path
    blocks = len(data)
    progress = [0.0] + [(k + 1) / samples for k in range(marks)]  # in passes
    end = max(max(r[3:]) for r in data)
    print(f"{path}: {blocks} blocks, kernel {end / 1e6:.2f} ms")
    for fraction in (0.05, 0.15, 0.3, 0.5, 0.7, 0.9):
        t = fraction * end
        done = [interpolate(t, [r[2]] + r[3:], progress) for r in data]
        where = sorted(((b / blocks if spread else 0.0) + p) % 1.0 for b, p in enumerate(done))
        gaps = [b - a for a, b in zip(where, where[1:])] + [where[0] + 1.0 - where[-1]]
        print(f"  at {fraction:.2f} of the kernel: {sum(g > 0.02 for g in gaps):3d} gaps > 2%, widest "
              f"{max(gaps):.3f} of the buffer; blocks {min(done):.2f} to {max(done):.2f} passes done")


if __name__ == "__main__":
    main(sys.argv[1])
