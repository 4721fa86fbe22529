#include "models/mxu/mxu.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "models/common/checked.h"
#include "models/common/parallel.h"
#include "models/common/registry.h"
#include "models/common/value_kernels.h"

namespace attnsim {

namespace {

// Upper bounds on the geometry. The timing model forms extent + side - 1 and products of fold counts with
// extents in 64 bits; sides up to 2^16 (256 times a TPU's 256) and 2^12 arrays keep those far from
// overflow, where an unbounded side once printed a wrapped busy-cycle count with exit 0.
constexpr double kMaxArraySide = 65536;
constexpr double kMaxArrays = 4096;

std::string shape(const TileView& t) {
  return fmt::format("{}x{}", t.rows, t.cols);
}

// a's rows and b's rows packed dense and row-major once, whatever the views' strides and transposes.
struct PackedOperands {
  std::vector<double> a, b;  // m x k, k x n
  int64_t k = 0, n = 0;
};

PackedOperands pack(const TileView& a, const TileView& b) {
  PackedOperands p;
  p.k = a.cols;
  p.n = b.cols;
  p.a.resize(static_cast<size_t>(a.rows * p.k));
  p.b.resize(static_cast<size_t>(p.k * p.n));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t s = 0; s < p.k; ++s) p.a[i * p.k + s] = a.at(i, s);
  for (int64_t s = 0; s < p.k; ++s)
    for (int64_t j = 0; j < p.n; ++j) p.b[s * p.n + j] = b.at(s, j);
  return p;
}

}  // namespace

MxuUnit::MxuUnit(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  if (params_.geometry.rows < 1 || params_.geometry.cols < 1)
    throw std::invalid_argument(fmt::format("{}: array sides must be >= 1, found {}x{}", name(),
                                            params_.geometry.rows, params_.geometry.cols));
  if (params_.arrays < 1)
    throw std::invalid_argument(fmt::format("{}: arrays must be >= 1, found {}", name(), params_.arrays));
  set_feed(feed());

  stats_.add(&matmuls, "matmuls", "matmuls", "matrix products issued");
  stats_.add(&macs, "macs", "MACs", "useful multiply-accumulates, M*K*N summed over matmuls");
  stats_.add_formula([this] { return 2 * macs; }, "flops", "FLOPs",
                     "2 * macs (a MAC is a multiply and an add)");
  stats_.add(&busy_cycles, "busy_cycles", "cycles",
             "cycles the unit was occupied: per matmul, the time of the array with the largest share of N");
  stats_.add(&folds, "folds", "folds", "array-sized passes, summed over all arrays");
  stats_.add(
      &stall_cycles, "stall_cycles", "cycles",
      "input-port cycles lost to stationary-plane loads or hand-offs on the array with the largest share");
  stats_.add(&elapsed_cycles, "elapsed_cycles", "cycles", "length of the run the utilisation refers to");
  stats_.add_formula(
      [this] {
        const double pe_cycles = static_cast<double>(params_.geometry.rows) *
                                 static_cast<double>(params_.geometry.cols) *
                                 static_cast<double>(params_.arrays) * static_cast<double>(elapsed_cycles);
        return pe_cycles > 0 ? static_cast<double>(macs) / pe_cycles : 0.0;
      },
      "utilisation", "fraction",
      "macs / (rows * cols * arrays * elapsed_cycles); 0 before the run's length is set");
}

void MxuUnit::set_feed(const Feed& feed) {
  if (feed.hand_off == mxu::HandOff::kCell && params_.geometry.dataflow != mxu::Dataflow::kOutputStationary)
    throw std::invalid_argument(
        fmt::format("{}: a cell hand-off needs the output-stationary dataflow (os)", name()));
  params_.geometry.hand_off = feed.hand_off;
  params_.deal = feed.deal;
  params_.shared_operand = feed.shared_operand;
}

int64_t MxuUnit::shared_operand_reads(int64_t m, int64_t n) const {
  if (params_.shared_operand == SharedOperand::kOnce) return 1;
  return std::min(params_.arrays, params_.deal == Deal::kM ? m : n);
}

uint64_t MxuUnit::matmul(int64_t m, int64_t k, int64_t n) {
  // The dealt extent (N, or M) is split as evenly as possible: `wide` arrays get one more than the rest.
  // With fewer than `arrays` only that many arrays work. The arrays run in parallel, so the matmul takes as
  // long as the widest share.
  const int64_t arrays = params_.arrays;
  const bool by_rows = params_.deal == Deal::kM;
  const int64_t dealt = by_rows ? m : n;
  if (dealt < 1)
    throw std::invalid_argument(
        fmt::format("{}: matmul extents must be >= 1, found {} = {}", name(), by_rows ? "M" : "N", dealt));
  const int64_t narrow_share = dealt / arrays;
  const int64_t wide = dealt % arrays;
  const int64_t widest_share = wide > 0 ? narrow_share + 1 : narrow_share;
  auto time_share = [&](int64_t share) {
    return by_rows ? mxu::time_matmul(params_.geometry, share, k, n)
                   : mxu::time_matmul(params_.geometry, m, k, share);
  };

  const mxu::MatmulTiming widest = time_share(widest_share);
  uint64_t fold_total = 0;
  if (wide > 0) fold_total = checked_mul(static_cast<uint64_t>(wide), widest.folds, "mxu: folds");
  if (narrow_share > 0) {
    const int64_t narrow = arrays - wide;
    const mxu::MatmulTiming narrow_timing = wide > 0 ? time_share(narrow_share) : widest;
    fold_total =
        checked_add(fold_total, checked_mul(static_cast<uint64_t>(narrow), narrow_timing.folds, "mxu: folds"),
                    "mxu: folds");
  }

  // time_matmul only checked M*K*(widest share); the whole product must fit too.
  const uint64_t mkn =
      checked_mul(checked_mul(static_cast<uint64_t>(m), static_cast<uint64_t>(k), "mxu: M * K"),
                  static_cast<uint64_t>(n), "mxu: M * K * N");

  // The run's totals: a wrapped sum would be a wrong figure printed with exit 0. The labels are literals
  // because this runs once per MXU instruction.
  matmuls += 1;
  macs = checked_add(macs, mkn, "mxu: total MACs");
  busy_cycles = checked_add(busy_cycles, widest.cycles, "mxu: busy cycles");
  folds = checked_add(folds, fold_total, "mxu: folds");
  stall_cycles = checked_add(stall_cycles, widest.stall_cycles, "mxu: stall cycles");
  return widest.cycles;
}

void MxuUnit::compute(const TileView& a, const TileView& b, const TileView* c, const TileView& d,
                      Dtype dtype) {
  if (a.cols != b.rows || a.rows != d.rows || b.cols != d.cols)
    throw std::invalid_argument(
        fmt::format("mxu: cannot compute d({}) = a({}) * b({})", shape(d), shape(a), shape(b)));
  if (c && (c->rows != d.rows || c->cols != d.cols))
    throw std::invalid_argument(fmt::format("mxu: accumulator c is {}, but d is {}", shape(*c), shape(d)));
  if (!d.has_values()) return;  // timing-only run: nothing to write
  if (!a.has_values() || !b.has_values() || (c && !c->has_values()))
    throw std::invalid_argument("mxu: d holds values but an operand does not");

  const PackedOperands p = pack(a, b);
  // Element (i, j) reads c(i, j) before d(i, j) is written, so c may be d itself (d += a * b).
  auto init = [&](int64_t i, int64_t j) { return c ? c->at(i, j) : 0.0; };
  auto write = [&](int64_t i, int64_t j, double sum) { d.at(i, j) = round_to(dtype, sum); };
  ValueThreads::for_ranges(d.rows, d.rows * p.k * p.n, [&](int64_t begin, int64_t end) {
    kernels::product(p.a.data(), p.k, p.b.data(), p.n, p.k, begin, end, p.n, init, write);
  });
}

void register_mxu_models() {
  Registry<MxuUnit>::instance().add(
      "systolic", "systolic-array matrix unit timed by models/mxu/mxu_timing.h",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        MxuUnit::Params params;
        mxu::MxuGeometry& g = params.geometry;
        g.rows = p.get<int64_t>("rows", 128, "PEs", "array height (K side for ws/is, M side for os)", 1,
                                kMaxArraySide);
        g.cols = p.get<int64_t>("cols", 128, "PEs", "array width (N side for ws/os, M side for is)", 1,
                                kMaxArraySide);
        const std::string dataflow =
            p.choice("dataflow", "ws", {"ws", "os", "is"},
                     "what stays in the array: weights (ws), outputs (os) or inputs (is)");
        g.dataflow = dataflow == "ws"   ? mxu::Dataflow::kWeightStationary
                     : dataflow == "os" ? mxu::Dataflow::kOutputStationary
                                        : mxu::Dataflow::kInputStationary;
        const std::string accounting = p.choice(
            "accounting", "array", {"array", "ideal"},
            "array: folds, loads and drains of a rows x cols array; ideal: seed 003's M + K + N - 2");
        g.accounting = accounting == "array" ? mxu::Accounting::kArray : mxu::Accounting::kIdeal;
        g.double_buffered_stationary = p.get<bool>(
            "double_buffered", true, "",
            "a shadow stationary plane (ws/is: weights load behind the current fold; os: outputs drain "
            "behind the next pass)");
        const std::string hand_off = p.choice(
            "hand_off", "tile", {"tile", "cell"},
            "os only: a finished tile leaves through the array's edge, one row per cycle (tile), or each "
            "cell "
            "writes its sum out the cycle after its last MAC, so passes stream back to back (cell: wgmma)");
        g.hand_off = hand_off == "cell" ? mxu::HandOff::kCell : mxu::HandOff::kTile;
        if (g.hand_off == mxu::HandOff::kCell && g.dataflow != mxu::Dataflow::kOutputStationary)
          p.fail("hand_off", "a cell hand-off needs dataflow: os");
        params.arrays = p.get<int64_t>(
            "arrays", 1, "arrays",
            "systolic arrays working in parallel; the dealt extent is split evenly over them", 1, kMaxArrays);
        params.deal =
            p.choice("deal", "n", {"n", "m"},
                     "the extent split over the arrays: N columns (n) or M rows (m: wgmma's warps)") == "m"
                ? MxuUnit::Deal::kM
                : MxuUnit::Deal::kN;
        params.shared_operand =
            p.choice("shared_operand", "once", {"once", "per_array"},
                     "the operand every array needs whole (B dealt by m, A by n) leaves SRAM once and is "
                     "broadcast (once: wgmma), or once per working array (per_array: mma.sync, each warp's "
                     "ldmatrix)") == "per_array"
                ? MxuUnit::SharedOperand::kPerArray
                : MxuUnit::SharedOperand::kOnce;
        params.result_latency =
            p.get<int64_t>("result_latency", 0, "cycles",
                           "after a matmul leaves the array, before a dependent instruction may start; the "
                           "array serves other work meanwhile",
                           0, kMaxLatency);
        return std::make_unique<MxuUnit>(instance, params);
      });
}

}  // namespace attnsim
