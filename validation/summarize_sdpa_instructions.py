#!/usr/bin/env python3
"""The warp instructions each profiled PyTorch attention launch executed, by kind (the kinds of
summarize_warp_instructions.py): what the issue model's costs for a library kernel are checked against
(docs/models/issue.md, "CUTLASS's iterative softmax").

    summarize_sdpa_instructions.py validation/data/h200_memeff_fwd_profile.tar.gz > \\
        validation/data/h200_memeff_fwd_instructions.csv

Reads profile/<b>x<h>x<n>x<d>x<causal>_s<SMs>_source.csv.gz (run_memeff_profile.sh: ncu --set full, the
SASS source page) from the archive. One row per attention kernel (fmha_cutlass*, flash_*, cudnn_*): the
case, the kernel's name up to its template, every warp instruction it executed, those of each kind and
its mma instructions' shapes. Standard library only.
"""
import collections
import csv
import gzip
import io
import re
import sys
import tarfile

from summarize_warp_instructions import COLUMNS, kind

ATTENTION = re.compile(r"^(fmha_cutlass\w+|flash_\w+|cudnn_\w+)")


def launches(text):
    """(kernel, counts by kind, mma opcodes) per kernel page of a source CSV."""
    kernel, column = None, None
    counts, mma = collections.Counter(), collections.Counter()
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "Kernel Name":
            if kernel:
                yield kernel, counts, mma
            kernel, column, counts, mma = row[1], None, collections.Counter(), collections.Counter()
        elif row and row[0] == "Address":
            column = row.index("Instructions Executed")
        elif kernel and column is not None and len(row) > column and row[column].isdigit():
            words = row[1].split()
            opcode = words[1] if words[0].startswith("@") else words[0]
            counts[kind(opcode)] += int(row[column])
            if opcode.startswith("HMMA"):
                mma[opcode] += int(row[column])
    if kernel:
        yield kernel, counts, mma


def main():
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["batch", "heads", "n", "d", "causal", "sms", "kernel", "warp_instructions"] + COLUMNS +
                 ["mma_opcodes"])
    case = re.compile(r"(\d+)x(\d+)x(\d+)x(\d+)x(\d)_s(\d+)_source\.csv\.gz$")
    with tarfile.open(sys.argv[1]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            found = case.search(member.name)
            if not found:
                continue
            text = gzip.decompress(tar.extractfile(member).read()).decode()
            for kernel, counts, mma in launches(text):
                name = ATTENTION.match(kernel)
                if not name:
                    continue
                out.writerow(list(found.groups()) + [name.group(1), sum(counts.values())] +
                             [counts[c] for c in COLUMNS] +
                             [" ".join(f"{op}:{n}" for op, n in sorted(mma.items()))])


if __name__ == "__main__":
    main()
