// MxuUnit: its cycles are mxu_timing's for the geometry (split over `arrays`), its stats accumulate, its
// values are a plain matrix product rounded once, and the "systolic" factory reads typed params.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "isa/diagnostics.h"
#include "models/common/registry.h"
#include "models/mxu/mxu.h"

namespace attnsim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

MxuUnit::Params small_params(mxu::Dataflow dataflow, bool double_buffered, int64_t arrays = 1) {
  MxuUnit::Params p;
  p.geometry.rows = 4;
  p.geometry.cols = 3;
  p.geometry.dataflow = dataflow;
  p.geometry.double_buffered_stationary = double_buffered;
  p.arrays = arrays;
  return p;
}

// A row-major matrix and views of it.
struct Matrix {
  int64_t rows, cols;
  std::vector<double> data;
  Matrix(int64_t r, int64_t c, double fill = 0.0) : rows(r), cols(c), data(r * c, fill) {}
  double& operator()(int64_t i, int64_t j) { return data[i * cols + j]; }
  TileView view() { return {data.data(), rows, cols, cols, false}; }
  // This matrix read as its transpose: a cols x rows logical tile.
  TileView transposed_view() { return {data.data(), cols, rows, cols, true}; }
};

// Small integers so every product and sum is exact in float64, whatever the order of accumulation.
Matrix random_ints(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-8, 8);
  Matrix m(rows, cols);
  for (double& x : m.data) x = dist(rng);
  return m;
}

// Reference: the textbook triple loop on logical (i, j) accessors.
Matrix reference_product(const TileView& a, const TileView& b) {
  Matrix out(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j)
      for (int64_t s = 0; s < a.cols; ++s) out(i, j) += a.at(i, s) * b.at(s, j);
  return out;
}

nlohmann::json stat(const MxuUnit& unit, const char* name) {
  return unit.stats().to_json().at(name).at("value");
}

TEST(MxuUnit, CyclesFoldsAndStallsAreTheTimingModelsForOneArray) {
  struct Shape {
    int64_t m, k, n;
  };
  const std::vector<Shape> shapes = {{1, 1, 1}, {6, 6, 3}, {5, 3, 2}, {7, 9, 11}, {64, 17, 5}};
  for (auto dataflow : {mxu::Dataflow::kWeightStationary, mxu::Dataflow::kOutputStationary,
                        mxu::Dataflow::kInputStationary}) {
    for (bool double_buffered : {true, false}) {
      for (const Shape& s : shapes) {
        const MxuUnit::Params params = small_params(dataflow, double_buffered);
        MxuUnit unit("mxu", params);
        const mxu::MatmulTiming expected = mxu::time_matmul(params.geometry, s.m, s.k, s.n);
        EXPECT_EQ(unit.matmul(s.m, s.k, s.n), expected.cycles);
        EXPECT_EQ(unit.busy_cycles, expected.cycles);
        EXPECT_EQ(unit.folds, expected.folds);
        EXPECT_EQ(unit.stall_cycles, expected.stall_cycles);
      }
    }
  }
}

// docs/models/mxu.md's worked example: WS, M = 6, K = 6, N = 3 on a 4x4 array is 22 cycles double
// buffered and 24 single buffered, 4 and 6 stall cycles, two folds.
TEST(MxuUnit, DocWorkedExampleThroughTheUnit) {
  for (bool double_buffered : {true, false}) {
    MxuUnit::Params params = small_params(mxu::Dataflow::kWeightStationary, double_buffered);
    params.geometry.cols = 4;
    MxuUnit unit("mxu", params);
    EXPECT_EQ(unit.matmul(6, 6, 3), double_buffered ? 22u : 24u);
    EXPECT_EQ(unit.stall_cycles, double_buffered ? 4u : 6u);
    EXPECT_EQ(unit.folds, 2u);
  }
}

TEST(MxuUnit, ArraysSplitNAndTakeTheWidestShare) {
  constexpr int64_t kM = 7, kK = 9, kN = 10, kArrays = 4;  // shares 3, 3, 2, 2
  constexpr int64_t kWideShare = 3, kNarrowShare = 2, kWideArrays = kN % kArrays;
  const MxuUnit::Params params = small_params(mxu::Dataflow::kWeightStationary, true, kArrays);
  MxuUnit unit("mxu", params);
  const mxu::MatmulTiming wide = mxu::time_matmul(params.geometry, kM, kK, kWideShare);
  EXPECT_EQ(unit.matmul(kM, kK, kN), wide.cycles);
  EXPECT_EQ(unit.stall_cycles, wide.stall_cycles);
  // WS folds per array: ceil(K / rows) * ceil(share / cols), summed over the four arrays.
  const int64_t k_tiles = ceil_div(kK, params.geometry.rows);
  const int64_t expected_folds =
      kWideArrays * k_tiles * ceil_div(kWideShare, params.geometry.cols) +
      (kArrays - kWideArrays) * k_tiles * ceil_div(kNarrowShare, params.geometry.cols);
  EXPECT_EQ(unit.folds, static_cast<uint64_t>(expected_folds));
  EXPECT_EQ(unit.macs, static_cast<uint64_t>(kM * kK * kN));
}

TEST(MxuUnit, DealtByRowsTheArraysSplitM) {
  constexpr int64_t kM = 10, kK = 9, kN = 7, kArrays = 4;  // row shares 3, 3, 2, 2
  constexpr int64_t kWideShare = 3, kNarrowShare = 2, kWideArrays = kM % kArrays;
  MxuUnit::Params params = small_params(mxu::Dataflow::kOutputStationary, true, kArrays);
  params.deal = MxuUnit::Deal::kM;
  MxuUnit unit("mxu", params);
  const mxu::MatmulTiming wide = mxu::time_matmul(params.geometry, kWideShare, kK, kN);
  EXPECT_EQ(unit.matmul(kM, kK, kN), wide.cycles);
  // OS passes per array: ceil(share / rows) * ceil(N / cols).
  const int64_t n_tiles = ceil_div(kN, params.geometry.cols);
  EXPECT_EQ(unit.folds,
            static_cast<uint64_t>(kWideArrays * ceil_div(kWideShare, params.geometry.rows) * n_tiles +
                                  (kArrays - kWideArrays) * ceil_div(kNarrowShare, params.geometry.rows) *
                                      n_tiles));
  EXPECT_EQ(unit.macs, static_cast<uint64_t>(kM * kK * kN));
}

// wgmma's feed on a Hopper SM's four 16 x 32 tensor cores: a warp group's 64 rows, 16 per array, each
// streaming its N/32 passes K cycles apart; mma.sync's feed deals N and pays every pass's skew.
TEST(MxuUnit, TheWgmmaFeedStreamsAWarpGroupsRowsAtNearlyThePeak) {
  constexpr int64_t kM = 64, kK = 128, kN = 64, kArrays = 4, kRows = 16, kCols = 32;
  MxuUnit::Params params;
  params.geometry.rows = kRows;
  params.geometry.cols = kCols;
  params.geometry.dataflow = mxu::Dataflow::kOutputStationary;
  params.arrays = kArrays;
  MxuUnit unit("mxu", params);
  EXPECT_EQ(unit.feed(), (MxuUnit::Feed{mxu::HandOff::kTile, MxuUnit::Deal::kN}));
  // N = 64 over four arrays: 16 columns each, four 16-row passes of K + 16 + 16 - 2, the last drains 16 rows.
  EXPECT_EQ(unit.matmul(kM, kK, kN), static_cast<uint64_t>(4 * (kK + 16 + 16 - 2) + 16));
  unit.set_feed({mxu::HandOff::kCell, MxuUnit::Deal::kM});
  // 16 rows per array: N / 32 = 2 passes K apart, the last one's skew once.
  constexpr int64_t kStreamed = 2 * kK + kRows + kCols - 1;
  EXPECT_EQ(unit.matmul(kM, kK, kN), static_cast<uint64_t>(kStreamed));
  const double peak_cycles = double(kM * kK * kN) / double(kRows * kCols * kArrays);
  EXPECT_GT(peak_cycles / kStreamed, 0.8);                       // 84%
  EXPECT_LT(peak_cycles / (4 * (kK + 16 + 16 - 2) + 16), 0.45);  // mma.sync's feed: 40%
}

TEST(MxuUnit, ACellHandOffNeedsAnOutputStationaryArray) {
  MxuUnit unit("mxu", small_params(mxu::Dataflow::kWeightStationary, true));
  EXPECT_THROW(unit.set_feed({mxu::HandOff::kCell, MxuUnit::Deal::kM}), std::invalid_argument);
  MxuUnit::Params params = small_params(mxu::Dataflow::kInputStationary, true);
  params.geometry.hand_off = mxu::HandOff::kCell;
  EXPECT_THROW(MxuUnit("bad", params), std::invalid_argument);
}

TEST(MxuUnit, FewerColumnsThanArraysLeavesArraysIdle) {
  constexpr int64_t kM = 5, kK = 6, kN = 2, kArrays = 4;  // two arrays get one column each
  const MxuUnit::Params params = small_params(mxu::Dataflow::kWeightStationary, true, kArrays);
  MxuUnit unit("mxu", params);
  EXPECT_EQ(unit.matmul(kM, kK, kN), mxu::time_matmul(params.geometry, kM, kK, 1).cycles);
  EXPECT_EQ(unit.folds, static_cast<uint64_t>(kN * ceil_div(kK, params.geometry.rows)));
}

TEST(MxuUnit, IdealAccountingSplitsNToo) {
  constexpr int64_t kM = 128, kK = 64, kN = 128, kArrays = 4;
  MxuUnit::Params params;
  params.geometry.accounting = mxu::Accounting::kIdeal;
  params.arrays = kArrays;
  MxuUnit unit("mxu", params);
  EXPECT_EQ(unit.matmul(kM, kK, kN), static_cast<uint64_t>(kM + kK + kN / kArrays - 2));
}

TEST(MxuUnit, StatsAccumulateOverMatmuls) {
  constexpr int64_t kM1 = 6, kK1 = 6, kN1 = 3, kM2 = 5, kK2 = 3, kN2 = 2;
  constexpr uint64_t kElapsed = 1000;
  const MxuUnit::Params params = small_params(mxu::Dataflow::kOutputStationary, true);
  MxuUnit unit("mxu", params);
  const mxu::MatmulTiming t1 = mxu::time_matmul(params.geometry, kM1, kK1, kN1);
  const mxu::MatmulTiming t2 = mxu::time_matmul(params.geometry, kM2, kK2, kN2);
  unit.matmul(kM1, kK1, kN1);
  unit.matmul(kM2, kK2, kN2);
  unit.set_elapsed(kElapsed);

  constexpr uint64_t kMacs = kM1 * kK1 * kN1 + kM2 * kK2 * kN2;
  EXPECT_EQ(stat(unit, "matmuls"), 2u);
  EXPECT_EQ(stat(unit, "macs"), kMacs);
  EXPECT_EQ(stat(unit, "flops"), 2 * kMacs);
  EXPECT_EQ(stat(unit, "busy_cycles"), t1.cycles + t2.cycles);
  EXPECT_EQ(stat(unit, "folds"), t1.folds + t2.folds);
  EXPECT_EQ(stat(unit, "stall_cycles"), t1.stall_cycles + t2.stall_cycles);
  const double pe_cycles = double(params.geometry.rows * params.geometry.cols * params.arrays) * kElapsed;
  EXPECT_DOUBLE_EQ(stat(unit, "utilisation").get<double>(), kMacs / pe_cycles);
  const nlohmann::json all = unit.stats().to_json();
  for (const auto& [name, entry] : all.items()) {
    EXPECT_FALSE(entry.at("unit").get<std::string>().empty()) << name;
    EXPECT_FALSE(entry.at("description").get<std::string>().empty()) << name;
  }
}

TEST(MxuUnit, UtilisationCountsEveryArray) {
  constexpr int64_t kM = 4, kK = 4, kN = 4, kArrays = 2;
  constexpr uint64_t kElapsed = 10;
  MxuUnit::Params params = small_params(mxu::Dataflow::kWeightStationary, true, kArrays);
  MxuUnit unit("mxu", params);
  EXPECT_EQ(stat(unit, "utilisation").get<double>(), 0.0);  // elapsed not yet set
  unit.matmul(kM, kK, kN);
  unit.set_elapsed(kElapsed);
  EXPECT_DOUBLE_EQ(
      stat(unit, "utilisation").get<double>(),
      double(kM * kK * kN) / double(params.geometry.rows * params.geometry.cols * kArrays * kElapsed));
}

TEST(MxuUnit, BadExtentsAreRejected) {
  MxuUnit unit("mxu", MxuUnit::Params{});
  EXPECT_THROW(unit.matmul(0, 4, 4), std::invalid_argument);
  EXPECT_THROW(unit.matmul(4, 4, 0), std::invalid_argument);
  constexpr int64_t kHuge = int64_t{1} << 40;  // M*K*N = 2^120
  EXPECT_THROW(unit.matmul(kHuge, kHuge, kHuge), std::invalid_argument);
  EXPECT_EQ(unit.matmuls, 0u);
  MxuUnit::Params no_arrays;
  no_arrays.arrays = 0;
  EXPECT_THROW(MxuUnit("bad", no_arrays), std::invalid_argument);
}

TEST(MxuUnit, ComputeIsATripleLoopForEveryTransposeAndAccumulate) {
  constexpr int64_t kM = 5, kK = 7, kN = 3;
  std::mt19937 rng(3);
  Matrix a = random_ints(kM, kK, rng), at = random_ints(kK, kM, rng);
  Matrix b = random_ints(kK, kN, rng), bt = random_ints(kN, kK, rng);
  Matrix c = random_ints(kM, kN, rng);
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      for (bool accumulate : {false, true}) {
        const TileView va = transpose_a ? at.transposed_view() : a.view();
        const TileView vb = transpose_b ? bt.transposed_view() : b.view();
        ASSERT_EQ(va.rows, kM);
        ASSERT_EQ(vb.cols, kN);
        Matrix d(kM, kN, std::numeric_limits<double>::quiet_NaN());
        const TileView vc = c.view();
        MxuUnit::compute(va, vb, accumulate ? &vc : nullptr, d.view(), Dtype::F64);
        Matrix expected = reference_product(va, vb);
        for (int64_t i = 0; i < kM; ++i)
          for (int64_t j = 0; j < kN; ++j)
            EXPECT_EQ(d(i, j), expected(i, j) + (accumulate ? c(i, j) : 0.0))
                << "transpose_a=" << transpose_a << " transpose_b=" << transpose_b
                << " accumulate=" << accumulate << " at (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(MxuUnit, ComputeOnStridedSubTilesAndInPlaceAccumulate) {
  // A 2x2 tile inside a 3x4 buffer: row_stride 4 skips the columns outside the tile.
  std::vector<double> buffer = {1,   2,   100, 100,  //
                                3,   4,   100, 100,  //
                                100, 100, 100, 100};
  const TileView a{buffer.data(), 2, 2, 4, false};
  std::vector<double> b_data = {5, 6, 7, 8};
  const TileView b{b_data.data(), 2, 2, 2, false};
  std::vector<double> d_data = {10, 20, 30, 40};
  const TileView d{d_data.data(), 2, 2, 2, false};
  MxuUnit::compute(a, b, &d, d, Dtype::F64);  // d += a * b
  EXPECT_EQ(d_data, (std::vector<double>{10 + 1 * 5 + 2 * 7, 20 + 1 * 6 + 2 * 8, 30 + 3 * 5 + 4 * 7,
                                         40 + 3 * 6 + 4 * 8}));
}

TEST(MxuUnit, ComputeRoundsOnceToTheDtype) {
  // f16 has 10 fraction bits: 1 + 2^-10 is representable, 1 + 2^-12 is not (it rounds to 1).
  const double tiny = std::ldexp(1.0, -12);
  std::vector<double> a_data = {1.0, tiny, tiny, tiny, tiny};  // 1 x 5
  std::vector<double> b_data(5, 1.0);                          // 5 x 1
  std::vector<double> d_data(1);
  const TileView a{a_data.data(), 1, 5, 5, false}, b{b_data.data(), 5, 1, 1, false},
      d{d_data.data(), 1, 1, 1, false};
  MxuUnit::compute(a, b, nullptr, d, Dtype::F16);
  // Rounded once: 1 + 4 * 2^-12 = 1 + 2^-10. Rounding after each add would have stayed at 1.
  EXPECT_EQ(d_data[0], 1.0 + std::ldexp(1.0, -10));

  a_data = {1.0, tiny, 0, 0, 0};
  MxuUnit::compute(a, b, nullptr, d, Dtype::F16);
  EXPECT_EQ(d_data[0], 1.0);
  MxuUnit::compute(a, b, nullptr, d, Dtype::F64);
  EXPECT_EQ(d_data[0], 1.0 + tiny);

  constexpr double kF16Max = 65504.0;
  a_data = {kF16Max, 1000.0, 0, 0, 0};
  MxuUnit::compute(a, b, nullptr, d, Dtype::F16);
  EXPECT_EQ(d_data[0], std::numeric_limits<double>::infinity());
}

TEST(MxuUnit, ComputeRejectsMismatchedShapes) {
  std::vector<double> buf(64, 1.0);
  const TileView a{buf.data(), 2, 3, 3, false}, b{buf.data(), 4, 2, 2, false}, d{buf.data(), 2, 2, 2, false};
  try {
    MxuUnit::compute(a, b, nullptr, d, Dtype::F32);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4x2"), std::string::npos) << e.what();
  }
  const TileView b_ok{buf.data(), 3, 2, 2, false}, c_bad{buf.data(), 3, 3, 3, false};
  EXPECT_THROW(MxuUnit::compute(a, b_ok, &c_bad, d, Dtype::F32), std::invalid_argument);
}

// --- params from YAML --------------------------------------------------------------------------------

std::unique_ptr<MxuUnit> build(const std::string& yaml, ParamReader** reader_out = nullptr) {
  register_mxu_models();
  static std::unique_ptr<ParamReader> reader;
  auto source = std::make_shared<ConfigSource>();
  source->file = "machine.yaml";
  reader = std::make_unique<ParamReader>(YAML::Load(yaml), "mxu", source);
  auto unit = Registry<MxuUnit>::instance().create("mxu", *reader, "systolic", BuildContext{});
  reader->finish();
  if (reader_out) *reader_out = reader.get();
  return unit;
}

TEST(MxuUnitParams, DefaultsAreATpuLikeArray) {
  auto unit = build("{}");
  const MxuUnit::Params& p = unit->params();
  EXPECT_EQ(p.geometry.rows, 128);
  EXPECT_EQ(p.geometry.cols, 128);
  EXPECT_EQ(p.geometry.dataflow, mxu::Dataflow::kWeightStationary);
  EXPECT_EQ(p.geometry.accounting, mxu::Accounting::kArray);
  EXPECT_TRUE(p.geometry.double_buffered_stationary);
  EXPECT_EQ(p.arrays, 1);
}

TEST(MxuUnitParams, EveryKeyIsReadWithUnitAndDescription) {
  ParamReader* reader = nullptr;
  auto unit = build("rows: 8\ncols: 4\ndataflow: os\naccounting: ideal\ndouble_buffered: false\narrays: 2\n",
                    &reader);
  const MxuUnit::Params& p = unit->params();
  EXPECT_EQ(p.geometry.rows, 8);
  EXPECT_EQ(p.geometry.cols, 4);
  EXPECT_EQ(p.geometry.dataflow, mxu::Dataflow::kOutputStationary);
  EXPECT_EQ(p.geometry.accounting, mxu::Accounting::kIdeal);
  EXPECT_FALSE(p.geometry.double_buffered_stationary);
  EXPECT_EQ(p.arrays, 2);
  for (const std::string key : {"rows", "cols", "dataflow", "accounting", "double_buffered", "arrays"}) {
    bool found = false;
    for (const ParamDoc& doc : reader->docs()) {
      if (doc.key != "mxu." + key) continue;
      found = true;
      EXPECT_FALSE(doc.description.empty()) << key;
      EXPECT_FALSE(doc.default_value.empty()) << key;
    }
    EXPECT_TRUE(found) << key;
  }
  EXPECT_EQ(unit->matmul(4, 4, 4), 4u + 4u + 4u / 2u - 2u);  // ideal, N split over two arrays
}

TEST(MxuUnitParams, InputStationaryIsSelectable) {
  auto unit = build("dataflow: is\n");
  EXPECT_EQ(unit->params().geometry.dataflow, mxu::Dataflow::kInputStationary);
}

TEST(MxuUnitParams, UnknownKeyIsRejectedByFinish) {
  try {
    build("rows: 8\ncolumns: 4\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mxu.columns"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("machine.yaml:2"), std::string::npos) << e.what();
  }
}

TEST(MxuUnitParams, TheFeedIsConfigurable) {
  auto unit = build("dataflow: os\nhand_off: cell\ndeal: m\n");
  EXPECT_EQ(unit->feed(), (MxuUnit::Feed{mxu::HandOff::kCell, MxuUnit::Deal::kM}));
  auto per_array = build("arrays: 4\nshared_operand: per_array\n");
  EXPECT_EQ(per_array->feed(),
            (MxuUnit::Feed{mxu::HandOff::kTile, MxuUnit::Deal::kN, MxuUnit::SharedOperand::kPerArray}));
  EXPECT_EQ(per_array->shared_operand_index(), 0);  // N dealt: every array needs all of A
  EXPECT_EQ(per_array->shared_operand_reads(64, 3), 3);
  EXPECT_EQ(per_array->shared_operand_reads(64, 64), 4);
  EXPECT_EQ(build("arrays: 4\n")->shared_operand_reads(64, 64), 1);
  EXPECT_EQ(build("{}")->feed(), (MxuUnit::Feed{mxu::HandOff::kTile, MxuUnit::Deal::kN}));
  try {
    build("dataflow: ws\nhand_off: cell\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mxu.hand_off"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dataflow: os"), std::string::npos) << e.what();
  }
}

TEST(MxuUnitParams, BadValuesAreRejected) {
  EXPECT_THROW(build("deal: k\n"), InputError);
  EXPECT_THROW(build("shared_operand: twice\n"), InputError);
  EXPECT_THROW(build("hand_off: row\n"), InputError);
  EXPECT_THROW(build("dataflow: rs\n"), InputError);
  EXPECT_THROW(build("arrays: 0\n"), InputError);
  EXPECT_THROW(build("rows: 1.5\n"), InputError);
}

}  // namespace
}  // namespace attnsim
