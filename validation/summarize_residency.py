#!/usr/bin/env python3
# One row per residency read of run_memeff_residency.sh: the PROBE lines of RUN_LOG beside the DRAM bytes
# ncu measured for the same read (RAW_CSV, --page raw --print-units base, the reads in the same order), with
# the provenance of ENV. absent_fraction: DRAM bytes over the bytes the read asked for (every STRIDE-th
# 128-byte line), the share of those lines the L2 no longer held.
#   python3 validation/summarize_residency.py ENV RUN_LOG RAW_CSV > validation/data/<gpu>_memeff_residency.csv
import csv
import re
import sys

from probe_reads import probe_reads


def main(env_path, log_path, raw_path):
    env = dict(line.split(": ", 1) for line in open(env_path).read().splitlines() if ": " in line)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "driver", "cuda", "ncu", "torch", "date", "kernel", "batch", "heads", "n", "d", "causal",
                  "target", "bytes", "stride", "bytes_read", "dram_read_bytes", "absent_fraction", "sms"])
    for probe, dram_read in probe_reads(log_path, raw_path):
        case, target, nbytes, stride = probe[1], probe[2], int(probe[4]), int(probe[5])
        m = re.fullmatch(r"(fwd_)?(\d+)x(\d+)x(\d+)x(\d+)_c(\d)(?:_s(\d+))?", case)
        kernel = "control" if not m else ("fmha_cutlassF" if m.group(1) else "fmha_cutlassB")
        shape = list(m.groups()[1:6]) if m else [""] * 5
        sms = (m.group(7) or "") if m else ""
        bytes_read = (nbytes // 128 + stride - 1) // stride * 128
        out.writerow([env.get("gpu"), env.get("driver"), env.get("cuda (nvcc)"), env.get("ncu"),
                      env.get("torch", "").split()[0], env.get("date"), kernel, *shape, target, nbytes, stride,
                      bytes_read, int(dram_read), f"{dram_read / bytes_read:.4f}", sms])


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__ if __doc__ else "usage: summarize_residency.py ENV RUN_LOG RAW_CSV")
    main(*sys.argv[1:])
