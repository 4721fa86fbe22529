#!/usr/bin/env python3
"""Joins run_tc.sh's timing runs and ncu counters into one CSV row per configuration.

    summarize_tc.py --raw-dir DIR --gpu NAME --driver VER --cuda VER --ncu VER --date YYYY-MM-DD
                    --clock-control base|none --out FILE.csv

DIR holds, per configuration TAG: timing_TAG.txt (the harness's RESULT line of the timed run), result_TAG.txt
(the RESULT line of the profiled run, --reps 0) and ncu_TAG.csv (ncu --import --csv --page raw
--print-units base). Counters and times are summed over the configuration's sched_* launches (naive-safe
three, two-pass two, flash1 one per key block, the backward two or one; the harnesses' own fill/flush
kernels are not sched_*); grid_blocks is the blocks of all of them; kernel_times_ns and kernel_clocks_ghz give
each launch's gpu__time_duration and SM clock, '/'-separated in launch order. Per-kernel resources (registers,
blocks_per_sm, ...) stay as the harness prints them, '/'-separated in launch order. Standard library only;
reuses summarize_ncu.py's readers.
"""
import argparse
import csv
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize_ncu  # noqa: E402

COLUMNS = ["gpu", "driver", "cuda", "date", "ncu", "clock_control", "kernel", "schedule", "n", "d", "heads",
           "block_q", "block_k", "causal", "dtype", "kernels", "time_ns", "event_time_ns_median",
           "event_time_ns_min", "l1_read_bytes", "l1_write_bytes", "exp_kernel_read_bytes",
           "exp_kernel_write_bytes", "l1_read_over_exp", "l1_write_over_exp", "l2_read_sectors",
           "l2_write_sectors", "dram_read_bytes", "dram_write_bytes", "max_rel_error", "ok", "deterministic",
           "registers", "local_bytes", "smem_bytes", "threads", "blocks_per_sm", "grid_blocks", "tflops_event",
           "tflops_ncu", "tc_layout", "tag", "sm_cycles", "sm_clock_ghz", "kernel_times_ns", "kernel_clocks_ghz"]


def read_result(path):
    try:
        with open(path) as f:
            return summarize_ncu.parse_result(f.read())
    except (OSError, ValueError):
        return {}


def ncu_column(path, name):
    """Per-launch values of one raw-page column (no unit scaling), sched_* launches only."""
    with open(path, newline="") as f:
        rows = list(csv.reader(line for line in f if not line.startswith("==")))
    at = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "ID" in r), None)
    if at is None or name not in rows[at]:
        return []
    col, kcol = rows[at].index(name), rows[at].index("Kernel Name")
    out = []
    for r in rows[at + 1:]:
        if len(r) > col and r[0].strip().isdigit() and "sched_" in r[kcol]:
            try:
                out.append(summarize_ncu.number(r[col]))
            except ValueError:
                pass
    return out


def flops(res):
    """Useful FLOPs: 4 n^2 d per head forward, 10 n^2 d backward (five n x n x d products with the
    recomputed S), half of it causal (the usual convention)."""
    n, d, h = int(res["n"]), int(res["d"]), int(res["heads"])
    f = (10.0 if res["schedule"].endswith("-bwd") or "-bwd-" in res["schedule"] else 4.0) * n * n * d * h
    return f / 2 if res.get("causal") == "1" else f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for a in ("--raw-dir", "--gpu", "--driver", "--cuda", "--ncu", "--date", "--clock-control", "--out"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    clean = lambda s: re.sub(r"[,\"\n]", " ", s).strip()
    meta = {"gpu": clean(args.gpu), "driver": clean(args.driver), "cuda": clean(args.cuda), "ncu": clean(args.ncu),
            "date": clean(args.date), "clock_control": clean(args.clock_control)}
    tags = sorted({os.path.basename(p).split("_", 1)[1][:-4]
                   for p in glob.glob(os.path.join(args.raw_dir, "timing_*.txt"))
                   + glob.glob(os.path.join(args.raw_dir, "result_*.txt"))})
    rows = []
    for tag in tags:
        timing = read_result(os.path.join(args.raw_dir, f"timing_{tag}.txt"))
        prof = read_result(os.path.join(args.raw_dir, f"result_{tag}.txt"))
        res = prof or timing
        if not res:
            continue
        row = dict(meta, tag=tag)
        for k in ("schedule", "n", "d", "heads", "block_q", "block_k", "causal", "dtype", "max_rel_error", "ok",
                  "exp_kernel_read_bytes", "exp_kernel_write_bytes", "registers", "local_bytes", "smem_bytes",
                  "threads", "blocks_per_sm", "tc_layout"):
            row[k] = res.get(k, "")
        row["kernel"] = res.get("kernel", "ffma")
        if row["tc_layout"] == "padded":
            row["kernel"] = "tc-padded"
        row["deterministic"] = timing.get("deterministic", "")
        row["ok"] = "1" if prof.get("ok", "1") == "1" and timing.get("ok", "1") == "1" else "0"
        row["event_time_ns_median"] = timing.get("time_ns_median", "")
        row["event_time_ns_min"] = timing.get("time_ns_min", "")
        if res.get("kernel") == "tc" and res["schedule"] == "flash2" or res.get("kernel", "ffma") == "ffma":
            row["grid_blocks"] = str(int(res["n"]) // int(res["block_q"]) * int(res["heads"]))
        ncu_path = os.path.join(args.raw_dir, f"ncu_{tag}.csv")
        if os.path.exists(ncu_path):
            try:
                launches = [(k, v) for k, v in summarize_ncu.read_ncu_raw(ncu_path) if "sched_" in k]
            except ValueError as e:
                print(f"summarize_tc: {tag}: {e}", file=sys.stderr)
                launches = []
            if launches:
                row["kernels"] = str(len(launches))
                for column, metric in summarize_ncu.METRICS.items():
                    row[column] = "%.0f" % sum(v[metric] for _, v in launches)
                for column, exp in (("l1_read_over_exp", "exp_kernel_read_bytes"),
                                    ("l1_write_over_exp", "exp_kernel_write_bytes")):
                    src = "l1_read_bytes" if "read" in column else "l1_write_bytes"
                    row[column] = "%.6f" % (float(row[src]) / float(res[exp])) if float(res[exp]) else ""
                grids = ncu_column(ncu_path, "launch__grid_size")
                if grids:
                    row["grid_blocks"] = "%.0f" % sum(grids)
                # The SM clock the kernels really ran at: under heavy tensor-core load it sits below the
                # locked base clock. Time-weighted over the launches.
                cycles = ncu_column(ncu_path, "sm__cycles_elapsed.avg")
                hz = ncu_column(ncu_path, "sm__cycles_elapsed.avg.per_second")
                times = [v[summarize_ncu.METRICS["time_ns"]] for _, v in launches]
                if cycles and len(hz) == len(times):
                    row["sm_cycles"] = "%.0f" % sum(cycles)
                    row["sm_clock_ghz"] = "%.4f" % (sum(h * t for h, t in zip(hz, times)) / sum(times) / 1e9)
                    # Each launch on its own, in launch order: a multi-kernel row's kernels run at
                    # different clocks and miss by different amounts.
                    row["kernel_times_ns"] = "/".join("%.0f" % t for t in times)
                    row["kernel_clocks_ghz"] = "/".join("%.4f" % (h / 1e9) for h in hz)
                regs = ncu_column(ncu_path, "launch__registers_per_thread")
                if regs and not row["registers"]:
                    row["registers"] = "%.0f" % regs[0]
                row["tflops_ncu"] = "%.1f" % (flops(res) / float(row["time_ns"]) / 1e3)
        if row["event_time_ns_median"]:
            row["tflops_event"] = "%.1f" % (flops(res) / float(row["event_time_ns_median"]) / 1e3)
        rows.append(row)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n", restval="")
        w.writeheader()
        for row in rows:
            w.writerow({c: row.get(c, "") for c in COLUMNS})
    fmt = "{:9} {:>5} {:>3} {:>7} {:>1} {:>9} {:>9} {:>9} {:>8} {:>8} {:>12} {:>9} {:>4} {:>3} {:>5}"
    print(fmt.format("kern", "n", "d", "tile", "c", "ncu us", "event us", "TFLOP/s", "rd/exp", "wr/exp", "DRAM rd",
                     "rel err", "regs", "ok", "blk/SM"))
    for r in rows:
        us = lambda x: "%.1f" % (float(x) / 1e3) if x else "-"
        print(fmt.format(r["kernel"], r["n"], r["d"], f'{r["block_q"]}x{r["block_k"]}', r["causal"],
                         us(r.get("time_ns", "")), us(r["event_time_ns_median"]), r.get("tflops_event", "") or "-",
                         r.get("l1_read_over_exp", "") or "-", r.get("l1_write_over_exp", "") or "-",
                         r.get("dram_read_bytes", "") or "-", r["max_rel_error"], r["registers"] or "-", r["ok"],
                         r["blocks_per_sm"] or "-"))
    print(f"summarize_tc: wrote {len(rows)} rows to {args.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
