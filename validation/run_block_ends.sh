#!/usr/bin/env bash
# When each block of PyTorch's memory-efficient backward and FlashAttention-2 forward ends, on a 128-SM green
# context with a spy on the SMs it leaves (block_times_probe.py, block_end_spy.cu), in one call on the device
# machine:
#   bash validation/run_block_ends.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_block_ends.csv (case, rep, block, x, y, z, end_ns after a stamp queued just before the
# launch), <gpu>_block_ends_launches.csv (per launch: valid, kernel span, the spy's SM, sweeps and clock, the
# context's SMs in the order blocks landed), _env.txt and _run.log. CASES, SMS and REPS pass through.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/blockends.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
PREFIX="${G}_block_ends${TAG:-}"
ENV="$OUT/${PREFIX}_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
nvcc -O2 -arch=sm_90 -shared -Xcompiler -fPIC -o "$WORK/probe.so" validation/block_end_spy.cu \
  validation/memeff_residency_read.cu -lcuda || exit 1
(cd validation && python3 block_times_probe.py "$WORK/probe.so" "$OUT/$PREFIX.csv" \
  "$OUT/${PREFIX}_launches.csv") 2>&1 | tee "$OUT/${PREFIX}_run.log" | cut -c1-200
python3 validation/summarize_block_ends.py gpu "$OUT/$PREFIX.csv" "$OUT/${PREFIX}_launches.csv"
