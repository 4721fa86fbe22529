#!/usr/bin/env bash
# Installs the Debian packages attnsim needs, only those missing. Run by setup.sh and, with --tests, by
# test.sh: the tests also need a browser. --sanitize (scripts/sanitize.sh, scripts/fuzz.sh): clang 16 and
# its sanitizer and libFuzzer runtimes. --slurm: a single-node Slurm (scripts/slurm/local-cluster.sh). Flags
# combine.
set -euo pipefail
ATTNSIM_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libsystemc-dev               # simulation kernel
  libyaml-cpp-dev              # machine configs
  libboost-program-options-dev # CLI
  nlohmann-json3-dev           # stats JSON
  libfmt-dev                   # formatting
  libgtest-dev googletest      # tests
  libbenchmark-dev time        # benchmarks and their peak-RSS figure
)
for flag in "$@"; do
  case "$flag" in
    --tests)
      # Headless, for the browser test of `attnsim run --html` (tests/labs/test_html.cpp; skipped without it).
      ATTNSIM_PACKAGES+=(chromium)
      ;;
    --sanitize)
      # Debian's default clang 14 rejects _Float16 (isa/dtype.h); 16 accepts it and ships libFuzzer.
      # llvm-16: llvm-symbolizer, for file:line in sanitizer reports.
      ATTNSIM_PACKAGES+=(clang-16 libclang-rt-16-dev llvm-16)
      ;;
    --slurm)
      # For `attnsim sweep --slurm` on this machine and its test (tests/sweep; skipped without Slurm).
      ATTNSIM_PACKAGES+=(slurmctld slurmd slurm-client munge)
      ;;
  esac
done
missing=()
for package in "${ATTNSIM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # Try the cached package lists first; refresh them only if that fails.
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" ||
    { "${sudo_cmd[@]}" apt-get update && "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
