#!/usr/bin/env python3
"""The pieces of a buffer that turn slow as the L2 grow probe adds each 128 KiB block.

    python3 validation/l2_grow_pieces.py validation/data/h200_l2_grow_pad0.csv [--min-weight 5]

Reads the file SET=grow of validation/run_l2_line_probe.sh writes (a line per block count n: "n," then a
digit per block, the tenths of its lines that were slow in the second pass) and prints, for every n, the
block that joined (its 2 MiB page and offset there) and each run of blocks whose slow tenths grew with it:
the run's centre in blocks (weighted by the growth) and its size in blocks. Those are the pieces whose L2
sets the new block overflowed (docs/chip.md, "How the GPU spreads addresses over its sets").
"""
import argparse

BLOCKS_PER_PAGE = 16  # 128 KiB blocks in a 2 MiB page


def pieces(before, after, min_weight):
    """Runs of blocks (the newest excluded) whose digit grew: (centre, size in blocks)."""
    grown = [after[i] - (before[i] if i < len(before) else 0) for i in range(len(after) - 1)]
    runs, i = [], 0
    while i < len(grown):
        if grown[i] < 2:
            i += 1
            continue
        j = i
        while j + 1 < len(grown) and grown[j + 1] >= 1:
            j += 1
        weight = sum(grown[i:j + 1])
        if weight >= min_weight:
            centre = sum((k + 0.5) * grown[k] for k in range(i, j + 1)) / weight
            runs.append((centre, weight / 10))
        i = j + 1
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grow_csv")
    parser.add_argument("--min-weight", type=int, default=5, help="least growth in tenths to report a run")
    args = parser.parse_args()
    previous = None
    with open(args.grow_csv) as f:
        for line in f:
            count, digits = line.strip().split(",")
            current = [int(c) for c in digits]
            if previous is not None:
                new = int(count) - 1
                found = pieces(previous, current, args.min_weight)
                page, offset = divmod(new, BLOCKS_PER_PAGE)
                print(f"n={count} block {new} (page {page}, offset {offset}), itself {current[-1]}/10 slow: "
                      + " ".join(f"{c:.2f}({w:.1f})" for c, w in found))
            previous = current


if __name__ == "__main__":
    main()
