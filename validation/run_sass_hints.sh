#!/usr/bin/env bash
# The SASS of SDPA's three forwards (sass_hints_probe.py) from Nsight Compute's source page, and the lines of
# it that load, store or set a cache policy, in one call on the device machine:
#   bash validation/run_sass_hints.sh   (from the repository root; $OUT comes back)
# $OUT gets <gpu>_sass_hints.txt (summarize_sass_hints.py: each kernel's memory opcodes with their modifiers,
# and the cache policy of its TMA copies), <gpu>_sass_<kernel>.csv.gz (the source page), <gpu>_sass_hints_env.txt
# and _run.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/sasshints.XXXXXX)"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
ENV="$OUT/${G}_sass_hints_env.txt"
write_env "$ENV"
python3 -c 'import torch; print("torch:", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$ENV"
"$NCU" --profile-from-start off --section SourceCounters -k "regex:cudnn_generated|fmha_cutlassF|flash_fwd" \
  -o "$WORK/sass" python3 validation/sass_hints_probe.py > "$OUT/${G}_sass_hints_run.log" 2>&1
for k in cudnn_generated fmha_cutlassF flash_fwd; do
  "$NCU" -i "$WORK/sass.ncu-rep" -k "regex:$k" --page source --print-source sass --csv > "$WORK/$k.csv" \
    2>> "$OUT/${G}_sass_hints_run.log"
  echo "== $k: $(wc -l < "$WORK/$k.csv") lines" | tee -a "$OUT/${G}_sass_hints_run.log"
done
python3 validation/summarize_sass_hints.py "$WORK"/{cudnn_generated,fmha_cutlassF,flash_fwd}.csv > "$OUT/${G}_sass_hints.txt"
cat "$OUT/${G}_sass_hints.txt" | head -150
for k in cudnn_generated fmha_cutlassF flash_fwd; do gzip -c "$WORK/$k.csv" > "$OUT/${G}_sass_${k}.csv.gz"; done
ls -la "$OUT"
