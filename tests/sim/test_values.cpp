// Values: dtype rounding, deterministic random fills, stats JSON contents and atomic output.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/run.h"

namespace attnsim {
namespace {

const std::string kToy3 = std::string(ATTNSIM_SOURCE_DIR) + "/configs/toy-3reg.yaml";

RunOptions options(std::vector<std::string> overrides) {
  RunOptions o;
  o.config_path = kToy3;
  o.overrides = std::move(overrides);
  return o;
}

const char* kExpOfTwelve = ".tensor x[1] = {12}\n.tensor y[1]\nLOAD x[0], R0\nEXP R0, R0\nSTORE R0, y[0]\n";

// e^12 = 162754.8 exceeds float16's largest finite value (65504): the register overflows to inf.
TEST(Dtypes, Float16ExpOverflowsToInfinity) {
  RunResult r = run_program(isa::assemble(kExpOfTwelve, "exp12"), options({"dtype=f16"}));
  EXPECT_TRUE(std::isinf(r.final_values.at("y")[0]));
}

TEST(Dtypes, Float32KeepsExpOfTwelveToSinglePrecision) {
  RunResult r = run_program(isa::assemble(kExpOfTwelve, "exp12"), options({"dtype=f32"}));
  EXPECT_EQ(r.final_values.at("y")[0], static_cast<double>(static_cast<float>(std::exp(12.0))));
}

TEST(Dtypes, Float64IsExact) {
  RunResult r = run_program(isa::assemble(kExpOfTwelve, "exp12"), options({"dtype=f64"}));
  EXPECT_EQ(r.final_values.at("y")[0], std::exp(12.0));
}

// A tensor declared bf16 stores 1 + 2^-9 rounded to 8 significand bits: back to 1.
TEST(Dtypes, TensorStorageDtypeRoundsStores) {
  const double tiny = std::ldexp(1.0, -9);
  std::string text =
      fmt::format(".tensor x[1] = {{{}}}\n.tensor y[1] bf16\nLOAD x[0], R0\nSTORE R0, y[0]\n", 1.0 + tiny);
  RunResult r = run_program(isa::assemble(text, "bf16"), options({"dtype=f64"}));
  EXPECT_EQ(r.final_values.at("y")[0], 1.0);
  EXPECT_EQ(r.final_values.at("x")[0], 1.0 + tiny);
}

TEST(RandomFill, SameSeedSameValuesWithinBounds) {
  const double lo = -2.5, hi = 3.0;
  std::string text = fmt::format(
      ".tensor x[64] f64 random(seed=42, lo={}, hi={})\n.tensor z[64] f64 random(seed=43, lo={}, hi={})\n",
      lo, hi, lo, hi);
  isa::Program program = isa::assemble(text, "random");
  Machine machine(load_config(kToy3, {}));
  machine.load(program, false);
  std::vector<double> first = machine.dram().read_tensor(0);
  std::vector<double> other_seed = machine.dram().read_tensor(1);
  machine.load(program, false);
  EXPECT_EQ(machine.dram().read_tensor(0), first);
  EXPECT_NE(first, other_seed);
  for (double v : first) {
    EXPECT_GE(v, lo);
    EXPECT_LT(v, hi);
  }
}

TEST(UninitializedReads, AllowedReadsReturnZero) {
  RunResult r = run_program(isa::assemble(".tensor y[1]\nEXP R1, R0\nSTORE R0, y[0]\n", "uninit"),
                            options({"regfile.allow_uninitialized_read=true"}));
  EXPECT_EQ(r.final_values.at("y")[0], 1.0);  // e^0
}

TEST(StatsJson, EveryStatHasUnitAndDescriptionAndTheConfigIsEffective) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("attnsim-stats-{}", ::getpid());
  fs::create_directories(dir);
  RunOptions o = options({"regfile.count=5"});
  o.stats_json = (dir / "stats.json").string();
  run_program(isa::assemble(kExpOfTwelve, "exp12"), o);
  std::ifstream in(o.stats_json);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["config"]["regfile"]["count"], 5);
  EXPECT_EQ(j["config"]["alu"]["exp_latency"], 1);  // a default, recorded as used
  size_t stats = 0;
  for (const auto& [group, entries] : j["stats"].items())
    for (const auto& [name, entry] : entries.items()) {
      EXPECT_TRUE(entry.contains("value")) << group << "." << name;
      EXPECT_FALSE(entry.value("description", "").empty()) << group << "." << name;
      EXPECT_TRUE(entry.contains("unit")) << group << "." << name;
      ++stats;
    }
  EXPECT_GT(stats, 10u);
  EXPECT_EQ(j["stats"]["dram"]["reads_per_tensor"]["value"]["x"], 1);
  // Only the final file is left behind.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnsim
