#!/usr/bin/env bash
# PyTorch's SDPA rows (part B of run_dram_sweep.sh) at several placements of their tensors, in one call on
# the device machine:
#   PADS="0 37" bash validation/run_sdpa_placements.sh
# METRICS_SET (default dram): run_dram_sweep.sh's counter set; dram = DRAM bytes, time and the SM clock (GPC
# cycles, since 2026-12-03), collected by ncu in one run of each kernel (no replay passes: the SM <-> L2
# columns stay empty); required = the 7 counters.
# PADS: MiB held before the tensors (sdpa_measure.py's PAD_MIB), one sweep each; the harness is built once.
# A sweep starts only while DEADLINE_S (default 540) seconds have not passed, with what is left as its
# deadline. $OUT gets <gpu>_sdpa_onepass_pad<P>.csv (one row per case and pass)
# and _launches.csv (one row per profiled launch) per placement, <gpu>_sdpa_onepass_env.txt and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
PADS="${PADS:-0 37 74}"
DEADLINE_S="${DEADLINE_S:-540}"
WORK="$(mktemp -d /tmp/attnplace.XXXXXX)"
echo "=== run_sdpa_placements.sh: PADS=$PADS, deadline ${DEADLINE_S}s"
bash validation/build.sh || { echo "BUILD FAILED"; exit 1; }
read -ra pads <<< "$PADS"
G=""
for pad in "${pads[@]}"; do
  # A sweep of the 72 rows with one pass takes 35-50 s on an H200; each may use what is left.
  budget=$((DEADLINE_S - SECONDS - 10))
  if [ "$budget" -lt 30 ]; then
    echo "SKIPPED pad $pad MiB: ${budget}s left for it"
    continue
  fi
  echo "=== pad $pad MiB: part B, ${budget}s ($SECONDS s since start)"
  OUT="$WORK/pad$pad" PARTS=B METRICS_SET="${METRICS_SET:-dram}" SKIP_BUILD=1 PAD_MIB="$pad" DEADLINE_S="$budget" \
    bash validation/run_dram_sweep.sh > /dev/null 2>&1
  grep -v '^$' "$WORK/pad$pad/run.log" | grep -E '^(ncu passes|METRICS_SET|done in|no SDPA)|SKIPPED' || true
  cases="$(find "$WORK/pad$pad" -maxdepth 1 -name "*_sdpa_cases.csv" | head -n1)"
  if [ -z "$cases" ]; then
    echo "pad $pad MiB: no cases CSV"; tail -n 30 "$WORK/pad$pad/run.log"; continue
  fi
  G="$(basename "$cases" _sdpa_cases.csv)"
  cp "$cases" "$OUT/${G}_sdpa_onepass_pad$pad.csv"
  # LAUNCHES=0: the cases alone (the device returns at most eight files a call).
  [ "${LAUNCHES:-1}" = 0 ] || cp "$WORK/pad$pad/${G}_sdpa.csv" "$OUT/${G}_sdpa_onepass_pad${pad}_launches.csv"
  [ -f "$OUT/${G}_sdpa_onepass_env.txt" ] || cp "$WORK/pad$pad/${G}_dram_env.txt" "$OUT/${G}_sdpa_onepass_env.txt"
  # One line per case and pass: DRAM MB read (what the validation compares), for the printed record.
  python3 - "$cases" "$pad" << 'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("pass") and r.get("dram_read_bytes"):
        print(f"pad {sys.argv[2]:>3} {r['backend']:<20} {r['pass']} {r['batch']}x{r['heads']}x{r['n']}x{r['d']} "
              f"causal={r['causal']}: DRAM read {float(r['dram_read_bytes']) / 1e6:9.1f} MB")
PY
done
rm -rf "$WORK"
echo "done in ${SECONDS}s"
ls -la "$OUT"
