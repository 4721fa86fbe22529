#!/usr/bin/env python3
"""Where the tensor-core kernels' time goes: one markdown row per profiled launch of run_profile_tc.sh.

    summarize_profile.py validation/data/h100_tc_profile.tar.gz

Reads profile/*_raw.csv (ncu --set full, --page raw) from the archive and prints, per sched_* launch: the
SM clock it ran at, its time, warps resident per scheduler, warp instructions, how often a scheduler
issued, the tensor pipe's activity, and the cycles a warp spent per issued instruction by stall reason
(the three largest). Standard library only.
"""
import csv
import io
import sys
import tarfile


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def launches(archive):
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.name.endswith("_raw.csv"):
                continue
            text = tar.extractfile(member).read().decode()
            rows = list(csv.reader(line for line in io.StringIO(text) if line.startswith('"')))
            header = rows[0]
            for row in rows[2:]:  # rows[1] holds the units
                values = dict(zip(header, row))
                if "sched_" in values.get("Kernel Name", ""):
                    yield member.name.split("/")[-1][:-8], values


def main():
    print("| configuration | kernel | SM clock GHz | time us | warps/scheduler | warp instr. | issue active "
          "| tensor pipe | cycles per issued instr. (largest stall reasons) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, v in launches(sys.argv[1]):
        prefix = "smsp__average_warps_issue_stalled_"
        stalls = {k[len(prefix):-len("_per_issue_active.ratio")]: number(x) for k, x in v.items()
                  if k.startswith(prefix) and k.endswith("_per_issue_active.ratio")}
        top = ", ".join(f"{k} {x:.2f}" for k, x in sorted(stalls.items(), key=lambda kv: -kv[1])[:4])
        name = v["Kernel Name"].split("(")[0].replace("void ", "")
        print(f"| {tag} | `{name}` | {number(v['sm__cycles_elapsed.avg.per_second']) / 1e9:.3f} "
              f"| {number(v['gpu__time_duration.sum']) / 1e3:.1f} "
              f"| {number(v['smsp__warps_active.avg.per_cycle_active']):.2f} "
              f"| {number(v['smsp__inst_executed.sum']) / 1e6:.2f} M "
              f"| {number(v['smsp__issue_active.avg.pct_of_peak_sustained_active']):.0f}% "
              f"| {number(v['sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active']):.0f}% "
              f"| {sum(stalls.values()):.2f} ({top}) |")


if __name__ == "__main__":
    main()
