#!/usr/bin/env python3
"""What a rolled k-loop costs: the warp instructions the backward kernels execute with their products'
k-loops rolled and unrolled (validation/run_bwd_unroll.sh; Nsight Compute's source pages in
h100_bwd_unroll.tar.gz), per warp and k-step of a product whose A comes from shared memory.

    python3 validation/summarize_bwd_unroll.py validation/data/h100_bwd_unroll.tar.gz [--csv OUT]

The k-steps are counted from each configuration's loops (kernels_tc_bwd.cu), not from the profile; the
compare and branch of the loop (ISETP, BRA) come out at exactly one each per k-step, which checks the count.
"""
import argparse
import collections
import csv
import gzip
import io
import re
import sys
import tarfile


def opcode_counts(text, kernel_part):
    """Executed warp instructions per opcode of the kernel whose name contains kernel_part."""
    counts, current = collections.Counter(), None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith('"Kernel Name"'):
            current = kernel_part in line
            header = next(csv.reader([lines[i + 1]]))
            ix = {h: k for k, h in enumerate(header)}
            continue
        if not current or line.startswith('"Address"'):
            continue
        row = next(csv.reader([line]), [])
        if len(row) != len(ix):
            continue
        words = row[ix["Source"]].split()
        if not words:
            continue
        op = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
        counts[op] += int(row[ix["Instructions Executed"]] or 0)
    return counts


def ksteps(schedule, n, d, heads, bq, bk):
    """Warp k-steps of the products whose A comes from shared memory (rolled loops), non-causal."""
    if schedule == "flash2-bwd":  # per key block: S^T, dP^T (k = d), dQ = dS K_j (k = B_c)
        warps = (n // bk) * heads * (bk // 16)
        return warps * (n // bq) * (2 * d // 16 + bk // 16)
    # no-D: sweep 1 S, dP (k = d); sweep 2 the same and dV, dK (k = B_r)
    warps = (n // bq) * heads * (bq // 16)
    return warps * (n // bk) * (2 * d // 16 + 2 * d // 16 + 2 * bq // 16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tarball")
    ap.add_argument("--csv")
    a = ap.parse_args()
    pages = {}
    with tarfile.open(a.tarball) as tar:
        for m in tar.getmembers():
            name = m.name.split("/")[-1]
            hit = re.match(r"bwd_unroll_src_(rolled|unrolled)_schedule_(.*)\.csv\.gz$", name)
            if hit:
                raw = gzip.decompress(tar.extractfile(m).read()).decode()
                pages[(hit.group(1), hit.group(2))] = raw
    rows = []
    for (variant, cfg), raw in sorted(pages.items()):
        if variant != "rolled" or ("unrolled", cfg) not in pages:
            continue
        hit = re.match(r"flash2_bwd(_no_d)?_n_(\d+)_d_(\d+)_heads_(\d+)_block(?:_q_(\d+)_block_k_(\d+)|_(\d+))$", cfg)
        no_d, n, d, heads = hit.group(1), int(hit.group(2)), int(hit.group(3)), int(hit.group(4))
        bq = int(hit.group(5) or hit.group(7))
        bk = int(hit.group(6) or hit.group(7))
        schedule = "flash2-bwd-no-d" if no_d else "flash2-bwd"
        part = "no_d" if no_d else "dkdv"
        r, u = opcode_counts(raw, part), opcode_counts(pages[("unrolled", cfg)], part)
        k = ksteps(schedule, n, d, heads, bq, bk)
        extra = sum(r.values()) - sum(u.values())
        spills = u["LDL"] + u["STL"]  # the unrolled build spills at d = 128: not part of the loop's cost
        rows.append({
            "schedule": schedule, "n": n, "d": d, "heads": heads, "block_q": bq, "block_k": bk,
            "rolled_instructions": sum(r.values()), "unrolled_instructions": sum(u.values()),
            "unrolled_spill_instructions": spills, "ksteps": k,
            "extra_per_kstep": round((extra + spills) / k, 2),
            "compare_branch_per_kstep": round((r["ISETP"] + r["BRA"] - u["ISETP"] - u["BRA"]) / k, 3),
        })
    out = open(a.csv, "w", newline="") if a.csv else sys.stdout
    w = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)


if __name__ == "__main__":
    main()
