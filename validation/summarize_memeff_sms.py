#!/usr/bin/env python3
# Rows for attnsim validate from run_memeff_sms.sh: each profiled backward (RAW_CSV, ncu --page raw
# --print-units base, in the PROBE lines' order of RUN_LOG) as a copy of the same case's row of BASE_CSV (the
# full-chip SDPA measurement, whose kernel, grid, block and shared memory it shares; for a case not measured
# there, a row of the same kernel with its shape and grid) with the measured bytes,
# time and SM count replaced, the provenance of ENV, and three columns of its own: sms, sm_ids (the SMs in the
# order blocks landed) and core_partitions (for -p l2.core_partitions: each of those SMs' L2 partition, 0 for
# SM 128's, read from PAIR_CSV, a SET=pair probe: twice its buffer, 80 MiB, of DRAM reads where an SM shares
# SM 128's partition (both SMs' lines thrash in one), else less on an H200 (42: its L2 holds both) and more on
# an H100 (118-120: both partitions thrash); which partition an SM number has differs from GPU to GPU, so it
# holds only if PAIR_CSV was measured on the GPU of RUN_LOG: docs/chip.md, "Sixteen SMs of a green context").
#   python3 validation/summarize_memeff_sms.py ENV RUN_LOG RAW_CSV BASE_CSV PAIR_CSV > <gpu>_memeff_sms_cases.csv
# PASS=fwd: the launches are the forward's (run_memeff_sms.sh PASS=fwd KERNEL=fmha_cutlassF); with
# BACKEND=CUDNN_ATTENTION or FLASH_ATTENTION, that backend's (run_memeff_sms.sh PASS=sdpa_cudnn or sdpa_flash).
import csv
import os
import re
import sys

PASS = os.environ.get("PASS", "bwd")
BACKEND = os.environ.get("BACKEND", "EFFICIENT_ATTENTION")  # CUDNN_ATTENTION, FLASH_ATTENTION: PASS=fwd rows

MEASURED = {  # column of the cases CSV: (ncu metric, scale)
    "dram_read_bytes": ("dram__bytes_read.sum", 1), "dram_write_bytes": ("dram__bytes_write.sum", 1),
    "time_ns": ("gpu__time_duration.sum", 1), "l2_read_sectors": ("lts__t_sectors_srcunit_tex_op_read.sum", 1),
    "l2_write_sectors": ("lts__t_sectors_srcunit_tex_op_write.sum", 1),
    "lts_tex_miss_sectors": ("lts__t_sectors_srcunit_tex_lookup_miss.sum", 1),
    "lts_fabric_sectors": ("lts__t_sectors_srcunit_ltcfabric.sum", 1), "cycles_elapsed": ("gpc__cycles_elapsed.max", 1),
    # SM<->L2 bytes as the L2 counts them (the full-chip rows' L1 figures are 1.000-1.010 of these)
    "l1_read_bytes": ("lts__t_sectors_srcunit_tex_op_read.sum", 32),
    "l1_write_bytes": ("lts__t_sectors_srcunit_tex_op_write.sum", 32),
}
CLEARED = ["lts_read_sectors", "lts_write_sectors", "lts_hit_sectors",
           "lts_miss_sectors", "lts_tex_hit_sectors", "lrc_lts2lrc_read_sectors", "lrc_lrc2xbar_read_sectors",
           "lrc_coalesced_read_sectors", "lrc_xbar2gpc_read_sectors"]


def partitions(pair_path):
    out = {}
    for r in csv.DictReader(open(pair_path)):
        sm = int(r["mode"].split(":")[2])
        out[sm] = "0" if abs(int(r["dram_read_bytes"]) / (2 * int(r["bytes"])) - 1) < 0.1 else "1"
    out[int(r["mode"].split(":")[1])] = "0"
    return out


def base_row(base_rows, b, h, n, d, c):
    """The full-chip row of the same case; else one of the same kernel (d, causal) with the shape and the
    grid (a block per key block, head and batch) set to this case's."""
    rows = [r for r in base_rows if r["backend"] == BACKEND and r["pass"] == PASS]
    same = [r for r in rows if (r["batch"], r["heads"], r["n"], r["d"], r["causal"]) == (b, h, n, d, c)]
    if same:
        return dict(same[0])
    base = dict(next(r for r in rows if (r["d"], r["causal"]) == (d, c)))
    scale = int(b) * int(h) * int(n) / (int(base["batch"]) * int(base["heads"]) * int(base["n"]))
    base.update(batch=b, heads=h, n=n, main_grid_size=str(round(int(base["main_grid_size"]) * scale)))
    return base


def main(env_path, log_path, raw_path, base_path, pair_path):
    env = dict(line.split(": ", 1) for line in open(env_path).read().splitlines() if ": " in line)
    probes = [line.split() for line in open(log_path) if line.startswith("PROBE ")]
    raw = list(csv.reader(open(raw_path)))
    header, data = raw[0], raw[2:]
    if len(probes) != len(data):
        sys.exit(f"{len(probes)} PROBE lines but {len(data)} profiled launches")
    base_rows = list(csv.DictReader(open(base_path)))
    part = partitions(pair_path)
    # lts_miss_sectors: measured since the seventy-first session (run_memeff_sms.sh), cleared in older files
    measured = dict(MEASURED)
    if "lts__t_sectors_lookup_miss.sum" in header:
        measured["lts_miss_sectors"] = ("lts__t_sectors_lookup_miss.sum", 1)
    cleared = [c for c in CLEARED if c not in measured]
    dropped = cleared + ["attn_" + c for c in cleared]  # not measured here
    fields = [f for f in base_rows[0] if f not in dropped] + ["sms", "sm_ids", "core_partitions"]
    out = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    out.writeheader()
    for probe, row in zip(probes, data):
        b, h, n, d, c = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)_c(\d)", probe[1]).groups()
        new = base_row(base_rows, b, h, n, d, c)
        new.update(gpu=env["gpu"], driver=env["driver"], cuda=env["cuda (nvcc)"], ncu=env["ncu"],
                   torch=env["torch"].split()[0], date=env["date"][:10], kernels="1", attention_kernels="1",
                   kernel_names=new["main_kernel"])
        for col, (metric, scale) in measured.items():
            value = str(int(float(row[header.index(metric)].replace(",", "")) * scale))
            new[col] = new["attn_" + col] = value
        for col in dropped:
            del new[col]
        ids = [int(s) for s in probe[4:]]
        new.update(main_sm_count=probe[2], sms=probe[2], sm_ids=" ".join(map(str, ids)),
                   core_partitions="".join(part[s] for s in ids))
        out.writerow(new)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit("usage: summarize_memeff_sms.py ENV RUN_LOG RAW_CSV BASE_CSV PAIR_CSV")
    main(*sys.argv[1:])
