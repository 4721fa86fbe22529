#!/usr/bin/env python3
"""Runs the chunk probe's group oracle for every candidate group, on the device machine.

    python3 validation/l2_chunk_map.py PROBE validation/l2_chunk_candidates.txt OUTDIR [--skip G1,G3]

PROBE is a built validation/l2_chunk_probe.cu. For each candidate group (a line: a name, then halves
"chunk:block:half"), its prefixes of 4 halves and more are read twice (the pieces mode) and the base is the
longest prefix whose mean digit is at most 1.0 while a longer one reaches 2.0 (the group's knee); a group
without one is reported and skipped. Then every other half of the 32 chunks is added to the base in a test
of its own (as l2_chunk_oracle.py does for B and D): OUTDIR gets <name>_scan.csv and <name>_oracle.csv, the
probe's output for each, and bases.txt (each group's base, or why none).
"""
import argparse
import subprocess


def run(probe, tests, out_csv, workdir):
    path = f"{workdir}/tests.txt"
    with open(path, "w") as f:
        f.write("\n".join(tests) + "\n")
    subprocess.run([probe, "32", "32", "pieces", path, out_csv], check=True)
    means = {}
    with open(out_csv) as f:
        for line in f:
            name, digits = line.strip().split(",", 1)
            if name != "order":
                values = [int(c) for c in digits]
                means[name] = sum(values) / len(values)
    return means


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe")
    parser.add_argument("candidates")
    parser.add_argument("outdir")
    parser.add_argument("--skip", default="", help="names of candidates not to run, comma-separated")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    bases = []
    with open(args.candidates) as f:
        groups = [line.split() for line in f if line.strip() and not line.startswith("#")]
    for name, *pieces in groups:
        if name in skip:
            continue
        scan = [f"{name}_{k} " + " ".join(pieces[:k]) for k in range(4, len(pieces) + 1)]
        means = run(args.probe, scan, f"{args.outdir}/{name}_scan.csv", args.outdir)
        by_count = {k: means[f"{name}_{k}"] for k in range(4, len(pieces) + 1)}
        knee = [k for k in by_count if by_count[k] <= 1.0 and any(by_count[q] >= 2.0 for q in by_count if q > k)]
        if not knee:
            bases.append(f"{name} no knee: " + " ".join(f"{k}:{m:.1f}" for k, m in by_count.items()))
            continue
        k = max(knee)
        base = pieces[:k]
        bases.append(f"{name} base {k} ({by_count[k]:.1f}): " + " ".join(base))
        oracle = [f"{name}+{c}:{b}:{h} " + " ".join(base) + f" {c}:{b}:{h}"
                  for c in range(32) for b in range(16) for h in (0, 1) if f"{c}:{b}:{h}" not in base]
        run(args.probe, oracle, f"{args.outdir}/{name}_oracle.csv", args.outdir)
    with open(f"{args.outdir}/bases.txt", "w") as f:
        f.write("\n".join(bases) + "\n")
    print("\n".join(bases))


if __name__ == "__main__":
    main()
