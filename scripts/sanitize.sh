#!/usr/bin/env bash
# The whole test suite under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, in the
# clang build that scripts/fuzz.sh shares (scripts/asan-build.sh). The tests run the instrumented attnsim
# as well, so the CLI's code is checked too. Every report is written to a file, not only to stderr, so a
# report from a child process whose exit status a test expects to be non-zero still fails this script.
#   scripts/sanitize.sh [ctest arguments...]     e.g. -R Cli to run some tests only
# Environment: ATTNSIM_ASAN_BUILD (default build-asan), JOBS (build and test jobs, default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ATTNSIM_ASAN_BUILD:-build-asan}"
bash scripts/deps.sh --sanitize --tests
# Reports name file:line only with a symbolizer; clang 16's is not on PATH under its plain name.
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-16}"
bash scripts/asan-build.sh

reports="$(mktemp -d)"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
set +e
# The sanitizers make the simulator 2-4 times slower, so the timeout is three times test.sh's.
(cd "$build" && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900 "$@")
rc=$?
set -e
if compgen -G "$reports/*" >/dev/null; then
  echo "sanitizer reports ($(ls "$reports" | wc -l) files):"
  for report in "$reports"/*; do
    echo "== $report"
    head -60 "$report"
  done
  exit 1
fi
rm -rf "$reports"
if [ "$rc" -ne 0 ]; then
  echo "sanitize.sh: tests failed without a sanitizer report (exit $rc)"
  exit "$rc"
fi
echo "sanitize.sh: all tests passed, no sanitizer report"
