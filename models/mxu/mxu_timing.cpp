#include "models/mxu/mxu_timing.h"

#include <algorithm>
#include <stdexcept>

namespace attnsim::mxu {
namespace {

// An extent cut into array-sized tiles: every tile is `full` long except the last, which is `last` long
// (1 <= last <= full). Folds only ever have these few shapes, which is what keeps the formulas O(1).
struct Tiling {
  int64_t count;
  int64_t full;
  int64_t last;

  int64_t first() const { return count > 1 ? full : last; }
  int64_t full_count() const { return count - 1; }
};

Tiling tile_extent(int64_t extent, int64_t tile) {
  const int64_t count = (extent + tile - 1) / tile;
  return {count, tile, extent - (count - 1) * tile};
}

// Sum of f(outer tile, inner tile) over every pair of tiles, grouped by the four possible shapes.
template <typename PerPair>
int64_t sum_over_tile_pairs(const Tiling& outer, const Tiling& inner, PerPair per_pair) {
  return outer.full_count() * inner.full_count() * per_pair(outer.full, inner.full) +
         outer.full_count() * per_pair(outer.full, inner.last) +
         inner.full_count() * per_pair(outer.last, inner.full) + per_pair(outer.last, inner.last);
}

struct Schedule {
  int64_t cycles;
  int64_t last_fold_start;   // cycle the last fold's first input enters
  int64_t last_fold_window;  // cycles the last fold occupies the input port
  int64_t input_windows;     // input-port occupancy summed over all folds
};

MatmulTiming to_timing(const Schedule& schedule, int64_t folds, uint64_t macs) {
  // The input port is either streaming a fold or stalled until the last fold's last input.
  const int64_t stall = schedule.last_fold_start + schedule.last_fold_window - schedule.input_windows;
  return {static_cast<uint64_t>(schedule.cycles), static_cast<uint64_t>(folds), static_cast<uint64_t>(stall),
          macs};
}

// Weight stationary on a rows×cols array (rows = K side). Folds visit N tiles in the outer loop and K
// tiles in the inner one, so the K folds of one output tile run back to back.
Schedule weight_stationary_schedule(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols,
                                    bool double_buffered) {
  const Tiling k_tiles = tile_extent(k, rows);
  const Tiling n_tiles = tile_extent(n, cols);

  // Start-to-start distance from a fold of k_current rows to the next fold (k_next rows, n_next columns).
  auto fold_gap = [&](int64_t k_current, int64_t k_next, int64_t n_next) {
    const int64_t input_port_free = m + k_current - 1;
    // Loading starts when the current fold starts. A row may be rewritten once the current fold no longer
    // needs it there: with a shadow plane once its first activation swapped the row in, otherwise once its
    // last activation passed; either wave reaches the row's last loaded column n_next - 1 cycles late.
    const int64_t weights_loaded = double_buffered ? std::max(k_next, k_current + n_next - 1)
                                                   : std::max(k_next, m + k_current + n_next - 2);
    return std::max(input_port_free, weights_loaded);
  };
  auto span_within_n_tile = [&](int64_t n_tile) {
    if (k_tiles.count == 1) return int64_t{0};
    return (k_tiles.count - 2) * fold_gap(k_tiles.full, k_tiles.full, n_tile) +
           fold_gap(k_tiles.full, k_tiles.last, n_tile);
  };
  auto gap_into_n_tile = [&](int64_t n_tile) { return fold_gap(k_tiles.last, k_tiles.first(), n_tile); };
  auto fold_end = [&](int64_t start, int64_t k_fold, int64_t n_fold) {
    return start + m + k_fold + n_fold - 2;
  };

  const int64_t first_fold_start = k_tiles.first();  // its tile loads one row per cycle from cycle 0
  int64_t last_n_tile_start = first_fold_start;
  int64_t cycles = 0;
  if (n_tiles.full_count() > 0) {
    const int64_t full_n_tile_period = span_within_n_tile(n_tiles.full) + gap_into_n_tile(n_tiles.full);
    const int64_t last_start_before_last_n_tile =
        first_fold_start + (n_tiles.full_count() - 1) * full_n_tile_period + span_within_n_tile(n_tiles.full);
    // A narrower last N tile can finish before the wider tile ahead of it has drained.
    cycles = fold_end(last_start_before_last_n_tile, k_tiles.last, n_tiles.full);
    last_n_tile_start = last_start_before_last_n_tile + gap_into_n_tile(n_tiles.last);
  }
  const int64_t last_fold_start = last_n_tile_start + span_within_n_tile(n_tiles.last);
  cycles = std::max(cycles, fold_end(last_fold_start, k_tiles.last, n_tiles.last));

  const int64_t windows_per_n_tile = k_tiles.full_count() * (m + k_tiles.full - 1) + (m + k_tiles.last - 1);
  return {cycles, last_fold_start, m + k_tiles.last - 1, n_tiles.count * windows_per_n_tile};
}

// Output stationary on a rows×cols array (rows = M side). Passes visit M tiles in the outer loop and N tiles
// in the inner one; K always streams whole.
Schedule output_stationary_schedule(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols,
                                    bool double_buffered) {
  const Tiling m_tiles = tile_extent(m, rows);
  const Tiling n_tiles = tile_extent(n, cols);
  auto compute = [&](int64_t m_pass, int64_t n_pass) { return k + m_pass + n_pass - 2; };

  int64_t cycles = 0;
  int64_t last_fold_start = 0;
  if (double_buffered) {
    // A pass starts when the previous tile moves to the output plane; a tile moves there once its MACs are
    // done and the tile ahead of it has drained (one row per cycle). Only a short pass that follows a
    // taller one can wait for that drain: the first pass of a ragged last M tile.
    const int64_t drain_wait =
        m_tiles.count > 1 ? std::max<int64_t>(0, m_tiles.full - compute(m_tiles.last, n_tiles.first())) : 0;
    const int64_t last_hand_off = sum_over_tile_pairs(m_tiles, n_tiles, compute) + drain_wait;
    cycles = last_hand_off + m_tiles.last;
    const int64_t rows_ahead_of_last =
        n_tiles.count > 1 ? m_tiles.last : (m_tiles.count > 1 ? m_tiles.full : 0);
    last_fold_start = last_hand_off - std::max(compute(m_tiles.last, n_tiles.last), rows_ahead_of_last);
  } else {
    // The accumulators drain themselves, so passes serialise: compute, then m rows out.
    cycles = sum_over_tile_pairs(
        m_tiles, n_tiles, [&](int64_t m_pass, int64_t n_pass) { return compute(m_pass, n_pass) + m_pass; });
    last_fold_start = cycles - (compute(m_tiles.last, n_tiles.last) + m_tiles.last);
  }
  auto window = [&](int64_t m_pass, int64_t n_pass) { return k + std::max(m_pass, n_pass) - 1; };
  return {cycles, last_fold_start, window(m_tiles.last, n_tiles.last),
          sum_over_tile_pairs(m_tiles, n_tiles, window)};
}

// Output stationary with a cell hand-off: pass p's operands enter at p * K, right behind pass p - 1's
// (every cell and every input lane is free by then), and cell (i, j) writes its sum out at
// start + K + i + j. Passes differ only in their tile shape, so the last pass of each of the (at most four)
// shapes is the one that can end last.
MatmulTiming streamed_output_stationary(int64_t m, int64_t k, int64_t n, int64_t rows, int64_t cols,
                                        uint64_t macs) {
  const Tiling m_tiles = tile_extent(m, rows);
  const Tiling n_tiles = tile_extent(n, cols);
  const int64_t passes = m_tiles.count * n_tiles.count;
  auto end = [&](int64_t pass, int64_t m_pass, int64_t n_pass) { return pass * k + k + m_pass + n_pass - 1; };
  int64_t cycles = end(passes - 1, m_tiles.last, n_tiles.last);
  if (n_tiles.count > 1) cycles = std::max(cycles, end(passes - 2, m_tiles.last, n_tiles.full));
  if (m_tiles.count > 1) {
    cycles = std::max(cycles, end(passes - 1 - n_tiles.count, m_tiles.full, n_tiles.last));
    if (n_tiles.count > 1)
      cycles = std::max(cycles, end(passes - 2 - n_tiles.count, m_tiles.full, n_tiles.full));
  }
  // Each pass's input window is at least K long, so the port never idles before the last input.
  return {static_cast<uint64_t>(cycles), static_cast<uint64_t>(passes), 0, macs};
}

uint64_t checked_macs(int64_t m, int64_t k, int64_t n) {
  uint64_t mk = 0;
  uint64_t mkn = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(m), static_cast<uint64_t>(k), &mk) ||
      __builtin_mul_overflow(mk, static_cast<uint64_t>(n), &mkn)) {
    throw std::invalid_argument("mxu: M * K * N does not fit in 64 bits");
  }
  return mkn;
}

}  // namespace

MatmulTiming time_matmul(const MxuGeometry& geometry, int64_t m, int64_t k, int64_t n) {
  if (m < 1 || k < 1 || n < 1) throw std::invalid_argument("mxu: matmul extents must be >= 1");
  if (geometry.rows < 1 || geometry.cols < 1) throw std::invalid_argument("mxu: array sides must be >= 1");
  const uint64_t macs = checked_macs(m, k, n);
  if (geometry.accounting == Accounting::kIdeal) {
    return {static_cast<uint64_t>(m + k + n - 2), 1, 0, macs};
  }
  const bool double_buffered = geometry.double_buffered_stationary;
  const int64_t rows = geometry.rows;
  const int64_t cols = geometry.cols;
  if (geometry.hand_off == HandOff::kCell) {
    if (geometry.dataflow != Dataflow::kOutputStationary)
      throw std::invalid_argument("mxu: a cell hand-off needs the output-stationary dataflow");
    return streamed_output_stationary(m, k, n, rows, cols, macs);
  }
  switch (geometry.dataflow) {
    case Dataflow::kWeightStationary:
      return to_timing(weight_stationary_schedule(m, k, n, rows, cols, double_buffered),
                       tile_extent(k, rows).count * tile_extent(n, cols).count, macs);
    case Dataflow::kOutputStationary:
      return to_timing(output_stationary_schedule(m, k, n, rows, cols, double_buffered),
                       tile_extent(m, rows).count * tile_extent(n, cols).count, macs);
    case Dataflow::kInputStationary:
      // C^T = B^T A^T on the same machine: A^T is the stationary tile, B^T streams.
      return to_timing(weight_stationary_schedule(n, k, m, rows, cols, double_buffered),
                       tile_extent(k, rows).count * tile_extent(m, cols).count, macs);
  }
  throw std::invalid_argument("mxu: unknown dataflow");
}

double utilisation(const MatmulTiming& timing, const MxuGeometry& geometry) {
  const double pe_cycles = static_cast<double>(geometry.rows) * static_cast<double>(geometry.cols) *
                           static_cast<double>(timing.cycles);
  return pe_cycles > 0 ? static_cast<double>(timing.macs) / pe_cycles : 0.0;
}

}  // namespace attnsim::mxu
