#!/usr/bin/env bash
# DRAM-byte sweep for attnsim's whole-chip L2 model, in one call on the device machine:
#   bash validation/run_dram_sweep.sh              (from the repository root; $OUT comes back)
#   SMOKE=1 bash validation/run_dram_sweep.sh      (2 small configurations + 1 small SDPA shape, ~1-2 min)
#
# A. the project's kernels (harness, kernels.cu) at sizes on both sides of L2 (H100 50 MB, H200 60 MB), each
#    configuration once (--reps 0) under ncu --cache-control all --clock-control base, every sched_* launch
#    profiled: the counters of run_on_device.sh plus L2 totals/hits and the launch geometry (grid, block,
#    shared memory, registers, occupancy limits, waves). Cheap configurations first.
# B. PyTorch's scaled_dot_product_attention backends (sdpa_measure.py) under the same ncu settings with
#    --profile-from-start off: one forward and one backward per (shape, causal, backend), every launch of them
#    profiled and assigned to its case by marker kernels.
#
# Metrics: the 7 of run_on_device.sh are required; the optional ones (summarize_dram.py's OPTIONAL_METRICS)
# are first tried together on a tiny launch and, if ncu rejects the list, one by one; rejected ones are
# dropped and listed in the env file. METRICS_SET=required keeps the 7 alone (fewer replay passes: 3 on an
# H200); METRICS_SET=dram keeps DRAM bytes, time and the GPC cycles (the SM clock) alone, which ncu
# collects in one run of each kernel (the env file says how many passes the set took).
# SKIP_BUILD=1 uses validation/build/harness as built before (run_sdpa_placements.sh builds once).
#
# $OUT gets (7 files, <gpu> = h100 / h200 / the GPU's name): <gpu>_dram_sweep.csv (one row per
# configuration), <gpu>_dram_sweep_launches.csv (one row per profiled launch), <gpu>_sdpa.csv (one row per
# profiled SDPA launch), <gpu>_sdpa_cases.csv (one row per SDPA case and pass), <gpu>_dram_env.txt,
# run.log, raw.tar.gz (ncu's raw CSVs, RESULT lines, SDPA manifest, metric probe logs, build report).
#
# Part A's configurations: A_CONFIGS="ARGS;ARGS;..." (harness arguments, ';'-separated) replaces the sweep
# (e.g. PARTS=A A_CONFIGS="--kernel tc --schedule flash2 --n 32768 --d 128 --heads 8 --block-q 128
# --block-k 64 --causal --keys-descending").
# Part B's cases: SDPA_SHAPES="B,H,N,D ..." and SDPA_BACKENDS="EFFICIENT_ATTENTION ..." replace the
# default shapes and backends (e.g. PARTS=B for a study of one kernel over heads or sequence lengths).
#
# Deadlines (seconds since start): part A starts no configuration after A_DEADLINE_S (default 300), part B no
# case after DEADLINE_S (default 470); each ncu call is capped so the script ends by about DEADLINE_S + 60.
# Skipped configurations and cases are listed in the log and (SDPA) in the cases CSV.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT="${OUT:-$PWD/validation/out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/attndram.XXXXXX)"
RAW="$WORK/raw"
mkdir -p "$RAW"
exec > >(tee -a "$OUT/run.log") 2>&1
SMOKE="${SMOKE:-0}"
DEADLINE_S="${DEADLINE_S:-470}"
A_DEADLINE_S="${A_DEADLINE_S:-300}"
PARTS="${PARTS:-AB}"
export PATH="$PATH:/usr/local/cuda/bin"
# shellcheck disable=SC2012
NCU="${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -n1)}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

echo "=== environment ($(date -u +%Y-%m-%dT%H:%M:%SZ)) smoke=$SMOKE parts=$PARTS deadlines A ${A_DEADLINE_S}s, all ${DEADLINE_S}s"
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
case "$GPU" in
  *H100*) G=h100 ;;
  *H200*) G=h200 ;;
  *) G="$(echo "$GPU" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '_')" ;;
esac
ENVF="$OUT/${G}_dram_env.txt"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
CUDA="$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
NCUV="$([ -n "$NCU" ] && "$NCU" --version | sed -n 's/^Version \([^ ]*\).*/\1/p')"
TORCHV="$("$PY" -c 'import torch; print(torch.__version__)' 2> /dev/null || echo none)"
DATE="$(date -u +%Y-%m-%d)"
{
  echo "# attnsim validation/run_dram_sweep.sh environment, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $GPU"; echo "driver: $DRIVER"; echo "cuda (nvcc): $CUDA"; echo "ncu: $NCUV ($NCU)"
  echo "torch: $TORCHV"; echo "date: $DATE"
  echo "gpu uuid: $(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n1)"
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,memory.total,power.limit --format=csv
  nvcc --version
  [ -n "$NCU" ] && "$NCU" --version
  "$PY" -c 'import torch, sys; p = torch.cuda.get_device_properties(0); print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); print("device", p.name, "SMs", p.multi_processor_count, "L2 bytes", getattr(p, "L2_cache_size", "?"), "memory", p.total_memory)' 2>&1
  uname -a
} > "$ENVF" 2>&1
cat "$ENVF"
META=(gpu="$GPU" driver="$DRIVER" cuda="$CUDA" date="$DATE" ncu="$NCUV" torch="$TORCHV")
# Part B's tensors lie elsewhere with PAD_MIB (sdpa_measure.py): how much a row moves with the placement.
[ -n "${PAD_MIB:-}" ] && META+=(pad_mib="$PAD_MIB")

echo "=== build"
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x validation/build/harness ]; then
  echo "SKIP_BUILD=1: validation/build/harness as built before"
elif ! bash validation/build.sh; then
  echo "BUILD FAILED"
  exit 1
fi
{
  echo "## ptxas -v"; cat validation/build/ptxas.txt
  echo "## PTX global/local memory instructions per kernel"; cat validation/build/ptx_summary.txt
} > "$RAW/build_report.txt"
H="${HARNESS:-validation/build/harness}"  # HARNESS: only for testing this script with a stand-in
if [ -z "$NCU" ]; then echo "no ncu found"; exit 1; fi

echo "=== metric probe ($((SECONDS)) s)"
mapfile -t REQ < <("$PY" -c 'import sys; sys.path.insert(0, "validation"); import summarize_dram as s; print("\n".join(s.REQUIRED_METRICS))')
mapfile -t OPT < <("$PY" -c 'import sys; sys.path.insert(0, "validation"); import summarize_dram as s; print("\n".join(s.OPTIONAL_METRICS))')
join() { local IFS=,; echo "$*"; }
ncu_import() {  # report -> raw CSV on stdout (demangled names where this ncu can print them)
  "$NCU" --import "$1" --csv --page raw --print-units base --print-kernel-base demangled 2> "$WORK/import.err" ||
    "$NCU" --import "$1" --csv --page raw --print-units base
}
"$NCU" --query-metrics > "$RAW/query_metrics.txt" 2>&1 || echo "ncu --query-metrics failed (see raw/query_metrics.txt)"
CLOCK=base
probe() {  # metric list -> 0 if ncu profiles the tiny launch with it and prints no error
  rm -f "$WORK/probe.ncu-rep"
  timeout 60 "$NCU" --metrics "$1" --cache-control all --clock-control "$CLOCK" -k regex:sched_ -f -o "$WORK/probe" \
    "$H" --schedule flash2 --n 128 --d 64 --heads 1 --block 64 --reps 0 > "$WORK/probe.log" 2>&1 &&
    ! grep -q '==ERROR==' "$WORK/probe.log" && [ -f "$WORK/probe.ncu-rep" ]
}
if ! probe "$(join "${REQ[@]}")"; then
  cp "$WORK/probe.log" "$RAW/probe_required_base.log"
  echo "required metrics failed with --clock-control base:"; tail -n 5 "$WORK/probe.log"
  CLOCK=none
  if ! probe "$(join "${REQ[@]}")"; then
    echo "required metrics failed with --clock-control none too:"; tail -n 20 "$WORK/probe.log"; exit 1
  fi
fi
KEEP=()
if [ "${METRICS_SET:-all}" = dram ]; then
  # DRAM bytes and time alone: what ncu collects in one run of each kernel (the 7 take 3 passes on an H200),
  # and the GPC cycles, the SM clock the kernels ran at (the model runs each row at it; without it, at the
  # config's base clock, which large attention kernels do not hold).
  REQ=(gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum gpc__cycles_elapsed.max)
  echo "METRICS_SET=dram: DRAM bytes read and written, the time and the GPC cycles, nothing else" | tee -a "$ENVF"
  OPT=()
elif [ "${METRICS_SET:-all}" = required ]; then
  echo "METRICS_SET=required: the optional counters are not tried" | tee -a "$ENVF"
  OPT=()
elif probe "$(join "${REQ[@]}" "${OPT[@]}")"; then
  KEEP=("${OPT[@]}")
else
  cp "$WORK/probe.log" "$RAW/probe_all.log"
  echo "full metric list rejected:"; grep '==ERROR==' "$WORK/probe.log" | head -n 5
  for m in "${OPT[@]}"; do
    if probe "$(join "${REQ[@]}" "$m")"; then KEEP+=("$m"); else echo "  dropped $m: $(grep -m1 '==ERROR==' "$WORK/probe.log")"; fi
  done
fi
METRICS="$(join "${REQ[@]}" "${KEEP[@]}")"
DROPPED="$(comm -23 <(printf '%s\n' "${OPT[@]}" | sort) <(printf '%s\n' "${KEEP[@]}" | sort) | tr '\n' ' ')"
{ echo "clock control: $CLOCK"; echo "cache control: all"; echo "metrics: $METRICS"; echo "metrics dropped (rejected by ncu): ${DROPPED:-none}"; } | tee -a "$ENVF"
META+=(clock_control="$CLOCK")
probe "$METRICS" || echo "the kept metrics failed on the tiny launch"
# How many times ncu runs each launch to collect them (1: every counter from one run of the kernel).
echo "ncu passes per launch: $(grep -m1 -oE '[0-9]+ pass(es)?' "$WORK/probe.log" || echo unknown)" | tee -a "$ENVF"
ncu_import "$WORK/probe.ncu-rep" > "$RAW/probe_raw.csv" 2>&1
cp "$WORK/probe.log" "$RAW/probe_last.log"

tag_of() {  # index and arguments -> a file-name-safe tag that sorts in sweep order
  local idx="$1"; shift
  local s="" n="" d="" h="" b="" c=0 g="" k=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --schedule) s="$2"; shift ;; --n) n="$2"; shift ;; --d) d="$2"; shift ;; --heads) h="$2"; shift ;;
      --block) b="$2"; shift ;; --causal) c=1 ;; --flash1-groups) g="_g$2"; shift ;;
      --block-q) b="$2$b"; shift ;; --block-k) b="${b}x$2"; shift ;; --kernel) k="${2}_"; shift ;;
      --keys-descending) g="${g}_desc" ;; --tc-min-blocks) g="${g}_mb$2"; shift ;;
    esac
    shift
  done
  printf '%02d_%s%s_n%s_d%s_h%s_b%s_c%s%s' "$idx" "$k" "$s" "$n" "$d" "$h" "$b" "$c" "$g"
}

sweep() {  # part A, cheapest first (ncu, base clocks: flash2 d=64 ~14 ms per 10^9 n^2*heads)
  if [ -n "${A_CONFIGS:-}" ]; then
    tr ';' '\n' <<< "$A_CONFIGS" | sed 's/^ *//; s/ *$//; /^$/d'
    return
  fi
  if [ "$SMOKE" = 1 ]; then
    echo "--schedule flash2 --n 1024 --d 64 --heads 8 --block 64"
    echo "--schedule naive-safe --n 1024 --d 64 --heads 8 --block 64"
    return
  fi
  local c f2="--schedule flash2 --block 64"
  for c in "" " --causal"; do echo "$f2 --n 1024 --d 64 --heads 8$c"; done
  for hn in "8 1024" "8 2048" "32 1024" "2 8192"; do
    set -- $hn; echo "--schedule naive-safe --n $2 --d 64 --heads $1 --block 64"
  done
  echo "--schedule flash1 --n 1024 --d 64 --heads 8 --block 64 --flash1-groups 1"
  for c in "" " --causal"; do echo "$f2 --n 4096 --d 64 --heads 8$c"; done
  for c in "" " --causal"; do echo "$f2 --n 4096 --d 128 --heads 8$c"; done
  for c in "" " --causal"; do echo "$f2 --n 4096 --d 64 --heads 32$c"; done
  echo "--schedule flash1 --n 4096 --d 64 --heads 8 --block 64 --flash1-groups 1"
  for hn in "4 16384" "8 16384" "32 8192" "2 32768" "1 65536"; do
    set -- $hn
    for c in "" " --causal"; do echo "$f2 --n $2 --d 64 --heads $1$c"; done
  done
  for c in "" " --causal"; do echo "$f2 --n 16384 --d 128 --heads 8$c"; done
  for c in "" " --causal"; do echo "$f2 --n 131072 --d 64 --heads 1$c"; done
}

a_done=0 a_skipped=0 a_failed=0
if [[ "$PARTS" == *A* ]]; then
  mapfile -t CONFIGS < <(sweep)
  echo "=== A: ${#CONFIGS[@]} configurations of the project's kernels ($SECONDS s)"
  idx=0
  for cfg in "${CONFIGS[@]}"; do
    # shellcheck disable=SC2086
    tag="$(tag_of "$idx" $cfg)"
    idx=$((idx + 1))
    if [ "$SECONDS" -gt "$A_DEADLINE_S" ]; then
      echo "SKIPPED (part A deadline ${A_DEADLINE_S}s passed at ${SECONDS}s): $cfg"
      a_skipped=$((a_skipped + 1))
      continue
    fi
    t0=$SECONDS
    limit=$((DEADLINE_S + 30 - SECONDS)); [ "$limit" -gt 150 ] && limit=150; [ "$limit" -lt 30 ] && limit=30
    # shellcheck disable=SC2086
    timeout "$limit" "$NCU" --metrics "$METRICS" --cache-control all --clock-control "$CLOCK" -k regex:sched_ \
      -f -o "$WORK/$tag" "$H" $cfg --reps 0 > "$WORK/$tag.stdout" 2>&1
    rc=$?
    grep '^RESULT' "$WORK/$tag.stdout" > "$RAW/result_$tag.txt"
    if [ ! -f "$WORK/$tag.ncu-rep" ] || [ ! -s "$RAW/result_$tag.txt" ]; then
      echo "ncu FAILED (rc $rc) for $cfg:"; tail -n 20 "$WORK/$tag.stdout"
      cp "$WORK/$tag.stdout" "$RAW/failed_$tag.log"
      rm -f "$RAW/result_$tag.txt"
      a_failed=$((a_failed + 1))
      continue
    fi
    ncu_import "$WORK/$tag.ncu-rep" > "$RAW/ncu_$tag.csv" || echo "ncu --import FAILED for $cfg"
    grep -m1 '^device ' "$WORK/$tag.stdout" > "$RAW/device_$tag.txt"
    a_done=$((a_done + 1))
    echo "$tag: $(($(wc -l < "$RAW/ncu_$tag.csv") - 2)) launches in $((SECONDS - t0)) s; $(grep -o ' ok=[01]' "$RAW/result_$tag.txt") $(grep -o 'max_rel_error=[^ ]*' "$RAW/result_$tag.txt")"
    rm -f "$WORK/$tag.ncu-rep"
  done
  echo "=== A summary ($SECONDS s)"
  "$PY" validation/summarize_dram.py --raw-dir "$RAW" --meta "${META[@]}" \
    --out "$OUT/${G}_dram_sweep.csv" --launches-out "$OUT/${G}_dram_sweep_launches.csv"
fi

b_status="not run"
if [[ "$PARTS" == *B* ]]; then
  echo "=== B: PyTorch SDPA backends ($SECONDS s)"
  if [ "$TORCHV" = none ]; then
    echo "no torch: part B skipped"; b_status="no torch"
  else
    budget=$((DEADLINE_S - SECONDS)); [ "$budget" -lt 20 ] && budget=20
    limit=$((budget + 60))
    smoke=(); [ "$SMOKE" = 1 ] && smoke=(--smoke)
    # shellcheck disable=SC2206
    [ -n "${SDPA_SHAPES:-}" ] && smoke+=(--shapes $SDPA_SHAPES)
    # shellcheck disable=SC2206
    [ -n "${SDPA_BACKENDS:-}" ] && smoke+=(--backends $SDPA_BACKENDS)
    timeout "$limit" "$NCU" --metrics "$METRICS" --cache-control all --clock-control "$CLOCK" --profile-from-start off \
      --nvtx -f -o "$WORK/sdpa" "$PY" validation/sdpa_measure.py run --manifest "$RAW/sdpa_manifest.jsonl" \
      --deadline-s "$budget" "${smoke[@]}" 2>&1 | grep -v '^==PROF==' | tee "$RAW/sdpa_run.log"
    rc=${PIPESTATUS[0]}
    b_status="ncu rc $rc"
    if [ -f "$WORK/sdpa.ncu-rep" ]; then
      ncu_import "$WORK/sdpa.ncu-rep" > "$RAW/ncu_sdpa.csv" || echo "ncu --import FAILED for the SDPA report"
      "$PY" validation/sdpa_measure.py summarize --manifest "$RAW/sdpa_manifest.jsonl" --ncu-csv "$RAW/ncu_sdpa.csv" \
        --out "$OUT/${G}_sdpa.csv" --summary-out "$OUT/${G}_sdpa_cases.csv" --meta "${META[@]}"
    else
      echo "no SDPA report (ncu rc $rc)"
    fi
  fi
fi

tar czf "$OUT/raw.tar.gz" -C "$WORK" raw
echo "done in ${SECONDS}s: A $a_done configurations profiled, $a_failed failed, $a_skipped skipped (deadline); B: $b_status; files in $OUT"
ls -la "$OUT"
rm -rf "$WORK"
