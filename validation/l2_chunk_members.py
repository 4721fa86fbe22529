#!/usr/bin/env python3
"""Which group of L2 sets each half block of the chunk probe's 32 chunks joins, from the oracle runs.

    mkdir -p /tmp/map && for t in validation/data/h200_l2_chunk_map*.tar.gz; do tar xzf $t -C /tmp/map; done
    python3 validation/l2_chunk_members.py validation/data/h200_l2_chunk_oracle.csv /tmp/map/map /tmp/map/map3

A half is a member of a group when adding it to the group's base raised the base's mean digit by 1.0 or
more over the median of all the group's tests (bases: l2_chunk_map.py's bases.txt, and B's first 10 and
D's first 13 halves for l2_chunk_oracle.py's file). Prints each group's size and a table: a row per chunk,
per block "group of half 0|group of half 1" ("." none found).
"""
import argparse
import collections
import glob


def tests(path):
    """(name, added half, mean digit of the base's halves) of every test in a probe output."""
    with open(path) as f:
        for line in f:
            name, digits = line.strip().split(",", 1)
            if name == "order":
                continue
            values = [int(c) for c in digits[:-1]]
            oracle, half = name.split("+")
            yield oracle, half, sum(values) / len(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("oracle_csv", help="l2_chunk_oracle.py's run (groups B and D)")
    parser.add_argument("map_dirs", nargs="+", help="l2_chunk_map.py's OUTDIRs (the other groups)")
    args = parser.parse_args()
    by_group = collections.defaultdict(list)
    paths = [args.oracle_csv] + [p for d in args.map_dirs for p in sorted(glob.glob(f"{d}/*_oracle.csv"))]
    for path in paths:
        for oracle, half, mean in tests(path):
            by_group[oracle.rstrip("0123456789") if oracle[0] in "BD" else oracle].append((half, mean))
    bases = {"B": "4:10:1 5:14:1 7:0:1 8:10:1 10:12:0 12:3:1 14:9:0 16:8:1 18:6:1 18:7:1".split(),
             "D": "1:2:1 4:0:0 8:6:1 11:6:0 11:7:0 15:4:0 16:8:0 16:9:1 19:3:0 20:13:1 20:14:0 22:12:1 24:6:0".split()}
    for d in args.map_dirs:
        with open(f"{d}/bases.txt") as f:
            for line in f:
                words = line.split()
                if len(words) > 1 and words[1] == "base":
                    bases[words[0]] = words[4:]
    members = collections.defaultdict(set)
    for group, results in sorted(by_group.items()):
        means = sorted(m for _, m in results)
        median = means[len(means) // 2]
        strong = [half for half, m in results if m >= median + 1.0]
        for half in strong + bases[group]:
            members[half].add(group)
        print(f"{group}: base {len(bases[group])} halves + {len(strong)} found = {len(strong) + len(bases[group])}")
    print(f"{len(members)} of 1024 halves in a group; in two: {sorted(h for h, g in members.items() if len(g) > 1)}")
    for chunk in range(32):
        cells = []
        for block in range(16):
            pair = ["/".join(sorted(members.get(f"{chunk}:{block}:{h}", {"."}))) for h in (0, 1)]
            cells.append(f"{pair[0]:>3}|{pair[1]:<3}")
        print(f"{chunk:2d} " + " ".join(cells))


if __name__ == "__main__":
    main()
