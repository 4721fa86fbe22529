// MXU timing model tests. The closed form (models/mxu) is checked three ways: against the tick-level
// emulator on small shapes (cycles, stalls, folds and product values), against a row-by-row event
// recurrence on shapes too large to emulate, and against seed 003's published MXU figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/mxu/mxu_timing.h"
#include "tests/mxu/systolic_emulator.h"

namespace attnsim::mxu {
namespace {

using testing::emulate_matmul;
using testing::EmulatorRun;
using testing::Matrix;
using testing::reference_matmul;

constexpr uint64_t kRandomSeed = 0x5eed003;
constexpr int64_t kMaxEmulatedExtent = 12;
constexpr int64_t kMaxEmulatedArraySide = 6;
constexpr int kEmulatedCasesPerConfiguration = 300;
// Small integers keep every product exact in double, so values compare with ==.
constexpr int kMaxAbsElement = 4;

int64_t uniform(std::mt19937_64& rng, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}

Matrix random_matrix(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  Matrix matrix(rows, cols);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < cols; ++col)
      matrix.at(row, col) = static_cast<double>(uniform(rng, -kMaxAbsElement, kMaxAbsElement));
  }
  return matrix;
}

MxuGeometry array_geometry(int64_t rows, int64_t cols, Dataflow dataflow, bool double_buffered) {
  MxuGeometry geometry;
  geometry.rows = rows;
  geometry.cols = cols;
  geometry.dataflow = dataflow;
  geometry.double_buffered_stationary = double_buffered;
  return geometry;
}

std::string dataflow_name(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kWeightStationary:
      return "WeightStationary";
    case Dataflow::kOutputStationary:
      return "OutputStationary";
    case Dataflow::kInputStationary:
      return "InputStationary";
  }
  return "Unknown";
}

int64_t ceil_div(int64_t numerator, int64_t denominator) {
  return (numerator + denominator - 1) / denominator;
}

// ------------------------------------------------------------------ seed 003's single pass

TEST(MxuSinglePass, SeedExampleStreamsInMPlusKPlusNMinusTwo) {
  // Seed 003's walkthrough: (2,3)@(3,2) on a 3x2 weight-stationary array.
  constexpr int64_t kM = 2;
  constexpr int64_t kK = 3;
  constexpr int64_t kN = 2;
  // The seed's emulator ticks once more after the last output before it sees `done` and prints 6.
  constexpr uint64_t kSeedReportedTicks = 6;
  constexpr uint64_t kSeedTrailingIdleTick = 1;
  constexpr uint64_t kStreaming = kM + kK + kN - 2;
  const MxuGeometry geometry = array_geometry(kK, kN, Dataflow::kWeightStationary, true);
  Matrix a(kM, kK);
  Matrix b(kK, kN);
  // The seed's operands: A = [[1,2,3],[4,5,6]], B = [[1,0],[0,1],[1,1]] gives [[4,5],[10,11]].
  const std::vector<std::vector<double>> a_values = {{1, 2, 3}, {4, 5, 6}};
  const std::vector<std::vector<double>> b_values = {{1, 0}, {0, 1}, {1, 1}};
  for (int64_t row = 0; row < kM; ++row) {
    for (int64_t col = 0; col < kK; ++col) a.at(row, col) = a_values[row][col];
  }
  for (int64_t row = 0; row < kK; ++row) {
    for (int64_t col = 0; col < kN; ++col) b.at(row, col) = b_values[row][col];
  }

  const MatmulTiming timing = time_matmul(geometry, kM, kK, kN);
  const EmulatorRun run = emulate_matmul(geometry, a, b);

  EXPECT_EQ(run.product, reference_matmul(a, b));
  // Our cycles also include loading the weights, one row per cycle, before anything streams.
  EXPECT_EQ(timing.stall_cycles, static_cast<uint64_t>(kK));
  EXPECT_EQ(timing.cycles - timing.stall_cycles, kStreaming);
  EXPECT_EQ(timing.cycles - timing.stall_cycles + kSeedTrailingIdleTick, kSeedReportedTicks);
  EXPECT_EQ(run.cycles, timing.cycles);
  EXPECT_EQ(run.stall_cycles, timing.stall_cycles);
}

TEST(MxuSinglePass, RandomFittingShapesMatchTheSeedFormula) {
  std::mt19937_64 rng(kRandomSeed);
  for (int trial = 0; trial < kEmulatedCasesPerConfiguration; ++trial) {
    const int64_t rows = uniform(rng, 1, kMaxEmulatedArraySide);
    const int64_t cols = uniform(rng, 1, kMaxEmulatedArraySide);
    const int64_t m = uniform(rng, 1, kMaxEmulatedExtent);
    const bool double_buffered = uniform(rng, 0, 1) == 1;
    SCOPED_TRACE("trial " + std::to_string(trial));

    // WS: one fold whenever k <= rows and n <= cols; the stall is exactly its weight load.
    {
      const int64_t k = uniform(rng, 1, rows);
      const int64_t n = uniform(rng, 1, cols);
      const MxuGeometry geometry = array_geometry(rows, cols, Dataflow::kWeightStationary, double_buffered);
      const MatmulTiming timing = time_matmul(geometry, m, k, n);
      EXPECT_EQ(timing.folds, 1u);
      EXPECT_EQ(timing.stall_cycles, static_cast<uint64_t>(k));
      EXPECT_EQ(timing.cycles - timing.stall_cycles, static_cast<uint64_t>(m + k + n - 2));
      const Matrix a = random_matrix(rng, m, k);
      const Matrix b = random_matrix(rng, k, n);
      const EmulatorRun run = emulate_matmul(geometry, a, b);
      EXPECT_EQ(run.cycles, timing.cycles);
      EXPECT_EQ(run.product, reference_matmul(a, b));
    }
    // OS: one pass whenever m <= rows and n <= cols; compute M + K + N - 2, then m rows drain out.
    {
      const int64_t m_fit = uniform(rng, 1, rows);
      const int64_t n = uniform(rng, 1, cols);
      const int64_t k = uniform(rng, 1, kMaxEmulatedExtent);
      const MxuGeometry geometry = array_geometry(rows, cols, Dataflow::kOutputStationary, double_buffered);
      const MatmulTiming timing = time_matmul(geometry, m_fit, k, n);
      EXPECT_EQ(timing.folds, 1u);
      EXPECT_EQ(timing.stall_cycles, 0u);
      EXPECT_EQ(timing.cycles, static_cast<uint64_t>(m_fit + k + n - 2 + m_fit));
      const Matrix a = random_matrix(rng, m_fit, k);
      const Matrix b = random_matrix(rng, k, n);
      const EmulatorRun run = emulate_matmul(geometry, a, b);
      EXPECT_EQ(run.cycles, timing.cycles);
      EXPECT_EQ(run.product, reference_matmul(a, b));
    }
  }
}

// ------------------------------------------------------------------ emulator == closed form

struct Configuration {
  Dataflow dataflow;
  bool double_buffered;
  HandOff hand_off = HandOff::kTile;
};

class MxuEmulatorAgreement : public ::testing::TestWithParam<Configuration> {};

TEST_P(MxuEmulatorAgreement, RandomShapesMatchCyclesStallsFoldsAndValues) {
  const Configuration configuration = GetParam();
  std::mt19937_64 rng(kRandomSeed + static_cast<uint64_t>(configuration.dataflow) * 2 +
                      (configuration.double_buffered ? 1 : 0) +
                      (configuration.hand_off == HandOff::kCell ? 100 : 0));
  for (int trial = 0; trial < kEmulatedCasesPerConfiguration; ++trial) {
    const int64_t rows = uniform(rng, 1, kMaxEmulatedArraySide);
    const int64_t cols = uniform(rng, 1, kMaxEmulatedArraySide);
    const int64_t m = uniform(rng, 1, kMaxEmulatedExtent);
    const int64_t k = uniform(rng, 1, kMaxEmulatedExtent);
    const int64_t n = uniform(rng, 1, kMaxEmulatedExtent);
    MxuGeometry geometry = array_geometry(rows, cols, configuration.dataflow, configuration.double_buffered);
    geometry.hand_off = configuration.hand_off;
    SCOPED_TRACE("array " + std::to_string(rows) + "x" + std::to_string(cols) + ", M=" + std::to_string(m) +
                 " K=" + std::to_string(k) + " N=" + std::to_string(n));
    const Matrix a = random_matrix(rng, m, k);
    const Matrix b = random_matrix(rng, k, n);

    const MatmulTiming timing = time_matmul(geometry, m, k, n);
    const EmulatorRun run = emulate_matmul(geometry, a, b);

    EXPECT_EQ(run.product, reference_matmul(a, b));
    EXPECT_EQ(run.cycles, timing.cycles);
    EXPECT_EQ(run.stall_cycles, timing.stall_cycles);
    EXPECT_EQ(run.folds, timing.folds);
    EXPECT_EQ(timing.macs, static_cast<uint64_t>(m * k * n));
    EXPECT_LE(utilisation(timing, geometry), 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDataflows, MxuEmulatorAgreement,
                         ::testing::Values(Configuration{Dataflow::kWeightStationary, true},
                                           Configuration{Dataflow::kWeightStationary, false},
                                           Configuration{Dataflow::kOutputStationary, true},
                                           Configuration{Dataflow::kOutputStationary, false},
                                           Configuration{Dataflow::kInputStationary, true},
                                           Configuration{Dataflow::kInputStationary, false},
                                           Configuration{Dataflow::kOutputStationary, true, HandOff::kCell}),
                         [](const ::testing::TestParamInfo<Configuration>& info) {
                           if (info.param.hand_off == HandOff::kCell)
                             return dataflow_name(info.param.dataflow) + "CellHandOff";
                           return dataflow_name(info.param.dataflow) +
                                  (info.param.double_buffered ? "DoubleBuffered" : "SingleBuffered");
                         });

// ------------------------------------------------------------------ closed form == event recurrence

struct RecurrenceResult {
  int64_t cycles;
  int64_t stall_cycles;
  int64_t folds;
};

// Weight stationary replayed fold by fold and weight row by weight row from the documented rules, with no
// assumption that only neighbouring folds interact: each physical row remembers the last fold written to it.
RecurrenceResult weight_stationary_recurrence(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols,
                                              bool double_buffered) {
  struct RowWriter {
    int64_t fold_start = -1;
    int64_t top_row = 0;
  };
  std::vector<RowWriter> writers(rows);
  int64_t previous_start = -1;
  int64_t previous_window = 0;
  int64_t cycles = 0;
  int64_t windows = 0;
  int64_t folds = 0;
  for (int64_t n_offset = 0; n_offset < n; n_offset += cols) {
    for (int64_t k_offset = 0; k_offset < k; k_offset += rows) {
      const int64_t k_fold = std::min(rows, k - k_offset);
      const int64_t n_fold = std::min(cols, n - n_offset);
      const int64_t top_row = rows - k_fold;
      const int64_t load_start = previous_start < 0 ? 0 : previous_start;
      int64_t write = load_start - 1;
      for (int64_t tile_row = 0; tile_row < k_fold; ++tile_row) {
        const int64_t row = top_row + tile_row;
        int64_t earliest = write + 1;
        const RowWriter& writer = writers[row];
        if (writer.fold_start >= 0) {
          // The writer's first (double buffered) or last (single) activation reaches the row's last loaded
          // column; the row may be rewritten in that cycle.
          const int64_t wave = double_buffered ? 0 : m - 1;
          earliest = std::max(earliest, writer.fold_start + wave + (row - writer.top_row) + (n_fold - 1));
        }
        write = earliest;
      }
      const int64_t loaded = write + 1;
      const int64_t start = previous_start < 0 ? loaded : std::max(loaded, previous_start + previous_window);
      for (int64_t row = top_row; row < rows; ++row) writers[row] = {start, top_row};
      cycles = std::max(cycles, start + m + k_fold + n_fold - 2);
      previous_start = start;
      previous_window = m + k_fold - 1;
      windows += previous_window;
      ++folds;
    }
  }
  return {cycles, previous_start + previous_window - windows, folds};
}

RecurrenceResult output_stationary_recurrence(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols,
                                              bool double_buffered) {
  int64_t accumulators_free = 0;  // cycle the next pass may start
  int64_t drain_plane_free = 0;
  int64_t previous_start = -1;
  int64_t previous_window = 0;
  int64_t cycles = 0;
  int64_t windows = 0;
  int64_t folds = 0;
  for (int64_t m_offset = 0; m_offset < m; m_offset += rows) {
    for (int64_t n_offset = 0; n_offset < n; n_offset += cols) {
      const int64_t m_pass = std::min(rows, m - m_offset);
      const int64_t n_pass = std::min(cols, n - n_offset);
      const int64_t start =
          previous_start < 0 ? 0 : std::max(accumulators_free, previous_start + previous_window);
      const int64_t macs_done = start + k + m_pass + n_pass - 2;
      const int64_t hand_off = double_buffered ? std::max(macs_done, drain_plane_free) : macs_done;
      drain_plane_free = hand_off + m_pass;
      accumulators_free = double_buffered ? hand_off : drain_plane_free;
      cycles = std::max(cycles, drain_plane_free);
      previous_start = start;
      previous_window = k + std::max(m_pass, n_pass) - 1;
      windows += previous_window;
      ++folds;
    }
  }
  return {cycles, previous_start + previous_window - windows, folds};
}

// Cell hand-off replayed pass by pass: a pass starts K cycles after the one before it, and its last cell
// writes its sum out K + m + n - 2 cycles after its start.
RecurrenceResult cell_hand_off_recurrence(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols) {
  int64_t start = -k;
  int64_t cycles = 0;
  int64_t folds = 0;
  for (int64_t m_offset = 0; m_offset < m; m_offset += rows) {
    for (int64_t n_offset = 0; n_offset < n; n_offset += cols) {
      start += k;
      cycles = std::max(cycles, start + k + std::min(rows, m - m_offset) + std::min(cols, n - n_offset) - 1);
      ++folds;
    }
  }
  return {cycles, 0, folds};
}

RecurrenceResult recurrence(const MxuGeometry& geometry, int64_t m, int64_t k, int64_t n) {
  const bool double_buffered = geometry.double_buffered_stationary;
  if (geometry.hand_off == HandOff::kCell)
    return cell_hand_off_recurrence(m, k, n, geometry.rows, geometry.cols);
  switch (geometry.dataflow) {
    case Dataflow::kWeightStationary:
      return weight_stationary_recurrence(m, k, n, geometry.rows, geometry.cols, double_buffered);
    case Dataflow::kOutputStationary:
      return output_stationary_recurrence(m, k, n, geometry.rows, geometry.cols, double_buffered);
    case Dataflow::kInputStationary:
      return weight_stationary_recurrence(n, k, m, geometry.rows, geometry.cols, double_buffered);
  }
  throw std::invalid_argument("unknown dataflow");
}

TEST(MxuClosedForm, MatchesEventRecurrenceBeyondEmulatorSizes) {
  constexpr int kCases = 400;
  constexpr int64_t kMaxExtent = 3000;
  constexpr int64_t kMaxArraySide = 48;
  constexpr int64_t kMaxSmallExtent = 4;  // also cover streams shorter than the array
  const Dataflow dataflows[] = {Dataflow::kWeightStationary, Dataflow::kOutputStationary,
                                Dataflow::kInputStationary};
  std::mt19937_64 rng(kRandomSeed);
  for (int trial = 0; trial < kCases; ++trial) {
    const int64_t rows = uniform(rng, 1, kMaxArraySide);
    const int64_t cols = uniform(rng, 1, kMaxArraySide);
    auto extent = [&] {
      return uniform(rng, 0, 1) == 1 ? uniform(rng, 1, kMaxSmallExtent) : uniform(rng, 1, kMaxExtent);
    };
    const int64_t m = extent();
    const int64_t k = extent();
    const int64_t n = extent();
    for (const Dataflow dataflow : dataflows) {
      for (const bool double_buffered : {true, false}) {
        const MxuGeometry geometry = array_geometry(rows, cols, dataflow, double_buffered);
        SCOPED_TRACE(dataflow_name(dataflow) + (double_buffered ? " double" : " single") + " array " +
                     std::to_string(rows) + "x" + std::to_string(cols) + ", M=" + std::to_string(m) +
                     " K=" + std::to_string(k) + " N=" + std::to_string(n));
        const MatmulTiming timing = time_matmul(geometry, m, k, n);
        const RecurrenceResult expected = recurrence(geometry, m, k, n);
        EXPECT_EQ(timing.cycles, static_cast<uint64_t>(expected.cycles));
        EXPECT_EQ(timing.stall_cycles, static_cast<uint64_t>(expected.stall_cycles));
        EXPECT_EQ(timing.folds, static_cast<uint64_t>(expected.folds));
      }
    }
    MxuGeometry cells = array_geometry(rows, cols, Dataflow::kOutputStationary, true);
    cells.hand_off = HandOff::kCell;
    SCOPED_TRACE("cell hand-off array " + std::to_string(rows) + "x" + std::to_string(cols) +
                 ", M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
    const MatmulTiming timing = time_matmul(cells, m, k, n);
    const RecurrenceResult expected = recurrence(cells, m, k, n);
    EXPECT_EQ(timing.cycles, static_cast<uint64_t>(expected.cycles));
    EXPECT_EQ(timing.stall_cycles, 0u);
    EXPECT_EQ(timing.folds, static_cast<uint64_t>(expected.folds));
  }
}

// A tensor core fed by wgmma: 16 x 32 passes stream K cycles apart, where handing off whole tiles pays each
// pass's skew (K + m + n - 2) again.
TEST(MxuCellHandOff, PassesStreamBackToBackAtTheArraysPeak) {
  constexpr int64_t kRows = 16, kCols = 32, kM = 16, kK = 128, kN = 128;
  MxuGeometry tiles = array_geometry(kRows, kCols, Dataflow::kOutputStationary, true);
  MxuGeometry cells = tiles;
  cells.hand_off = HandOff::kCell;
  constexpr int64_t kPasses = kN / kCols;
  // Hand-off by tile: each pass computes for K + m + n - 2 cycles, then the last tile drains m rows.
  EXPECT_EQ(time_matmul(tiles, kM, kK, kN).cycles,
            static_cast<uint64_t>(kPasses * (kK + kM + kCols - 2) + kM));
  // By cell: passes K apart, the last one's skew once.
  EXPECT_EQ(time_matmul(cells, kM, kK, kN).cycles, static_cast<uint64_t>(kPasses * kK + kM + kCols - 1));
  EXPECT_GT(utilisation(time_matmul(cells, kM, kK, kN), cells), 0.9);
}

TEST(MxuCellHandOff, NeedsTheOutputStationaryDataflow) {
  for (const Dataflow dataflow : {Dataflow::kWeightStationary, Dataflow::kInputStationary}) {
    MxuGeometry geometry = array_geometry(4, 4, dataflow, true);
    geometry.hand_off = HandOff::kCell;
    EXPECT_THROW(time_matmul(geometry, 2, 2, 2), std::invalid_argument);
    EXPECT_THROW(emulate_matmul(geometry, Matrix(2, 2), Matrix(2, 2)), std::invalid_argument);
  }
}

// ------------------------------------------------------------------ seed 003's MXU table (ideal accounting)

constexpr int64_t kSeedSeqLen = 512;
constexpr int64_t kSeedHeadDim = 64;
constexpr int64_t kSeedMxuSide = 128;

struct ScheduleTotals {
  uint64_t cycles = 0;
  uint64_t macs = 0;
  void add(const MatmulTiming& timing) {
    cycles += timing.cycles;
    macs += timing.macs;
  }
};

// Causal flash attention: only tiles on or below the diagonal run, each doing S = Q·K^T then P·V.
ScheduleTotals flash_attention_schedule(const MxuGeometry& geometry, int64_t block) {
  const int64_t blocks_per_side = kSeedSeqLen / block;
  const int64_t unmasked_tiles = blocks_per_side * (blocks_per_side + 1) / 2;
  ScheduleTotals totals;
  for (int64_t tile = 0; tile < unmasked_tiles; ++tile) {
    totals.add(time_matmul(geometry, block, kSeedHeadDim, block));  // (block,d)@(d,block)
    totals.add(time_matmul(geometry, block, block, kSeedHeadDim));  // (block,block)@(block,d)
  }
  return totals;
}

// Standard attention materialises the whole n×n score matrix, masked entries included.
ScheduleTotals standard_attention_schedule(const MxuGeometry& geometry) {
  ScheduleTotals totals;
  totals.add(time_matmul(geometry, kSeedSeqLen, kSeedHeadDim, kSeedSeqLen));
  totals.add(time_matmul(geometry, kSeedSeqLen, kSeedSeqLen, kSeedHeadDim));
  return totals;
}

MxuGeometry seed_ideal_geometry() {
  MxuGeometry geometry;
  geometry.rows = kSeedMxuSide;
  geometry.cols = kSeedMxuSide;
  geometry.accounting = Accounting::kIdeal;
  return geometry;
}

TEST(MxuIdeal, ReproducesSeedMxuCycleTable) {
  // Seed 003's table for n=512, d=64, causal.
  constexpr uint64_t kSeedCyclesBlock64 = 13'680;
  constexpr uint64_t kSeedCyclesBlock128 = 6'360;
  constexpr uint64_t kSeedCyclesStandard = 2'172;
  constexpr int64_t kSmallBlock = 64;
  constexpr int64_t kLargeBlock = 128;
  const MxuGeometry geometry = seed_ideal_geometry();
  EXPECT_EQ(flash_attention_schedule(geometry, kSmallBlock).cycles, kSeedCyclesBlock64);
  EXPECT_EQ(flash_attention_schedule(geometry, kLargeBlock).cycles, kSeedCyclesBlock128);
  EXPECT_EQ(standard_attention_schedule(geometry).cycles, kSeedCyclesStandard);
}

TEST(MxuIdeal, ReproducesSeedUtilisation) {
  // The seed prints 8.4 %, 20.1 % and 94.3 %, rounded to 0.1 %; utilisation = MACs / (128² · cycles).
  constexpr double kSeedUtilisationBlock64 = 0.084;
  constexpr double kSeedUtilisationBlock128 = 0.201;
  constexpr double kSeedUtilisationStandard = 0.943;
  constexpr double kHalfPrintedDigit = 0.0005;
  constexpr int64_t kSmallBlock = 64;
  constexpr int64_t kLargeBlock = 128;
  const MxuGeometry geometry = seed_ideal_geometry();
  auto schedule_utilisation = [&](const ScheduleTotals& totals) {
    return utilisation(MatmulTiming{totals.cycles, 0, 0, totals.macs}, geometry);
  };
  EXPECT_NEAR(schedule_utilisation(flash_attention_schedule(geometry, kSmallBlock)), kSeedUtilisationBlock64,
              kHalfPrintedDigit);
  EXPECT_NEAR(schedule_utilisation(flash_attention_schedule(geometry, kLargeBlock)), kSeedUtilisationBlock128,
              kHalfPrintedDigit);
  EXPECT_NEAR(schedule_utilisation(standard_attention_schedule(geometry)), kSeedUtilisationStandard,
              kHalfPrintedDigit);
}

TEST(MxuIdeal, IgnoresArraySizeDataflowAndBuffering) {
  constexpr int64_t kM = 1000;
  constexpr int64_t kK = 300;
  constexpr int64_t kN = 7;
  const MatmulTiming expected{kM + kK + kN - 2, 1, 0, kM * kK * kN};
  for (const int64_t side : {int64_t{1}, int64_t{8}, kSeedMxuSide}) {
    for (const Dataflow dataflow :
         {Dataflow::kWeightStationary, Dataflow::kOutputStationary, Dataflow::kInputStationary}) {
      MxuGeometry geometry = array_geometry(side, side, dataflow, side % 2 == 0);
      geometry.accounting = Accounting::kIdeal;
      EXPECT_EQ(time_matmul(geometry, kM, kK, kN), expected);
    }
  }
}

// ------------------------------------------------------------------ properties

TEST(MxuUtilisation, AtMostOneAndApproachesTileFillForLongStreams) {
  constexpr int64_t kSide = 128;
  constexpr int64_t kLongStream = 65'536;
  const MxuGeometry geometry = array_geometry(kSide, kSide, Dataflow::kWeightStationary, true);

  // One fold that fills the array: load K rows, then M + K + N - 2 cycles of streaming.
  const MatmulTiming full = time_matmul(geometry, kLongStream, kSide, kSide);
  const double expected_cycles = kSide + (kLongStream + kSide + kSide - 2);
  EXPECT_DOUBLE_EQ(utilisation(full, geometry),
                   static_cast<double>(kLongStream) * kSide * kSide / (kSide * kSide * expected_cycles));
  EXPECT_LE(utilisation(full, geometry), 1.0);

  // A half-height tile leaves half the rows idle: under half the PEs can be busy.
  constexpr int64_t kHalf = kSide / 2;
  const MatmulTiming half = time_matmul(geometry, kLongStream, kHalf, kSide);
  const double half_cycles = kHalf + (kLongStream + kHalf + kSide - 2);
  EXPECT_DOUBLE_EQ(utilisation(half, geometry),
                   static_cast<double>(kLongStream) * kHalf * kSide / (kSide * kSide * half_cycles));
  EXPECT_LT(utilisation(half, geometry), 0.5);

  std::mt19937_64 rng(kRandomSeed);
  constexpr int kCases = 1000;
  constexpr int64_t kMaxExtent = 100'000;
  for (int trial = 0; trial < kCases; ++trial) {
    MxuGeometry random_geometry =
        array_geometry(uniform(rng, 1, kSide), uniform(rng, 1, kSide),
                       static_cast<Dataflow>(uniform(rng, 0, 2)), uniform(rng, 0, 1) == 1);
    const MatmulTiming timing = time_matmul(random_geometry, uniform(rng, 1, kMaxExtent),
                                            uniform(rng, 1, kMaxExtent), uniform(rng, 1, kMaxExtent));
    EXPECT_GT(utilisation(timing, random_geometry), 0.0);
    EXPECT_LE(utilisation(timing, random_geometry), 1.0);
  }
}

TEST(MxuDoubleBuffering, NeverSlowerAndHidesTheDrainBetweenFolds) {
  constexpr int64_t kRows = 16;
  constexpr int64_t kCols = 8;
  constexpr int64_t kFoldsAlongK = 5;
  constexpr int64_t kLongStream = 40;  // >= kCols, so the input port, not the weight load, bounds the gap
  // WS, equal full folds along K only: single-buffered each fold waits for the previous one's last
  // activation to cross the row (gap M + k + n - 2); double-buffered only for the input port (M + k - 1).
  {
    const MatmulTiming single = time_matmul(array_geometry(kRows, kCols, Dataflow::kWeightStationary, false),
                                            kLongStream, kFoldsAlongK * kRows, kCols);
    const MatmulTiming doubled = time_matmul(array_geometry(kRows, kCols, Dataflow::kWeightStationary, true),
                                             kLongStream, kFoldsAlongK * kRows, kCols);
    EXPECT_EQ(single.cycles - doubled.cycles, static_cast<uint64_t>((kFoldsAlongK - 1) * (kCols - 1)));
  }
  // OS, equal full passes: single-buffered each pass also waits for its own m-row drain.
  {
    constexpr int64_t kPassesAlongM = 3;
    constexpr int64_t kPassesAlongN = 2;
    constexpr int64_t kK = 9;
    const int64_t m = kPassesAlongM * kRows;
    const int64_t n = kPassesAlongN * kCols;
    const MatmulTiming single =
        time_matmul(array_geometry(kRows, kCols, Dataflow::kOutputStationary, false), m, kK, n);
    const MatmulTiming doubled =
        time_matmul(array_geometry(kRows, kCols, Dataflow::kOutputStationary, true), m, kK, n);
    EXPECT_EQ(single.cycles - doubled.cycles,
              static_cast<uint64_t>((kPassesAlongM * kPassesAlongN - 1) * kRows));
  }
  std::mt19937_64 rng(kRandomSeed);
  constexpr int kCases = 2000;
  constexpr int64_t kMaxSide = 32;
  constexpr int64_t kMaxExtent = 500;
  for (int trial = 0; trial < kCases; ++trial) {
    const int64_t rows = uniform(rng, 1, kMaxSide);
    const int64_t cols = uniform(rng, 1, kMaxSide);
    const auto dataflow = static_cast<Dataflow>(uniform(rng, 0, 2));
    const int64_t m = uniform(rng, 1, kMaxExtent);
    const int64_t k = uniform(rng, 1, kMaxExtent);
    const int64_t n = uniform(rng, 1, kMaxExtent);
    EXPECT_LE(time_matmul(array_geometry(rows, cols, dataflow, true), m, k, n).cycles,
              time_matmul(array_geometry(rows, cols, dataflow, false), m, k, n).cycles);
  }
}

TEST(MxuDocs, WeightStationaryWorkedExampleInDocsMxuMd) {
  // docs/models/mxu.md: WS, M=6 K=6 N=3 on a 4x4 array -> folds of k=4 then k=2 rows, both n=3.
  constexpr int64_t kSide = 4;
  constexpr int64_t kM = 6;
  constexpr int64_t kK = 6;
  constexpr int64_t kN = 3;
  constexpr int64_t kFirstK = kSide;
  constexpr int64_t kSecondK = kK - kSide;
  constexpr int64_t kFirstStart = kFirstK;  // its load, one row per cycle
  constexpr int64_t kDoubleGap = std::max({kSecondK, kFirstK + kN - 1, kM + kFirstK - 1});
  constexpr int64_t kSingleGap = std::max(kSecondK, kM + kFirstK + kN - 2);
  constexpr int64_t kWindows = (kM + kFirstK - 1) + (kM + kSecondK - 1);
  auto check = [&](bool double_buffered, int64_t gap, uint64_t documented_cycles, uint64_t documented_stall) {
    const int64_t second_start = kFirstStart + gap;
    const int64_t cycles =
        std::max(kFirstStart + kM + kFirstK + kN - 2, second_start + kM + kSecondK + kN - 2);
    const int64_t stall = second_start + (kM + kSecondK - 1) - kWindows;
    const MxuGeometry geometry = array_geometry(kSide, kSide, Dataflow::kWeightStationary, double_buffered);
    const MatmulTiming timing = time_matmul(geometry, kM, kK, kN);
    EXPECT_EQ(timing.cycles, static_cast<uint64_t>(cycles));
    EXPECT_EQ(timing.stall_cycles, static_cast<uint64_t>(stall));
    EXPECT_EQ(timing.cycles, documented_cycles);
    EXPECT_EQ(timing.stall_cycles, documented_stall);
    std::mt19937_64 rng(kRandomSeed);
    EXPECT_EQ(emulate_matmul(geometry, random_matrix(rng, kM, kK), random_matrix(rng, kK, kN)).cycles,
              timing.cycles);
  };
  // The figures printed in the doc's table.
  constexpr uint64_t kDocCyclesDouble = 22;
  constexpr uint64_t kDocStallDouble = 4;
  constexpr uint64_t kDocCyclesSingle = 24;
  constexpr uint64_t kDocStallSingle = 6;
  check(true, kDoubleGap, kDocCyclesDouble, kDocStallDouble);
  check(false, kSingleGap, kDocCyclesSingle, kDocStallSingle);
}

TEST(MxuDocs, OutputStationaryWorkedExampleInDocsMxuMd) {
  // docs/models/mxu.md: OS, M=5 K=3 N=2 on a 4x4 array -> passes of m=4 then m=1 rows, both n=2.
  constexpr int64_t kSide = 4;
  constexpr int64_t kM = 5;
  constexpr int64_t kK = 3;
  constexpr int64_t kN = 2;
  constexpr int64_t kFirstM = kSide;
  constexpr int64_t kSecondM = kM - kSide;
  constexpr int64_t kFirstCompute = kK + kFirstM + kN - 2;
  constexpr int64_t kSecondCompute = kK + kSecondM + kN - 2;
  constexpr int64_t kFirstWindow = kK + std::max(kFirstM, kN) - 1;
  // Double buffered: pass 1 starts at pass 0's hand-off; its own hand-off waits for pass 0's drain.
  constexpr int64_t kDoubleSecondStart = kFirstCompute;
  constexpr int64_t kDoubleSecondHandOff =
      std::max(kDoubleSecondStart + kSecondCompute, kFirstCompute + kFirstM);
  // Single buffered: pass 1 starts once pass 0 has drained.
  constexpr int64_t kSingleSecondStart = kFirstCompute + kFirstM;
  struct Expected {
    bool double_buffered;
    int64_t cycles;
    int64_t stall;
    uint64_t documented_cycles;
    uint64_t documented_stall;
  };
  // The figures printed in the doc. Stalls: the gap between pass 0's input window and pass 1's start.
  constexpr uint64_t kDocCyclesDouble = 12;
  constexpr uint64_t kDocStallDouble = 1;
  constexpr uint64_t kDocCyclesSingle = 16;
  constexpr uint64_t kDocStallSingle = 5;
  const Expected cases[] = {
      {true, kDoubleSecondHandOff + kSecondM, kDoubleSecondStart - kFirstWindow, kDocCyclesDouble,
       kDocStallDouble},
      {false, kSingleSecondStart + kSecondCompute + kSecondM, kSingleSecondStart - kFirstWindow,
       kDocCyclesSingle, kDocStallSingle},
  };
  // Cell hand-off: pass 1 starts K cycles after pass 0; each pass's last cell writes out at start + K + m + n
  // - 2, so the run is max(K + 4 + 2 - 1, K + K + 1 + 2 - 1) = 8 cycles long, without a stall.
  {
    MxuGeometry cells = array_geometry(kSide, kSide, Dataflow::kOutputStationary, true);
    cells.hand_off = HandOff::kCell;
    constexpr uint64_t kDocCyclesCells = 8;
    const MatmulTiming timing = time_matmul(cells, kM, kK, kN);
    EXPECT_EQ(timing.cycles,
              static_cast<uint64_t>(std::max(kK + kFirstM + kN - 1, 2 * kK + kSecondM + kN - 1)));
    EXPECT_EQ(timing.cycles, kDocCyclesCells);
    EXPECT_EQ(timing.stall_cycles, 0u);
    std::mt19937_64 rng(kRandomSeed);
    EXPECT_EQ(emulate_matmul(cells, random_matrix(rng, kM, kK), random_matrix(rng, kK, kN)).cycles,
              timing.cycles);
  }
  for (const Expected& expected : cases) {
    const MxuGeometry geometry =
        array_geometry(kSide, kSide, Dataflow::kOutputStationary, expected.double_buffered);
    const MatmulTiming timing = time_matmul(geometry, kM, kK, kN);
    EXPECT_EQ(timing.cycles, static_cast<uint64_t>(expected.cycles));
    EXPECT_EQ(timing.stall_cycles, static_cast<uint64_t>(expected.stall));
    EXPECT_EQ(timing.cycles, expected.documented_cycles);
    EXPECT_EQ(timing.stall_cycles, expected.documented_stall);
    std::mt19937_64 rng(kRandomSeed);
    EXPECT_EQ(emulate_matmul(geometry, random_matrix(rng, kM, kK), random_matrix(rng, kK, kN)).cycles,
              timing.cycles);
  }
}

TEST(MxuPerformance, HugeShapesCostConstantTime) {
  constexpr int64_t kSide = 128;
  constexpr int64_t kHuge = 1'000'000;
  constexpr int kCalls = 30'000;
  // A loop over folds would need ~6e7 iterations per call here; O(1) needs well under a microsecond.
  constexpr auto kBudget = std::chrono::milliseconds(100);
  uint64_t checksum = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (int call = 0; call < kCalls; ++call) {
    const auto dataflow = static_cast<Dataflow>(call % 3);
    const MxuGeometry geometry = array_geometry(kSide, kSide, dataflow, call % 2 == 0);
    checksum += time_matmul(geometry, kHuge - call, kHuge, kHuge + call).cycles;
  }
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  EXPECT_GT(checksum, 0u);
  EXPECT_LT(elapsed, kBudget);

  const MxuGeometry geometry = array_geometry(kSide, kSide, Dataflow::kWeightStationary, true);
  const MatmulTiming timing = time_matmul(geometry, kHuge, kHuge, kHuge);
  EXPECT_EQ(timing.folds, static_cast<uint64_t>(ceil_div(kHuge, kSide) * ceil_div(kHuge, kSide)));
  EXPECT_EQ(timing.macs, static_cast<uint64_t>(kHuge) * kHuge * kHuge);
  EXPECT_LE(utilisation(timing, geometry), 1.0);
}

TEST(MxuValidation, RejectsEmptyExtentsArraysAndOverflow) {
  const MxuGeometry geometry;
  EXPECT_THROW(time_matmul(geometry, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW(time_matmul(geometry, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(time_matmul(geometry, 1, 1, -1), std::invalid_argument);
  MxuGeometry no_rows;
  no_rows.rows = 0;
  EXPECT_THROW(time_matmul(no_rows, 1, 1, 1), std::invalid_argument);
  constexpr int64_t kOverflowingExtent = int64_t{1} << 22;  // cubed is 2^66
  EXPECT_THROW(time_matmul(geometry, kOverflowingExtent, kOverflowingExtent, kOverflowingExtent),
               std::invalid_argument);
  MxuGeometry ideal;
  ideal.accounting = Accounting::kIdeal;
  EXPECT_THROW(emulate_matmul(ideal, Matrix(1, 1), Matrix(1, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace attnsim::mxu
