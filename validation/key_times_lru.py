#!/usr/bin/env python3
"""What an ideal L2 would read for the K/V reads a key-times file records (run_key_times.sh).

    python3 validation/key_times_lru.py validation/data/h100_key_times_n131072_d64_h1_b64_causal.csv.gz

Every block of the FFMA flash2 (64 x 64, d = 64, one head) reads Q_i, then K_j and V_j for j = 0..i (causal;
--full: every key block), then stores O_i. The file gives when each block started every EVERY-th key block; the key blocks between
two times are spread evenly over the gap ("sampled"), or over the whole block from its start and end alone
("linear"). Those reads then go through two partitions of a fully associative LRU with copies (4 KiB
units, each K_j and V_j half homed in each partition; SM s attached to partition s % 2): a read looks in
its SM's partition, then at home; a miss at home reads DRAM and fills both; O_i fills its home. Printed:
the DRAM bytes read, by tensor, at each capacity per partition (MiB). A yardstick for how much of a row's
re-reads the readers' timing alone explains, not a model of the GPU's sets.
"""
import argparse
import csv
import gzip
from collections import OrderedDict

UNIT = 4096


def events(path, linear, full=False):
    out = []
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        rows = list(csv.DictReader(f))
        for r in rows:
            block, sm = int(r["block"]), int(r["sm"])
            start, end = float(r["start_ns"]), float(r["end_ns"])
            keys = len(rows) if full else block + 1  # B_r = B_c: as many key blocks as blocks
            out += [(start, "q", sm, block), (end, "o", sm, block)]
            marks = [] if linear else [(int(k[1:-3]), float(v)) for k, v in r.items() if k[0] == "k" and v]
            if not marks:
                out += [(start + (end - start) * (j + 0.5) / keys, "kv", sm, j) for j in range(keys)]
                continue
            marks.append((keys, end))
            for (j0, t0), (j1, t1) in zip(marks, marks[1:]):
                out += [(t0 + (t1 - t0) * (j - j0) / (j1 - j0), "kv", sm, j) for j in range(j0, min(j1, keys))]
    out.sort(key=lambda e: e[0])
    return out


def simulate(evs, capacity_bytes):
    cap = capacity_bytes // UNIT
    parts = [OrderedDict(), OrderedDict()]
    dram = {"q": 0, "kv": 0}

    def present(p, unit):  # an LRU touch: True on a hit, else the unit is filled
        c = parts[p]
        if unit in c:
            c.move_to_end(unit)
            return True
        c[unit] = 1
        if len(c) > cap:
            c.popitem(last=False)
        return False

    for _, kind, sm, j in evs:
        near = sm % 2
        for k in range(4 if kind == "kv" else 2):  # K_j and V_j: 4 units; Q_i, O_i: 2 (8 KiB)
            unit, home = (kind, j * 4 + k), k & 1
            if kind == "o":
                present(home, unit)
            elif not present(near, unit) and (home == near or not present(home, unit)):
                dram[kind] += UNIT
    return dram


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("times")
    ap.add_argument("--mib", type=float, nargs="+", default=[24, 25, 26])
    ap.add_argument("--full", action="store_true", help="no mask: every block reads every key block")
    a = ap.parse_args()
    for linear in (False, True):
        evs = events(a.times, linear, a.full)
        for mib in a.mib:
            d = simulate(evs, int(mib * (1 << 20)))
            print(f"{'linear' if linear else 'sampled'} {mib:g} MiB a partition: DRAM reads Q {d['q'] / 1e6:.1f} MB,"
                  f" K and V {d['kv'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
