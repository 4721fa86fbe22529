// splitmix64 (Steele, Lea, Flood 2014): a 64-bit mixer whose output is the same on every platform, unlike
// the standard library's distributions, so a seeded sequence keeps a run bit-for-bit reproducible.
#pragma once

#include <cstdint>

namespace attnsim {

// The value for `state` + the golden-ratio increment, mixed.
constexpr uint64_t splitmix64_mix(uint64_t state) {
  uint64_t z = state + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of the sequence seeded by `state` (advances it).
constexpr uint64_t splitmix64_next(uint64_t& state) {
  const uint64_t out = splitmix64_mix(state);
  state += 0x9E3779B97F4A7C15ull;
  return out;
}

}  // namespace attnsim
