#!/usr/bin/env bash
# Issue 8's time bounds over every committed tensor-core row (tests/validation/test_tc_times.cpp, ctest label
# `long`: the H100's 150 rows and the H200's 29, about 3 minutes on two cores), and the memory-efficient
# backward's 12 PyTorch rows (tests/validation/test_sdpa_rows.cpp, about 5 minutes of one core), the H200's 66
# PyTorch rows and the memory-efficient backward's sweeps (about 24 minutes on two cores in all; label `slow`,
# scripts/slow-bounds.sh, holds what would not fit CI's 90 minutes). Needs the build of scripts/test.sh
# (README command 2).
set -euo pipefail
cd "$(dirname "$0")/../build"
ctest --output-on-failure -j "$(nproc)" --timeout 900 -L long
