// models/common/checked.h: the checked-arithmetic helper returns the exact result while it fits and refuses
// (nullopt, or std::overflow_error naming the quantity) at the first value that does not.
#include "models/common/checked.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace attnsim {
namespace {

constexpr uint64_t kMaxU = std::numeric_limits<uint64_t>::max();  // 2^64 - 1
constexpr int64_t kMaxI = std::numeric_limits<int64_t>::max();    // 2^63 - 1
constexpr int64_t kMinI = std::numeric_limits<int64_t>::min();    // -2^63

TEST(Checked, AddIsExactUpToTheLimitAndRefusesOnePast) {
  EXPECT_EQ(try_add<uint64_t>(kMaxU - 1, 1), kMaxU);
  EXPECT_EQ(try_add<uint64_t>(kMaxU, 1), std::nullopt);
  EXPECT_EQ(try_add<int64_t>(kMaxI - 1, 1), kMaxI);
  EXPECT_EQ(try_add<int64_t>(kMaxI, 1), std::nullopt);
  EXPECT_EQ(try_add<int64_t>(kMinI, -1), std::nullopt);
  EXPECT_EQ(try_add<int64_t>(kMinI, kMaxI), -1);  // -2^63 + 2^63 - 1
}

TEST(Checked, MulIsExactUpToTheLimitAndRefusesOnePast) {
  // 2^32 * (2^32 - 1) = 2^64 - 2^32 fits; 2^32 * 2^32 = 2^64 does not.
  EXPECT_EQ(try_mul<uint64_t>(uint64_t{1} << 32, (uint64_t{1} << 32) - 1), kMaxU - ((uint64_t{1} << 32) - 1));
  EXPECT_EQ(try_mul<uint64_t>(uint64_t{1} << 32, uint64_t{1} << 32), std::nullopt);
  // -2^62 * 2 = -2^63 fits in int64; 2^62 * 2 = 2^63 does not.
  EXPECT_EQ(try_mul<int64_t>(-(int64_t{1} << 62), 2), kMinI);
  EXPECT_EQ(try_mul<int64_t>(int64_t{1} << 62, 2), std::nullopt);
  EXPECT_EQ(try_mul<int64_t>(kMinI, -1), std::nullopt);
}

TEST(Checked, ThrowingFormsNameTheQuantity) {
  EXPECT_EQ(checked_add<uint64_t>(2, 3, "x"), 5u);
  EXPECT_EQ(checked_mul<int64_t>(-4, 5, "x"), -20);
  try {
    checked_mul<uint64_t>(kMaxU, 2, "mxu: busy cycles");
    FAIL() << "expected std::overflow_error";
  } catch (const std::overflow_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mxu: busy cycles overflows 64-bit arithmetic"), std::string::npos) << what;
    EXPECT_NE(what.find("18446744073709551615 * 2"), std::string::npos) << what;
  }
  EXPECT_THROW(checked_add<int64_t>(kMaxI, 1, "x"), std::overflow_error);
}

}  // namespace
}  // namespace attnsim
