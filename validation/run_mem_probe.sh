#!/usr/bin/env bash
# Memory probe of naive's S = Q K^T loop (validation/mem_probe.cu), in one call on the device machine:
#   bash validation/run_mem_probe.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_mem_probe.csv: cycles per key block (clock64, SM cycles) and kernel time, free-running
# clocks and under Nsight Compute's --clock-control base (where the validation data ran), with the SM clock,
# SM <-> L2 bytes and DRAM bytes of each launch under ncu; and <gpu>_mem_probe_env.txt (provenance).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/memprobe.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_mem_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/mem_probe" validation/mem_probe.cu || { echo "BUILD FAILED"; exit 1; }
cuobjdump -sass "$WORK/mem_probe" | grep -E "Function|LDGSTS|STG|DEPBAR|BAR" > "$OUT/${G}_mem_probe_sass.txt"
{
  echo "# clocks free-running"
  "$WORK/mem_probe"
} > "$OUT/${G}_mem_probe_free.csv" || echo "RUN FAILED"
"$NCU" --clock-control base --cache-control all \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --csv --page raw --print-units base --log-file "$WORK/ncu.log" -o "$WORK/probe" "$WORK/mem_probe" > "$OUT/${G}_mem_probe_base.csv" 2> "$WORK/err.log"
"$NCU" --import "$WORK/probe.ncu-rep" --csv --page raw --print-units base > "$OUT/${G}_mem_probe_ncu.csv" 2>> "$WORK/err.log"
head -c 2000 "$WORK/err.log"
cat "$OUT/${G}_mem_probe_free.csv" "$OUT/${G}_mem_probe_base.csv"
cut -c1-300 "$OUT/${G}_mem_probe_ncu.csv" | head -5
# Where naive's softmax kernel issues its loads relative to the shuffles that use them: the SASS of
# sched_naive_softmax_tc<64, 64, online> (how many 16-byte loads a thread has in flight).
nvcc -O3 -std=c++17 -arch=sm_90 -cubin -o "$WORK/fwd.cubin" validation/kernels_tc_fwd.cu &&
  cuobjdump -sass "$WORK/fwd.cubin" | awk '/Function :/{f=/sched_naive_softmax_tcILi64ELi64ELb1/} f' \
    > "$OUT/${G}_naive_softmax_sass.txt"
grep -cE "LDG|SHFL" "$OUT/${G}_naive_softmax_sass.txt"
