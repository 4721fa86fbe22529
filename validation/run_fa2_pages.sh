#!/usr/bin/env bash
# FlashAttention-2's causal forward at 1 x 8 x 32,768 x 128 and how evenly its own K and V pages fill the
# L2's sets (fa2_pages_probe.py), one process per placement, in one call on the device machine:
#   PADS="0 1 2 ..." bash validation/run_fa2_pages.sh   (FA2_REPEATS=R: R launches of the forward a placement;
#   SUFFIX=_x: files <gpu>_fa2_pages_x*)
# $OUT gets <gpu>_fa2_pages.csv (one row per profiled kernel: pad, kind, head, addresses, DRAM bytes read,
# DRAM time), <gpu>_fa2_pages_run.log and <gpu>_fa2_pages_env.txt. ncu: dram__bytes_read.sum and
# gpu__time_duration.sum, one pass, default cache control (flush before each kernel), base clocks.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/fa2pages.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
ENV="$OUT/${G}_fa2_pages${SUFFIX:-}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/windows.so" validation/windows_read.cu || exit 1
METRICS=dram__bytes_read.sum,gpu__time_duration.sum
echo "ncu --clock-control base --metrics $METRICS" | tee -a "$ENV"
LOG="$OUT/${G}_fa2_pages${SUFFIX:-}_run.log"
: > "$LOG"
DEADLINE_S="${DEADLINE_S:-500}"
echo "pad,kind,head,k_addr,v_addr,other_addr,kernel,dram_read_bytes,time_ns" > "$OUT/${G}_fa2_pages${SUFFIX:-}.csv"
for pad in ${PADS:-0 1 2 3 37 38 74 111}; do
  [ "$SECONDS" -lt "$DEADLINE_S" ] || { echo "SKIPPED pad $pad: deadline" | tee -a "$LOG"; continue; }
  PAD_MIB="$pad" "$NCU" --clock-control base --profile-from-start off -k "regex:flash_fwd|windows_read" \
    --metrics "$METRICS" -o "$WORK/p$pad" python3 validation/fa2_pages_probe.py "$WORK/windows.so" \
    > "$WORK/p$pad.log" 2>&1
  cat "$WORK/p$pad.log" >> "$LOG"
  "$NCU" -i "$WORK/p$pad.ncu-rep" --csv --page raw --print-units base > "$WORK/p$pad.csv" 2>> "$LOG"
  python3 - "$WORK/p$pad.log" "$WORK/p$pad.csv" >> "$OUT/${G}_fa2_pages${SUFFIX:-}.csv" << 'PY'
import csv, sys
probes = [l.split()[1:] for l in open(sys.argv[1]) if l.startswith("PROBE ")]
rows = list(csv.DictReader(open(sys.argv[2])))[1:]  # the first row below the header holds the units
if len(rows) != len(probes):
    sys.exit(f"{len(rows)} profiled kernels, {len(probes)} PROBE lines")
for p, r in zip(probes, rows):
    kernel = r["Kernel Name"].split("(")[0].split("<")[0].removeprefix("void ").replace(",", ";")
    # ncu writes the numbers with digit groups ("536,316,928") even with --print-units base
    print(",".join(p + [kernel] + [r[m].replace(",", "") for m in ("dram__bytes_read.sum", "gpu__time_duration.sum")]))
PY
  tail -n +2 "$OUT/${G}_fa2_pages${SUFFIX:-}.csv" | awk -F, -v p="$pad" '$1==p {printf "pad %s %s %s: %.1f MB\n", $1, $2, $3, $8/1e6}'
done
echo "done in ${SECONDS}s"
