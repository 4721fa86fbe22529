#!/usr/bin/env bash
# One SDPA pass measured again and again (sdpa_repeat.py; default FlashAttention-2's causal forward at
# 1 x 8 x 32,768 x 128), in one call on the device machine:
#   bash validation/run_sdpa_repeat.sh   (from the repository root; $OUT comes back)
# PROCS processes (default 4), each CALLS causal passes (default 3) and one without the mask, each under
# ncu --cache-control all --clock-control base with DRAM bytes and time only (one pass), the kernels of
# KERNEL (a regex, default flash_fwd) profiled. $OUT gets <gpu>_<TAG>.csv (one row per profiled launch:
# process, call, causal, DRAM bytes read and written, time), <gpu>_<TAG>_run.log (the PROBE lines, the first
# process's SM sides) and _env.txt; TAG defaults to fa2_causal_repeat. BACKEND, PASS, SHAPE=B,H,N,D and
# PAD_MIB pass through to the script. About 40 s for 6 x 4 forwards on an H200.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/fa2rep.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PREFIX="${G}_${TAG:-fa2_causal_repeat}"
KERNEL="${KERNEL:-flash_fwd}"
ENV="$OUT/${PREFIX}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/sides.so" validation/memeff_residency_read.cu || exit 1
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
echo "ncu --cache-control all --clock-control base --metrics $METRICS -k regex:$KERNEL; BACKEND=${BACKEND:-} PASS=${PASS:-} SHAPE=${SHAPE:-}" | tee -a "$ENV"
rc=0
: > "$OUT/${PREFIX}_run.log"
echo "process,call,causal,dram_read_bytes,dram_write_bytes,time_ns" > "$OUT/${PREFIX}.csv"
for p in $(seq 1 "${PROCS:-4}"); do
  "$NCU" --cache-control all --clock-control base --profile-from-start off -k "regex:$KERNEL" \
    --metrics "$METRICS" -o "$WORK/p$p" python3 validation/sdpa_repeat.py "$WORK/sides.so" "$p" \
    >> "$OUT/${PREFIX}_run.log" 2>&1 || rc=1
  "$NCU" -i "$WORK/p$p.ncu-rep" --csv --page raw --print-units base > "$WORK/p$p.csv" || rc=1
  python3 - "$WORK/p$p.csv" "$OUT/${PREFIX}_run.log" "$p" >> "$OUT/${PREFIX}.csv" << 'PY' || rc=1
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("ID", "").isdigit()]
probes = [l.split()[1:] for l in open(sys.argv[2]) if l.startswith(f"PROBE {sys.argv[3]} ")]
assert len(rows) == len(probes), f"{len(rows)} launches profiled, {len(probes)} PROBE lines"
for (proc, call, causal), r in zip(probes, rows):
    values = (r[m].replace(",", "") for m in ("dram__bytes_read.sum", "dram__bytes_write.sum",
                                                "gpu__time_duration.sum"))  # ncu groups digits
    print(",".join([proc, call, causal, *values]))
PY
done
grep -v '^==PROF==\|^PAIRTIME' "$OUT/${PREFIX}_run.log" | cut -c1-300
cat "$OUT/${PREFIX}.csv"
exit $rc
