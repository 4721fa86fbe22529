#!/usr/bin/env bash
# Microbenchmarks for the presets (validation/microbench.cu), in one call on the device machine:
#   bash validation/run_microbench.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_microbench.csv (metric,value,unit,how), <gpu>_microbench_env.txt (GPU, driver, CUDA, ncu,
# clocks as nvidia-smi reports them, date) and the SM clock under Nsight Compute's --clock-control base.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/microbench.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_microbench_env.txt"
echo "clocks (nvidia-smi): $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv,noheader | head -n1) (sm, max sm, mem, max mem)" | tee -a "$OUT/${G}_microbench_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/microbench" validation/microbench.cu || { echo "BUILD FAILED"; exit 1; }
"$WORK/microbench" > "$OUT/${G}_microbench.csv" || { echo "RUN FAILED"; exit 1; }
# The SM clock the validation data was measured at: ncu's base clock control, on the clock kernel.
"$NCU" --clock-control base --metrics sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum -k clock_kernel \
  --csv --page raw --print-units base "$WORK/microbench" > "$WORK/ncu.log" 2>&1
python3 - "$WORK/ncu.log" "$OUT/${G}_microbench.csv" << 'PY'
import csv, io, sys
rows = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith('"')]
table = list(csv.DictReader(io.StringIO("\n".join(rows))))
row = [r for r in table if "clock_kernel" in r.get("Kernel Name", "")][0]
hz = float(row["sm__cycles_elapsed.avg.per_second"].replace(",", ""))
with open(sys.argv[2], "a") as out:
    out.write(f'sm_clock_ncu_base,{hz / 1e9:.6g},GHz,"sm__cycles_elapsed.avg.per_second of the clock kernel under ncu --clock-control base"\n')
PY
cut -d, -f1-3 "$OUT/${G}_microbench.csv"
