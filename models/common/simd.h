// Value kernels compiled twice on x86-64: for the baseline (SSE2) and for AVX2, chosen at run time by what
// the host has. Only AVX2 is enabled, not FMA, so the wider kernels perform the very same roundings (a
// multiply, then an add) and their results are bit-for-bit those of the baseline build.
#pragma once

#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSIM_AVX2_KERNELS 1
#define ATTNSIM_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define ATTNSIM_AVX2_KERNELS 0
#define ATTNSIM_TARGET_AVX2
#endif

namespace attnsim {

// Whether the AVX2 kernels run: the host's answer, unless ATTNSIM_NO_AVX2 is set (to time the baseline
// kernels, docs/benchmarks.md); a test may turn them off to compare the two builds.
inline bool& avx2_kernels_enabled() {
#if ATTNSIM_AVX2_KERNELS
  static bool on = __builtin_cpu_supports("avx2") && std::getenv("ATTNSIM_NO_AVX2") == nullptr;
#else
  static bool on = false;
#endif
  return on;
}

inline bool host_has_avx2() {
  return avx2_kernels_enabled();
}

}  // namespace attnsim
