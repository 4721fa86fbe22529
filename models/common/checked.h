// Checked integer arithmetic for sizes, counts and simulated time. A wrapped sum or product is a silent
// wrong answer (a cycle count printed with exit 0), so every site that can overflow goes through these:
// try_* returns nothing on overflow, for callers that word their own InputError; checked_* throws
// std::overflow_error naming the quantity.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace attnsim {

template <class T>
concept CheckedInteger = std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>;

template <CheckedInteger T>
std::optional<T> try_add(T a, T b) {
  T sum{};
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

template <CheckedInteger T>
std::optional<T> try_mul(T a, T b) {
  T product{};
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// `what` names the quantity in the message, e.g. "mxu: M * K * N".
template <CheckedInteger T>
T checked_add(T a, T b, std::string_view what) {
  if (auto sum = try_add(a, b)) return *sum;
  throw std::overflow_error(std::string(what) + " overflows " + std::to_string(sizeof(T) * 8) +
                            "-bit arithmetic (" + std::to_string(a) + " + " + std::to_string(b) + ")");
}

template <CheckedInteger T>
T checked_mul(T a, T b, std::string_view what) {
  if (auto product = try_mul(a, b)) return *product;
  throw std::overflow_error(std::string(what) + " overflows " + std::to_string(sizeof(T) * 8) +
                            "-bit arithmetic (" + std::to_string(a) + " * " + std::to_string(b) + ")");
}

}  // namespace attnsim
