#!/usr/bin/env bash
# The GPU side of attnsim's cross-validation, in one call on the device machine:
#   bash validation/run_on_device.sh            (from the repository root; $OUT comes back)
#
# 1. builds validation/build/harness (build.sh) and records the GPU, driver, nvcc and ncu versions;
# 2. runs every configuration of `harness --list` for correctness + timing (CUDA events, median of 10
#    runs after 3 warm-ups, L2 flushed before each timed run);
# 3. runs every configuration once more (--reps 0: each counted kernel exactly once) under
#    ncu --cache-control all --clock-control base, collecting the counters below for EVERY sched_* launch
#    (flash1 included: all T_c launches); aux_* kernels (poison, flash1's initialiser) are filtered out by -k;
# 4. sums the counters per configuration (summarize_ncu.py) into $OUT/h100_measurements.csv.
#
# $OUT gets (6 files): run.log (everything printed), h100_measurements.csv, harness_runs.txt (the timing
# runs' RESULT lines), ncu_raw.tar.gz (per configuration: ncu's raw CSV and the profiled run's RESULT line),
# build_report.txt (ptxas resource usage, PTX/SASS memory-instruction summary), env.txt.
#
# Environment: FLASH1_GROUPS=G passes --flash1-groups G to flash1 (default 1, the simulator's ledger; set it
# empty for one block per visible query
# block, so K_j and V_j are read once per tile; G=1 reads them once per launch and head, as the simulator's
# ledger); REPS, WARMUP, DEADLINE_S as below.
#
# Runtime estimate on an H100 (FMA kernels, ~8-10 TFLOP/s f32): build ~40 s. Timing phase ~40 s: 13
# processes of ~1-2 s (CUDA start, input generation, a float64 reference of 64 rows/head: ~1 s at n=16384)
# plus GPU work ~14 runs x (naive n=4096 ~6 ms, flash2 n=16384 ~70 ms). ncu phase: 13 processes of ~5-10 s
# start-up plus 12 naive + 160 flash1 + 5 flash2 profiled launches at ~0.2-0.5 s each (a few replay passes,
# cache flush, clock pinning): ~2-3 min. Total ~4 min; a deadline below skips the remaining ncu
# configurations (and says so) if the run passes 7.5 minutes, and each ncu call is capped at 150 s.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/attnval.XXXXXX)"
RAW="$WORK/raw"
mkdir -p "$RAW"
exec > >(tee -a "$OUT/run.log") 2>&1
DEADLINE_S="${DEADLINE_S:-450}"
REPS="${REPS:-10}"
WARMUP="${WARMUP:-3}"
METRICS="l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"

export PATH="$PATH:/usr/local/cuda/bin"
# shellcheck disable=SC2012
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -n1)"

echo "=== environment ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv
  nvcc --version
  [ -n "$NCU" ] && "$NCU" --version
  uname -a
} 2>&1 | tee "$OUT/env.txt"
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
CUDA="$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
DATE="$(date -u +%Y-%m-%d)"
echo "gpu='$GPU' driver='$DRIVER' cuda='$CUDA' date='$DATE' ncu='$NCU'"

echo "=== build"
if ! bash validation/build.sh; then
  echo "BUILD FAILED"
  exit 1
fi
{
  echo "## ptxas -v"; cat validation/build/ptxas.txt
  echo "## PTX global/local memory instructions per kernel"; cat validation/build/ptx_summary.txt
  if [ -f validation/build/sass_summary.txt ]; then
    echo "## SASS global/local memory instructions per kernel"; cat validation/build/sass_summary.txt
  fi
} > "$OUT/build_report.txt"
H="${HARNESS:-validation/build/harness}"  # HARNESS: only for testing this script with a stand-in
mapfile -t CONFIGS < <("$H" --list)
FLASH1_GROUPS="${FLASH1_GROUPS-1}"  # 1: the simulator's flash1 (K_j, V_j once per launch); empty: one block per tile
if [ -n "${FLASH1_GROUPS:-}" ]; then  # e.g. FLASH1_GROUPS=1: K_j, V_j read once per launch and head
  for i in "${!CONFIGS[@]}"; do
    case "${CONFIGS[$i]}" in *"--schedule flash1 "*) CONFIGS[i]="${CONFIGS[$i]} --flash1-groups $FLASH1_GROUPS" ;; esac
  done
fi
echo "${#CONFIGS[@]} configurations"

tag_of() {  # index and arguments -> a file-name-safe tag that sorts in sweep order
  local idx="$1"; shift
  local s="" n="" d="" h="" b="" c=0 g=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --schedule) s="$2"; shift ;;
      --n) n="$2"; shift ;;
      --d) d="$2"; shift ;;
      --heads) h="$2"; shift ;;
      --block) b="$2"; shift ;;
      --causal) c=1 ;;
      --flash1-groups) g="_g$2"; shift ;;
    esac
    shift
  done
  printf '%02d_%s_n%s_d%s_h%s_b%s_c%s%s' "$idx" "$s" "$n" "$d" "$h" "$b" "$c" "$g"
}

echo "=== correctness + timing (reps $REPS, warm-up $WARMUP)"
: > "$OUT/harness_runs.txt"
fails=0
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  line="$("$H" $cfg --reps "$REPS" --warmup "$WARMUP")" || { echo "harness failed: $cfg"; fails=$((fails + 1)); continue; }
  echo "$line" | tee -a "$OUT/harness_runs.txt"
  case "$line" in *" ok=1 "*) ;; *) fails=$((fails + 1)) ;; esac
done

echo "=== Nsight Compute ($NCU)"
CLOCK=base
idx=0
skipped=0
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  tag="$(tag_of "$idx" $cfg)"
  idx=$((idx + 1))
  if [ "$SECONDS" -gt "$DEADLINE_S" ]; then
    echo "SKIPPED (deadline ${DEADLINE_S}s passed at ${SECONDS}s): $cfg"
    skipped=$((skipped + 1))
    continue
  fi
  if [ -z "$NCU" ]; then echo "no ncu found"; break; fi
  profile() {
    # shellcheck disable=SC2086
    timeout 150 "$NCU" --metrics "$METRICS" --cache-control all --clock-control "$CLOCK" -k regex:sched_ \
      -f -o "$WORK/$tag" "$H" $cfg --reps 0 > "$WORK/$tag.stdout" 2>&1
  }
  t0=$SECONDS
  if ! profile && [ "$CLOCK" = base ]; then
    echo "ncu failed with --clock-control base; retrying this and the rest with --clock-control none:"
    tail -n 5 "$WORK/$tag.stdout"
    CLOCK=none
    profile
  fi
  grep '^RESULT' "$WORK/$tag.stdout" > "$RAW/result_$tag.txt"
  if [ ! -f "$WORK/$tag.ncu-rep" ] || [ ! -s "$RAW/result_$tag.txt" ]; then
    echo "ncu FAILED for $cfg:"; tail -n 20 "$WORK/$tag.stdout"
    rm -f "$RAW/result_$tag.txt"
    continue
  fi
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page raw --print-units base > "$RAW/ncu_$tag.csv" 2> "$WORK/$tag.import.err" ||
    { echo "ncu --import FAILED for $cfg"; cat "$WORK/$tag.import.err"; }
  echo "$tag: $(($(wc -l < "$RAW/ncu_$tag.csv") - 2)) launches profiled in $((SECONDS - t0)) s (clock control $CLOCK)"
done
echo "clock control used: $CLOCK" >> "$OUT/env.txt"

echo "=== summary"
python3 validation/summarize_ncu.py --raw-dir "$RAW" --gpu "$GPU" --driver "$DRIVER" --cuda "$CUDA" --date "$DATE" \
  --out "$OUT/h100_measurements.csv"
tar czf "$OUT/ncu_raw.tar.gz" -C "$WORK" raw
echo "timing runs (CUDA events, boost clocks, median of $REPS):"
awk '{ for (i = 2; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] }
       printf "  %-10s n=%-5s causal=%s kernels=%-3s median %10.1f us  err %s ok=%s\n",
              v["schedule"], v["n"], v["causal"], v["kernels"], v["time_ns_median"] / 1e3, v["max_rel_error"], v["ok"] }' \
  "$OUT/harness_runs.txt"
echo "done in ${SECONDS}s: ${#CONFIGS[@]} configurations, $fails failed checks, $skipped skipped under ncu; files in $OUT"
rm -rf "$WORK"
