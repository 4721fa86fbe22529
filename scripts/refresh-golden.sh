#!/usr/bin/env bash
# Rewrites tests/golden/data/*.json from the current build, for a deliberate model change: run it, then read
# `git diff tests/golden/data` (every figure that moved) before committing. Needs a configured build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target golden_tests attnsim
(cd build && ATTNSIM_REFRESH_GOLDEN=1 ctest -R '^Reference/Golden\.' --output-on-failure)
git status --short tests/golden/data
