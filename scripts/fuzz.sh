#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (ASan + UBSan), each for SECONDS (default 60), one after another.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: assembler config validate_csv run (default: all)
# Seeds are rebuilt on every call from the labs, configs/, validation/data and traces from `attnsim gen`;
# what the fuzzer finds is kept in $build/fuzz-corpus/TARGET and used by the next call. Exit status 1 when
# a target crashed, hung (10 s for one input), ran out of memory or leaked; the input is saved as
# $build/fuzz-artifacts/TARGET-*, to be replayed with `$build/fuzz/fuzz_TARGET FILE`.
# Environment: ATTNSIM_ASAN_BUILD (default build-asan), JOBS (build jobs), FUZZ_RUNS (stop after this many
# executions per target instead of SECONDS; both limits apply).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(assembler config validate_csv run)
build="${ATTNSIM_ASAN_BUILD:-build-asan}"

bash scripts/deps.sh --sanitize
# Reports name file:line only with a symbolizer; clang 16's is not on PATH under its plain name.
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-16}"
bash scripts/asan-build.sh attnsim "${targets[@]/#/fuzz_}"

seeds="$build/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{assembler,config,validate_csv,run} "$build/fuzz-artifacts"
# Traces: the labs, the trace-format examples, and small generated ones of every generator.
cp labs/*/*.trace fuzz/seeds/*.trace "$seeds/assembler/"
attnsim="$build/sim/attnsim"
gen() { "$attnsim" gen "$@" -o "$seeds/assembler/gen-$(echo "$*" | tr -c 'a-z0-9' '_').trace"; }
for kind in softmax-safe softmax-online online-attention; do gen "$kind" --n 4; done
gen inner-product --n 2
gen outer-product --n 2 --slots 1
for kind in flash2-forward naive-safe naive-online two-pass flash1 flash2 standard-attention; do
  gen "$kind" --n 8 --d 4 --block 4 --dtype f32
done
gen flash2 --n 8 --d 4 --block-q 4 --block-k 2 --causal --double-buffer --heads 2
gen flash2 --n 8 --d 4 --block-q 4 --block-k 2 --causal --double-buffer --ping-pong --dtype f32
for kind in flash2-bwd flash2-bwd-no-d naive-bwd; do gen "$kind" --n 8 --d 4 --block 4 --causal; done
cp "$seeds"/assembler/* "$seeds/run/"
# Configs, alone and with overrides (the part after %% is one -p per line). A whole chip of 132 cores and
# 50 MB of L2 takes 0.25 s to build under ASan, so the chips come with 2 cores and 256 KiB of L2.
for config in configs/*.yaml; do
  if grep -q '^chip:' "$config"; then
    { cat "$config"; printf '%%%%\nchip.cores=2\nl2.capacity_bytes=262144\n'; } >"$seeds/config/$(basename "$config")"
  else
    cp "$config" "$seeds/config/"
  fi
done
for config in toy-3reg toy-tile h100-sm; do
  { cat "configs/$config.yaml"; printf '%%%%\nsequencer.issue=pipelined\nclock_ghz=0.5\n'; } \
    >"$seeds/config/$config-overrides.yaml"
done
# Measurement CSVs: the header and the first rows of each (long files only slow the fuzzer down).
for csv in validation/data/*.csv; do head -4 "$csv" >"$seeds/validate_csv/$(basename "$csv")"; done

declare -A dict=([assembler]=trace [run]=trace [config]=config [validate_csv]=csv)
status=0
summary=()
for target in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$target"
  log="$build/fuzz-$target.log"
  mkdir -p "$corpus"
  echo "== fuzz_$target: ${seconds}s"
  set +e
  # -rss_limit_mb also caps a single allocation: a huge malloc is reported, not granted.
  "$build/fuzz/fuzz_$target" "$corpus" "$seeds/$target" -dict="fuzz/${dict[$target]}.dict" \
    -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -artifact_prefix="$build/fuzz-artifacts/$target-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
  units=$(ls "$corpus" | wc -l)
  line="fuzz_$target: exit $rc, ${runs:-?} executions, ${speed:-?}/s, peak RSS ${rss:-?} MB, corpus $units"
  summary+=("$line")
  echo "$line"
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -E -A40 "ERROR:|==ERROR|runtime error|deadly signal|Test unit written" "$log" | head -80 || tail -40 "$log"
  fi
done
printf '%s\n' "== summary" "${summary[@]}"
exit "$status"
