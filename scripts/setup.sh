#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the default config.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# The main job: the seed 002 c00 lab on the 3-register toy machine, with the register table.
build/sim/attnsim run -c configs/toy-3reg.yaml labs/01-c00/c00.trace --table --symbolic
