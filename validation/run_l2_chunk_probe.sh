#!/usr/bin/env bash
# L2 chunk probe (validation/l2_chunk_probe.cu), in one call on the device machine:
#   bash validation/run_l2_chunk_probe.sh   (from the repository root; $OUT comes back)
# CHUNKS (default 32) physical 2 MiB chunks; ORDERS (default 10) orders of them, the first MAPPED (default
# 16) mapped side by side, and for each the grow loop from FIRST (default 170) 128 KiB blocks to all of
# them: $OUT gets <gpu>_l2_chunks_<CHUNKS>_<MAPPED>_seed<SEED>.csv, <gpu>_l2_chunk_probe_env.txt and run.log.
#   HALVES=1 bash validation/run_l2_chunk_probe.sh   (two digits per block: its lines with address bits 11
#     and 14 equal, then unequal; the file name ends in _halves)
#   SET=pieces bash validation/run_l2_chunk_probe.sh   (the 32 chunks mapped in index order and the tests of
#     validation/l2_chunk_tests.txt: chosen halves read twice, which miss: <gpu>_l2_chunk_pieces.csv)
#   SET=sets bash validation/run_l2_chunk_probe.sh   (128 chunks mapped in index order; for each line of
#     TARGETS, default validation/l2_set_targets.txt, every line of the 256 MiB in its L2 set: eviction
#     sets, l2_set_kernels.cuh; <gpu>_l2_sets<SUFFIX>.csv and its .cold.u8; TARGETS=sweepN: the probe
#     picks targets until it has N sets; BUDGET_S: no new target after that many seconds, the sets found kept)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/l2chunk.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_l2_chunk_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/probe" validation/l2_chunk_probe.cu -lcuda || { echo "BUILD FAILED"; exit 1; }
start=$SECONDS
chunks=${CHUNKS:-32} mapped=${MAPPED:-16} seed=${SEED:-1}
if [ "${SET:-}" = sets ]; then
  timeout 560 "$WORK/probe" 128 128 sets "${TARGETS:-validation/l2_set_targets.txt}" \
    "$OUT/${G}_l2_sets${SUFFIX:-}.csv" || echo "FAILED sets"
  echo "done in $((SECONDS - start)) s"
  exit 0
fi
if [ "${SET:-}" = pieces ]; then
  timeout 300 "$WORK/probe" "$chunks" "$chunks" pieces validation/l2_chunk_tests.txt "$OUT/${G}_l2_chunk_pieces.csv" ||
    echo "FAILED pieces"
  echo "done in $((SECONDS - start)) s"
  exit 0
fi
SEED=$seed timeout 540 "$WORK/probe" "$chunks" "$mapped" "${ORDERS:-10}" "${FIRST:-170}" \
  "$OUT/${G}_l2_chunks_${chunks}_${mapped}_seed${seed}$([ "${HALVES:-0}" = 1 ] && echo _halves).csv" ||
  echo "FAILED chunks"
echo "done in $((SECONDS - start)) s"
