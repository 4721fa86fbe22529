// VpuUnit: op timing from named params (latency + ceil(elements / lanes) * cycles_per_vector), stats,
// element-wise values with broadcasting, row reductions, the causal mask, dtype rounding, and the
// "simd" factory's params.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/diagnostics.h"
#include "models/common/registry.h"
#include "models/vpu/vpu.h"

namespace attnsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}
size_t idx(VpuOp op) {
  return static_cast<size_t>(op);
}

struct Matrix {
  int64_t rows, cols;
  std::vector<double> data;
  Matrix(int64_t r, int64_t c, double fill = 0.0) : rows(r), cols(c), data(r * c, fill) {}
  Matrix(int64_t r, int64_t c, std::vector<double> values) : rows(r), cols(c), data(std::move(values)) {}
  double operator()(int64_t i, int64_t j) const { return data[i * cols + j]; }
  TileView view() { return {data.data(), rows, cols, cols, false}; }
  // For the optional operand b, which is passed by pointer.
  const TileView* pointer() {
    held = view();
    return &held;
  }
  TileView held;
};

nlohmann::json stat(const VpuUnit& unit, const char* name) {
  return unit.stats().to_json().at(name).at("value");
}

// Distinct values per op so a wrong index cannot match by accident.
constexpr int64_t kLanes = 8;
constexpr int64_t kExpLatency = 3, kExpPerVector = 5;
constexpr int64_t kAddLatency = 2, kAddPerVector = 1;
constexpr int64_t kRowMaxLatency = 4, kRowMaxPerVector = 2;
constexpr int64_t kMaskLatency = 1, kMaskPerVector = 3;

VpuUnit::Params test_params() {
  VpuUnit::Params p;
  p.lanes = kLanes;
  p.latency.fill(0);
  p.cycles_per_vector.fill(1);
  p.latency[idx(VpuOp::Exp)] = kExpLatency;
  p.cycles_per_vector[idx(VpuOp::Exp)] = kExpPerVector;
  p.latency[idx(VpuOp::Add)] = kAddLatency;
  p.cycles_per_vector[idx(VpuOp::Add)] = kAddPerVector;
  p.latency[idx(VpuOp::RowMax)] = kRowMaxLatency;
  p.cycles_per_vector[idx(VpuOp::RowMax)] = kRowMaxPerVector;
  p.latency[idx(VpuOp::MaskCausal)] = kMaskLatency;
  p.cycles_per_vector[idx(VpuOp::MaskCausal)] = kMaskPerVector;
  return p;
}

TEST(VpuTiming, LatencyPlusVectorsTimesIssueInterval) {
  VpuUnit vpu("vpu", test_params());
  constexpr int64_t kRows = 3, kCols = 5;  // 15 elements: a partial last vector
  EXPECT_EQ(vpu.op_cycles(VpuOp::Exp, kRows, kCols),
            kExpLatency + ceil_div(kRows * kCols, kLanes) * kExpPerVector);
  // An exact multiple of the lanes does not overshoot.
  constexpr int64_t kFullRows = 2, kFullCols = 2 * kLanes;
  EXPECT_EQ(vpu.op_cycles(VpuOp::Add, kFullRows, kFullCols),
            kAddLatency + uint64_t(kFullRows * kFullCols / kLanes) * kAddPerVector);
  // Reductions are charged on their input tile.
  EXPECT_EQ(vpu.op_cycles(VpuOp::RowMax, kRows, kCols),
            kRowMaxLatency + ceil_div(kRows * kCols, kLanes) * kRowMaxPerVector);
  EXPECT_EQ(vpu.op_cycles(VpuOp::MaskCausal, kLanes, 1), kMaskLatency + 1 * kMaskPerVector);
  // A single element is one vector.
  EXPECT_EQ(vpu.op_cycles(VpuOp::Exp, 1, 1), kExpLatency + kExpPerVector);
}

TEST(VpuTiming, StatsAccumulate) {
  VpuUnit vpu("vpu", test_params());
  constexpr int64_t kRows = 4, kCols = 6;
  constexpr uint64_t kElapsed = 200;
  const uint64_t exp_cycles = kExpLatency + ceil_div(kRows * kCols, kLanes) * kExpPerVector;
  const uint64_t add_cycles = kAddLatency + ceil_div(kRows, kLanes) * kAddPerVector;
  vpu.op_cycles(VpuOp::Exp, kRows, kCols);
  vpu.op_cycles(VpuOp::Exp, kRows, kCols);
  vpu.op_cycles(VpuOp::Add, kRows, 1);
  vpu.set_elapsed(kElapsed);
  EXPECT_EQ(stat(vpu, "ops"), 3u);
  EXPECT_EQ(stat(vpu, "element_ops"), uint64_t(2 * kRows * kCols + kRows));
  EXPECT_EQ(stat(vpu, "busy_cycles"), 2 * exp_cycles + add_cycles);
  EXPECT_EQ(stat(vpu, "ops_by_kind"), (nlohmann::json{{"exp", 2}, {"add", 1}}));
  EXPECT_DOUBLE_EQ(stat(vpu, "utilisation").get<double>(), double(2 * exp_cycles + add_cycles) / kElapsed);
  const nlohmann::json all = vpu.stats().to_json();
  for (const auto& [name, entry] : all.items()) {
    EXPECT_FALSE(entry.at("unit").get<std::string>().empty()) << name;
    EXPECT_FALSE(entry.at("description").get<std::string>().empty()) << name;
  }
}

TEST(VpuTiming, DefaultsMatchTheDocumentedValues) {
  // docs/models/vpu.md: 128 lanes; 1 cycle per vector and no latency for add-like ops, mov and the mask
  // (seed 003's ceil(n / 128) per op); exp and div 4 per vector; reductions 1 per vector after a
  // log2(lanes) = 7 stage tree.
  constexpr int64_t kDefaultLanes = 128, kTreeDepth = 7, kDear = 4;
  const VpuUnit::Params p = VpuUnit::default_params();
  EXPECT_EQ(p.lanes, kDefaultLanes);
  for (VpuOp op : {VpuOp::Max, VpuOp::Sub, VpuOp::Add, VpuOp::Mul, VpuOp::Mov, VpuOp::MaskCausal}) {
    EXPECT_EQ(p.latency[idx(op)], 0) << vpu_op_name(op);
    EXPECT_EQ(p.cycles_per_vector[idx(op)], 1) << vpu_op_name(op);
  }
  for (VpuOp op : {VpuOp::Exp, VpuOp::Div}) {
    EXPECT_EQ(p.latency[idx(op)], 0) << vpu_op_name(op);
    EXPECT_EQ(p.cycles_per_vector[idx(op)], kDear) << vpu_op_name(op);
  }
  for (VpuOp op : {VpuOp::RowMax, VpuOp::RowSum}) {
    EXPECT_EQ(p.latency[idx(op)], kTreeDepth) << vpu_op_name(op);
    EXPECT_EQ(p.cycles_per_vector[idx(op)], 1) << vpu_op_name(op);
  }
  // The tree depth follows the lane count (ceil(log2)).
  EXPECT_EQ(VpuUnit::default_params(64).latency[idx(VpuOp::RowSum)], 6);
  EXPECT_EQ(VpuUnit::default_params(100).latency[idx(VpuOp::RowSum)], 7);
  EXPECT_EQ(VpuUnit::default_params(1).latency[idx(VpuOp::RowSum)], 0);
}

TEST(VpuTiming, RejectsBadParamsAndExtents) {
  EXPECT_THROW(VpuUnit("bare", VpuUnit::Params{}), std::invalid_argument);  // zero cycles per vector
  VpuUnit::Params no_lanes = VpuUnit::default_params();
  no_lanes.lanes = 0;
  EXPECT_THROW(VpuUnit("no_lanes", no_lanes), std::invalid_argument);
  VpuUnit vpu("vpu", VpuUnit::default_params());
  EXPECT_THROW(vpu.op_cycles(VpuOp::Add, 0, 4), std::invalid_argument);
  EXPECT_EQ(vpu.ops, 0u);
}

TEST(VpuNames, EveryOpHasItsName) {
  EXPECT_EQ(vpu_op_name(VpuOp::Max), "max");
  EXPECT_EQ(vpu_op_name(VpuOp::Sub), "sub");
  EXPECT_EQ(vpu_op_name(VpuOp::Exp), "exp");
  EXPECT_EQ(vpu_op_name(VpuOp::Add), "add");
  EXPECT_EQ(vpu_op_name(VpuOp::Mul), "mul");
  EXPECT_EQ(vpu_op_name(VpuOp::Div), "div");
  EXPECT_EQ(vpu_op_name(VpuOp::Mov), "mov");
  EXPECT_EQ(vpu_op_name(VpuOp::RowMax), "rowmax");
  EXPECT_EQ(vpu_op_name(VpuOp::RowSum), "rowsum");
  EXPECT_EQ(vpu_op_name(VpuOp::MaskCausal), "mask_causal");
}

// --- values --------------------------------------------------------------------------------------------

TEST(VpuValues, FullShapeBinaryOps) {
  Matrix a(2, 2, {1, 2, 3, 4}), b(2, 2, {8, 6, 2, 1}), d(2, 2);
  VpuUnit::elementwise(VpuOp::Sub, a.view(), b.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{1 - 8, 2 - 6, 3 - 2, 4 - 1}));
  VpuUnit::elementwise(VpuOp::Max, a.view(), b.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{8, 6, 3, 4}));
  VpuUnit::elementwise(VpuOp::Add, a.view(), b.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{9, 8, 5, 5}));
  VpuUnit::elementwise(VpuOp::Mul, a.view(), b.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{8, 12, 6, 4}));
  VpuUnit::elementwise(VpuOp::Div, a.view(), b.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{1.0 / 8, 2.0 / 6, 3.0 / 2, 4.0 / 1}));
}

TEST(VpuValues, UnaryOpsIgnoreB) {
  Matrix a(1, 3, {0, 1, -1}), d(1, 3);
  VpuUnit::elementwise(VpuOp::Exp, a.view(), nullptr, d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{1.0, std::exp(1.0), std::exp(-1.0)}));
  VpuUnit::elementwise(VpuOp::Mov, a.view(), nullptr, d.view(), Dtype::F64);
  EXPECT_EQ(d.data, a.data);
}

TEST(VpuValues, BroadcastsRowColumnAndScalar) {
  Matrix s(2, 3, {1, 2, 3, 4, 5, 6});
  Matrix row_max(2, 1, {10, 20});          // r x 1: one per row
  Matrix col_bias(1, 3, {100, 200, 300});  // 1 x c: one per column
  Matrix scale(1, 1, 0.5);                 // 1 x 1
  Matrix d(2, 3);
  VpuUnit::elementwise(VpuOp::Sub, s.view(), row_max.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{1 - 10, 2 - 10, 3 - 10, 4 - 20, 5 - 20, 6 - 20}));
  VpuUnit::elementwise(VpuOp::Add, s.view(), col_bias.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{101, 202, 303, 104, 205, 306}));
  VpuUnit::elementwise(VpuOp::Mul, s.view(), scale.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3}));
  // The broadcast operand may be a, too: row value minus each element.
  VpuUnit::elementwise(VpuOp::Sub, row_max.view(), s.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{10 - 1, 10 - 2, 10 - 3, 20 - 4, 20 - 5, 20 - 6}));
  // r x 1 against 1 x c gives their outer combination.
  VpuUnit::elementwise(VpuOp::Add, row_max.view(), col_bias.pointer(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{110, 210, 310, 120, 220, 320}));
}

TEST(VpuValues, InPlaceAndTransposedViews) {
  // A 2x3 tile stored transposed (3x2 row-major), updated in place: s = s * 2.
  std::vector<double> stored = {1, 4, 2, 5, 3, 6};  // logical rows {1, 2, 3}, {4, 5, 6}
  const TileView s{stored.data(), 2, 3, 2, true};
  Matrix two(1, 1, 2.0);
  VpuUnit::elementwise(VpuOp::Mul, s, two.pointer(), s, Dtype::F64);
  EXPECT_EQ(stored, (std::vector<double>{2, 8, 4, 10, 6, 12}));
}

TEST(VpuValues, RowMaxAndRowSum) {
  Matrix a(3, 4,
           {1, 7, -2, 3,                 //
            -kInf, -kInf, -kInf, -kInf,  //
            0.5, -kInf, 0.25, 2});
  Matrix d(3, 1);
  VpuUnit::reduce(VpuOp::RowMax, a.view(), d.view(), Dtype::F64);
  EXPECT_EQ(d.data, (std::vector<double>{7, -kInf, 2}));  // a fully masked row stays -inf
  Matrix b(2, 3, {1, 2, 3, 0.5, 0.25, -1});
  Matrix e(2, 1);
  VpuUnit::reduce(VpuOp::RowSum, b.view(), e.view(), Dtype::F64);
  EXPECT_EQ(e.data, (std::vector<double>{6, -0.25}));
}

TEST(VpuValues, RowSumRoundsOnce) {
  // 1 + 4 * 2^-12 = 1 + 2^-10 is an f16 value; adding 2^-12 to 1 in f16 step by step would stay at 1.
  const double tiny = std::ldexp(1.0, -12);
  Matrix a(1, 5, {1, tiny, tiny, tiny, tiny}), d(1, 1);
  VpuUnit::reduce(VpuOp::RowSum, a.view(), d.view(), Dtype::F16);
  EXPECT_EQ(d.data[0], 1.0 + std::ldexp(1.0, -10));
  // 1 + 2^-12 is not an f16 value: it rounds to 1.
  Matrix b(1, 2, {1, tiny}), e(1, 1);
  VpuUnit::reduce(VpuOp::RowSum, b.view(), e.view(), Dtype::F16);
  EXPECT_EQ(e.data[0], 1.0);
}

TEST(VpuValues, CausalMask) {
  constexpr int64_t kRows = 3, kCols = 4, kRow0 = 4, kCol0 = 3;  // a tile of queries 4..6, keys 3..6
  Matrix d(kRows, kCols, 1.0);
  VpuUnit::mask_causal(d.view(), kRow0, kCol0);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) {
      const bool key_after_query = kCol0 + j > kRow0 + i;
      EXPECT_EQ(d(i, j), key_after_query ? -kInf : 1.0) << i << ", " << j;
    }
  // Query 4 sees keys 3 and 4 only: two unmasked values in the first row.
  EXPECT_EQ(d(0, 1), 1.0);
  EXPECT_EQ(d(0, 2), -kInf);
}

TEST(VpuValues, ExpOverflowsToInfinityInF16) {
  constexpr double kF16Max = 65504.0;
  // exp(11) ~ 59874 fits under the f16 maximum; exp(12) ~ 162755 does not.
  Matrix a(1, 2, {11, 12}), d(1, 2);
  VpuUnit::elementwise(VpuOp::Exp, a.view(), nullptr, d.view(), Dtype::F16);
  EXPECT_TRUE(std::isfinite(d(0, 0)));
  EXPECT_LE(d(0, 0), kF16Max);
  EXPECT_NEAR(d(0, 0), std::exp(11.0), std::exp(11.0) * std::ldexp(1.0, -11));  // half an f16 ulp
  EXPECT_EQ(d(0, 1), kInf);
  VpuUnit::elementwise(VpuOp::Exp, a.view(), nullptr, d.view(), Dtype::F32);
  EXPECT_TRUE(std::isfinite(d(0, 1)));
}

TEST(VpuValues, IncompatibleShapesAreRejectedByName) {
  Matrix a(2, 3), d(3, 4), b(3, 4);
  try {
    VpuUnit::elementwise(VpuOp::Add, a.view(), b.pointer(), d.view(), Dtype::F32);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3x4"), std::string::npos) << e.what();
  }
  Matrix b_bad(3, 2);  // neither 4 columns nor 1
  EXPECT_THROW(VpuUnit::elementwise(VpuOp::Add, b.view(), b_bad.pointer(), d.view(), Dtype::F32),
               std::invalid_argument);
  EXPECT_THROW(VpuUnit::elementwise(VpuOp::Sub, b.view(), nullptr, d.view(), Dtype::F32),
               std::invalid_argument);
  EXPECT_THROW(VpuUnit::elementwise(VpuOp::RowMax, b.view(), nullptr, d.view(), Dtype::F32),
               std::invalid_argument);
  Matrix wrong_reduce(3, 2);
  EXPECT_THROW(VpuUnit::reduce(VpuOp::RowSum, b.view(), wrong_reduce.view(), Dtype::F32),
               std::invalid_argument);
  Matrix r(3, 1);
  EXPECT_THROW(VpuUnit::reduce(VpuOp::Exp, b.view(), r.view(), Dtype::F32), std::invalid_argument);
}

// --- params from YAML ---------------------------------------------------------------------------------

std::unique_ptr<VpuUnit> build(const std::string& yaml) {
  register_vpu_models();
  auto source = std::make_shared<ConfigSource>();
  source->file = "machine.yaml";
  ParamReader reader(YAML::Load(yaml), "vpu", source);
  auto unit = Registry<VpuUnit>::instance().create("vpu", reader, "simd", BuildContext{});
  reader.finish();
  return unit;
}

TEST(VpuParams, EmptyConfigGivesTheDefaults) {
  auto vpu = build("{}");
  const VpuUnit::Params defaults = VpuUnit::default_params();
  EXPECT_EQ(vpu->params().lanes, defaults.lanes);
  EXPECT_EQ(vpu->params().latency, defaults.latency);
  EXPECT_EQ(vpu->params().cycles_per_vector, defaults.cycles_per_vector);
}

TEST(VpuParams, KeysSetLanesLatencyAndIssueIntervalPerOp) {
  constexpr int64_t kYamlLanes = 16, kYamlExpPerVector = 8, kYamlRowSumLatency = 2, kYamlMaskLatency = 5;
  auto vpu = build("lanes: 16\nexp_cycles_per_vector: 8\nrowsum_latency: 2\nmask_causal_latency: 5\n");
  constexpr int64_t kRows = 4, kCols = 10;
  const uint64_t vectors = ceil_div(kRows * kCols, kYamlLanes);
  constexpr int64_t kDefaultExpLatency = 0, kDefaultPerVector = 1;
  EXPECT_EQ(vpu->op_cycles(VpuOp::Exp, kRows, kCols), kDefaultExpLatency + vectors * kYamlExpPerVector);
  EXPECT_EQ(vpu->op_cycles(VpuOp::RowSum, kRows, kCols), kYamlRowSumLatency + vectors * kDefaultPerVector);
  EXPECT_EQ(vpu->op_cycles(VpuOp::MaskCausal, kRows, kCols), kYamlMaskLatency + vectors * kDefaultPerVector);
  // rowmax was not set: its default tree depth follows lanes = 16, log2(16) = 4.
  constexpr int64_t kTreeDepth16 = 4;
  EXPECT_EQ(vpu->op_cycles(VpuOp::RowMax, kRows, kCols), kTreeDepth16 + vectors * kDefaultPerVector);
}

TEST(VpuParams, UnknownKeyIsRejectedByFinish) {
  try {
    build("lanes: 16\nexp_cycles: 8\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vpu.exp_cycles"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("machine.yaml:2"), std::string::npos) << e.what();
  }
}

TEST(VpuParams, BadValuesAreRejected) {
  EXPECT_THROW(build("lanes: 0\n"), InputError);
  EXPECT_THROW(build("div_cycles_per_vector: 0\n"), InputError);
  EXPECT_THROW(build("max_latency: -1\n"), InputError);
  EXPECT_THROW(build("type: vliw\n"), InputError);
}

}  // namespace
}  // namespace attnsim
