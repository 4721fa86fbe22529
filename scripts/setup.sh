#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the default config.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# The main job: every forward attention schedule on a whole simulated H100, side by side.
build/sim/attnsim compare -c configs/h100.yaml --N 4096 --d 64
