#!/usr/bin/env python3
"""The warp instructions each profiled PyTorch attention launch executed, by kind (the kinds of
summarize_warp_instructions.py): what the issue model's costs for a library kernel are checked against
(docs/models/issue.md, "CUTLASS's iterative softmax").

    summarize_sdpa_instructions.py validation/data/h200_memeff_fwd_profile.tar.gz > \\
        validation/data/h200_memeff_fwd_instructions.csv
    (summarize_sdpa_instructions.py validation/data/h200_fa2_fwd_profile_pairs.tar.gz; \\
     summarize_sdpa_instructions.py validation/data/h200_fa2_fwd_profile_pairs64.tar.gz | tail -n +2) > \\
        validation/data/h200_fa2_fwd_instructions.csv

Reads profile/<b>x<h>x<n>x<d>x<causal>_s<SMs>_source.csv.gz (run_memeff_profile.sh: ncu --set full, the
SASS source page) from the archive. One row per attention kernel (fmha_cutlass*, flash_*, cudnn_*): the
case, the kernel's name up to its template, every warp instruction it executed, those of each kind and
its mma instructions' shapes. Standard library only.
"""
import csv
import gzip
import re
import sys
import tarfile

from summarize_warp_instructions import COLUMNS, by_kind, launches

ATTENTION = re.compile(r"^(fmha_cutlass\w+|flash_\w+|cudnn_\w+)")


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
            for kernel, opcodes in launches(text):
                # FlashAttention-2's pages name it with its return type and namespace.
                name = ATTENTION.match(re.sub(r"^void\s+(\w+::)*", "", kernel))
                if not name:
                    continue
                counts = by_kind(opcodes)
                mma = {op: n for op, n in opcodes.items() if op.startswith("HMMA")}
                out.writerow(list(found.groups()) + [name.group(1), sum(counts.values())] +
                             [counts[c] for c in COLUMNS] +
                             [" ".join(f"{op}:{n}" for op, n in sorted(mma.items()))])


if __name__ == "__main__":
    main()
