#!/usr/bin/env bash
# Does the L2's set-aside for persisting accesses take capacity from ordinary loads? The driver sets one
# aside by default (Nsight Compute's "L2 Persisting Size": 3/16 of the L2, 9.4 MiB on the H100 and 11.25 MiB
# on the H200), and the GPU's L2 behaves in several kernels as if it kept about 10 MB less than the model's
# (docs/chip.md). The CUDA guide says ordinary accesses may use the set-aside part while no persisting
# access does. Measured here on the two-blocks tensor-core flash2 (run_tc_two_blocks.sh's SET=heads shapes
# at 3 and 6 heads of 32,768, where the H200 reads 1.36 and 2.22 times Q, K, V), each launch under ncu
# (--cache-control all --clock-control base), with the set-aside at the driver's default, at 0 and at its
# maximum (harness.cu's L2_PERSISTING_BYTES), default and 0 twice each. One call on the device machine:
#   bash validation/run_l2_setaside.sh   (from the repository root; $OUT comes back, about 3 minutes)
# -> $OUT/<gpu>_l2_setaside.csv (heads,run,setaside_bytes,dram_read_bytes,dram_write_bytes,
#    lookup_miss_sectors,time_ns) and <gpu>_l2_setaside_env.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_l2_setaside_env.txt"
BUILD_DIR="$(mktemp -d /tmp/setaside.XXXXXX)"
BUILD_DIR="$BUILD_DIR" bash validation/build.sh > /dev/null 2>&1 || { echo "BUILD FAILED"; exit 1; }
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,gpu__time_duration.sum
CSV="$OUT/${G}_l2_setaside.csv"
echo "heads,run,setaside_bytes,dram_read_bytes,dram_write_bytes,lookup_miss_sectors,time_ns" > "$CSV"
metric() { grep -h "\"$1\"" "$2" | awk -F'","' '{print $NF}' | tr -d '",'; }
tc="--kernel tc --schedule flash2 --d 128 --block-q 128 --block-k 64 --tc-min-blocks 2 --causal --keys-descending"
for heads in 6 3; do
  for setting in default:1 0:1 max:1 default:2 0:2; do
    aside="${setting%%:*}" run="${setting#*:}"
    envv=()
    [ "$aside" = default ] || envv=(L2_PERSISTING_BYTES="$aside")
    [ "$aside" = max ] && envv=(L2_PERSISTING_BYTES=max)
    log="$BUILD_DIR/h${heads}_${aside}_${run}"
    # shellcheck disable=SC2086
    env "${envv[@]}" timeout 120 "$NCU" --metrics $M --cache-control all --clock-control base -k regex:sched_ \
      --csv --print-units base "$BUILD_DIR/harness" $tc --n 32768 --heads "$heads" --reps 0 > "$log.csv" 2> "$log.err"
    bytes="$(sed -n 's/.*persisting set-aside \([0-9]*\) bytes.*/\1/p' "$log.err" | head -n1)"
    echo "$heads,$run,$bytes,$(metric dram__bytes_read.sum "$log.csv"),$(metric dram__bytes_write.sum "$log.csv"),$(metric lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum "$log.csv"),$(metric gpu__time_duration.sum "$log.csv")" >> "$CSV"
  done
done
cat "$CSV"
