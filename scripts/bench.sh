#!/usr/bin/env bash
# Long benchmarks, kept out of the test suite. Prints the figures recorded in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# One variant per process: SystemC elaborates one machine per process.
for variant in 0 1; do
  /usr/bin/time -f "peak RSS %M KiB" build/bench/attnsim_bench_scalar --benchmark_filter="/${variant}/"
done
for n in 20480 4096; do
  /usr/bin/time -f "peak RSS %M KiB" build/bench/attnsim_bench_tile --benchmark_filter="/${n}/"
done
for n in 4096 16384 65536; do
  /usr/bin/time -f "compare N=${n}: wall %e s, peak RSS %M KiB" \
    build/sim/attnsim compare -c configs/h100.yaml --N "${n}" --d 128 --values off
done
# Value mode at scale (docs/benchmarks.md): all five schedules with values checked, the default up to
# N = 8192; exit status 1 at 8192 is flash1's f16 check, expected (README).
for n in 2048 4096 8192; do
  /usr/bin/time -f "compare with values N=${n}: wall %e s, cpu %U s user, peak RSS %M KiB" \
    build/sim/attnsim compare -c configs/h100.yaml --N "${n}" --d 64 --progress off || true
done
