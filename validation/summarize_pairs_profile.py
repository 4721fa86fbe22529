#!/usr/bin/env python3
"""A lone block and a pair under the profiler: one CSV line per profiled launch of run_memeff_profile.sh
(`TAG=_pairs`, one head and two on a 128-SM green context), the figures docs/validation.md ("A lone block
and a pair under the profiler") sets beside the model and tests/validation/test_older_first.cpp reads.

    summarize_pairs_profile.py OUT.csv ARCHIVE.tar.gz...

Columns: kernel (the archive's name up to _profile), case (b x h x n x d x causal), grid, time_ns, sm_clock_hz,
tensor_active_pct and issue_active_pct (of the SMs' active cycles), then the stall cycles per issued
instruction by reason. Standard library only.
"""
import csv
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize_profile import number  # noqa: E402  (ncu's "1,234.5" cells)

METRICS = {
    "grid": "launch__grid_size",
    "time_ns": "gpu__time_duration.sum",
    "sm_clock_hz": "sm__cycles_elapsed.avg.per_second",
    "tensor_active_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
}
STALLS = ["wait", "math_pipe_throttle", "not_selected", "short_scoreboard", "long_scoreboard", "barrier",
          "mio_throttle", "dispatch_stall"]


def launches(archive):
    kernel = os.path.basename(archive).split("_profile")[0]
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.name.endswith("_raw.csv"):
                continue
            rows = list(csv.reader(io.StringIO(tar.extractfile(member).read().decode())))
            header = next(r for r in rows if "Kernel Name" in r)
            last = [r for r in rows if len(r) == len(header) and r is not header][-1]
            value = dict(zip(header, last))
            out = {"kernel": kernel, "case": os.path.basename(member.name).split("_s")[0]}
            out.update({k: number(value[m]) for k, m in METRICS.items()})
            for s in STALLS:
                out[s] = number(value[f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio"])
            yield out


def main():
    rows = [row for archive in sys.argv[2:] for row in launches(archive)]
    with open(sys.argv[1], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(", ".join(f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
