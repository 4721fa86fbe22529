// Sweep value lists and ranges: the expected lists are written out by hand.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "isa/diagnostics.h"
#include "sim/sweep.h"

namespace attnsim {
namespace {

using Values = std::vector<std::string>;

TEST(SweepValues, CommaList) {
  EXPECT_EQ(parse_sweep_values("64,128,256"), (Values{"64", "128", "256"}));
  EXPECT_EQ(parse_sweep_values("flash1, flash2"), (Values{"flash1", "flash2"}));
}

TEST(SweepValues, GeometricRangeWithSuffixes) {
  EXPECT_EQ(parse_sweep_values("32KiB..1MiB*2"),
            (Values{"32768", "65536", "131072", "262144", "524288", "1048576"}));
  EXPECT_EQ(parse_sweep_values("16..256*4"), (Values{"16", "64", "256"}));
  EXPECT_EQ(parse_sweep_values("3..100*3"), (Values{"3", "9", "27", "81"}));  // stops short of B
}

TEST(SweepValues, ArithmeticRange) {
  EXPECT_EQ(parse_sweep_values("512..4096+512"),
            (Values{"512", "1024", "1536", "2048", "2560", "3072", "3584", "4096"}));
  EXPECT_EQ(parse_sweep_values("100..250+100"), (Values{"100", "200"}));
  EXPECT_EQ(parse_sweep_values("7..7+1"), (Values{"7"}));
}

TEST(SweepValues, SizeSuffixes) {
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_size("2MB"), 2000000);
  EXPECT_EQ(parse_size("1GiB"), 1073741824);
  EXPECT_EQ(parse_size("64KB"), 64000);
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_FALSE(parse_size("0.5"));   // not a whole byte
  EXPECT_FALSE(parse_size("1.1B"));  // no such suffix
  EXPECT_FALSE(parse_size("f16"));
  EXPECT_EQ(parse_sweep_values("48KiB,1MiB"), (Values{"49152", "1048576"}));
}

TEST(SweepValues, MixedListAndRange) {
  EXPECT_EQ(parse_sweep_values("8,64..256*2,1000"), (Values{"8", "64", "128", "256", "1000"}));
}

TEST(SweepValues, MalformedIsRejected) {
  for (const char* bad : {"1..", "1..8", "10..1+1", "1..8*1", "0..8*2", "1..8+0", "a..b+1", "64,,128",
                          "64,64", "32KiB,32768", "1.3KiB", "1..1000000+1"})
    EXPECT_THROW(parse_sweep_values(bad), std::invalid_argument) << bad;
}

TEST(SweepValues, AxisKeysAndDidYouMean) {
  EXPECT_EQ(parse_sweep_axis("sram.capacity_bytes=64KiB,128KiB").values, (Values{"65536", "131072"}));
  EXPECT_TRUE(parse_sweep_axis("sram.capacity_bytes=1").is_config_key());
  EXPECT_FALSE(parse_sweep_axis("block-q=32,64").is_config_key());
  try {
    parse_sweep_axis("blok=64");
    FAIL() << "unknown key accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'block'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_sweep_axis("N=abc"), InputError);
  EXPECT_THROW(parse_sweep_axis("causal=maybe"), InputError);
  EXPECT_THROW(parse_sweep_axis("values=sometimes"), InputError);
  EXPECT_THROW(parse_sweep_axis("N"), InputError);
}

TEST(SweepValues, OptionArguments) {
  EXPECT_EQ(option_args("causal", "true"), (Values{"--causal"}));
  EXPECT_EQ(option_args("causal", "off"), (Values{}));
  EXPECT_EQ(option_args("N", "256"), (Values{"--N", "256"}));
  EXPECT_EQ(option_args("sram.capacity_bytes", "64KiB"), (Values{"-p", "sram.capacity_bytes=65536"}));
  EXPECT_EQ(option_args("schedule", "flash2"), (Values{"--schedule", "flash2"}));
}

TEST(SweepValues, CartesianProductFirstAxisSlowest) {
  const auto points = sweep_points({{"N", {"128", "256"}}, {"schedule", {"flash1", "flash2", "naive-safe"}}});
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0],
            (std::vector<std::pair<std::string, std::string>>{{"N", "128"}, {"schedule", "flash1"}}));
  EXPECT_EQ(points[2][1].second, "naive-safe");
  EXPECT_EQ(points[3][0].second, "256");
  EXPECT_EQ(points[5],
            (std::vector<std::pair<std::string, std::string>>{{"N", "256"}, {"schedule", "naive-safe"}}));
}

}  // namespace
}  // namespace attnsim
