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

template <Dtype D>
inline double round_to(double x) {
  if constexpr (D == Dtype::F64) return x;
  if constexpr (D == Dtype::F32) return static_cast<double>(static_cast<float>(x));
  if constexpr (D == Dtype::F16) return static_cast<double>(static_cast<_Float16>(x));
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
