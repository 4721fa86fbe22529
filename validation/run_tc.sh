#!/usr/bin/env bash
# The project's tensor-core kernels (kernels_tc*.cu; `harness --kernel tc`, `harness_bwd`) on the device
# machine, in one call:
#   bash validation/run_tc.sh SET...        (from the repository root; $OUT comes back)
# SET names a configuration file validation/tc_configs_SET.txt: one harness argument line per configuration
# ('#' comments; a line may start with `harness_bwd` to use that executable). Sets: flash2 (the first tc
# data, h100_tc_flash2.csv), flash2_grid (n 512..32K, 8 to 256 heads), fwd (the other forward schedules),
# bwd (the backward), subset (29 of all of them, for the other GPU kind).
#
# 1. builds (build.sh), records the environment (<gpu>_tc_env.txt) and the SASS instruction mix of the tc
#    kernels (HMMA, LDSM, LDGSTS, MUFU, local memory) into sass_tc.txt;
# 2. correctness + timing: every configuration with CUDA events (median of REPS after WARMUP, outputs
#    poisoned and L2 flushed before each timed run), float64 check of sampled rows;
# 3. every configuration once more (--reps 0) under ncu --cache-control all --clock-control base (retried
#    with none if base is refused), every sched_* launch profiled;
# 4. summarize_tc.py joins both into $OUT/<gpu>_tc_<SET>.csv per set (provenance columns first);
# 5. compute-sanitizer racecheck and memcheck on two small flash2 configurations (skipped past the deadline).
# DEADLINE_S (default 400) skips the remaining ncu configurations past it; each ncu call is capped at 90 s.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/attntc.XXXXXX)"
RAW="$WORK/raw"
mkdir -p "$RAW"
exec > >(tee -a "$OUT/run.log") 2>&1
DEADLINE_S="${DEADLINE_S:-400}"
SETS=("$@")
[ ${#SETS[@]} -gt 0 ] || { echo "usage: run_tc.sh SET... (validation/tc_configs_SET.txt)"; exit 2; }
REPS="${REPS:-20}"
WARMUP="${WARMUP:-5}"
METRICS="l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second"
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
ENVF="$OUT/${G}_tc_env.txt"
{
  echo "# attnsim validation/run_tc.sh environment, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $GPU"; echo "driver: $DRIVER"; echo "cuda (nvcc): $CUDA"; echo "ncu: $NCUV ($NCU)"; echo "date: $DATE"
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,memory.total,power.limit --format=csv
  nvcc --version
  [ -n "$NCU" ] && "$NCU" --version
  uname -a
} > "$ENVF" 2>&1
cat "$ENVF"

echo "=== build"
# REUSE_BUILD=1 keeps the binaries of an earlier call on the same machine (a second call within one lease).
if [ -n "${REUSE_BUILD:-}" ] && [ -x validation/build/harness ] && [ -x validation/build/harness_bwd ]; then
  echo "reusing validation/build from an earlier call"
elif ! bash validation/build.sh; then
  echo "BUILD FAILED"
  exit 1
fi
{
  echo "## ptxas -v (sched_* kernels)"
  grep -A3 -E "Compiling entry function '.*sched_" validation/build/ptxas.txt
  echo "## PTX global memory instructions"; grep -E "sched_" validation/build/ptx_summary.txt
  echo "## SASS global/local memory instructions"; grep -E "sched_" validation/build/sass_summary.txt 2> /dev/null
  echo "## SASS instruction mix of the tc kernels (per function: opcode count)"
  cuobjdump -sass validation/build/kernels_tc*.o | awk '
    /Function :/ { fn = $3 }
    /\/\*[0-9a-f]+\*\// { for (i = 1; i <= NF; ++i) if ($i ~ /^(HMMA|LDSM|LDGSTS|LDGDEPBAR|DEPBAR|MUFU|LDL|STL|LDG|STG|LDS|STS|BAR|SHFL)(\.|$)/) { split($i, op, "."); c[fn " " op[1]]++; break } }
    END { for (k in c) print k, c[k] }' | sort
} > "$OUT/sass_tc.txt" 2>&1
cat "$OUT/sass_tc.txt"

CONFIGS=()
BINS=()
SETOF=()
for set in "${SETS[@]}"; do
  file="validation/tc_configs_${set}.txt"
  [ -f "$file" ] || { echo "no configuration file $file"; exit 1; }
  while IFS= read -r line; do
    case "$line" in '' | '#'*) continue ;; esac
    # A line may start with the harness to use (harness or harness_bwd); harness by default.
    bin=harness
    case "$line" in harness_bwd\ *) bin=harness_bwd; line="${line#harness_bwd }" ;; harness\ *) line="${line#harness }" ;; esac
    CONFIGS+=("$line")
    BINS+=("$bin")
    SETOF+=("$set")
  done < "$file"
done
echo "${#CONFIGS[@]} configurations"

tag_of() {
  local idx="$1" kern="$2"; shift 2
  local s="" n="" d="" h="" bq="" bk="" c=0 pad= nod=
  while [ $# -gt 0 ]; do
    case "$1" in
      --kernel) kern="$2"; shift ;;
      --schedule) s="$2"; shift ;;
      --heads) h="$2"; shift ;;
      --no-d) nod="-no-d" ;;
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
  printf '%03d_%s%s_%s%s_n%s_d%s_h%s_%sx%s_c%s' "$idx" "$kern" "$pad" "$s" "$nod" "$n" "$d" "$h" "$bq" "$bk" "$c"
}

# One tag per configuration (file names of its raw results); harness_bwd runs only tensor-core kernels.
TAGS=()
for idx in "${!CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  TAGS+=("$(tag_of "$idx" "$([ "${BINS[$idx]}" = harness_bwd ] && echo tc || echo ffma)" ${CONFIGS[$idx]})")
done

echo "=== correctness + timing (CUDA events, reps $REPS, warm-up $WARMUP)"
fails=0
idx=0
for cfg in "${CONFIGS[@]}"; do
  tag="${TAGS[$idx]}"
  H="validation/build/${BINS[$idx]}"
  dir="$RAW/${SETOF[$idx]}"
  idx=$((idx + 1))
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  line="$(timeout 120 "$H" $cfg --reps "$REPS" --warmup "$WARMUP")" || { echo "harness failed: $cfg"; fails=$((fails + 1)); continue; }
  echo "$line" > "$dir/timing_$tag.txt"
  echo "$tag $(echo "$line" | grep -o 'time_ns_median=[^ ]*\|max_rel_error=[^ ]*\|ok=[^ ]*\|registers=[^ ]*' | tr '\n' ' ')"
  case "$line" in *" ok=1 "*) ;; *) fails=$((fails + 1)) ;; esac
done

echo "=== Nsight Compute ($NCU)"
CLOCK=base
idx=0
skipped=0
for cfg in "${CONFIGS[@]}"; do
  tag="${TAGS[$idx]}"
  H="validation/build/${BINS[$idx]}"
  dir="$RAW/${SETOF[$idx]}"
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
  grep '^RESULT' "$WORK/$tag.stdout" > "$dir/result_$tag.txt"
  if [ ! -f "$WORK/$tag.ncu-rep" ] || [ ! -s "$dir/result_$tag.txt" ]; then
    echo "ncu FAILED for $cfg:"; tail -n 20 "$WORK/$tag.stdout"
    rm -f "$dir/result_$tag.txt"
    continue
  fi
  "$NCU" --import "$WORK/$tag.ncu-rep" --csv --page raw --print-units base > "$dir/ncu_$tag.csv" 2> "$WORK/$tag.import.err" ||
    { echo "ncu --import FAILED for $cfg"; cat "$WORK/$tag.import.err"; }
  echo "$tag: profiled in $((SECONDS - t0)) s (clock control $CLOCK)"
done
echo "clock control used: $CLOCK" >> "$ENVF"

echo "=== summary"
for set in "${SETS[@]}"; do
  [ -d "$RAW/$set" ] || continue
  python3 validation/summarize_tc.py --raw-dir "$RAW/$set" --gpu "$GPU" --driver "$DRIVER" --cuda "$CUDA" \
    --ncu "$NCUV" --date "$DATE" --clock-control "$CLOCK" --out "$OUT/${G}_tc_${set}.csv"
done

echo "=== compute-sanitizer (racecheck, memcheck) on small tc configurations"
if [ -n "$SAN" ] && [ "$SECONDS" -lt $((DEADLINE_S + 60)) ]; then
  for cfg in "--n 512 --d 64 --block-q 64 --block-k 64 --causal" "--n 512 --d 128 --block-q 128 --block-k 128 --causal" \
             "--n 512 --d 64 --block-q 128 --block-k 64"; do
    for tool in racecheck memcheck; do
      # shellcheck disable=SC2086
      timeout 60 "$SAN" --tool "$tool" validation/build/harness --kernel tc --schedule flash2 --heads 2 $cfg --reps 0 > "$WORK/san.txt" 2>&1
      echo "$tool [$cfg]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$WORK/san.txt" | head -n 3 | tr '\n' ' ') $(grep -o 'ok=[01]' "$WORK/san.txt")"
    done
  done
  # The other forward schedules when their set ran: the ones that prefetch (two-pass, flash1) and naive-safe.
  if [[ " ${SETS[*]} " == *" fwd "* ]]; then
    for s in naive-safe two-pass "flash1 --flash1-groups 1"; do
      for tool in racecheck memcheck; do
        # shellcheck disable=SC2086
        timeout 60 "$SAN" --tool "$tool" validation/build/harness --kernel tc --schedule $s --heads 1 --n 256 --d 64 \
          --block-q 128 --block-k 64 --causal --reps 0 > "$WORK/san.txt" 2>&1
        echo "$tool [$s n 256 d 64 128x64 causal]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$WORK/san.txt" | head -n 3 | tr '\n' ' ') $(grep -o 'ok=[01]' "$WORK/san.txt")"
      done
    done
  fi
else
  echo "skipped (no compute-sanitizer or past the deadline)"
fi

tar czf "$OUT/tc_raw.tar.gz" -C "$WORK" raw
echo "done in ${SECONDS}s: ${#CONFIGS[@]} configurations, $fails failed checks, $skipped skipped under ncu; files in $OUT"
rm -rf "$WORK"
