// The vector unit: element-wise MAX SUB EXP ADD MUL DIV MOV on tiles with row/column broadcasting, the
// row reductions a tiled softmax needs (ROWMAX, ROWSUM) and the causal mask. Timing: a fixed latency per
// op plus one vector of `lanes` elements per `cycles_per_vector(op)` cycles; exp is dearer than add.
#pragma once

#include <array>

#include "isa/dtype.h"
#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/tile.h"

namespace attnsim {

enum class VpuOp : uint8_t { Max, Sub, Exp, Add, Mul, Div, Mov, RowMax, RowSum, MaskCausal };
inline constexpr int kVpuOpCount = 10;

class VpuUnit : public Component {
 public:
  struct Params {
    int64_t lanes = 128;
    std::array<int64_t, kVpuOpCount> latency{};            // cycles before the first vector's result
    std::array<int64_t, kVpuOpCount> cycles_per_vector{};  // issue interval per vector of `lanes` elements
    // Cycles after an op leaves the unit before a dependent instruction may start; the unit serves other
    // work meanwhile (on a GPU: the dependent-instruction latency a lone warp waits out and other warps
    // hide).
    std::array<int64_t, kVpuOpCount> result_latency{};
    // Row reductions only: result latency added per column of the reduced row (on a GPU a row's values are
    // spread over a few threads, each folding its share in a dependent chain, so the chain grows with B_c).
    double reduction_result_latency_per_column = 0;
    // Exp and div on a special-function pipe of their own, beside the pipe of every other op (a GPU SM's
    // SFUs beside its FMA units): an op of one pipe may run while the other is busy.
    bool sfu_pipe = false;
    // A dependent op may start on the first vector of an element-wise producer's result instead of its
    // last, and ends no earlier than one vector after the producer's result (a GPU warp streams its
    // registers through dependent instructions; vector chaining).
    bool chaining = false;
  };
  // The documented defaults (docs/models/vpu.md), the same ones the "simd" factory starts from. A bare
  // Params{} has zero cycles per vector and is rejected by the constructor.
  static Params default_params(int64_t lanes = 128);
  VpuUnit(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }

  // Cycles the unit is busy for `op` over a rows x cols tile (the larger operand for reductions);
  // records ops, element operations, busy cycles.
  uint64_t op_cycles(VpuOp op, int64_t rows, int64_t cols);
  // Of `op` over a tile whose rows are `cols` long.
  uint64_t result_latency(VpuOp op, int64_t cols) const;
  // Whether `op` runs on the special-function pipe (Params::sfu_pipe).
  bool on_sfu_pipe(VpuOp op) const { return params_.sfu_pipe && (op == VpuOp::Exp || op == VpuOp::Div); }
  // Whether a later op may chain onto `op`'s result (Params::chaining; element-wise ops only: a row
  // reduction's result is whole only at its end).
  bool chains_from(VpuOp op) const;
  // Cycles until `op`'s first vector leaves the unit, and its interval per vector.
  uint64_t first_vector_cycles(VpuOp op) const;
  uint64_t vector_interval(VpuOp op) const;
  // For the ops from now on (validate switches them per measured kernel).
  void set_result_latencies(const std::array<int64_t, kVpuOpCount>& latencies, double per_column) {
    params_.result_latency = latencies;
    params_.reduction_result_latency_per_column = per_column;
  }

  // d = op(a, b). Shapes: d is r x c; a and b are each r x c, r x 1 (one value per row, broadcast
  // along the row), 1 x c, or 1 x 1. Unary ops (Exp, Mov) ignore b. Results rounded to dtype.
  static void elementwise(VpuOp op, const TileView& a, const TileView* b, const TileView& d, Dtype dtype);
  // d (r x 1) = row max / row sum of a (r x c).
  static void reduce(VpuOp op, const TileView& a, const TileView& d, Dtype dtype);
  // Causal mask: d(i, j) = -inf where col0 + j > row0 + i (the key is after the query).
  static void mask_causal(const TileView& d, int64_t row0, int64_t col0);

  void set_elapsed(uint64_t cycles) { elapsed_cycles = cycles; }

  uint64_t ops = 0;
  uint64_t element_ops = 0;
  uint64_t busy_cycles = 0;
  uint64_t elapsed_cycles = 0;
  std::array<uint64_t, kVpuOpCount> ops_by_kind{};

 private:
  Params params_;
};

std::string_view vpu_op_name(VpuOp op);
void register_vpu_models();  // YAML type "simd"

}  // namespace attnsim
