#!/usr/bin/env bash
# What the L2 holds of each tensor when PyTorch's memory-efficient backward ends (memeff_residency_probe.py),
# in one call on the device machine:
#   bash validation/run_memeff_residency.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_memeff_residency.csv (summarize_residency.py: one row per read, its absent fraction),
# <gpu>_memeff_residency_raw.csv (ncu --page raw, one row per residency read, in the PROBE lines' order),
# <gpu>_memeff_residency_run.log (the PROBE lines) and <gpu>_memeff_residency_env.txt. CASES, FWD_CASES
# (b,h,n,d,causal ...), STRIDE and SMS pass through to the script. About 25 s on an H200.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/memeffres.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
# PROBE_SCRIPT=validation/l2_write_priority_probe.py runs that probe instead (files <gpu>_l2_write_priority*),
# PROBE_SCRIPT=validation/memeff_room_probe.py the room probe (files <gpu>_memeff_room*: the PROBE lines and
# the raw ncu rows, summarized by summarize_memeff_room.py).
PROBE_SCRIPT="${PROBE_SCRIPT:-validation/memeff_residency_probe.py}"
case "$PROBE_SCRIPT" in
  *write_priority*) PREFIX="${G}_l2_write_priority" ;;
  # ROOM_SET=placement|copies|sides|partitions: memeff_room_probe.py's other sets (PART_SET=takes: the
  # partitions set's second part)
  *room*) PREFIX="${G}_memeff_room${ROOM_SET:+_$ROOM_SET}${PART_SET:+_$PART_SET}" ;;
  *) PREFIX="${G}_memeff_residency" ;;
esac
# SMS=S: the backward on S SMs (a green context; memeff_residency_probe.py), files <gpu>_memeff_residency_sS*.
[ -n "${SMS:-}" ] && PREFIX="${PREFIX}_s$SMS"
ENV="$OUT/${PREFIX}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/residency.so" validation/memeff_residency_read.cu || exit 1
# One metric, one pass: with the L2 lookup counters added ncu replays the read and, restoring memory between
# passes, leaves nothing of the backward in L2 (every tensor then reads as absent).
METRICS=dram__bytes_read.sum
echo "ncu --cache-control none --clock-control base --metrics $METRICS" | tee -a "$ENV"
"$NCU" --cache-control none --clock-control base --profile-from-start off -k regex:residency \
  --metrics "$METRICS" -o "$WORK/residency" \
  python3 "$PROBE_SCRIPT" "$WORK/residency.so" > "$OUT/${PREFIX}_run.log" 2>&1
rc=$?
"$NCU" -i "$WORK/residency.ncu-rep" --csv --page raw --print-units base > "$OUT/${PREFIX}_raw.csv"
case "$PROBE_SCRIPT" in
  *room*) python3 validation/summarize_memeff_room.py "$OUT/${PREFIX}_run.log" "$OUT/${PREFIX}_raw.csv" \
    > "$OUT/${PREFIX}.csv" || rc=1 ;;
  *) python3 validation/summarize_residency.py "$ENV" "$OUT/${PREFIX}_run.log" "$OUT/${PREFIX}_raw.csv" \
    > "$OUT/${PREFIX}.csv" || rc=1 ;;
esac
grep -v '^==PROF==' "$OUT/${PREFIX}_run.log" | cut -c1-400
grep -c -- '- 1 pass' "$OUT/${PREFIX}_run.log"
exit $rc
