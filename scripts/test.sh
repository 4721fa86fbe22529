#!/usr/bin/env bash
# README command 2: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
# CI (CI=true, or ATTNSIM_WERROR=ON from .ci/run) builds with -Werror; elsewhere warnings stay warnings.
werror="${ATTNSIM_WERROR:-$([ "${CI:-}" = true ] && echo ON || echo OFF)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSIM_WERROR="$werror"
cmake --build build
cd build
# The time bounds over all committed tensor-core rows (label `long`, minutes) run apart: scripts/time-bounds.sh.
ctest --output-on-failure -j "$(nproc)" --timeout 300 -LE "long|slow"
