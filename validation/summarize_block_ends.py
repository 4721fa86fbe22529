#!/usr/bin/env python3
# How clean a kernel's waves are, from its blocks' end times: the GPU's (block_times_probe.py's ENDS_CSV,
# with its LAUNCHES_CSV) or the model's (`attnsim validate --block-times FILE`, one row's launch). Starts are
# inferred the same way for both: the first SLOTS blocks (resident blocks per SM x SMs) start together, and
# block b >= SLOTS starts when the (b - SLOTS)-th block to end has ended (CUDA hands blocks out in index
# order to the slot that frees first). Per launch it prints the blocks' duration spread, how far the first
# wave's ends spread, how many heads have a block running, averaged over the kernel's time, and the groups
# the ends come in (a clean wave: one group of all slots; two blocks an SM out of phase: groups of one per SM).
#   python3 validation/summarize_block_ends.py gpu ENDS_CSV LAUNCHES_CSV
#   python3 validation/summarize_block_ends.py model BLOCK_TIMES_CSV SLOTS   (every row and launch in it)
import csv
import gzip
import statistics
import sys
from collections import defaultdict

PER_SM = {("memeff_bwd", 128): 1, ("memeff_bwd", 64): 3, ("fa2_fwd", 128): 2, ("fa2_fwd", 64): 2,
          ("memeff_fwd", 128): 2, ("memeff_fwd", 64): 4}  # occupancy limits in h200_sdpa_cases_launches.csv
# (cuDNN's forward is persistent: no slots)


def head_of(kind, x, y, z):
    return (y, z)  # memeff: (head, batch); FlashAttention-2 forward: (batch, head)


def waves(ends, heads, slots):
    """ends[b], heads[b] in block order -> a dict of figures."""
    order = sorted(range(len(ends)), key=lambda b: ends[b])
    sorted_ends = [ends[b] for b in order]
    later = [ends[b] - sorted_ends[b - slots] for b in range(slots, len(ends))]
    duration = statistics.median(later) if later else None
    first = sorted(ends[:slots])
    t0 = statistics.median(first) - duration if duration else 0.0
    starts = [t0 if b < slots else sorted_ends[b - slots] for b in range(len(ends))]
    events = sorted([(s, 1, heads[b]) for b, s in enumerate(starts)] + [(e, -1, heads[b]) for b, e in enumerate(ends)])
    running, weighted, last, peak = defaultdict(int), 0.0, t0, 0
    for t, step, head in events:
        live = sum(1 for v in running.values() if v > 0)
        weighted += live * (t - last)
        last = t
        running[head] += step
        peak = max(peak, sum(1 for v in running.values() if v > 0))
    span = sorted_ends[-1] - t0

    def q(v, f):
        return v[min(len(v) - 1, int(f * len(v)))]
    later_sorted = sorted(later)
    groups = end_groups(sorted_ends)
    return {
        "blocks": len(ends), "slots": slots, "span_us": span / 1e3,
        "block_us_median": (duration or 0) / 1e3,
        "block_p10_p90": f"{q(later_sorted, 0.1) / duration:.3f}-{q(later_sorted, 0.9) / duration:.3f}" if later else "",
        "first_wave_end_spread": (q(first, 0.95) - q(first, 0.05)) / duration if duration else 0.0,
        "heads_in_flight_mean": weighted / span if span else 0.0, "heads_in_flight_max": peak,
        "end_groups": len(groups), "first_groups_us_size": [(round(g[0] / 1e3), len(g)) for g in groups[:8]],
    }


def end_groups(sorted_ends, gap_ns=30e3):
    """Runs of block ends no more than gap_ns apart: a wave that ends together is one group; an SM's
    resident blocks out of phase (the older served first) end in groups of one block per SM."""
    groups = [[sorted_ends[0]]] if sorted_ends else []
    for e in sorted_ends[1:]:
        if e - groups[-1][-1] > gap_ns:
            groups.append([e])
        else:
            groups[-1].append(e)
    return groups


def text(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def gpu(ends_path, launches_path):
    launches = {(r["case"], r["rep"]): r for r in csv.DictReader(open(launches_path))}
    blocks = defaultdict(list)
    for r in csv.DictReader(text(ends_path)):
        blocks[(r["case"], r["rep"])].append(r)
    for key, rows in blocks.items():
        meta = launches[key]
        if any(r["end_ns"] == "" for r in rows):
            print(f"{key}: {sum(r['end_ns'] == '' for r in rows)} blocks never seen to end")
            continue
        if meta["kind"] == "cudnn_fwd":
            print(f"{key}: {meta['kind']} has no resident-block slots (persistent); see its tile order")
            continue
        if (meta["kind"], int(meta["d"])) not in PER_SM:
            print(f"{key}: no occupancy known for {meta['kind']} at d = {meta['d']} (PER_SM)")
            continue
        slots = PER_SM[(meta["kind"], int(meta["d"]))] * int(meta["sms"])
        ends = [float(r["end_ns"]) for r in rows]
        heads = [head_of(meta["kind"], int(r["x"]), int(r["y"]), int(r["z"])) for r in rows]
        print(key[0], "rep", key[1], waves(ends, heads, slots))


def model(path, slots):
    launches = defaultdict(list)
    for r in csv.DictReader(text(path)):
        launches[(r["line"], r["label"], r["launch"], r["kernel"])].append(r)
    for key, rows in launches.items():
        rows.sort(key=lambda r: (int(r["block_z"]), int(r["block_y"]), int(r["block_x"])))
        ends = [float(r["end_us"]) * 1e3 for r in rows]
        heads = [(int(r["block_y"]), int(r["block_z"])) for r in rows]
        print(" ".join(key), waves(ends, heads, slots))


if __name__ == "__main__":
    if sys.argv[1] == "gpu":
        gpu(sys.argv[2], sys.argv[3])
    else:
        model(sys.argv[2], int(sys.argv[3]))
