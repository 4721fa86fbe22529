#!/usr/bin/env bash
# Where the tensor-core kernels' time goes, in one call on the device machine (issue "Kernel time"):
#   bash validation/run_profile_tc.sh      (from the repository root; $OUT comes back)
# 1. builds (build.sh) and the microbenchmarks, including the latency and few-warp mma.sync rates
#    (microbench.cu) -> <gpu>_microbench.csv;
# 2. the SASS of every tc kernel, opcode by opcode (cuobjdump) -> <gpu>_tc_sass_mix.txt;
# 3. every configuration of tc_configs_profile.txt under ncu --set full (instruction statistics per
#    pipe and opcode, warp states, scheduler statistics) at --clock-control base, L2 flushed:
#    <gpu>_tc_profile.tar.gz holding profile/<tag>_raw.csv (--page raw), <tag>_details.csv (--page details), <tag>_source.csv (SASS with
#    executed instructions and stall samples per instruction, where this ncu prints it).
# DEADLINE_S (default 420) skips the remaining configurations past it. CONFIGS (default
# validation/tc_configs_profile.txt) names another list, NCU_LAUNCHES more ncu options (which launches of a
# many-launch run: "--launch-skip 4 --launch-count 1"), SUFFIX the archive's name (<gpu>_tc_profile<SUFFIX>),
# and ONLY_PROFILE=1 skips step 1's microbenchmarks and step 2.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
WORK="$(mktemp -d /tmp/attnprof.XXXXXX)"
PROF="$WORK/profile"
mkdir -p "$PROF"
exec > >(tee -a "$OUT/profile_run.log") 2>&1
DEADLINE_S="${DEADLINE_S:-420}"
CONFIGS="${CONFIGS:-validation/tc_configs_profile.txt}"
NCU_LAUNCHES="${NCU_LAUNCHES:-}"
SUFFIX="${SUFFIX:-}"
ONLY_PROFILE="${ONLY_PROFILE:-0}"
# shellcheck source=validation/device_env.sh
source validation/device_env.sh
write_env "$OUT/${G}_profile_env.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv >> "$OUT/${G}_profile_env.txt"

echo "=== build"
bash validation/build.sh || { echo "BUILD FAILED"; exit 1; }
if [ "$ONLY_PROFILE" != 1 ]; then
nvcc -O3 -arch=sm_90 -o "$WORK/microbench" validation/microbench.cu || { echo "MICROBENCH BUILD FAILED"; exit 1; }

echo "=== microbenchmarks"
"$WORK/microbench" > "$OUT/${G}_microbench.csv" || echo "MICROBENCH RUN FAILED"
cat "$OUT/${G}_microbench.csv"

echo "=== SASS opcode mix of the tc kernels"
for bin in validation/build/harness validation/build/harness_bwd; do
  cuobjdump -sass "$bin" 2> "$WORK/cuobjdump.err"
done > "$WORK/sass.txt"
head -c 600 "$WORK/cuobjdump.err"
python3 - "$WORK/sass.txt" > "$OUT/${G}_tc_sass_mix.txt" << 'PY'
import collections, re, sys
fn, counts = None, collections.defaultdict(collections.Counter)
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1)
        continue
    m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
    if m and fn and ("tc" in fn or "bwd" in fn):
        counts[fn][m.group(2)] += 1
for fn, c in sorted(counts.items()):
    print(f"{fn} total {sum(c.values())}: " + " ".join(f"{k}={v}" for k, v in c.most_common()))
PY
wc -l "$OUT/${G}_tc_sass_mix.txt"; cut -c1-300 "$OUT/${G}_tc_sass_mix.txt"
fi

echo "=== Nsight Compute, --set full ($NCU)"
idx=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  bin=harness
  case "$line" in harness_bwd\ *) bin=harness_bwd; line="${line#harness_bwd }" ;; esac
  tag="$(printf '%02d' "$idx")_$(echo "$bin $line" | tr -s ' -' '__' | tr -cd 'A-Za-z0-9_')"
  idx=$((idx + 1))
  if [ "$SECONDS" -gt "$DEADLINE_S" ]; then echo "SKIPPED (deadline): $line"; continue; fi
  t0=$SECONDS
  # shellcheck disable=SC2086
  timeout 150 "$NCU" --set full --import-source yes --cache-control all --clock-control base -k regex:sched_ $NCU_LAUNCHES \
    -f -o "$WORK/$tag" "validation/build/$bin" $line --reps 0 > "$WORK/$tag.stdout" 2>&1 ||
    { echo "ncu FAILED: $line"; tail -n 15 "$WORK/$tag.stdout"; continue; }
  grep '^RESULT\|ok=' "$WORK/$tag.stdout" | head -n 3
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page raw --print-units base > "$PROF/${tag}_raw.csv" 2>&1
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page details --print-units base > "$PROF/${tag}_details.csv" 2>&1
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page source --print-source sass > "$PROF/${tag}_source.csv" 2>&1 ||
    echo "(no source page)"
  gzip -f "$PROF/${tag}_source.csv"
  echo "$tag: profiled in $((SECONDS - t0)) s"
done < "$CONFIGS"
# One archive: the device call returns a limited number of files.
tar czf "$OUT/${G}_tc_profile${SUFFIX}.tar.gz" -C "$WORK" profile
echo "done in ${SECONDS}s; files in $OUT"
rm -rf "$WORK"
