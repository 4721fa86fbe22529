#!/usr/bin/env bash
# The L2's cost of atomic additions (validation/l2_atomic_probe.cu), in one call on the device machine:
#   bash validation/run_l2_atomic_probe.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_l2_atomic_probe.csv (kernel,bytes,ms,gbps at free-running clocks, CUDA events),
# <gpu>_l2_atomic_probe_ncu.csv (Nsight Compute under --clock-control base, the L2 left warm between
# kernels: each launch's time, SM and L2 clocks and L2 sector counts by operation) and
# <gpu>_l2_atomic_probe_env.txt (GPU, driver, CUDA, ncu, date).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2_atomic_probe.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_l2_atomic_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/probe" validation/l2_atomic_probe.cu || { echo "BUILD FAILED"; exit 1; }
"$WORK/probe" > "$OUT/${G}_l2_atomic_probe.csv" || { echo "RUN FAILED"; exit 1; }
cat "$OUT/${G}_l2_atomic_probe.csv"
METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second
METRICS=$METRICS,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_red.sum
METRICS=$METRICS,lts__t_sectors.sum,lts__t_requests_op_red.sum,dram__bytes_read.sum,lts__cycles_active.avg
"$NCU" --clock-control base --cache-control none --metrics "$METRICS" --csv --page raw --print-units base \
  "$WORK/probe" > "$WORK/ncu.log" 2>&1
grep '^"' "$WORK/ncu.log" > "$OUT/${G}_l2_atomic_probe_ncu.csv"
python3 - "$OUT/${G}_l2_atomic_probe_ncu.csv" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[1:]:
    if not r.get("Kernel Name"):
        continue
    f = lambda k: float(r[k].replace(",", "")) if r.get(k) not in (None, "") else float("nan")
    t = f("gpu__time_duration.sum")
    print(f'{r["Kernel Name"][:28]:28s} {t / 1e3:9.1f} us  sm {f("sm__cycles_elapsed.avg.per_second") / 1e9:.3f} GHz'
          f'  lts {f("lts__cycles_elapsed.avg.per_second") / 1e9:.3f} GHz  rd {f("lts__t_sectors_op_read.sum"):.3g}'
          f'  wr {f("lts__t_sectors_op_write.sum"):.3g}  red {f("lts__t_sectors_op_red.sum"):.3g}'
          f'  all {f("lts__t_sectors.sum"):.3g}  dram {f("dram__bytes_read.sum"):.3g}')
PY
