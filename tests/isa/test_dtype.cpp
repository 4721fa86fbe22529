// round_f16's bit-level shortcut against the compiler's own float64 -> float16 conversion, which is the
// definition it must reproduce: every float16 value, each midpoint between neighbours (ties to even) and
// points just either side of it, the edges of the shortcut's range, and random doubles of every magnitude.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "isa/dtype.h"

namespace attnsim {
namespace {

double reference_f16(double x) {
  return static_cast<double>(static_cast<_Float16>(x));
}

void expect_same(double x) {
  const double got = round_f16(x), want = reference_f16(x);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << x;
    return;
  }
  EXPECT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want)) << std::hexfloat << x;
}

TEST(RoundF16, EveryHalfValueAndTheMidpointsBetweenThem) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite non-negative float16
    const double value = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    const double next = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(h + 1)));
    const double mid = (value + next) / 2;  // exact in float64: a tie, rounded to the even neighbour
    for (double x : {value, mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)}) {
      expect_same(x);
      expect_same(-x);
    }
  }
}

TEST(RoundF16, EdgesOfTheFastPath) {
  const double min_normal = std::ldexp(1.0, -14);
  for (double x : {min_normal, std::nextafter(min_normal, 0.0), std::nextafter(min_normal, 1.0), 65504.0,
                   65519.99, 65520.0, std::nextafter(65520.0, 0.0), 65536.0, 1e300, 0.0, -0.0,
                   std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::denorm_min()}) {
    expect_same(x);
    expect_same(-x);
  }
}

TEST(RoundF16, RandomDoublesOfEveryMagnitude) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 20);
  for (int i = 0; i < 2000000; ++i) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    expect_same(i % 2 ? x : -x);
  }
}

}  // namespace
}  // namespace attnsim
