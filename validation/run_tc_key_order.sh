#!/usr/bin/env bash
# FlashAttention-2's causal forward at d = 128 reads more from DRAM on the H100 than the model predicts at
# many heads and less at few (validation/data/h100_flash_d128_heads_cases.csv). The same question on the
# project's tensor-core flash2 (128 x 64 tiles, whose SM<->L2 bytes the model predicts exactly), walking its
# key blocks up (its own order) or down from the diagonal (FlashAttention-2's, --keys-descending), in one
# call on the device machine:
#   bash validation/run_tc_key_order.sh   (from the repository root; $OUT comes back, ~5 minutes)
# $OUT gets <gpu>_dram_sweep.csv (+ _launches.csv, _dram_env.txt, run.log, raw.tar.gz) from
# run_dram_sweep.sh part A, and block_times.tar.gz: run_block_times.sh's per-block SM and %globaltimer
# CSVs, its RESULT lines and environment, for a few of the same configurations.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
tc="--kernel tc --schedule flash2 --d 128 --block-q 128 --block-k 64"
configs=""
for shape in "8192 16" "32768 2" "32768 4" "32768 8" "2048 256"; do
  set -- $shape
  for order in "" " --keys-descending"; do configs+="$tc --n $1 --heads $2 --causal$order;"; done
done
configs+="$tc --n 32768 --heads 8 --keys-descending"
OUT="$OUT" PARTS=A A_DEADLINE_S="${A_DEADLINE_S:-330}" A_CONFIGS="$configs" bash validation/run_dram_sweep.sh
BT="$(mktemp -d /tmp/keyorder.XXXXXX)"
OUT="$BT" HARNESS=validation/build/harness BLOCK_CONFIGS="n32768_h8_causal_up|--n 32768 --d 128 --heads 8 --block-q 128 --block-k 64 --causal;n32768_h8_causal_down|--n 32768 --d 128 --heads 8 --block-q 128 --block-k 64 --causal --keys-descending;n32768_h2_causal_down|--n 32768 --d 128 --heads 2 --block-q 128 --block-k 64 --causal --keys-descending;n8192_h16_causal_down|--n 8192 --d 128 --heads 16 --block-q 128 --block-k 64 --causal --keys-descending" \
  bash validation/run_block_times.sh
tar czf "$OUT/block_times.tar.gz" -C "$BT" .
ls -la "$OUT"
