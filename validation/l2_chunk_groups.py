#!/usr/bin/env python3
"""Groups of L2 sets from the chunk probe: which pieces of which physical 2 MiB chunks share sets.

    python3 validation/l2_chunk_groups.py validation/data/h200_l2_chunks_32_16_seed2_halves.csv [--grown 5]

Reads the file validation/run_l2_chunk_probe.sh writes (per order of the chunks: a line "order,c0,c1,..."
then the grow loop's lines "n," and a digit per piece: per 128 KiB block, or per half of one with HALVES=1)
and names every piece by (chunk, block[, half]) whatever the order. At each step the pieces whose digit grew
by at least --grown tenths, with the joining block's slow piece, share a group of sets; a union over all
steps and orders gives the groups. Prints each group, and how the pairs within groups lie (other chunks,
the same block, adjacent blocks, farther in one chunk).
"""
import argparse
import collections
import itertools


def read_orders(path):
    orders = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("order"):
                orders.append(([int(x) for x in line.split(",")[1:]], {}))
            elif line:
                count, digits = line.split(",")
                orders[-1][1][int(count)] = [int(c) for c in digits]
    return orders


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chunks_csv")
    parser.add_argument("--grown", type=int, default=5, help="least growth in tenths that joins a group")
    args = parser.parse_args()
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for order, rows in read_orders(args.chunks_csv):
        counts = sorted(rows)
        per_block = len(rows[counts[0]]) // counts[0]  # digits per block: 1, or 2 with halves
        def name(i):
            return (order[i // per_block // 16], i // per_block % 16) + ((i % per_block,) if per_block > 1 else ())
        for before_n, after_n in zip(counts, counts[1:]):
            before, after = rows[before_n], rows[after_n]
            new = after_n - 1
            grown = [i for i in range(per_block * new) if after[i] - before[i] >= args.grown]
            joining = [i for i in range(per_block * new, per_block * after_n) if after[i] >= args.grown]
            if grown and len(joining) == 1:
                for i in grown:
                    parent[find(name(i))] = find(name(joining[0]))
    groups = collections.defaultdict(set)
    for piece in list(parent):
        groups[find(piece)].add(piece)
    ordered = sorted(groups.values(), key=len, reverse=True)
    print(f"{len(ordered)} groups, sizes {[len(g) for g in ordered]}")
    pairs = collections.Counter()
    for g in ordered:
        for a, b in itertools.combinations(sorted(g), 2):
            distance = abs(a[1] - b[1])
            pairs["other chunks" if a[0] != b[0] else "same block" if distance == 0 else
                  "adjacent blocks" if distance == 1 else "farther in one chunk"] += 1
    print("pairs within groups:", dict(pairs))
    for g in ordered:
        print(sorted(g))


if __name__ == "__main__":
    main()
