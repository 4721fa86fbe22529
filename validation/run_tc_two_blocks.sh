#!/usr/bin/env bash
# FlashAttention-2's causal forward at d = 128 runs two 128-row blocks per SM and reads 1.4-6.0 times Q, K, V
# from DRAM at N = 32,768 on the H100; the project's 128 x 64 tensor-core flash2 runs one and reads 1.1
# times. The same kernel compiled for two blocks per SM (--tc-min-blocks 2: Q_i read from shared memory at
# every key block instead of held in registers; the global traffic unchanged), keys up and down, in one
# call on the device machine:
#   bash validation/run_tc_two_blocks.sh   (from the repository root; $OUT comes back, ~4 minutes)
#   SET=heads bash validation/run_tc_two_blocks.sh   (keys down, causal, at 1 to 16 heads of 32,768 and 8
#                                                     to 32 heads of 16,384: how the re-reads grow; no block
#                                                     times)
#   SET=knee bash validation/run_tc_two_blocks.sh    (2, 4, 5 heads of 32,768 and 6 heads of 20,480 to 28,672:
#                                                     between the heads sweep's rows)
#   SET=repeats bash validation/run_tc_two_blocks.sh (4 and 8 x 32,768 and 16 x 16,384, keys down, causal,
#                                                     three times each: how steady the GPU's figure is)
# $OUT gets <gpu>_dram_sweep.csv (+ _launches.csv, _dram_env.txt, run.log, raw.tar.gz) from
# run_dram_sweep.sh part A, and block_times.tar.gz (run_block_times.sh) for two of the configurations.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
tc="--kernel tc --schedule flash2 --d 128 --block-q 128 --block-k 64 --tc-min-blocks 2"
configs=""
case "${SET:-}" in
  repeats)  # the same three configurations three times, each its own process
    for rep in 1 2 3; do
      for shape in "32768 4" "32768 8" "16384 16"; do
        set -- $shape
        configs+="$tc --n $1 --heads $2 --causal --keys-descending;"
      done
    done ;;
  knee)  # between the heads sweep's rows: where the H200's re-reads start (2, 4, 5 heads of 32,768; 6 of
          # 20,480 to 28,672)
    for heads in 2 4 5; do configs+="$tc --n 32768 --heads $heads --causal --keys-descending;"; done
    for n in 20480 24576 28672; do configs+="$tc --n $n --heads 6 --causal --keys-descending;"; done ;;
  heads)
    for heads in 1 3 6 12 16; do configs+="$tc --n 32768 --heads $heads --causal --keys-descending;"; done
    for heads in 8 16 32; do configs+="$tc --n 16384 --heads $heads --causal --keys-descending;"; done ;;
  *)
    configs="$tc --n 8192 --heads 16 --causal --keys-descending;"
    for heads in 2 4 8; do
      for order in "" " --keys-descending"; do configs+="$tc --n 32768 --heads $heads --causal$order;"; done
    done
    configs+="$tc --n 32768 --heads 8 --keys-descending" ;;
esac
OUT="$OUT" PARTS=A A_DEADLINE_S="${A_DEADLINE_S:-300}" A_CONFIGS="$configs" bash validation/run_dram_sweep.sh
[ -z "${SET:-}" ] || exit 0  # block times for the default set only
BT="$(mktemp -d /tmp/twoblocks.XXXXXX)"
common="--n 32768 --d 128 --block-q 128 --block-k 64 --tc-min-blocks 2 --causal --keys-descending"
OUT="$BT" HARNESS=validation/build/harness \
  BLOCK_CONFIGS="n32768_h8_causal_down_mb2|$common --heads 8;n32768_h2_causal_down_mb2|$common --heads 2" \
  bash validation/run_block_times.sh
tar czf "$OUT/block_times.tar.gz" -C "$BT" .
ls -la "$OUT"
