#!/usr/bin/env python3
# One row per trial of memeff_room_probe.py (run_memeff_residency.sh with PROBE_SCRIPT=...room...): the PROBE
# lines of RUN_LOG ("PROBE between R_MiB reread bytes_read", in profiling order) beside the DRAM bytes ncu measured for the same
# re-read of the hot buffer (RAW_CSV, --page raw --print-units base). lost_fraction: those DRAM bytes over the
# bytes re-read (all R MiB, or every 5th line of a half), the share that what ran between pushed out of the L2.
#   python3 validation/summarize_memeff_room.py RUN_LOG RAW_CSV > validation/data/<gpu>_memeff_room.csv
import csv
import sys

from probe_reads import probe_reads


def main(log_path, raw_path):
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["between", "hot_mib", "reread", "bytes_read", "dram_read_bytes", "lost_fraction"])
    for probe, dram_read in probe_reads(log_path, raw_path):
        between, hot_mib = probe[1], int(probe[2])
        reread = probe[3] if len(probe) > 3 else "all"  # older logs: the whole buffer
        bytes_read = int(probe[4]) if len(probe) > 4 else hot_mib << 20
        out.writerow([between, hot_mib, reread, bytes_read, int(dram_read), f"{dram_read / bytes_read:.4f}"])


if __name__ == "__main__":
    main(*sys.argv[1:3])
