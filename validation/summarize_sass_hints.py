#!/usr/bin/env python3
"""Memory instructions and their cache hints in SDPA's forwards (run_sass_hints.sh): for each kernel's source
page (ncu --page source --print-source sass --csv, gzipped or not) the load, store and atomic opcodes with
their modifiers and how many times each appears, and each TMA load or store with the memory descriptor it
names and the values moved into that descriptor's registers. CUTLASS's CacheHintSm90 gives the descriptor
words: 0x1000000000000000 evict_normal, 0x12F0000000000000 evict_first, 0x14F0000000000000 evict_last.

    python3 validation/summarize_sass_hints.py SOURCE_CSV[.gz]...
"""
import collections
import csv
import gzip
import re
import sys

MEMORY = re.compile(r"^(@!?U?P\d\s+)?(LDG|STG|LDGSTS|UTMALDG|UTMASTG|UTMAREDG|UBLKCP|UTMAPF|CCTL|REDG|ATOMG)\S*")


def main(paths):
    for path in paths:
        rows = list(csv.reader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
        source = [r[1].strip() for r in rows[1:] if len(r) > 1]
        ops = collections.Counter(m.group(0).split()[-1] for s in source if (m := MEMORY.match(s)))
        print(path)
        for op, n in ops.most_common():
            print(f"  {n:4d} {op}")
        moved = {}
        for s in source:
            if m := re.match(r"UMOV (UR\d+), (0x[0-9a-f]+)", s):
                moved[m.group(1)] = m.group(2)
            if s.startswith(("UTMALDG", "UTMASTG")):
                desc = re.search(r"desc\[UR(\d+)\]", s)
                high = moved.get(f"UR{int(desc.group(1)) + 1}") if desc else None
                print(f"  {s}  (descriptor high word {high or 'default'})")


if __name__ == "__main__":
    main(sys.argv[1:])
