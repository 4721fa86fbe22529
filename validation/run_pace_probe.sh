#!/usr/bin/env bash
# One SM's read pace against the bytes in flight (validation/pace_probe.cu), in one call on the device machine:
#   bash validation/run_pace_probe.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_pace_probe_free.csv (clocks free-running), <gpu>_pace_probe_base.csv (the program's rows
# under ncu --clock-control base --cache-control all, where the validation data ran), <gpu>_pace_probe_ncu.csv
# (each launch's SM and L2 clocks, DRAM bytes, L2 hits and misses, warp stall reasons), the kernels' loads
# in SASS (<gpu>_pace_probe_sass.txt) and <gpu>_pace_probe_env.txt (provenance).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/paceprobe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_pace_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/pace_probe" validation/pace_probe.cu || { echo "BUILD FAILED"; exit 1; }
cuobjdump -sass "$WORK/pace_probe" | grep -E "Function|LDG|CS2R|S2UR|BAR|BRA" > "$OUT/${G}_pace_probe_sass.txt"
"$WORK/pace_probe" > "$OUT/${G}_pace_probe_free.csv" || echo "RUN FAILED (free)"
METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum
timeout 400 "$NCU" --clock-control base --cache-control all --metrics "$METRICS" --section WarpStateStats \
  --csv --page raw --print-units base --log-file "$WORK/ncu.log" -o "$WORK/pace" "$WORK/pace_probe" \
  > "$OUT/${G}_pace_probe_base.csv" || echo "RUN FAILED (ncu)"
"$NCU" --import "$WORK/pace.ncu-rep" --csv --page raw --print-units base > "$OUT/${G}_pace_probe_ncu.csv"
tail -3 "$WORK/ncu.log"
# The l2 probe's own lone reader (attnsim probe --mode single), for the same counters and its loads in SASS.
nvcc -O3 -arch=sm_90 -o "$WORK/l2_probe" validation/l2_probe.cu || echo "BUILD FAILED (l2_probe)"
cuobjdump -sass "$WORK/l2_probe" | awk '/Function :/{f=/l2_probe_kernel/} f' | grep -E "LDG|BAR|BRA|CS2R" \
  > "$OUT/${G}_l2_probe_single_sass.txt"
for mib in 8 32; do
  timeout 200 "$NCU" --clock-control base --cache-control all --metrics "$METRICS" --section WarpStateStats \
    -k regex:l2_probe_kernel --csv --page raw --print-units base --log-file "$WORK/ncu_l2_$mib.log" \
    -o "$WORK/l2_$mib" "$WORK/l2_probe" single $((mib << 20)) 3 1 || echo "RUN FAILED (l2_probe $mib)"
  "$NCU" --import "$WORK/l2_$mib.ncu-rep" --csv --page raw --print-units base > "$OUT/${G}_l2_probe_single_${mib}MiB_ncu.csv"
done
grep -c LDG "$OUT/${G}_pace_probe_sass.txt"
paste -d, "$OUT/${G}_pace_probe_free.csv" "$OUT/${G}_pace_probe_base.csv"
python3 - "$OUT/${G}_pace_probe_ncu.csv" "$OUT/${G}"_l2_probe_single_*MiB_ncu.csv << 'PY'
import csv, sys
rows = [r for f in sys.argv[1:] for r in csv.DictReader(open(f))]
keys = ["sm__cycles_elapsed.avg.per_second", "lts__cycles_elapsed.avg.per_second", "dram__bytes_read.sum",
        "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum"]
def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0
for r in rows:
    if "_kernel" not in r.get("Kernel Name", ""):
        continue
    stalls = sorted(((number(v), k) for k, v in r.items() if "issue_stalled" in k and k.endswith("per_issue_active.ratio")),
                    reverse=True)[:3]
    print(r.get("Kernel Name")[:24], r.get("Block Size"), *[r.get(k, "?") for k in keys],
          *["%s=%.1f" % (k.split("stalled_")[1].split("_per")[0], v) for v, k in stalls])
PY
