#!/usr/bin/env bash
# Builds validation/build/harness (plain nvcc; nothing else from the repository is needed).
#   bash validation/build.sh            (from anywhere; BUILD_DIR=dir builds there instead)
# Writes the compiler's resource report (registers, shared memory, stack, spills) to build/ptxas.txt and a
# summary of the SASS memory instructions to build/sass_summary.txt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
out="${BUILD_DIR:-$here/build}"  # BUILD_DIR: another output folder (default validation/build)
mkdir -p "$out"
flags=(-O3 -std=c++17 -arch=sm_90 -lineinfo -Xptxas -v)
"$NVCC" "${flags[@]}" -c "$here/kernels.cu" -o "$out/kernels.o" 2> "$out/ptxas.txt" || {
  cat "$out/ptxas.txt" >&2; exit 1; }
# The tensor-core flash2 (kernels_tc.cu); its report is appended to the same ptxas.txt.
"$NVCC" "${flags[@]}" -c "$here/kernels_tc.cu" -o "$out/kernels_tc.o" 2>> "$out/ptxas.txt" || {
  cat "$out/ptxas.txt" >&2; exit 1; }
# The other tensor-core forward schedules (kernels_tc_fwd.cu); report appended too.
"$NVCC" "${flags[@]}" -c "$here/kernels_tc_fwd.cu" -o "$out/kernels_tc_fwd.o" 2>> "$out/ptxas.txt" || {
  cat "$out/ptxas.txt" >&2; exit 1; }
"$NVCC" -O3 -std=c++17 -arch=sm_90 -lineinfo -c "$here/harness.cu" -o "$out/harness.o"
"$NVCC" -arch=sm_90 "$out/kernels.o" "$out/kernels_tc.o" "$out/kernels_tc_fwd.o" "$out/harness.o" -o "$out/harness"
# Anything but ptxas's info lines (a warning) is shown.
grep -v -e '^ptxas info' -e 'bytes stack frame' -e '^$' "$out/ptxas.txt" >&2 || true
if grep -E 'bytes stack frame' "$out/ptxas.txt" | grep -vqE '0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads'; then
  echo "build.sh: WARNING: a kernel uses local memory (stack or spills); see build/ptxas.txt" >&2
fi
# Which global memory instructions the kernels use: 16-byte .cg loads and stores expected, no local memory.
# PTX always (build/ptx_summary.txt); SASS too where cuobjdump exists (build/sass_summary.txt).
"$NVCC" -O3 -std=c++17 -arch=sm_90 -ptx "$here/kernels.cu" -o "$out/kernels.ptx"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -ptx "$here/kernels_tc.cu" -o "$out/kernels_tc.ptx"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -ptx "$here/kernels_tc_fwd.cu" -o "$out/kernels_tc_fwd.ptx"
awk '/^\.visible \.entry/ { fn = $3; sub(/\($/, "", fn) }
     /ld\.global|st\.global|ld\.local|st\.local|cp\.async\.c/ { c[fn " " $1]++ }
     END { for (k in c) print k, c[k] }' "$out/kernels.ptx" "$out/kernels_tc.ptx" "$out/kernels_tc_fwd.ptx" | sort > "$out/ptx_summary.txt"
CUOBJDUMP="$(command -v cuobjdump || echo "$(dirname "$NVCC")/cuobjdump")"
if [ -x "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" -sass "$out/kernels.o" "$out/kernels_tc.o" "$out/kernels_tc_fwd.o" | awk '
    /Function :/ { fn = $3 }
    { for (i = 1; i <= NF; ++i) if ($i ~ /^(LDG|STG|LDL|STL|LDGSTS)(\.|$)/) c[fn " " $i]++ }
    END { for (k in c) print k, c[k] }' | sort > "$out/sass_summary.txt"
fi
echo "built $out/harness"
# The tensor-core backward kernels (kernels_tc_bwd.cu) -> build/harness_bwd; report appended to ptxas.txt,
# global memory instructions of its kernels in build/ptx_summary_bwd.txt.
"$NVCC" "${flags[@]}" -c "$here/kernels_tc_bwd.cu" -o "$out/kernels_tc_bwd.o" 2> "$out/ptxas_bwd.txt" || {
  cat "$out/ptxas_bwd.txt" >&2; exit 1; }
cat "$out/ptxas_bwd.txt" >> "$out/ptxas.txt"
"$NVCC" -O3 -std=c++17 -arch=sm_90 -lineinfo -c "$here/harness_bwd.cu" -o "$out/harness_bwd.o"
"$NVCC" -arch=sm_90 "$out/kernels_tc_bwd.o" "$out/harness_bwd.o" -o "$out/harness_bwd"
grep -v -e '^ptxas info' -e 'bytes stack frame' -e '^$' "$out/ptxas_bwd.txt" >&2 || true
if grep -E 'bytes stack frame' "$out/ptxas_bwd.txt" | grep -vqE '0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads'; then
  echo "build.sh: WARNING: a backward kernel uses local memory (stack or spills); see build/ptxas_bwd.txt" >&2
fi
"$NVCC" -O3 -std=c++17 -arch=sm_90 -ptx "$here/kernels_tc_bwd.cu" -o "$out/kernels_tc_bwd.ptx"
awk '/^\.visible \.entry/ { fn = $3; sub(/\($/, "", fn) }
     /ld\.global|st\.global|red\.global|atom\.global|ld\.local|st\.local|cp\.async\.c/ { c[fn " " $1]++ }
     END { for (k in c) print k, c[k] }' "$out/kernels_tc_bwd.ptx" | sort > "$out/ptx_summary_bwd.txt"
echo "built $out/harness_bwd"
