#!/usr/bin/env bash
# The test suite under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, in the
# clang build that scripts/fuzz.sh shares (scripts/asan-build.sh). The tests run the instrumented attnsim
# as well, so the CLI's code is checked too. Every report is written to a file, not only to stderr, so a
# report from a child process whose exit status a test expects to be non-zero still fails this script.
#   scripts/sanitize.sh [--all] [ctest arguments...]     e.g. -R Cli to run some tests only
# By default 94 whole-chip tests that take minutes each under the sanitizers are left out (the list
# below, docs/reliability.md says why) and every test labelled long; every source file is still run by the
# cheaper tests. --all: every test.
# Environment: ATTNSIM_ASAN_BUILD (default build-asan), JOBS (build and test jobs, default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ATTNSIM_ASAN_BUILD:-build-asan}"
bash scripts/deps.sh --sanitize --tests
# Reports name file:line only with a symbolizer; clang 16's is not on PATH under its plain name.
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-16}"
bash scripts/asan-build.sh

# Whole-chip runs of 132 cores (H100/H200 sweeps, the L2 probe, PyTorch's rows, chip golden files): 0.5-87 s each in the
# Release build, 100-250 times that here. The chip, L2, NoC, probe and validation code they run is also
# run by the Chip.*, L2.*, StoreAddOnChip.*, Compare.*, Validation.* and golden tests that stay.
heavy='^(L2Probe\.(MatchesTheH100Measurements|StoresAndTwoBlocksPerSmMatchTheH100Measurements|ManyWavesOfReadersMatchTheH100Measurements)'
heavy+='|Chip\.(NaiveScoresOutgrowL2AndReachDram|DramReadsMatchTheH200Measurements|QuantumMovesCyclesLittleAndBytesNotAtAll'
heavy+='|PersistentGridMovesTheOrdinaryGridsBytes|TheSameRunTwiceGivesTheSameNumbersBitForBit)'
heavy+='|Validation\.(WholeChipDramBytesMatchTheH100Sweep|PyTorchFlashForwardOnTheWholeChip|CoResidentBlocksDriftApartAsOnTheH100'
heavy+='|PredictedBytesEqualMeasuredSmToL2Traffic|FirstComeFirstServedBlocksStayInStep'
heavy+='|TheLongestFlashRowReadsKAndVOncePerGroupOfResidentBlocks)'
heavy+='|ValidatePlacements\.TheCausalForwardsTwoModesBracketTheH200sPlacements'  # 1 x 8 x 32,768 twice: 19 s in Release
# 2-8 min each here (CI, 2 cores): tensor-core FlashAttention-2 on 132 SMs, the L2 probe's rewritten buffers,
# the memory-efficient backward on 64 SMs; TensorCoreFlash2BlocksStartAndEnd*, *OverHeadsOnTheH200 and
# L2Probe.RewrittenFootprintsCostTheirReadsOnce run the same code and stay.
heavy+='|Validation\.TensorCoreFlash2(KeyOrder|KeyOrderAtTwoBlocksPerSm|TwoBlocksPerSmReReadAsFlashAttention2|TwoBlocksPerSmOverHeads)'
heavy+='|L2Probe\.RewrittenBuffer(CrossesAsIfCopiesWereKept|CrossesLessThanIfTheHomeSideDroppedCopies|OnTheMeasuredPartitions.*)'
heavy+='|L2Probe\.HalfReadHalfRewrittenReadsItsFootprintWhileItFits'  # 13 whole-chip probe runs: 26 s in Release
heavy+='|L2Probe\.EveryFenceCrossesTheFabricOnItsOwn'  # 10 whole-chip probe runs (four of 2-132 SMs)
heavy+='|L2Probe\.OutOfStepReaders(HoldOverTheQuantum|RideOnTheQuantum).*'  # three 132-SM runs each: 12-23 s in Release
heavy+='|H200/MemEfficientSms\..*'
heavy+='|HtmlPage\.LargeRunShowsTheFirstTenThousandAndSaysSo|Sweep\.InterruptedSweepResumes'
heavy+='|Golden\.ChipRunIsDeterministic|Reference/Golden\.StatsEqualTheCommittedCopy/.*_chip_.*'
heavy+='|H100/SdpaRowOnTheWholeChip\..*'  # 48 measured PyTorch rows, whole chip, N up to 32,768
# SdpaTimes needs those rows (ctest fixture sdpa_times): selected, it would bring them all back.
heavy+='|SdpaTimes\..*'
heavy+='|TensorCoreTimes\..*)$'  # every committed tensor-core row (label long): minutes even in Release
exclude=(-E "$heavy" -LE "long|slow")  # labels long, slow: minutes in Release (ctest -L long, -L slow run them there)
if [ "${1:-}" = "--all" ]; then
  exclude=()
  shift
fi

reports="$(mktemp -d)"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
set +e
# With the sanitizers and the fuzzers' coverage the simulator runs 10-250 times slower than in Release.
(cd "$build" && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900 "${exclude[@]}" "$@")
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
