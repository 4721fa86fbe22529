#!/usr/bin/env python3
"""The model's DRAM reads against the GPU's as distributions over placements, not one draw against another.

A GPU's allocator and its virtual-to-physical mapping put a kernel's tensors anywhere, and the L2's set and
partition hashes see the physical addresses; attnsim's model sees hbm.first_tensor_address. So each side is
a set of draws: the GPU's sweeps (run_dram_sweep.sh with PAD_MIB, run_sdpa_placements.sh) and the model's
placements (attnsim validate --placements K, or one validate --csv per -p hbm.first_tensor_address=A).

    python3 validation/placement_medians.py --model M.csv [M2.csv ...] --gpu G.csv [G2.csv ...]

--model: attnsim validate --csv files of the same rows (every placement of a --placements file counts, from
its dram_read_pred_by_first_tensor_address column). --gpu: SDPA cases CSVs (one row per case and pass, the
sweeps' *_sdpa_cases*.csv or run_sdpa_placements.sh's *_sdpa_onepass_pad*.csv): the attention kernels' DRAM
reads (attn_dram_read_bytes, PyTorch's own copies left out), as attnsim validate reads them. Prints one line per row
(each side's median, lowest and highest, the medians' ratio) and the NRMSE and Pearson r of the model's
medians against the GPU's, over the rows both sides have.
"""
import argparse
import csv
import math
import statistics
import sys


def gpu_key(r):
    return (f"{r['backend']} {r['pass']} {r['batch']}x{r['heads']}", int(r["n"]), int(r["d"]), int(r["causal"]))


def model_key(r):
    return (r["label"], int(r["n"]), int(r["d"]), int(r["causal"]))


def read_gpu(paths):
    draws = {}
    for path in paths:
        for r in csv.DictReader(open(path)):
            if r.get("pass") and r.get("attn_dram_read_bytes"):  # the attention kernels', as validate reads
                draws.setdefault(gpu_key(r), []).append(float(r["attn_dram_read_bytes"]))
    return draws


def read_model(paths):
    draws = {}
    for path in paths:
        for r in csv.DictReader(open(path)):
            if not r.get("dram_read_pred_bytes"):
                continue
            each = r.get("dram_read_pred_by_first_tensor_address", "")
            reads = [float(c.split("=")[1]) for c in each.split(";")] if each else [float(r["dram_read_pred_bytes"])]
            draws.setdefault(model_key(r), []).extend(reads)
    return draws


def nrmse(p, m):
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(p, m)) / len(m)) / (sum(m) / len(m))


def pearson(x, y):  # nan for fewer than two distinct values on a side
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    spread = math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    return sxy / spread if spread else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", nargs="+", required=True)
    ap.add_argument("--gpu", nargs="+", required=True)
    ap.add_argument("--all", action="store_true", help="print every row, not only those off by over 5%%")
    args = ap.parse_args()
    model, gpu = read_model(args.model), read_gpu(args.gpu)
    keys = [k for k in model if k in gpu]
    if not keys:
        sys.exit("placement_medians.py: no row is on both sides (the model's label, n, d and causal against "
                 "the GPU's backend, pass, batch x heads, n, d and causal)")
    print(f"{'row':<34} {'n':>6} {'d':>3} {'c':>1} {'GPU med MB':>10} {'lo':>7} {'hi':>7} {'#':>2}"
          f" {'model med':>10} {'lo':>7} {'hi':>7} {'#':>2} {'ratio':>6}")
    pm, gm = [], []
    for k in keys:
        g, m = gpu[k], model[k]
        gmed, mmed = statistics.median(g), statistics.median(m)
        pm.append(mmed), gm.append(gmed)
        if args.all or abs(mmed / gmed - 1) > 0.05:
            print(f"{k[0]:<34} {k[1]:>6} {k[2]:>3} {k[3]:>1} {gmed / 1e6:>10.1f} {min(g) / 1e6:>7.1f} "
                  f"{max(g) / 1e6:>7.1f} {len(g):>2} {mmed / 1e6:>10.1f} {min(m) / 1e6:>7.1f} {max(m) / 1e6:>7.1f} "
                  f"{len(m):>2} {mmed / gmed:>6.3f}")
    print(f"{len(keys)} rows on both sides ({len(model)} modelled, {len(gpu)} measured): the model's median DRAM "
          f"reads against the GPU's, NRMSE {nrmse(pm, gm):.4f}, Pearson r {pearson(pm, gm):.5f}")


if __name__ == "__main__":
    main()
