#!/usr/bin/env bash
# The tensor-core flash2 (kernels_tc.cu, `harness --kernel tc`) on the device machine, in one call:
#   bash validation/run_tc_flash2.sh        (from the repository root; $OUT comes back)
#
# 1. builds (build.sh), records the environment (<gpu>_tc_flash2_env.txt) and the SASS instruction mix of
#    the tc kernels (HMMA, LDSM, LDGSTS, MUFU, local memory) into sass_tc.txt;
# 2. correctness + timing: every configuration below with CUDA events (median of REPS after WARMUP, O
#    poisoned and L2 flushed before each timed run), float64 check of 64 rows per head;
# 3. every configuration once more (--reps 0) under ncu --cache-control all --clock-control base (retried
#    with none if base is refused), every sched_* launch profiled;
# 4. summarize_tc.py joins both into $OUT/<gpu>_tc_flash2.csv (provenance columns first);
# 5. compute-sanitizer racecheck and memcheck on two small tc configurations (skipped past the deadline).
#
# Configurations: tc flash2 at B_r x B_c in {64x64, 128x64, 128x128}, d in {64, 128}, causal 0/1, 8 heads,
# n = 4096 then n = 1024; at n = 4096 also tc 64x64 non-causal with the padded shared-memory layout
# (--tc-padded, d 64 and 128) and the FFMA flash2 (sched_flash2_fwd, 64x64), d 64 and 128, causal 0/1.
# Estimate on an H100: build ~30 s, timing ~30 processes x ~1.5 s, ncu ~30 x ~4 s: ~3.5 min. DEADLINE_S
# (default 400) skips the remaining ncu configurations past it; each ncu call is capped at 90 s.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/attntc.XXXXXX)"
RAW="$WORK/raw"
mkdir -p "$RAW"
exec > >(tee -a "$OUT/run.log") 2>&1
DEADLINE_S="${DEADLINE_S:-400}"
REPS="${REPS:-20}"
WARMUP="${WARMUP:-5}"
METRICS="l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__registers_per_thread"
export PATH="$PATH:/usr/local/cuda/bin"
# shellcheck disable=SC2012
NCU="${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -n1)}"
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null | head -n1)"

GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
case "$GPU" in *H100*) G=h100 ;; *H200*) G=h200 ;; *) G=gpu ;; esac
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
CUDA="$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
NCUV="$([ -n "$NCU" ] && "$NCU" --version | sed -n 's/^Version \([^ ]*\).*/\1/p')"
DATE="$(date -u +%Y-%m-%d)"
ENVF="$OUT/${G}_tc_flash2_env.txt"
{
  echo "# attnsim validation/run_tc_flash2.sh environment, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $GPU"; echo "driver: $DRIVER"; echo "cuda (nvcc): $CUDA"; echo "ncu: $NCUV ($NCU)"; echo "date: $DATE"
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,memory.total,power.limit --format=csv
  nvcc --version
  [ -n "$NCU" ] && "$NCU" --version
  uname -a
} > "$ENVF" 2>&1
cat "$ENVF"

echo "=== build"
if ! bash validation/build.sh; then
  echo "BUILD FAILED"
  exit 1
fi
H=validation/build/harness
{
  echo "## ptxas -v (sched_flash2_tc / sched_flash2_fwd)"
  grep -A3 -E "Compiling entry function '.*sched_flash2_(tc|fwd)" validation/build/ptxas.txt
  echo "## PTX global memory instructions"; grep -E "flash2_(tc|fwd)" validation/build/ptx_summary.txt
  echo "## SASS global/local memory instructions"; grep -E "flash2_(tc|fwd)" validation/build/sass_summary.txt 2> /dev/null
  echo "## SASS instruction mix of the tc kernels (per function: opcode count)"
  cuobjdump -sass validation/build/kernels_tc.o | awk '
    /Function :/ { fn = $3 }
    /\/\*[0-9a-f]+\*\// { for (i = 1; i <= NF; ++i) if ($i ~ /^(HMMA|LDSM|LDGSTS|LDGDEPBAR|DEPBAR|MUFU|LDL|STL|LDG|STG|LDS|STS|BAR|SHFL)(\.|$)/) { split($i, op, "."); c[fn " " op[1]]++; break } }
    END { for (k in c) print k, c[k] }' | sort
} > "$OUT/sass_tc.txt" 2>&1
cat "$OUT/sass_tc.txt"

CONFIGS=()
for n in 4096 1024; do
  for tile in "64 64" "128 64" "128 128"; do
    set -- $tile
    for d in 64 128; do
      for c in 0 1; do
        CONFIGS+=("--kernel tc --schedule flash2 --n $n --d $d --heads 8 --block-q $1 --block-k $2$([ $c = 1 ] && echo ' --causal')")
      done
    done
  done
  if [ "$n" = 4096 ]; then
    for d in 64 128; do  # the padded shared-memory layout (1.5x reads), for the comparison in README.md
      CONFIGS+=("--kernel tc --tc-padded --schedule flash2 --n $n --d $d --heads 8 --block-q 64 --block-k 64")
    done
    for d in 64 128; do
      for c in 0 1; do
        CONFIGS+=("--kernel ffma --schedule flash2 --n $n --d $d --heads 8 --block 64$([ $c = 1 ] && echo ' --causal')")
      done
    done
  fi
done
echo "${#CONFIGS[@]} configurations"

tag_of() {
  local idx="$1"; shift
  local kern="ffma" n="" d="" bq="" bk="" c=0 pad=
  while [ $# -gt 0 ]; do
    case "$1" in
      --kernel) kern="$2"; shift ;;
      --n) n="$2"; shift ;;
      --d) d="$2"; shift ;;
      --block) bq="$2"; bk="$2"; shift ;;
      --block-q) bq="$2"; shift ;;
      --block-k) bk="$2"; shift ;;
      --causal) c=1 ;;
      --tc-padded) pad="_padded" ;;
    esac
    shift
  done
  printf '%02d_%s%s_n%s_d%s_%sx%s_c%s' "$idx" "$kern" "$pad" "$n" "$d" "$bq" "$bk" "$c"
}

echo "=== correctness + timing (CUDA events, reps $REPS, warm-up $WARMUP)"
fails=0
idx=0
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  tag="$(tag_of "$idx" $cfg)"
  idx=$((idx + 1))
  # shellcheck disable=SC2086
  line="$(timeout 60 "$H" $cfg --reps "$REPS" --warmup "$WARMUP")" || { echo "harness failed: $cfg"; fails=$((fails + 1)); continue; }
  echo "$line" > "$RAW/timing_$tag.txt"
  echo "$tag $(echo "$line" | grep -o 'time_ns_median=[^ ]*\|max_rel_error=[^ ]*\|ok=[^ ]*\|registers=[^ ]*' | tr '\n' ' ')"
  case "$line" in *" ok=1 "*) ;; *) fails=$((fails + 1)) ;; esac
done

echo "=== Nsight Compute ($NCU)"
CLOCK=base
idx=0
skipped=0
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  tag="$(tag_of "$idx" $cfg)"
  idx=$((idx + 1))
  if [ "$SECONDS" -gt "$DEADLINE_S" ]; then
    echo "SKIPPED (deadline ${DEADLINE_S}s passed at ${SECONDS}s): $cfg"
    skipped=$((skipped + 1))
    continue
  fi
  if [ -z "$NCU" ]; then echo "no ncu found"; break; fi
  profile() {
    # shellcheck disable=SC2086
    timeout 90 "$NCU" --metrics "$METRICS" --cache-control all --clock-control "$CLOCK" -k regex:sched_ \
      -f -o "$WORK/$tag" "$H" $cfg --reps 0 > "$WORK/$tag.stdout" 2>&1
  }
  t0=$SECONDS
  if ! profile && [ "$CLOCK" = base ]; then
    echo "ncu failed with --clock-control base; retrying this and the rest with --clock-control none:"
    tail -n 5 "$WORK/$tag.stdout"
    CLOCK=none
    profile
  fi
  grep '^RESULT' "$WORK/$tag.stdout" > "$RAW/result_$tag.txt"
  if [ ! -f "$WORK/$tag.ncu-rep" ] || [ ! -s "$RAW/result_$tag.txt" ]; then
    echo "ncu FAILED for $cfg:"; tail -n 20 "$WORK/$tag.stdout"
    rm -f "$RAW/result_$tag.txt"
    continue
  fi
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page raw --print-units base > "$RAW/ncu_$tag.csv" 2> "$WORK/$tag.import.err" ||
    { echo "ncu --import FAILED for $cfg"; cat "$WORK/$tag.import.err"; }
  echo "$tag: profiled in $((SECONDS - t0)) s (clock control $CLOCK)"
done
echo "clock control used: $CLOCK" >> "$ENVF"

echo "=== summary"
python3 validation/summarize_tc.py --raw-dir "$RAW" --gpu "$GPU" --driver "$DRIVER" --cuda "$CUDA" --ncu "$NCUV" \
  --date "$DATE" --clock-control "$CLOCK" --out "$OUT/${G}_tc_flash2.csv"

echo "=== compute-sanitizer (racecheck, memcheck) on small tc configurations"
if [ -n "$SAN" ] && [ "$SECONDS" -lt $((DEADLINE_S + 60)) ]; then
  for cfg in "--n 512 --d 64 --block-q 64 --block-k 64 --causal" "--n 512 --d 128 --block-q 128 --block-k 128 --causal" \
             "--n 512 --d 64 --block-q 128 --block-k 64"; do
    for tool in racecheck memcheck; do
      # shellcheck disable=SC2086
      timeout 60 "$SAN" --tool "$tool" "$H" --kernel tc --schedule flash2 --heads 2 $cfg --reps 0 > "$WORK/san.txt" 2>&1
      echo "$tool [$cfg]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$WORK/san.txt" | head -n 3 | tr '\n' ' ') $(grep -o 'ok=[01]' "$WORK/san.txt")"
    done
  done
else
  echo "skipped (no compute-sanitizer or past the deadline)"
fi

tar czf "$OUT/tc_raw.tar.gz" -C "$WORK" raw
echo "done in ${SECONDS}s: ${#CONFIGS[@]} configurations, $fails failed checks, $skipped skipped under ncu; files in $OUT"
rm -rf "$WORK"
