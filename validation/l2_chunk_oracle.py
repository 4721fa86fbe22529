#!/usr/bin/env python3
"""Tests for the chunk probe's pieces mode that ask, for every half block of the 32 chunks, whether it shares
a group of sets with group B or group D (validation/l2_chunk_tests.txt).

    python3 validation/l2_chunk_oracle.py > /tmp/oracle.txt
    l2_chunk_probe 32 32 pieces /tmp/oracle.txt FILE

B's first 10 halves read twice lose about a tenth of their lines (mean digit 0.8), 11 of them about half
(4.2); D's first 13 0.7, 14 3.9 (validation/data/h200_l2_chunk_scan.csv). So a half added to B10 or D13
that belongs to the group raises the others' digits, and one that does not leaves them.
"""


def groups():
    found = {}
    with open(__file__.rsplit("/", 1)[0] + "/l2_chunk_tests.txt") as f:
        for line in f:
            words = line.split()
            if words and words[0] in ("B17", "D16"):
                found[words[0][0]] = words[1:]
    return found


def main():
    g = groups()
    for name, base in (("B10", g["B"][:10]), ("D13", g["D"][:13])):
        for chunk in range(32):
            for block in range(16):
                for half in (0, 1):
                    piece = f"{chunk}:{block}:{half}"
                    if piece not in base:
                        print(f"{name}+{piece}", " ".join(base), piece)


if __name__ == "__main__":
    main()
