#include "models/vpu/vpu.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/common/parallel.h"
#include "models/common/registry.h"

namespace attnsim {

namespace {

constexpr std::array kAllOps = {VpuOp::Max, VpuOp::Sub, VpuOp::Exp,    VpuOp::Add,    VpuOp::Mul,
                                VpuOp::Div, VpuOp::Mov, VpuOp::RowMax, VpuOp::RowSum, VpuOp::MaskCausal};
static_assert(kAllOps.size() == kVpuOpCount);

size_t index(VpuOp op) {
  return static_cast<size_t>(op);
}
bool is_reduction(VpuOp op) {
  return op == VpuOp::RowMax || op == VpuOp::RowSum;
}
bool is_unary(VpuOp op) {
  return op == VpuOp::Exp || op == VpuOp::Mov;
}
bool is_elementwise(VpuOp op) {
  return !is_reduction(op) && op != VpuOp::MaskCausal;
}

std::string shape(const TileView& t) {
  return fmt::format("{}x{}", t.rows, t.cols);
}

// Stages of the lane-combining tree: ceil(log2(lanes)).
int64_t tree_depth(int64_t lanes) {
  return lanes <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(lanes - 1));
}

// An operand of a d (rows x cols) op must be rows x cols, rows x 1, 1 x cols or 1 x 1; a 1-long side is
// broadcast along that dimension.
void check_operand(VpuOp op, const char* which, const TileView& x, const TileView& d) {
  const bool rows_ok = x.rows == d.rows || x.rows == 1;
  const bool cols_ok = x.cols == d.cols || x.cols == 1;
  if (!rows_ok || !cols_ok)
    throw std::invalid_argument(fmt::format(
        "vpu {}: operand {} is {} but the destination is {} (operands must be {}x{}, {}x1, 1x{} or 1x1)",
        vpu_op_name(op), which, shape(x), shape(d), d.rows, d.cols, d.rows, d.cols));
}

double broadcast_at(const TileView& x, int64_t i, int64_t j) {
  return x.at(x.rows == 1 ? 0 : i, x.cols == 1 ? 0 : j);
}

double apply(VpuOp op, double a, double b) {
  switch (op) {
    // NaN-propagating, so a NaN score is not silently dropped by the running max.
    case VpuOp::Max:
      return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN() : (a < b ? b : a);
    case VpuOp::Sub:
      return a - b;
    case VpuOp::Exp:
      return std::exp(a);
    case VpuOp::Add:
      return a + b;
    case VpuOp::Mul:
      return a * b;
    case VpuOp::Div:
      return a / b;
    case VpuOp::Mov:
      return a;
    default:
      break;
  }
  throw std::invalid_argument(fmt::format("vpu: {} is not an element-wise op", vpu_op_name(op)));
}

// An exp costs about as much as this many adds (it decides when a tile is worth sharing among threads).
constexpr int64_t kExpWork = 32;

// d(i, j) = round(f(a(i, j), b(i, j))) over rows [begin, end), a and b broadcast along a side of length 1;
// b may be null for a unary f.
template <class F>
void map_rows(const TileView& a, const TileView* b, const TileView& d, Dtype dtype, int64_t begin,
              int64_t end, F f) {
  auto plain = [&](const TileView& x) { return !x.transposed && x.rows == d.rows && x.cols == d.cols; };
  if (!d.transposed && plain(a) && (!b || plain(*b))) {  // the common case: rows as plain arrays
    for (int64_t i = begin; i < end; ++i) {
      const double* x = a.data + i * a.row_stride;
      const double* y = b ? b->data + i * b->row_stride : nullptr;
      double* out = d.data + i * d.row_stride;
      for (int64_t j = 0; j < d.cols; ++j) out[j] = round_to(dtype, f(x[j], y ? y[j] : 0.0));
    }
    return;
  }
  for (int64_t i = begin; i < end; ++i)
    for (int64_t j = 0; j < d.cols; ++j)
      d.at(i, j) = round_to(dtype, f(broadcast_at(a, i, j), b ? broadcast_at(*b, i, j) : 0.0));
}

}  // namespace

std::string_view vpu_op_name(VpuOp op) {
  switch (op) {
    case VpuOp::Max:
      return "max";
    case VpuOp::Sub:
      return "sub";
    case VpuOp::Exp:
      return "exp";
    case VpuOp::Add:
      return "add";
    case VpuOp::Mul:
      return "mul";
    case VpuOp::Div:
      return "div";
    case VpuOp::Mov:
      return "mov";
    case VpuOp::RowMax:
      return "rowmax";
    case VpuOp::RowSum:
      return "rowsum";
    case VpuOp::MaskCausal:
      return "mask_causal";
  }
  return "?";
}

uint64_t VpuUnit::result_latency(VpuOp op, int64_t cols) const {
  const auto base = static_cast<uint64_t>(params_.result_latency[index(op)]);
  if (!is_reduction(op)) return base;
  return base + static_cast<uint64_t>(std::llround(params_.reduction_result_latency_per_column *
                                                   static_cast<double>(std::max<int64_t>(cols, 0))));
}

bool VpuUnit::chains_from(VpuOp op) const {
  return params_.chaining && !is_reduction(op);
}

uint64_t VpuUnit::first_vector_cycles(VpuOp op) const {
  return static_cast<uint64_t>(params_.latency[index(op)] + params_.cycles_per_vector[index(op)]);
}

uint64_t VpuUnit::vector_interval(VpuOp op) const {
  return static_cast<uint64_t>(params_.cycles_per_vector[index(op)]);
}

VpuUnit::Params VpuUnit::default_params(int64_t lanes) {
  Params p;
  p.lanes = lanes;
  for (VpuOp op : kAllOps) {
    // Seed 003 charges ceil(n / 128) vectors per op with no pipeline fill; add-like ops, mov and the mask
    // (compare + select) issue one vector per cycle.
    p.latency[index(op)] = 0;
    p.cycles_per_vector[index(op)] = 1;
  }
  // exp and divide are multi-pass (range reduction + polynomial, reciprocal + Newton steps) on a VPU.
  p.cycles_per_vector[index(VpuOp::Exp)] = 4;
  p.cycles_per_vector[index(VpuOp::Div)] = 4;
  // A row reduction streams its vectors through a per-lane accumulator, then folds the lanes in a tree.
  p.latency[index(VpuOp::RowMax)] = tree_depth(lanes);
  p.latency[index(VpuOp::RowSum)] = tree_depth(lanes);
  return p;
}

VpuUnit::VpuUnit(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  if (params_.lanes < 1)
    throw std::invalid_argument(fmt::format("{}: lanes must be >= 1, found {}", name(), params_.lanes));
  for (VpuOp op : kAllOps) {
    // A zero issue interval would make an op free however large its tile; Params{} has all zeros.
    if (params_.cycles_per_vector[index(op)] < 1 || params_.latency[index(op)] < 0)
      throw std::invalid_argument(
          fmt::format("{}: {} needs cycles_per_vector >= 1 and latency >= 0 (found {}, {})", name(),
                      vpu_op_name(op), params_.cycles_per_vector[index(op)], params_.latency[index(op)]));
  }

  stats_.add(&ops, "ops", "ops", "vector-unit ops issued (one per tile operation)");
  stats_.add(&element_ops, "element_ops", "elements",
             "elements processed: destination elements, or input elements for row reductions");
  stats_.add_formula(
      [this] {
        nlohmann::json out = nlohmann::json::object();
        for (VpuOp op : kAllOps)
          if (ops_by_kind[index(op)]) out[std::string(vpu_op_name(op))] = ops_by_kind[index(op)];
        return out;
      },
      "ops_by_kind", "ops", "ops issued, by kind (kinds never issued are left out)");
  stats_.add(&busy_cycles, "busy_cycles", "cycles", "cycles the unit was occupied");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the utilisation refers to");
  stats_.add_formula(
      [this] {
        return elapsed_cycles ? static_cast<double>(busy_cycles) / static_cast<double>(elapsed_cycles) : 0.0;
      },
      "utilisation", "fraction", "busy_cycles / elapsed_cycles; 0 before the run's length is set");
}

uint64_t VpuUnit::op_cycles(VpuOp op, int64_t rows, int64_t cols) {
  if (rows < 1 || cols < 1)
    throw std::invalid_argument(
        fmt::format("{}: {} on a {}x{} tile: extents must be >= 1", name(), vpu_op_name(op), rows, cols));
  const auto elements = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  const auto lanes = static_cast<uint64_t>(params_.lanes);
  const uint64_t vectors = (elements + lanes - 1) / lanes;
  const uint64_t cycles = static_cast<uint64_t>(params_.latency[index(op)]) +
                          vectors * static_cast<uint64_t>(params_.cycles_per_vector[index(op)]);
  ops += 1;
  ops_by_kind[index(op)] += 1;
  element_ops += elements;
  busy_cycles += cycles;
  return cycles;
}

void VpuUnit::elementwise(VpuOp op, const TileView& a, const TileView* b, const TileView& d, Dtype dtype) {
  if (!is_elementwise(op))
    throw std::invalid_argument(fmt::format("vpu: {} is not an element-wise op", vpu_op_name(op)));
  const bool unary = is_unary(op);
  if (!unary && !b)
    throw std::invalid_argument(fmt::format("vpu {}: needs a second operand", vpu_op_name(op)));
  check_operand(op, "a", a, d);
  if (!unary) check_operand(op, "b", *b, d);
  if (!d.has_values()) return;  // timing-only run: nothing to write
  if (!a.has_values() || (!unary && !b->has_values()))
    throw std::invalid_argument(
        fmt::format("vpu {}: d holds values but an operand does not", vpu_op_name(op)));

  // Each d(i, j) is written after its own inputs are read, so d may be a same-shaped a or b (in place);
  // rows are independent, so large tiles are shared among the value threads.
  const int64_t work = d.elements() * (op == VpuOp::Exp ? kExpWork : 1);
  ValueThreads::for_ranges(d.rows, work, [&](int64_t begin, int64_t end) {
    switch (op) {
      case VpuOp::Exp:
        return map_rows(a, nullptr, d, dtype, begin, end, [](double x, double) { return std::exp(x); });
      case VpuOp::Sub:
        return map_rows(a, b, d, dtype, begin, end, [](double x, double y) { return x - y; });
      case VpuOp::Mul:
        return map_rows(a, b, d, dtype, begin, end, [](double x, double y) { return x * y; });
      case VpuOp::Add:
        return map_rows(a, b, d, dtype, begin, end, [](double x, double y) { return x + y; });
      default:
        return map_rows(a, unary ? nullptr : b, d, dtype, begin, end,
                        [op](double x, double y) { return apply(op, x, y); });
    }
  });
}

void VpuUnit::reduce(VpuOp op, const TileView& a, const TileView& d, Dtype dtype) {
  if (!is_reduction(op))
    throw std::invalid_argument(fmt::format("vpu: {} is not a row reduction", vpu_op_name(op)));
  if (d.rows != a.rows || d.cols != 1)
    throw std::invalid_argument(fmt::format("vpu {}: destination is {} but a {} input needs {}x1",
                                            vpu_op_name(op), shape(d), shape(a), a.rows));
  if (!d.has_values()) return;
  if (!a.has_values())
    throw std::invalid_argument(fmt::format("vpu {}: d holds values but a does not", vpu_op_name(op)));

  for (int64_t i = 0; i < a.rows; ++i) {
    // A fully masked row has max -inf (the identity of max), which the online softmax relies on.
    double acc = op == VpuOp::RowMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t j = 0; j < a.cols; ++j)
      acc = op == VpuOp::RowMax ? apply(VpuOp::Max, acc, a.at(i, j)) : acc + a.at(i, j);
    d.at(i, 0) = round_to(dtype, acc);
  }
}

void VpuUnit::mask_causal(const TileView& d, int64_t row0, int64_t col0) {
  if (!d.has_values()) return;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j)
      if (col0 + j > row0 + i) d.at(i, j) = neg_inf;
}

void register_vpu_models() {
  Registry<VpuUnit>::instance().add(
      "simd", "SIMD vector unit: element-wise ops, row reductions and the causal mask on tiles",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        const int64_t lanes = p.get<int64_t>(
            "lanes", 128, "elements", "elements per vector (one vector issues per cycles_per_vector)", 1);
        // Defaults follow `lanes` (the reduction tree is log2(lanes) deep), so read it first.
        VpuUnit::Params params = VpuUnit::default_params(lanes);
        for (VpuOp op : kAllOps) {
          const std::string key(vpu_op_name(op));
          int64_t& latency = params.latency[index(op)];
          int64_t& per_vector = params.cycles_per_vector[index(op)];
          latency = p.get<int64_t>(key + "_latency", latency, "cycles",
                                   is_reduction(op)
                                       ? "cycles added once per " + key + " op (the lane-combining tree)"
                                       : "cycles added once per " + key + " op (pipeline fill)",
                                   0, kMaxLatency);
          params.result_latency[index(op)] =
              p.get<int64_t>(key + "_result_latency", 0, "cycles",
                             "after a " + key +
                                 " op leaves the unit, before a dependent instruction may start (the unit "
                                 "serves other work meanwhile)",
                             0, kMaxLatency);
          per_vector =
              p.get<int64_t>(key + "_cycles_per_vector", per_vector, "cycles/vector",
                             "issue interval of " + key + " per vector of `lanes` elements", 1, kMaxLatency);
        }
        params.reduction_result_latency_per_column = p.get<double>(
            "reduction_result_latency_per_column", 0.0, "cycles/column",
            "rowmax and rowsum only: result latency added per column of the reduced row (its dependent "
            "chain grows with the row)",
            0.0, 1e6);
        params.sfu_pipe =
            p.get<bool>("sfu_pipe", false, "",
                        "exp and div on a special-function pipe of their own, beside the pipe of "
                        "the other ops (a GPU SM's SFUs beside its FMA units)");
        params.chaining = p.get<bool>(
            "chaining", false, "",
            "a dependent op starts on the first vector of an element-wise producer's result, not its last "
            "(a warp streams its registers through dependent instructions)");
        return std::make_unique<VpuUnit>(instance, params);
      });
}

}  // namespace attnsim
