# The PROBE lines of a run log beside the DRAM bytes ncu measured for the same profiled reads (ncu --page raw
# --print-units base, the reads in the order the PROBE lines name them), shared by summarize_residency.py and
# summarize_memeff_room.py.
import csv
import sys


def probe_reads(log_path, raw_path):
    """[(the PROBE line's words, DRAM bytes read)], or exits naming the mismatch."""
    probes = [line.split() for line in open(log_path) if line.startswith("PROBE ")]
    rows = list(csv.reader(open(raw_path)))
    header, data = rows[0], rows[2:]  # rows[1]: units
    if len(probes) != len(data):
        sys.exit(f"{len(probes)} PROBE lines but {len(data)} profiled reads")
    dram = header.index("dram__bytes_read.sum")
    return [(probe, float(row[dram].replace(",", ""))) for probe, row in zip(probes, data)]
