#!/usr/bin/env python3
"""The warp instructions each profiled tensor-core launch executed, by kind: the data the issue model's
per-tile-instruction costs are checked against (docs/models/issue.md).

    summarize_warp_instructions.py validation/data/h100_tc_profile.tar.gz > \\
        validation/data/h100_tc_warp_instructions.csv

Reads profile/*_source.csv.gz (ncu --set full, the SASS source page: "Instructions Executed" per SASS
instruction, summed over all warps) from the archive written by run_profile_tc.sh. One CSV row per
sched_* kernel: the configuration (from the profile's name), the kernel, every warp instruction it
executed, and those of each kind. Where a profile holds a kernel's page twice (the multi-kernel runs
profiled two launches of each, with equal counts), the first is kept. Standard library only.
"""
import collections
import csv
import gzip
import io
import re
import sys
import tarfile

KINDS = {
    "HMMA": "mma", "LDSM": "ldmatrix", "LDGSTS": "cp_async", "MUFU": "mufu", "SHFL": "shfl",
    "LDS": "shared", "STS": "shared", "LDG": "global", "STG": "global", "REDG": "global",
}
FLOAT = {"FMUL", "FADD", "FFMA", "FMNMX", "FSETP", "FSEL", "F2FP", "HADD2", "HFMA2", "HMUL2", "FCHK"}
CONTROL = {"BRA", "BSSY", "BSYNC", "WARPSYNC", "BAR", "DEPBAR", "LDGDEPBAR", "EXIT", "CALL", "RET", "NOP",
           "ENDCOLLECTIVE"}
COLUMNS = ["mma", "ldmatrix", "cp_async", "mufu", "shfl", "shared", "global", "float", "integer", "control"]


def kind(opcode):
    base = opcode.split(".")[0]
    if base in KINDS:
        return KINDS[base]
    if base in FLOAT:
        return "float"
    return "control" if base in CONTROL else "integer"


def configuration(name):
    """schedule, n, d, heads, block_q, block_k, causal from run_profile_tc.sh's file name."""
    schedule = re.search(r"schedule_([a-z0-9_]+?)_n_", name).group(1).replace("_", "-")
    value = lambda key: int(re.search(rf"_{key}_(\d+)", name).group(1))
    block = re.search(r"_block_(\d+)", name)
    block_q = value("block_q") if "block_q" in name else int(block.group(1))
    block_k = value("block_k") if "block_k" in name else int(block.group(1))
    return [schedule, value("n"), value("d"), value("heads"), block_q, block_k, int("causal" in name)]


def by_kind(opcodes):
    counts = collections.Counter()
    for opcode, n in opcodes.items():
        counts[kind(opcode)] += n
    return counts


def launches(text):
    """(kernel, warp instructions executed by opcode) per kernel page of a source CSV."""
    kernel, column = None, None
    counts = collections.Counter()
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "Kernel Name":
            if kernel:
                yield kernel, counts
            kernel, column, counts = row[1], None, collections.Counter()
        elif row and row[0] == "Address":
            column = row.index("Instructions Executed")
        elif kernel and column is not None and len(row) > column and row[column].isdigit():
            words = row[1].split()
            opcode = words[1] if words[0].startswith("@") else words[0]
            counts[opcode] += int(row[column])
    if kernel:
        yield kernel, counts


def main():
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["profile", "schedule", "n", "d", "heads", "block_q", "block_k", "causal", "kernel",
                  "warp_instructions"] + COLUMNS)
    with tarfile.open(sys.argv[1]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.name.endswith("_source.csv.gz"):
                continue
            name = member.name.split("/")[-1][: -len("_source.csv.gz")]
            text = gzip.decompress(tar.extractfile(member).read()).decode()
            seen = set()
            for kernel, opcodes in launches(text):
                if "sched_" not in kernel or kernel in seen:
                    continue
                counts = by_kind(opcodes)
                seen.add(kernel)
                short = re.search(r"attnval::(\w+<[^>]*>)", kernel).group(1).replace("(int)", "").replace(
                    "(bool)", "").replace(", ", " ")
                out.writerow([name[:2]] + configuration(name) + [short, sum(counts.values())] +
                             [counts[c] for c in COLUMNS])


if __name__ == "__main__":
    main()
