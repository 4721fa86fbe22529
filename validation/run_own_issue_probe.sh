#!/usr/bin/env bash
# Whether a warp's own instructions between its mma.sync delay its tensor core (validation/own_issue_probe.cu),
# on the device machine:
#   bash validation/run_own_issue_probe.sh   (from the repository root; $OUT comes back)
# Not under ncu: clock64 cycles of every warp. $OUT gets <gpu>_own_issue_probe.csv, its _env.txt, the SASS
# instruction counts of every instance, the SASS of two loops (to see the interleaving) and run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/own_issue_probe.XXXXXX)"
exec > >(tee -a "$OUT/run.log") 2>&1
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_own_issue_probe_env.txt"
nvcc -O3 -arch=sm_90 -o "$WORK/own_issue_probe" validation/own_issue_probe.cu || { echo "BUILD FAILED"; exit 1; }
cuobjdump -sass "$WORK/own_issue_probe" > "$WORK/sass.txt"
grep -oE "Function : [^ ]+|(HMMA|FFMA|MUFU|LOP3|LDSM|LDS)[.A-Z0-9_]*" "$WORK/sass.txt" | uniq -c \
  > "$OUT/${G}_own_issue_probe_sass.txt" || true
# Two loops whole: FFMA with two a product, and the ldmatrix feed.
awk '/Function : .*probeILi1ELi2E/{p=1} /Function : .*probeILi5ELi1E/{p=1} p&&/Function/&&!/probeILi1ELi2E|probeILi5ELi1E/{p=0} p' \
  "$WORK/sass.txt" > "$OUT/${G}_own_issue_probe_loops.sass" || true
"$WORK/own_issue_probe" > "$OUT/${G}_own_issue_probe.csv"
cat "$OUT/${G}_own_issue_probe.csv"
