#!/usr/bin/env bash
# Whether mma.sync holds an SM's schedulers against other warps' instructions (validation/issue_probe.cu),
# on the device machine:
#   bash validation/run_issue_probe.sh   (from the repository root; $OUT comes back)
# Not under ncu: clock64 cycles of every warp; rates per clock do not depend on the clock. $OUT gets
# <gpu>_issue_probe.csv, <gpu>_issue_probe_env.txt, the SASS of the probe's loops and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/issue_probe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_issue_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/issue_probe" validation/issue_probe.cu || { echo "BUILD FAILED"; exit 1; }
# Which instructions the probe's kernels hold (per template instance): HMMA and the neighbour's kind.
cuobjdump -sass "$WORK/issue_probe" | grep -oE "Function : [^ ]+|(HMMA|FFMA|MUFU|LOP3|F2FP|LDSM|LDS)[.A-Z0-9_]*" | uniq -c \
  > "$OUT/${G}_issue_probe_sass.txt" || true
"$WORK/issue_probe" > "$OUT/${G}_issue_probe.csv"
cat "$OUT/${G}_issue_probe.csv"
