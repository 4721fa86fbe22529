// Element types of tensors and registers, and rounding a float64 result to them. Units compute in float64
// and round once per instruction, so MAC behaves like a fused multiply-add of the chosen precision.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attnsim {

enum class Dtype : uint8_t { F16, BF16, F32, F64 };

constexpr std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::F16:
      return "f16";
    case Dtype::BF16:
      return "bf16";
    case Dtype::F32:
      return "f32";
    case Dtype::F64:
      return "f64";
  }
  return "?";
}

constexpr int dtype_bytes(Dtype t) {
  switch (t) {
    case Dtype::F16:
    case Dtype::BF16:
      return 2;
    case Dtype::F32:
      return 4;
    case Dtype::F64:
      return 8;
  }
  return 0;
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  if (s == "f16" || s == "fp16" || s == "float16") return Dtype::F16;
  if (s == "bf16" || s == "bfloat16") return Dtype::BF16;
  if (s == "f32" || s == "fp32" || s == "float32") return Dtype::F32;
  if (s == "f64" || s == "fp64" || s == "float64") return Dtype::F64;
  return std::nullopt;
}

inline double round_bf16(double x) {
  // Round float32 bits to the upper 16 with round-to-nearest-even; NaN stays NaN.
  float f = static_cast<float>(x);
  if (std::isnan(f)) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  bits = (bits + rounding_bias) & 0xFFFF0000u;
  return std::bit_cast<float>(bits);
}

// Round to the nearest float16 (ties to even), as a float64, without the x86-64 baseline's library call,
// which cost value runs a third of their time. Normal results: dropping the low 42 of the 52 fraction bits
// with round-to-nearest-even is exact (a carry into the exponent is the right answer too). Subnormal ones
// are multiples of 2^-24: adding 2^28, whose ulp is 2^-24, lets the FPU round |x| to one (ties to even),
// and subtracting it again is exact. Overflow, infinities and NaN go through the compiler's conversion.
inline double round_f16(double x) {
  constexpr uint64_t kMinNormal = 0x3F10000000000000;    // 2^-14, the least normal float16
  constexpr uint64_t kRoundsToInf = 0x40EFFE0000000000;  // 65520: halfway from 65504 (the largest) up
  constexpr int kDropped = 52 - 10;
  constexpr double kSubnormalShift = 268435456.0;  // 2^28
  uint64_t bits = std::bit_cast<uint64_t>(x);
  const uint64_t magnitude = bits & 0x7FFFFFFFFFFFFFFF;
  if (magnitude >= kRoundsToInf) return static_cast<double>(static_cast<_Float16>(x));
  if (magnitude < kMinNormal)
    return std::copysign((std::bit_cast<double>(magnitude) + kSubnormalShift) - kSubnormalShift, x);
  bits += ((uint64_t{1} << (kDropped - 1)) - 1) + ((bits >> kDropped) & 1);
  return std::bit_cast<double>(bits & ~((uint64_t{1} << kDropped) - 1));
}

template <Dtype D>
inline double round_to(double x) {
  if constexpr (D == Dtype::F64) return x;
  if constexpr (D == Dtype::F32) return static_cast<double>(static_cast<float>(x));
  if constexpr (D == Dtype::F16) return round_f16(x);
  if constexpr (D == Dtype::BF16) return round_bf16(x);
}

inline double round_to(Dtype d, double x) {
  switch (d) {
    case Dtype::F16:
      return round_to<Dtype::F16>(x);
    case Dtype::BF16:
      return round_to<Dtype::BF16>(x);
    case Dtype::F32:
      return round_to<Dtype::F32>(x);
    case Dtype::F64:
      return x;
  }
  return x;
}

}  // namespace attnsim
