#!/usr/bin/env bash
# Validation bounds too slow for CI's 90 minutes (ctest label `slow`, minutes of one core each): the
# memory-efficient backward's reduced-SM rows that take the longest (tests/validation/test_memeff_sms.cpp),
# its one-head rows from 20,480 on, on two attachments (tests/validation/test_memeff_one_head.cpp), and
# PyTorch's 72 rows as distributions over placements on the H200 and on the H100
# (tests/validation/test_sdpa_placements.cpp, 65-75 minutes of one core each).
# Needs the build of scripts/test.sh (README command 2). Not run by .ci/run; run it after a change to the
# chip, L2 or memory-efficient model.
set -euo pipefail
cd "$(dirname "$0")/../build"
ctest --output-on-failure -j "$(nproc)" --timeout 1800 -L slow
