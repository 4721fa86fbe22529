#!/usr/bin/env python3
"""Per-configuration and per-launch tables of the DRAM sweep (run_dram_sweep.sh, part A).

    summarize_dram.py --raw-dir DIR --meta KEY=VALUE ... --out CONFIGS.csv --launches-out LAUNCHES.csv

DIR holds, per configuration TAG:
    result_TAG.txt   the harness's "RESULT key=value ..." line from the profiled run (--reps 0)
    ncu_TAG.csv      `ncu --import ... --csv --page raw --print-units base --print-kernel-base demangled`
The --meta pairs (gpu, driver, cuda, ncu, torch, date, clock_control, ...) go into every row of both files
(provenance). CONFIGS.csv is a superset of the columns `attnsim validate` reads (summarize_ncu.py's), one row
per configuration, its counters summed over the configuration's sched_* launches; LAUNCHES.csv has one row
per profiled launch with its launch geometry. No cell holds a comma or a quote (attnsim's reader splits on
bare commas). Metrics ncu did not deliver are left empty. Standard library only; sdpa_measure.py imports
the reader below.
"""
import argparse
import csv
import glob
import os
import re
import sys

from summarize_ncu import parse_result  # the harness's RESULT line as a dict

# column -> ncu metric. Counters (summed over a configuration's launches).
COUNTERS = [
    ("time_ns", "gpu__time_duration.sum"),
    ("l1_read_bytes", "l1tex__m_xbar2l1tex_read_bytes.sum"),
    ("l1_write_bytes", "l1tex__m_l1tex2xbar_write_bytes.sum"),
    ("l2_read_sectors", "lts__t_sectors_srcunit_tex_op_read.sum"),
    ("l2_write_sectors", "lts__t_sectors_srcunit_tex_op_write.sum"),
    ("lts_read_sectors", "lts__t_sectors_op_read.sum"),
    ("lts_write_sectors", "lts__t_sectors_op_write.sum"),
    ("lts_hit_sectors", "lts__t_sectors_lookup_hit.sum"),
    ("lts_miss_sectors", "lts__t_sectors_lookup_miss.sum"),
    ("lts_tex_hit_sectors", "lts__t_sectors_srcunit_tex_lookup_hit.sum"),
    ("lts_tex_miss_sectors", "lts__t_sectors_srcunit_tex_lookup_miss.sum"),
    ("lts_fabric_sectors", "lts__t_sectors_srcunit_ltcfabric.sum"),
    # Hopper's L2 request coalescer (LRC) between the crossbar and L2: sectors L2 sent to it, sectors it sent
    # on to the crossbar (of which coalesced), sectors the crossbar delivered to the GPCs.
    ("lrc_lts2lrc_read_sectors", "lrc__lts2lrc_sectors_op_read.sum"),
    ("lrc_lrc2xbar_read_sectors", "lrc__lrc2xbar_sectors_op_read.sum"),
    ("lrc_coalesced_read_sectors", "lrc__lrc2xbar_sectors_op_read_coalescing_achieved.sum"),
    ("lrc_xbar2gpc_read_sectors", "lrc__xbar2gpc_sectors_op_read.sum"),
    ("dram_read_bytes", "dram__bytes_read.sum"),
    ("dram_write_bytes", "dram__bytes_write.sum"),
    ("cycles_elapsed", "gpc__cycles_elapsed.max"),
]
# Per-launch values (not summed: a configuration row lists them '/'-joined in launch order, one per launch for up
# to 4 launches (naive-safe: qk/softmax/pv), else the distinct values (flash1's T_c launches)).
GEOMETRY = [
    ("grid_size", "launch__grid_size"),
    ("block_size", "launch__block_size"),
    ("smem_static_bytes", "launch__shared_mem_per_block_static"),
    ("smem_dynamic_bytes", "launch__shared_mem_per_block_dynamic"),
    ("smem_config_bytes", "launch__shared_mem_config_size"),
    ("registers_per_thread", "launch__registers_per_thread"),
    ("occ_limit_smem", "launch__occupancy_limit_shared_mem"),
    ("occ_limit_registers", "launch__occupancy_limit_registers"),
    ("occ_limit_warps", "launch__occupancy_limit_warps"),
    ("occ_limit_blocks", "launch__occupancy_limit_blocks"),
    ("waves_per_sm", "launch__waves_per_multiprocessor"),
    ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct"),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("lts_hit_rate_pct", "lts__t_sector_hit_rate.pct"),
    ("sm_count", "device__attribute_multiprocessor_count"),
    ("l2_bytes", "device__attribute_l2_cache_size"),
]
# The metrics run_dram_sweep.sh asks ncu for: the first 7 are required, the rest optional (dropped if ncu
# rejects them).
REQUIRED_METRICS = [m for _, m in COUNTERS[:5]] + ["dram__bytes_read.sum", "dram__bytes_write.sum"]
OPTIONAL_METRICS = [m for _, m in COUNTERS if m not in REQUIRED_METRICS] + [m for _, m in GEOMETRY]

# Units ncu may print despite --print-units base; scaled to bytes / ns. Anything else (counts, registers,
# blocks, %, sectors, cycles) is taken as printed.
UNIT_SCALE = {"byte": 1, "ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
              "second": 1e9, "s": 1e9, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 1024,
              "mibyte": 1024 ** 2, "gibyte": 1024 ** 3}


def clean(text):
    """A cell attnsim's comma-splitting reader keeps intact."""
    return re.sub(r"\s+", " ", re.sub(r"[,\"\n\r]", ";", str(text))).strip()


def number(cell):
    cell = cell.strip().replace(",", "")
    if cell in ("", "n/a", "N/A", "nan"):
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def read_ncu_raw(path):
    """ncu's raw CSV -> list of launches in ID order: dict with 'id', 'kernel' (as printed), 'metrics'
    {metric: float or None, scaled to bytes/ns where the unit says so} and 'cells' {column: text}."""
    with open(path, newline="", errors="replace") as f:
        lines = [line for line in f if not line.startswith("==")]
    rows = list(csv.reader(lines))
    header_at = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "ID" in r), None)
    if header_at is None:
        raise ValueError(f"{path}: no header row with 'ID' and 'Kernel Name'")
    header = rows[header_at]
    col = {name: i for i, name in enumerate(header)}
    units, launches = {}, []
    for r in rows[header_at + 1:]:
        if len(r) < len(header):
            continue
        if not r[col["ID"]].strip().isdigit():  # the units row
            units = {name: r[i].strip().lower() for name, i in col.items()}
            continue
        metrics = {}
        for name, i in col.items():
            if "__" not in name:
                continue
            v = number(r[i])
            if v is not None:
                v *= UNIT_SCALE.get(units.get(name, ""), 1)
            metrics[name] = v
        launches.append({"id": int(r[col["ID"]]), "kernel": r[col["Kernel Name"]], "metrics": metrics,
                         "cells": {name: r[i] for name, i in col.items()}})
    launches.sort(key=lambda x: x["id"])
    return launches


def _split_top(s, sep_chars):
    """Split s at characters in sep_chars that are outside <...> and (...)."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        if depth == 0 and ch in sep_chars:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def short_kernel(name):
    """(base name, template arguments) of a demangled (or plain) kernel name: 'void ns::f<64, 64>(int)' ->
    ('f', '64;64'). Template text is cleaned of commas and cut at 300 characters."""
    s = name.strip()
    if s.endswith(")"):  # drop the parameter list: the last top-level (...)
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                depth += 1
            elif s[i] == "(":
                depth -= 1
                if depth == 0:
                    s = s[:i]
                    break
    tokens = [t for t in _split_top(s, " ") if t]
    qualified = tokens[-1] if tokens else s
    targs = ""
    depth = 0
    for i, ch in enumerate(qualified):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "<" and depth == 0:
            targs = qualified[i + 1:].rstrip()
            if targs.endswith(">"):
                targs = targs[:-1]
            qualified = qualified[:i]
            break
    base = qualified.split("::")[-1] or qualified
    targs = re.sub(r"\s*,\s*", ";", targs)
    return clean(base), clean(targs)[:300]


def fmt(v):
    if v is None:
        return ""
    if abs(v - round(v)) < 1e-9 and abs(v) < 1e18:
        return "%d" % round(v)
    return "%.6g" % v


def launch_row(launch):
    """The per-launch columns (kernel names, geometry, counters) of one profiled launch."""
    base, targs = short_kernel(launch["kernel"])
    m = launch["metrics"]
    row = {"ncu_id": launch["id"], "kernel": base, "kernel_template": targs}
    for column, metric in GEOMETRY + COUNTERS:
        row[column] = fmt(m.get(metric))
    return row


def distinct_join(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return "/".join(out)


def summarize(raw_dir, meta):
    configs, launches_out = [], []
    for result_path in sorted(glob.glob(os.path.join(raw_dir, "result_*.txt"))):
        tag = os.path.basename(result_path)[len("result_"):-len(".txt")]
        ncu_path = os.path.join(raw_dir, f"ncu_{tag}.csv")
        try:
            with open(result_path) as f:
                res = parse_result(f.read())
            launches = read_ncu_raw(ncu_path)
        except (OSError, ValueError) as e:
            print(f"summarize_dram: skipping {tag}: {e}", file=sys.stderr)
            continue
        launches = [x for x in launches if "sched_" in x["kernel"]]
        if not launches:
            print(f"summarize_dram: skipping {tag}: no sched_* launches", file=sys.stderr)
            continue
        if str(len(launches)) != res.get("kernels"):
            print(f"summarize_dram: {tag}: {len(launches)} profiled launches, harness launched {res.get('kernels')}",
                  file=sys.stderr)
        key = {"tag": tag}
        for k in ("schedule", "n", "d", "heads", "block_q", "block_k", "causal", "dtype", "flash1_groups"):
            key[k] = res.get(k, "")
        key["kernel"] = res.get("kernel", "ffma")
        key["keys_descending"] = res.get("keys_descending", "0")
        # The tc build's blocks per SM (harness --tc-min-blocks) and its local memory per thread (spills; a
        # kernel per '/'-separated value), which attnsim validate turns into the simulated kernel's.
        key["tc_min_blocks"] = res.get("tc_min_blocks", "1") if key["kernel"] == "tc" else ""
        key["local_bytes"] = res.get("local_bytes", "")
        rows = [launch_row(x) for x in launches]
        for i, r in enumerate(rows):
            launches_out.append({**meta, **key, "launch": i, **r})
        row = {**meta, **key, "kernels": len(launches)}
        for column, metric in COUNTERS:
            vals = [x["metrics"].get(metric) for x in launches]
            row[column] = fmt(sum(vals)) if vals and all(v is not None for v in vals) else ""
        for column, _ in GEOMETRY:  # naive-safe's 3 kernels: one value each; flash1's T_c launches: distinct values
            row[column] = ("/".join(r[column] for r in rows) if len(rows) <= 4
                           else distinct_join(r[column] for r in rows))
        if len(rows) > 1:  # a rate over several launches: from the lookups where ncu gave them
            hit, miss = row["lts_hit_sectors"], row["lts_miss_sectors"]
            row["lts_hit_rate_pct"] = (fmt(100.0 * float(hit) / (float(hit) + float(miss)))
                                       if hit and miss and float(hit) + float(miss) > 0 else "")
        row["kernel_names"] = distinct_join(r["kernel"] for r in rows)  # (distinct, in launch order)
        h, n, d = int(res["heads"]), int(res["n"]), int(res["d"])
        row["qkv_bytes"] = 3 * h * n * d * 2
        row["o_bytes"] = h * n * d * 2
        for k in ("exp_sched_read_bytes", "exp_sched_write_bytes", "exp_kernel_read_bytes", "exp_kernel_write_bytes",
                  "max_rel_error", "nonfinite", "ok"):
            row[k] = res.get(k, "")
        dr = row["dram_read_bytes"]
        row["dram_read_over_qkv"] = "%.4f" % (float(dr) / row["qkv_bytes"]) if dr else ""
        row["dram_read_over_l1_read"] = ("%.4f" % (float(dr) / float(row["l1_read_bytes"]))
                                         if dr and row["l1_read_bytes"] and float(row["l1_read_bytes"]) else "")
        row["l1_read_over_exp_kernel"] = ("%.4f" % (float(row["l1_read_bytes"]) / float(res["exp_kernel_read_bytes"]))
                                          if row["l1_read_bytes"] and float(res.get("exp_kernel_read_bytes", 0) or 0)
                                          else "")
        configs.append(row)
    return configs, launches_out


CONFIG_COLUMNS = (
    # attnsim validate's columns first (summarize_ncu.py's COLUMNS), in its order.
    ["gpu", "driver", "cuda", "date", "schedule", "n", "d", "heads", "block_q", "block_k", "causal", "dtype",
     "kernels", "time_ns", "l1_read_bytes", "l1_write_bytes", "l2_read_sectors", "l2_write_sectors",
     "dram_read_bytes", "dram_write_bytes", "max_rel_error"]
    + ["ok", "nonfinite", "flash1_groups", "kernel", "keys_descending", "tc_min_blocks", "local_bytes", "tag", "kernel_names", "qkv_bytes", "o_bytes", "dram_read_over_qkv",
       "dram_read_over_l1_read", "exp_sched_read_bytes", "exp_sched_write_bytes", "exp_kernel_read_bytes",
       "exp_kernel_write_bytes", "l1_read_over_exp_kernel"]
    + [c for c, _ in COUNTERS if c not in ("time_ns", "l1_read_bytes", "l1_write_bytes", "l2_read_sectors",
                                           "l2_write_sectors", "dram_read_bytes", "dram_write_bytes")]
    + [c for c, _ in GEOMETRY])
LAUNCH_KEY_COLUMNS = ["tag", "schedule", "n", "d", "heads", "block_q", "block_k", "causal", "dtype",
                      "flash1_groups", "launch", "ncu_id", "kernel", "kernel_template"]
LAUNCH_COLUMNS = LAUNCH_KEY_COLUMNS + [c for c, _ in GEOMETRY] + [c for c, _ in COUNTERS]


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
        w.writerow(columns)
        for r in rows:
            w.writerow([clean(r.get(c, "")) for c in columns])


def parse_meta(pairs):
    meta = {}
    for p in pairs:
        k, _, v = p.partition("=")
        meta[clean(k)] = clean(v)
    return meta


def print_table(configs, stream):
    f = "{:10} {:>6} {:>3} {:>5} {:>2} {:>3} {:>13} {:>13} {:>11} {:>7} {:>12} {:>9} {:>6} {:>10} {:>3}"
    print(f.format("schedule", "n", "d", "heads", "c", "krn", "L2->SM read", "DRAM read", "DRAM write", "rd/QKV",
                   "grid", "smem", "waves", "time us", "ok"), file=stream)
    for r in configs:
        smem = r["smem_dynamic_bytes"] or r["smem_static_bytes"]
        print(f.format(r["schedule"], r["n"], r["d"], r["heads"], r["causal"], r["kernels"], r["l1_read_bytes"],
                       r["dram_read_bytes"], r["dram_write_bytes"], r["dram_read_over_qkv"], r["grid_size"][:12],
                       smem[:9], r["waves_per_sm"][:6], "%.1f" % (float(r["time_ns"] or 0) / 1e3), r["ok"]),
              file=stream)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw-dir", required=True)
    ap.add_argument("--meta", nargs="*", default=[], help="KEY=VALUE provenance columns for every row")
    ap.add_argument("--out", required=True)
    ap.add_argument("--launches-out", required=True)
    args = ap.parse_args()
    meta = parse_meta(args.meta)
    configs, launches = summarize(args.raw_dir, meta)
    meta_cols = list(meta)
    # gpu, driver, cuda, date first (attnsim's), then the other provenance columns, then the rest.
    config_cols = CONFIG_COLUMNS[:4] + [c for c in meta_cols if c not in CONFIG_COLUMNS] + CONFIG_COLUMNS[4:]
    write_csv(args.out, configs, config_cols)
    write_csv(args.launches_out, launches, meta_cols + LAUNCH_COLUMNS)
    print_table(configs, sys.stdout)
    print(f"summarize_dram: wrote {len(configs)} configurations to {args.out}, {len(launches)} launches to "
          f"{args.launches_out}")
    return 0 if configs else 1


if __name__ == "__main__":
    sys.exit(main())
