// A view of a 2-D tile of values: a buffer, a tensor slice, or either transposed. Element-is-tile: a
// scalar register is the 1x1 case. data is null in timing-only runs, where no values are kept.
#pragma once

#include <cstdint>

namespace attnsim {

struct TileView {
  double* data = nullptr;
  int64_t rows = 0;  // logical shape, after any transpose
  int64_t cols = 0;
  int64_t row_stride = 0;   // elements between consecutive *stored* rows
  bool transposed = false;  // logical (i, j) is stored at (j, i)

  double& at(int64_t i, int64_t j) const {
    return transposed ? data[j * row_stride + i] : data[i * row_stride + j];
  }
  int64_t elements() const { return rows * cols; }
  bool has_values() const { return data != nullptr; }
};

}  // namespace attnsim
