#!/usr/bin/env bash
# wgmma throughput per SM (validation/wgmma_bench.cu), on the device machine:
#   bash validation/run_wgmma_bench.sh   (from the repository root; $OUT comes back)
# Not under ncu: clock64 cycles of every SM; the clock is whatever the GPU runs (FLOP per clock does not
# depend on it). $OUT gets <gpu>_wgmma.csv, <gpu>_wgmma_env.txt and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/wgmma.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_wgmma_env.txt"
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o "$WORK/wgmma_bench" validation/wgmma_bench.cu ||
  { echo "BUILD FAILED"; exit 1; }
"$WORK/wgmma_bench" > "$OUT/${G}_wgmma.csv"
cat "$OUT/${G}_wgmma.csv"
