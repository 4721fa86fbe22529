// Tick-level systolic-array emulator: the test-only oracle for models/mxu. Each tick it moves every
// activation, weight, partial sum and output one cell, does the real MACs, and lets the timing emerge
// from what the hardware state allows (a weight row is rewritten only when no in-flight activation still
// needs it, a pass starts only when its accumulators are free). It is O(cycles × cells): small shapes only.
// Any structural hazard (operands of different folds meeting in a cell) throws std::logic_error.
#pragma once

#include <cstdint>
#include <vector>

#include "models/mxu/mxu_timing.h"

namespace attnsim::mxu::testing {

class Matrix {
 public:
  Matrix(int64_t rows, int64_t cols) : rows_(rows), cols_(cols), values_(rows * cols, 0.0) {}

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  double& at(int64_t row, int64_t col) { return values_[row * cols_ + col]; }
  double at(int64_t row, int64_t col) const { return values_[row * cols_ + col]; }
  Matrix transposed() const;

  bool operator==(const Matrix&) const = default;

 private:
  int64_t rows_;
  int64_t cols_;
  std::vector<double> values_;
};

// Plain triple loop, the value oracle.
Matrix reference_matmul(const Matrix& a, const Matrix& b);

struct EmulatorRun {
  Matrix product;
  uint64_t cycles;        // the tick after the last output left the array
  uint64_t stall_cycles;  // ticks with no input entering, counted only before the last input entered
  uint64_t folds;
};

// Emulates geometry.dataflow with geometry.accounting == kArray (kIdeal has no hardware to emulate;
// std::invalid_argument otherwise).
EmulatorRun emulate_matmul(const MxuGeometry& geometry, const Matrix& a, const Matrix& b);

}  // namespace attnsim::mxu::testing
