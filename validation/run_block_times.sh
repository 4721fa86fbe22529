#!/usr/bin/env bash
# How co-resident thread blocks of the tensor-core flash2 share an SM over time, in one call on the device
# machine:
#   bash validation/run_block_times.sh   (from the repository root; $OUT comes back)
# For each configuration below, the harness runs the kernel as in run_tc.sh (timed, free-running clocks, L2
# flushed before each timed run), then once more with TIMES set: every block's SM and %globaltimer at its
# start, at a quarter, half and three quarters of its key blocks, and at its end
# ($OUT/<gpu>_tc_block_times_<tag>.csv: block,sm,start_ns,q1_ns,q2_ns,q3_ns,end_ns, ns from the earliest
# start). $OUT/<gpu>_tc_block_times_runs.txt has the RESULT lines, $OUT/<gpu>_tc_block_times_env.txt the
# provenance. About a minute of device time.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_tc_block_times_env.txt"
HARNESS="${HARNESS:-}"  # a harness already built (validation/build.sh), else one is built here
if [ -z "$HARNESS" ]; then
  BUILD_DIR="$(mktemp -d /tmp/blocktimes.XXXXXX)"
  BUILD_DIR="$BUILD_DIR" bash validation/build.sh > /dev/null || { echo "BUILD FAILED"; exit 1; }
  HARNESS="$BUILD_DIR/harness"
fi
# tag: blocks of (n, d, heads, B_r x B_c, causal); 4096 x 8 heads at 64 x 64 is one wave of four blocks per
# SM (profile 00), at 128 x 64 one of two (profile 01); 16,384 runs four waves.
CONFIGS=(
  "n4096_d64_h8_64x64_nc|--n 4096 --d 64 --heads 8 --block-q 64 --block-k 64"
  "n4096_d64_h8_128x64_nc|--n 4096 --d 64 --heads 8 --block-q 128 --block-k 64"
  "n4096_d64_h8_64x64_causal|--n 4096 --d 64 --heads 8 --block-q 64 --block-k 64 --causal"
  "n16384_d64_h8_64x64_nc|--n 16384 --d 64 --heads 8 --block-q 64 --block-k 64"
  "n4096_d128_h8_128x64_nc|--n 4096 --d 128 --heads 8 --block-q 128 --block-k 64"
  "n2048_d64_h8_64x64_nc|--n 2048 --d 64 --heads 8 --block-q 64 --block-k 64"
)
# BLOCK_CONFIGS="tag|ARGS;tag|ARGS" replaces the list above.
if [ -n "${BLOCK_CONFIGS:-}" ]; then IFS=';' read -r -a CONFIGS <<< "$BLOCK_CONFIGS"; fi
for entry in "${CONFIGS[@]}"; do
  tag="${entry%%|*}"
  args="${entry#*|}"
  # shellcheck disable=SC2086
  TIMES="$OUT/${G}_tc_block_times_${tag}.csv" timeout 120 "$HARNESS" --kernel tc --schedule flash2 \
    $args --reps 5 --warmup 2 | sed "s/^RESULT /RESULT tag=$tag /" | tee -a "$OUT/${G}_tc_block_times_runs.txt"
done
