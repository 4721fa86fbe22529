#!/usr/bin/env bash
# The memory instructions of PyTorch's attention kernels as compiled for sm_90, with their modifiers
# (L2 eviction hints such as .EF/.EL would show here; .LTC128B is the L2 fetch size, .STRONG.GPU and
# MEMBAR/CCTL the memory-model operations of a lock), read from libtorch_cuda.so's cubins with cuobjdump.
# Runs on the device machine (PyTorch's library and cuobjdump; no kernel is launched):
#   bash validation/sass_memory_ops.sh
# writes $OUT/sass_memory_ops.csv (kernel, functions, opcode with modifiers, count over those functions)
# and $OUT/sass_env.txt (versions).
set -uo pipefail
OUT=${OUT:-/tmp/sass_out}
mkdir -p "$OUT"
LIB=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
SO="$LIB/libtorch_cuda.so"
{
  echo "torch $(python3 -c 'import torch; print(torch.__version__)')"
  echo "cuobjdump $(cuobjdump --version | tail -1)"
  echo "library $SO $(stat -c %s "$SO") bytes"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  date -u
} > "$OUT/sass_env.txt"
WORK=$(mktemp -d)
cd "$WORK" || exit 1
timeout 400 cuobjdump -xelf all "$SO" > /dev/null 2>&1
KERNELS="fmha_cutlassB_f16_aligned_128x128_k128_seqaligned_sm80 fmha_cutlassB_f16_aligned_64x64_k64_seqaligned_sm80
  fmha_cutlassF_f16_aligned_64x128_rf_sm80 flash_fwd_kernel flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
OPS='(LDG|STG|LDGSTS|ATOMG|ATOM|REDG|RED|LDL|STL|CCTL|MEMBAR|UTMALDG|UBLKCP)[A-Z0-9._]*'
echo "kernel,functions,opcode,count" > "$OUT/sass_memory_ops.csv"
for k in $KERNELS; do
  for f in $(grep -l "$k" ./*.sm_90.cubin); do cuobjdump -sass "$f"; done |
    awk -v k="$k" '/Function :/ { keep = index($3, k) > 0; if (keep) ++functions } keep { print }
                   END { print "FUNCTIONS", functions + 0 }' > sass.txt
  functions=$(awk '/^FUNCTIONS/ {print $2}' sass.txt)
  grep -E '^\s*/\*[0-9a-f]{4,}\*/' sass.txt | sed 's#/\*[^*]*\*/##g' | grep -oE "$OPS" | sort | uniq -c | sort -rn |
    awk -v k="$k" -v n="$functions" '{print k "," n "," $2 "," $1}' >> "$OUT/sass_memory_ops.csv"
done
rm -rf "$WORK"
column -s, -t < "$OUT/sass_memory_ops.csv" | head -80
