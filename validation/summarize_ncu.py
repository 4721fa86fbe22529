#!/usr/bin/env python3
"""Sums Nsight Compute's per-launch counters over each configuration's kernels.

    summarize_ncu.py --raw-dir DIR --gpu NAME --driver VER --cuda VER --date YYYY-MM-DD --out FILE.csv

DIR holds, per configuration TAG (written by run_on_device.sh):
    result_TAG.txt   the harness's "RESULT key=value ..." line from the profiled run (--reps 0)
    ncu_TAG.csv      `ncu --import ... --csv --page raw --print-units base`: a header row ("ID", "Process ID",
                     "Process Name", "Host Name", "Kernel Name", ..., one column per metric), a units row, then
                     one row per profiled kernel launch.
Writes FILE.csv (the columns attnsim validate reads, COLUMNS below), one row per configuration, and prints a
table of measured SM<->L2 bytes against the bytes the kernels should move (exp_kernel_*) and the simulator's
ledger (exp_sched_*). Standard library only.
"""
import argparse
import csv
import glob
import os
import re
import shlex
import sys

COLUMNS = ["gpu", "driver", "cuda", "date", "schedule", "n", "d", "heads", "block_q", "block_k", "causal",
           "dtype", "kernels", "time_ns", "l1_read_bytes", "l1_write_bytes", "l2_read_sectors",
           "l2_write_sectors", "dram_read_bytes", "dram_write_bytes", "max_rel_error"]

# CSV column -> ncu metric summed over the configuration's launches.
METRICS = {
    "time_ns": "gpu__time_duration.sum",
    "l1_read_bytes": "l1tex__m_xbar2l1tex_read_bytes.sum",
    "l1_write_bytes": "l1tex__m_l1tex2xbar_write_bytes.sum",
    "l2_read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum",
    "l2_write_sectors": "lts__t_sectors_srcunit_tex_op_write.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
}

# Units ncu may print despite --print-units base; scale to bytes / ns / sectors.
UNIT_SCALE = {"": 1, "byte": 1, "sector": 1, "ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3,
              "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9,
              "kibyte": 1024, "mibyte": 1024 ** 2, "gibyte": 1024 ** 3}


def parse_result(text):
    """The RESULT line's key=value pairs (values may be double-quoted)."""
    for line in text.splitlines():
        if line.startswith("RESULT "):
            out = {}
            for token in shlex.split(line[len("RESULT "):]):
                key, _, value = token.partition("=")
                out[key] = value
            return out
    raise ValueError("no RESULT line")


def number(cell):
    cell = cell.strip().replace(",", "")
    if cell in ("", "n/a", "N/A"):
        raise ValueError("empty")
    return float(cell)


def read_ncu_raw(path):
    """Rows of per-launch metrics: list of dicts metric -> value (scaled to base units), kernel names."""
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("==")]  # ncu's own messages, if any
    rows = list(csv.reader(lines))
    header_at = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "ID" in r), None)
    if header_at is None:
        raise ValueError(f"{path}: no header row with 'ID' and 'Kernel Name'")
    header = rows[header_at]
    col = {name: i for i, name in enumerate(header)}
    missing = [m for m in METRICS.values() if m not in col]
    if missing:
        raise ValueError(f"{path}: missing metric columns {missing}")
    units = {}
    launches = []
    for r in rows[header_at + 1:]:
        if len(r) < len(header):
            continue
        if not r[col["ID"]].strip().isdigit():  # the units row
            units = {name: r[i].strip().lower() for name, i in col.items()}
            continue
        values = {}
        for metric in METRICS.values():
            unit = units.get(metric, "")
            if unit not in UNIT_SCALE:
                raise ValueError(f"{path}: unknown unit '{unit}' for {metric}")
            values[metric] = number(r[col[metric]]) * UNIT_SCALE[unit]
        launches.append((r[col["Kernel Name"]], values))
    return launches


def summarize(raw_dir, meta):
    out_rows, report = [], []
    for result_path in sorted(glob.glob(os.path.join(raw_dir, "result_*.txt"))):
        tag = os.path.basename(result_path)[len("result_"):-len(".txt")]
        ncu_path = os.path.join(raw_dir, f"ncu_{tag}.csv")
        try:
            with open(result_path) as f:
                res = parse_result(f.read())
            launches = read_ncu_raw(ncu_path)
        except (OSError, ValueError) as e:
            print(f"summarize_ncu: skipping {tag}: {e}", file=sys.stderr)
            continue
        launches = [(k, v) for k, v in launches if "sched_" in k]
        if not launches:
            print(f"summarize_ncu: skipping {tag}: no sched_* launches in {ncu_path}", file=sys.stderr)
            continue
        if str(len(launches)) != res.get("kernels"):
            print(f"summarize_ncu: {tag}: {len(launches)} profiled launches, harness launched {res.get('kernels')}",
                  file=sys.stderr)
        row = dict(meta)
        for key in ("schedule", "n", "d", "heads", "block_q", "block_k", "causal", "dtype", "max_rel_error"):
            row[key] = res[key]
        row["kernels"] = str(len(launches))
        for column, metric in METRICS.items():
            row[column] = "%.0f" % sum(v[metric] for _, v in launches)
        out_rows.append(row)
        report.append((row, res))
    return out_rows, report


def print_report(report, stream):
    fmt = "{:10} {:>6} {:>2} {:>4} {:>14} {:>14} {:>7} {:>14} {:>14} {:>7} {:>14} {:>11} {:>9} {:>3}"
    print(fmt.format("schedule", "n", "c", "krn", "L2->SM read", "kernel exp", "ratio", "SM->L2 write", "kernel exp",
                     "ratio", "DRAM read", "time us", "rel err", "ok"), file=stream)
    for row, res in report:
        def ratio(a, b):
            return "%.4f" % (float(a) / float(b)) if float(b) else "-"
        print(fmt.format(row["schedule"], row["n"], row["causal"], row["kernels"], row["l1_read_bytes"],
                         res.get("exp_kernel_read_bytes", "?"), ratio(row["l1_read_bytes"], res["exp_kernel_read_bytes"]),
                         row["l1_write_bytes"], res.get("exp_kernel_write_bytes", "?"),
                         ratio(row["l1_write_bytes"], res["exp_kernel_write_bytes"]), row["dram_read_bytes"],
                         "%.1f" % (float(row["time_ns"]) / 1e3), "%.1e" % float(row["max_rel_error"]),
                         res.get("ok", "?")), file=stream)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw-dir", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--cuda", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    clean = lambda s: re.sub(r"[,\"\n]", " ", s).strip()  # attnsim's reader splits on bare commas
    meta = {"gpu": clean(args.gpu), "driver": clean(args.driver), "cuda": clean(args.cuda), "date": clean(args.date)}
    rows, report = summarize(args.raw_dir, meta)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        w.writeheader()
        for row in rows:
            w.writerow({c: row[c] for c in COLUMNS})
    print_report(report, sys.stdout)
    print(f"summarize_ncu: wrote {len(rows)} rows to {args.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
