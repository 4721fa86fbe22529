#!/usr/bin/env bash
# Configures and builds the sanitizer build (clang 16, ASan + UBSan, libFuzzer coverage) that
# scripts/sanitize.sh and scripts/fuzz.sh share: one build serves both the test suite and the fuzz targets,
# so CI compiles the project once more, not twice. Usage: scripts/asan-build.sh [cmake --build targets...]
# Environment: ATTNSIM_ASAN_BUILD (build folder, default build-asan), JOBS (default: all cores),
# ATTNSIM_WERROR (ON: -Werror; default ON when CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ATTNSIM_ASAN_BUILD:-build-asan}"
# -fno-sanitize-recover: every UBSan report aborts, so a report cannot pass unnoticed as a warning.
# fuzzer-no-link: coverage instrumentation only; the fuzz targets link libFuzzer, the tests do not.
# use-after-return=never: Debian's SystemC 2.3.4 drops ASan's fake stacks at every coroutine switch, and a
# frame on a dropped fake stack crashes (sanitize/systemc_main_stack.cpp has the rest of that story).
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all -fno-omit-frame-pointer"
flags+=" -fsanitize-address-use-after-return=never"
# CI (CI=true, or ATTNSIM_WERROR=ON from .ci/run) builds with -Werror, as scripts/test.sh does with GCC.
werror="${ATTNSIM_WERROR:-$([ "${CI:-}" = true ] && echo ON || echo OFF)}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DATTNSIM_SANITIZE=ON -DATTNSIM_FUZZ=ON \
  -DATTNSIM_WERROR="$werror" >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" ${1:+--target "$@"}
