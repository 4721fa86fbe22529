#include "tests/mxu/systolic_emulator.h"

#include <algorithm>
#include <stdexcept>

namespace attnsim::mxu::testing {
namespace {

// A run that has not produced every output by then is stuck (a sequencing deadlock), not slow.
constexpr int64_t kTickLimit = 10'000'000;

void require(bool condition, const char* hazard) {
  if (!condition) throw std::logic_error(hazard);
}

// Data in flight carries the fold (or pass) it belongs to and its index within it, so every MAC can check
// that its operands belong together; real hardware gets that from timing alone.
struct Token {
  bool valid = false;
  double value = 0.0;
  int64_t group = -1;  // WS: fold; OS: pass
  int64_t index = -1;  // WS: row of A; OS: step along K
};

template <typename T>
using Grid = std::vector<std::vector<T>>;

template <typename T>
Grid<T> make_grid(int64_t rows, int64_t cols) {
  return Grid<T>(rows, std::vector<T>(cols));
}

// Idle input-port ticks count as stalls only once a later injection shows they were not the tail.
class StallCounter {
 public:
  void tick(bool injected) {
    if (!injected) {
      ++idle_;
      return;
    }
    stalls_ += idle_;
    idle_ = 0;
  }
  uint64_t stalls() const { return stalls_; }

 private:
  uint64_t idle_ = 0;
  uint64_t stalls_ = 0;
};

// ---------------------------------------------------------------- weight stationary

struct WeightSlot {
  bool loaded = false;
  double value = 0.0;
  int64_t fold = -1;
  bool top_of_tile = false;  // the tile's first row starts its partial sums from zero
};

struct WsCell {
  WeightSlot active;
  WeightSlot shadow;             // double buffering only; `loaded` means written but not yet swapped in
  int64_t activations_seen = 0;  // of active.fold: a single register is free once all M have passed
};

struct WsFold {
  int64_t k_offset;
  int64_t k_extent;
  int64_t n_offset;
  int64_t n_extent;
};

EmulatorRun run_weight_stationary(int64_t rows, int64_t cols, bool double_buffered, const Matrix& a,
                                  const Matrix& b) {
  const int64_t m = a.rows();
  const int64_t k = a.cols();
  const int64_t n = b.cols();
  std::vector<WsFold> folds;
  for (int64_t n_offset = 0; n_offset < n; n_offset += cols) {
    for (int64_t k_offset = 0; k_offset < k; k_offset += rows) {
      folds.push_back({k_offset, std::min(rows, k - k_offset), n_offset, std::min(cols, n - n_offset)});
    }
  }
  const int64_t fold_count = static_cast<int64_t>(folds.size());
  // Tiles sit on the bottom edge so partial sums leave right after the tile's last row.
  auto top_row = [&](const WsFold& fold) { return rows - fold.k_extent; };

  auto cells = make_grid<WsCell>(rows, cols);
  auto activations = make_grid<Token>(rows, cols);   // where each activation was during the last tick
  auto partial_sums = make_grid<Token>(rows, cols);  // what each cell sent down during the last tick
  Matrix product(m, n);
  int64_t outputs_expected = 0;
  for (const WsFold& fold : folds) outputs_expected += m * fold.n_extent;
  int64_t outputs_seen = 0;
  int64_t last_output_tick = -1;
  std::vector<int64_t> stream_start(fold_count, -1);
  std::vector<int64_t> load_done(fold_count, -1);  // tick from which the whole tile is visible
  int64_t streaming = -1;
  int64_t next_to_stream = 0;
  int64_t next_to_load = 0;
  int64_t next_load_row = 0;
  StallCounter stalls;

  for (int64_t tick = 0; outputs_seen < outputs_expected; ++tick) {
    require(tick < kTickLimit, "weight-stationary run never finished");

    // Sequencer: the next fold streams once its tile is loaded and the previous fold's last activation
    // has entered the array.
    const bool input_port_free =
        streaming < 0 || tick >= stream_start[streaming] + m + folds[streaming].k_extent - 1;
    if (input_port_free && next_to_stream < fold_count && load_done[next_to_stream] >= 0 &&
        load_done[next_to_stream] <= tick) {
      streaming = next_to_stream++;
      stream_start[streaming] = tick;
    }

    // Skewed feeder: A[row_of_a][kk] enters the tile's row kk at stream start + row_of_a + kk.
    std::vector<Token> entering(rows);
    bool injected = false;
    if (streaming >= 0) {
      const WsFold& fold = folds[streaming];
      for (int64_t tile_row = 0; tile_row < fold.k_extent; ++tile_row) {
        const int64_t row_of_a = tick - stream_start[streaming] - tile_row;
        if (row_of_a < 0 || row_of_a >= m) continue;
        entering[top_row(fold) + tile_row] = {true, a.at(row_of_a, fold.k_offset + tile_row), streaming,
                                              row_of_a};
        injected = true;
      }
    }
    stalls.tick(injected);

    // Array: activations move one column right, partial sums one row down, every cell does one MAC.
    auto next_activations = make_grid<Token>(rows, cols);
    auto next_partial_sums = make_grid<Token>(rows, cols);
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        const Token activation = col == 0 ? entering[row] : activations[row][col - 1];
        next_activations[row][col] = activation;
        if (!activation.valid) continue;
        WsCell& cell = cells[row][col];
        if (cell.shadow.loaded && cell.shadow.fold == activation.group) {
          // A fold's first activation swaps its weights in; the shadow is free again from here.
          cell.active = cell.shadow;
          cell.shadow.loaded = false;
          cell.activations_seen = 0;
        }
        if (cell.active.fold == activation.group) ++cell.activations_seen;
        const WsFold& fold = folds[activation.group];
        if (col >= fold.n_extent) continue;  // outside the tile the activation only passes through
        require(cell.active.loaded && cell.active.fold == activation.group,
                "activation met weights of another fold");
        double sum_in = 0.0;
        if (!cell.active.top_of_tile) {
          require(row > 0, "tile without a top row");
          const Token& above = partial_sums[row - 1][col];
          require(above.valid && above.group == activation.group && above.index == activation.index,
                  "partial sum and activation out of step");
          sum_in = above.value;
        }
        const Token sum_out{true, sum_in + activation.value * cell.active.value, activation.group,
                            activation.index};
        if (row == rows - 1) {
          // K folds of one output tile add into the same outputs.
          product.at(activation.index, fold.n_offset + col) += sum_out.value;
          ++outputs_seen;
          last_output_tick = tick;
        } else {
          next_partial_sums[row][col] = sum_out;
        }
      }
    }
    activations.swap(next_activations);
    partial_sums.swap(next_partial_sums);

    // Weight loader, after the array so a row freed this tick can be rewritten this tick (the new value is
    // visible from the next one): one tile row per tick, top row first, and a tile's load begins only once
    // the fold before it has started streaming.
    const bool may_load =
        next_to_load < fold_count && (next_to_load == 0 || stream_start[next_to_load - 1] >= 0);
    if (may_load) {
      const WsFold& fold = folds[next_to_load];
      const int64_t row = top_row(fold) + next_load_row;
      bool row_free = true;
      for (int64_t col = 0; col < fold.n_extent; ++col) {
        const WsCell& cell = cells[row][col];
        row_free &=
            double_buffered ? !cell.shadow.loaded : (!cell.active.loaded || cell.activations_seen == m);
      }
      if (row_free) {
        for (int64_t col = 0; col < fold.n_extent; ++col) {
          const WeightSlot slot{true, b.at(fold.k_offset + next_load_row, fold.n_offset + col), next_to_load,
                                next_load_row == 0};
          WsCell& cell = cells[row][col];
          if (double_buffered) {
            cell.shadow = slot;
          } else {
            cell.active = slot;
            cell.activations_seen = 0;
          }
        }
        if (++next_load_row == fold.k_extent) {
          load_done[next_to_load++] = tick + 1;
          next_load_row = 0;
        }
      }
    }
  }
  require(next_to_stream == fold_count, "outputs complete before every fold streamed");
  return {product, static_cast<uint64_t>(last_output_tick + 1), stalls.stalls(),
          static_cast<uint64_t>(fold_count)};
}

// ---------------------------------------------------------------- output stationary

struct Accumulator {
  double value = 0.0;
  int64_t macs = 0;
  int64_t pass = -1;
};

struct OutputSlot {
  bool valid = false;
  double value = 0.0;
  int64_t out_row = -1;
  int64_t out_col = -1;
};

struct OsPass {
  int64_t m_offset;
  int64_t m_extent;
  int64_t n_offset;
  int64_t n_extent;
};

std::vector<OsPass> output_passes(int64_t rows, int64_t cols, int64_t m, int64_t n) {
  std::vector<OsPass> passes;
  for (int64_t m_offset = 0; m_offset < m; m_offset += rows) {
    for (int64_t n_offset = 0; n_offset < n; n_offset += cols) {
      passes.push_back({m_offset, std::min(rows, m - m_offset), n_offset, std::min(cols, n - n_offset)});
    }
  }
  return passes;
}

// Skewed feeders: A[i][kk] enters row i and B[kk][j] enters column j, both at stream start + kk + lane.
// Returns whether anything entered.
bool feed_pass(const OsPass& pass, int64_t pass_index, int64_t since_start, const Matrix& a, const Matrix& b,
               std::vector<Token>& entering_left, std::vector<Token>& entering_top) {
  const int64_t k = a.cols();
  bool injected = false;
  for (int64_t row = 0; row < pass.m_extent; ++row) {
    const int64_t step = since_start - row;
    if (step < 0 || step >= k) continue;
    require(!entering_left[row].valid, "two passes feed one row in the same tick");
    entering_left[row] = {true, a.at(pass.m_offset + row, step), pass_index, step};
    injected = true;
  }
  for (int64_t col = 0; col < pass.n_extent; ++col) {
    const int64_t step = since_start - col;
    if (step < 0 || step >= k) continue;
    require(!entering_top[col].valid, "two passes feed one column in the same tick");
    entering_top[col] = {true, b.at(step, pass.n_offset + col), pass_index, step};
    injected = true;
  }
  return injected;
}

struct Cell {
  int64_t row, col;
};

// One tick of the array: A moves right, B moves down, and every cell where a pair meets does its MAC.
// Returns the cells that did their K-th MAC of a pass in this tick.
std::vector<Cell> step_operands(Grid<Token>& a_tokens, Grid<Token>& b_tokens,
                                const std::vector<Token>& entering_left,
                                const std::vector<Token>& entering_top, Grid<Accumulator>& accumulators,
                                const std::vector<OsPass>& passes, int64_t k) {
  const int64_t rows = static_cast<int64_t>(a_tokens.size());
  const int64_t cols = static_cast<int64_t>(a_tokens.front().size());
  auto next_a = make_grid<Token>(rows, cols);
  auto next_b = make_grid<Token>(rows, cols);
  std::vector<Cell> finished;
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < cols; ++col) {
      const Token from_left = col == 0 ? entering_left[row] : a_tokens[row][col - 1];
      const Token from_top = row == 0 ? entering_top[col] : b_tokens[row - 1][col];
      next_a[row][col] = from_left;
      next_b[row][col] = from_top;
      if (from_left.valid && from_top.valid) {
        require(from_left.group == from_top.group && from_left.index == from_top.index,
                "A and B operands out of step");
        Accumulator& accumulator = accumulators[row][col];
        require(accumulator.macs == 0 || accumulator.pass == from_left.group,
                "accumulator still holds another pass");
        accumulator.pass = from_left.group;
        accumulator.value += from_left.value * from_top.value;
        if (++accumulator.macs == k) finished.push_back({row, col});
      } else if (from_left.valid || from_top.valid) {
        const Token& lone = from_left.valid ? from_left : from_top;
        const OsPass& pass = passes[lone.group];
        require(row >= pass.m_extent || col >= pass.n_extent, "operand reached its cell without its partner");
      }
    }
  }
  a_tokens.swap(next_a);
  b_tokens.swap(next_b);
  return finished;
}

EmulatorRun run_output_stationary(int64_t rows, int64_t cols, bool double_buffered, const Matrix& a,
                                  const Matrix& b) {
  const int64_t m = a.rows();
  const int64_t k = a.cols();
  const int64_t n = b.cols();
  const std::vector<OsPass> passes = output_passes(rows, cols, m, n);
  const int64_t pass_count = static_cast<int64_t>(passes.size());

  auto accumulators = make_grid<Accumulator>(rows, cols);
  auto a_tokens = make_grid<Token>(rows, cols);  // A moves right
  auto b_tokens = make_grid<Token>(rows, cols);  // B moves down
  // Finished sums on their way out through the top edge. With double buffering this is the second plane;
  // without it, it stands for the accumulators themselves, which stay busy until it is empty.
  auto drain_plane = make_grid<OutputSlot>(rows, cols);
  int64_t rows_to_drain = 0;
  Matrix product(m, n);
  int64_t outputs_seen = 0;
  int64_t last_output_tick = -1;
  std::vector<int64_t> stream_start(pass_count, -1);
  int64_t streaming = -1;  // pass whose operands use the input ports
  int64_t computing = -1;  // pass whose sums occupy the accumulators
  int64_t next_to_stream = 0;
  int64_t finished_cells = 0;
  bool tile_finished = false;
  StallCounter stalls;

  for (int64_t tick = 0; outputs_seen < m * n; ++tick) {
    require(tick < kTickLimit, "output-stationary run never finished");

    // Hand-off, the tick after the tile's last MAC, once the previous tile has left the drain plane.
    if (computing >= 0 && tile_finished && rows_to_drain == 0) {
      const OsPass& pass = passes[computing];
      for (int64_t row = 0; row < pass.m_extent; ++row) {
        for (int64_t col = 0; col < pass.n_extent; ++col) {
          drain_plane[row][col] = {true, accumulators[row][col].value, pass.m_offset + row,
                                   pass.n_offset + col};
          accumulators[row][col] = {};
        }
      }
      rows_to_drain = pass.m_extent;
      tile_finished = false;
      computing = -1;
    }

    // Sequencer: a pass starts once its accumulators are free and the previous pass's last operand entered.
    const bool accumulators_free = computing < 0 && (double_buffered || rows_to_drain == 0);
    const bool input_port_free =
        streaming < 0 || tick >= stream_start[streaming] + k +
                                     std::max(passes[streaming].m_extent, passes[streaming].n_extent) - 1;
    if (accumulators_free && input_port_free && next_to_stream < pass_count) {
      streaming = computing = next_to_stream++;
      stream_start[streaming] = tick;
      finished_cells = 0;
    }

    std::vector<Token> entering_left(rows);
    std::vector<Token> entering_top(cols);
    const bool injected =
        streaming >= 0 && feed_pass(passes[streaming], streaming, tick - stream_start[streaming], a, b,
                                    entering_left, entering_top);
    stalls.tick(injected);

    finished_cells += static_cast<int64_t>(
        step_operands(a_tokens, b_tokens, entering_left, entering_top, accumulators, passes, k).size());
    if (computing >= 0 && finished_cells == passes[computing].m_extent * passes[computing].n_extent) {
      tile_finished = true;
    }

    // Drain: the top row leaves through the top edge and the rest move up one row.
    if (rows_to_drain > 0) {
      for (const OutputSlot& slot : drain_plane.front()) {
        if (!slot.valid) continue;
        product.at(slot.out_row, slot.out_col) = slot.value;
        ++outputs_seen;
        last_output_tick = tick;
      }
      std::rotate(drain_plane.begin(), drain_plane.begin() + 1, drain_plane.end());
      drain_plane.back().assign(cols, OutputSlot{});
      --rows_to_drain;
    }
  }
  require(next_to_stream == pass_count, "outputs complete before every pass streamed");
  return {product, static_cast<uint64_t>(last_output_tick + 1), stalls.stalls(),
          static_cast<uint64_t>(pass_count)};
}

// Cell hand-off: each cell's sum leaves in the tick after its last MAC, and a pass starts as soon as the
// previous pass's operands have entered every lane (K ticks after it started). Nothing else paces it:
// `step_operands` throws if operands of two passes ever meet in a cell or an accumulator.
EmulatorRun run_output_stationary_cells(int64_t rows, int64_t cols, const Matrix& a, const Matrix& b) {
  const int64_t m = a.rows();
  const int64_t k = a.cols();
  const std::vector<OsPass> passes = output_passes(rows, cols, m, b.cols());
  const int64_t pass_count = static_cast<int64_t>(passes.size());

  auto accumulators = make_grid<Accumulator>(rows, cols);
  auto a_tokens = make_grid<Token>(rows, cols);
  auto b_tokens = make_grid<Token>(rows, cols);
  Matrix product(m, b.cols());
  int64_t outputs_seen = 0;
  int64_t last_output_tick = -1;
  std::vector<int64_t> stream_start;
  StallCounter stalls;

  for (int64_t tick = 0; outputs_seen < m * b.cols(); ++tick) {
    require(tick < kTickLimit, "output-stationary run never finished");
    const int64_t started = static_cast<int64_t>(stream_start.size());
    if (started < pass_count && (started == 0 || tick >= stream_start.back() + k))
      stream_start.push_back(tick);

    std::vector<Token> entering_left(rows);
    std::vector<Token> entering_top(cols);
    bool injected = false;
    for (int64_t pass = 0; pass < static_cast<int64_t>(stream_start.size()); ++pass)
      injected |= feed_pass(passes[pass], pass, tick - stream_start[pass], a, b, entering_left, entering_top);
    stalls.tick(injected);

    for (const Cell& cell :
         step_operands(a_tokens, b_tokens, entering_left, entering_top, accumulators, passes, k)) {
      Accumulator& accumulator = accumulators[cell.row][cell.col];
      const OsPass& pass = passes[accumulator.pass];
      product.at(pass.m_offset + cell.row, pass.n_offset + cell.col) = accumulator.value;
      accumulator = {};
      ++outputs_seen;
      last_output_tick = tick + 1;  // written out in the tick after the last MAC
    }
  }
  require(static_cast<int64_t>(stream_start.size()) == pass_count,
          "outputs complete before every pass streamed");
  return {product, static_cast<uint64_t>(last_output_tick + 1), stalls.stalls(),
          static_cast<uint64_t>(pass_count)};
}

}  // namespace

Matrix Matrix::transposed() const {
  Matrix result(cols_, rows_);
  for (int64_t row = 0; row < rows_; ++row) {
    for (int64_t col = 0; col < cols_; ++col) result.at(col, row) = at(row, col);
  }
  return result;
}

Matrix reference_matmul(const Matrix& a, const Matrix& b) {
  if (a.cols() != b.rows()) throw std::invalid_argument("reference_matmul: inner extents differ");
  Matrix c(a.rows(), b.cols());
  for (int64_t row = 0; row < a.rows(); ++row) {
    for (int64_t col = 0; col < b.cols(); ++col) {
      for (int64_t inner = 0; inner < a.cols(); ++inner)
        c.at(row, col) += a.at(row, inner) * b.at(inner, col);
    }
  }
  return c;
}

EmulatorRun emulate_matmul(const MxuGeometry& geometry, const Matrix& a, const Matrix& b) {
  if (geometry.accounting != Accounting::kArray) throw std::invalid_argument("emulate_matmul: needs kArray");
  if (a.cols() != b.rows()) throw std::invalid_argument("emulate_matmul: inner extents differ");
  if (a.rows() < 1 || a.cols() < 1 || b.cols() < 1 || geometry.rows < 1 || geometry.cols < 1) {
    throw std::invalid_argument("emulate_matmul: extents must be >= 1");
  }
  const bool double_buffered = geometry.double_buffered_stationary;
  if (geometry.hand_off == HandOff::kCell) {
    if (geometry.dataflow != Dataflow::kOutputStationary)
      throw std::invalid_argument("emulate_matmul: a cell hand-off needs the output-stationary dataflow");
    return run_output_stationary_cells(geometry.rows, geometry.cols, a, b);
  }
  switch (geometry.dataflow) {
    case Dataflow::kWeightStationary:
      return run_weight_stationary(geometry.rows, geometry.cols, double_buffered, a, b);
    case Dataflow::kOutputStationary:
      return run_output_stationary(geometry.rows, geometry.cols, double_buffered, a, b);
    case Dataflow::kInputStationary: {
      // The same machine fed the other way round: A^T is stationary and B^T streams, giving C^T.
      EmulatorRun run = run_weight_stationary(geometry.rows, geometry.cols, double_buffered, b.transposed(),
                                              a.transposed());
      run.product = run.product.transposed();
      return run;
    }
  }
  throw std::invalid_argument("emulate_matmul: unknown dataflow");
}

}  // namespace attnsim::mxu::testing
