#!/usr/bin/env bash
# Where every reader of K and V is, all along: the project's FFMA flash2 (harness.cu, kernels.cu) with each
# block's SM, start, end and the start of every EVERY-th key block (%globaltimer; TIMES=file TIMES_EVERY=k),
# in one call on the device machine:
#   bash validation/run_key_times.sh   (from the repository root; $OUT comes back)
# Each configuration runs once under ncu (--cache-control all --clock-control base, as run_dram_sweep.sh):
# the harness's checked launch, then the launch that records the times, each with its DRAM bytes and L2
# counters, so the times go with the bytes of the same launch.
# $OUT gets <gpu>_key_times_<tag>.csv.gz (block,sm,start_ns,end_ns,k0_ns,k<EVERY>_ns,...; empty where a
# causal block has fewer key blocks), <gpu>_key_times_ncu.csv (tag, launch: 0 checked, 1 timed; the
# counters), <gpu>_key_times_env.txt and <gpu>_key_times_run.log.
# KEY_CONFIGS="tag|ARGS;tag|ARGS" replaces the two rows of validation/data/h100_dram_sweep.csv at N = 131,072;
# EVERY (default 4) the key blocks between two times.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
ENVF="$OUT/${G}_key_times_env.txt"
write_env "$ENVF"
BUILD_DIR="$(mktemp -d /tmp/keytimes.XXXXXX)"
BUILD_DIR="$BUILD_DIR" bash validation/build.sh > /dev/null || { echo "BUILD FAILED"; exit 1; }
CONFIGS=(
  "n131072_d64_h1_b64_causal|--schedule flash2 --block 64 --n 131072 --d 64 --heads 1 --causal"
  "n131072_d64_h1_b64_nc|--schedule flash2 --block 64 --n 131072 --d 64 --heads 1"
)
if [ -n "${KEY_CONFIGS:-}" ]; then IFS=';' read -r -a CONFIGS <<< "$KEY_CONFIGS"; fi
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum
METRICS+=,lts__t_sectors_srcunit_ltcfabric.sum,gpu__time_duration.sum
echo "ncu --metrics $METRICS --cache-control all --clock-control base -k regex:sched_; TIMES_EVERY=${EVERY:-4}" >> "$ENVF"
NCU_CSV="$OUT/${G}_key_times_ncu.csv"
echo "tag,launch,${METRICS//.sum/}" > "$NCU_CSV"
for entry in "${CONFIGS[@]}"; do
  tag="${entry%%|*}"
  args="${entry#*|}"
  file="$OUT/${G}_key_times_${tag}.csv"
  echo "$tag: harness $args --reps 0" >> "$ENVF"
  # shellcheck disable=SC2086
  TIMES="$file" TIMES_EVERY="${EVERY:-4}" timeout 300 "$NCU" --metrics "$METRICS" --cache-control all \
    --clock-control base -k regex:sched_ --csv --page raw --print-units base "$BUILD_DIR/harness" $args \
    --reps 0 > "$BUILD_DIR/$tag.log" 2>&1
  tee -a "$OUT/${G}_key_times_run.log" < "$BUILD_DIR/$tag.log" | grep -E "^RESULT|FAIL|rror" | cut -c1-300
  python3 - "$BUILD_DIR/$tag.log" "$tag" "$METRICS" >> "$NCU_CSV" << 'PY'
import csv, io, sys
log, tag, metrics = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
rows = [l for l in open(log).read().splitlines() if l.startswith('"')]
launches = [r for r in csv.DictReader(io.StringIO("\n".join(rows))) if r["ID"].isdigit()]
for i, r in enumerate(launches):
    print(",".join([tag, str(i)] + [r[m].replace(",", "") for m in metrics]))
PY
  [ -s "$file" ] && gzip -f "$file"
done
cat "$NCU_CSV"
