#include "sim/cli/gen_kinds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "isa/assembler.h"
#include "isa/suggest.h"
#include "traces/attention_backward.h"
#include "traces/loop_order.h"

namespace attnsim::cli {

namespace {

constexpr int64_t kLab7D = 4;  // lab 7's rows: d = 4, so a 1 x 4 f32 row is the toy tile machine's 16 bytes

traces::ForwardShape forward_shape(const GenInputs& in, traces::ForwardSchedule schedule) {
  traces::ForwardShape f;
  static_cast<traces::AttentionShape&>(f) = in.shape;
  f.heads = in.heads;
  f.breaks = in.breaks;
  f.qk_range = in.qk_range;
  f.accumulators_in_registers = in.registers;
  f.ping_pong = in.ping_pong;
  f.sum_after_product = in.sum_after_product;
  // The project's kernels' form: Q_i's fragments in registers too, where the schedule has them.
  f.q_in_registers = traces::q_in_registers_applies(schedule, f);
  return f;
}

// Lab 7's loop orders (traces/loop_order.h) with its defaults: d = 4 and f32 unless given.
traces::LoopOrderOptions loop_order_options(const GenInputs& in, bool outer) {
  if (in.slots != 0 && !outer) throw std::invalid_argument("--slots is for outer-product");
  if (in.slots < 0 || in.slots > in.scalar.n)
    throw std::invalid_argument(fmt::format("--slots must be from 0 to --n ({})", in.scalar.n));
  traces::LoopOrderOptions options;
  options.dtype = in.dtype_given ? in.shape.dtype : Dtype::F32;
  options.seed = in.scalar.seed;
  options.outputs_on_chip = in.slots;
  return options;
}

int64_t lab7_d(const GenInputs& in) {
  return in.d_given ? in.shape.d : kLab7D;
}

void add_scalar_kinds(std::vector<GenKind>& kinds) {
  for (const auto& g : traces::scalar_generators()) {
    std::string name = g.name;
    kinds.push_back({GenKind::Family::Scalar, name,
                     fmt::format("{} ({} registers)", g.description, g.registers),
                     [name](const GenInputs& in) { return traces::generate_scalar(name, in.scalar); }});
  }
}

void add_lab7_kinds(std::vector<GenKind>& kinds) {
  kinds.push_back(
      {GenKind::Family::Lab7, "inner-product",
       "lab 7: attention by rows in FlashAttention-2 order, --n rows, --d 4 (configs/toy-tile.yaml)",
       [](const GenInputs& in) {
         return traces::inner_product_attention(in.scalar.n, lab7_d(in), loop_order_options(in, false));
       }});
  kinds.push_back({GenKind::Family::Lab7, "outer-product",
                   "lab 7: the same in FlashAttention-1 order; --slots R keeps R output rows on chip",
                   [](const GenInputs& in) {
                     return traces::outer_product_attention(in.scalar.n, lab7_d(in),
                                                            loop_order_options(in, true));
                   }});
}

void add_tile_kinds(std::vector<GenKind>& kinds) {
  kinds.push_back({GenKind::Family::Attention, "flash2-forward",
                   "tiled attention, FlashAttention-2 loop order (tile machines)", [](const GenInputs& in) {
                     return traces::forward_program(traces::ForwardSchedule::Flash2,
                                                    forward_shape(in, traces::ForwardSchedule::Flash2));
                   }});
  for (auto f : traces::all_forward_schedules())
    kinds.push_back({GenKind::Family::Attention, std::string(traces::schedule_name(f)),
                     "forward attention schedule (docs/schedules.md)",
                     [f](const GenInputs& in) { return traces::forward_program(f, forward_shape(in, f)); }});
  for (auto b : {traces::BackwardSchedule::Flash2, traces::BackwardSchedule::Flash2NoD,
                 traces::BackwardSchedule::Naive})
    kinds.push_back({GenKind::Family::Attention, std::string(traces::schedule_name(b)),
                     "backward attention schedule (docs/schedules.md)", [b](const GenInputs& in) {
                       traces::BackwardShape shape;
                       static_cast<traces::AttentionShape&>(shape) = in.shape;
                       shape.heads = in.heads;
                       return traces::backward_program(b, shape);
                     }});
  kinds.push_back({GenKind::Family::Attention, "standard-attention",
                   "attention with all of S on chip (seed 003's standard)", [](const GenInputs& in) {
                     if (in.heads != 1)
                       throw std::invalid_argument(
                           "standard-attention has one head; --heads is for the schedules");
                     return traces::standard_attention_on_chip(in.shape);
                   }});
}

}  // namespace

const std::vector<GenKind>& gen_kinds() {
  static const std::vector<GenKind> kinds = [] {
    std::vector<GenKind> all;
    add_scalar_kinds(all);
    add_lab7_kinds(all);
    add_tile_kinds(all);
    return all;
  }();
  return kinds;
}

const GenKind& find_gen_kind(const std::string& name) {
  for (const auto& kind : gen_kinds())
    if (kind.name == name) return kind;
  std::string known;
  std::vector<std::string> names;
  for (const auto& kind : gen_kinds()) {
    known += (known.empty() ? "" : ", ") + kind.name;
    names.push_back(kind.name);
  }
  throw std::invalid_argument("unknown kind '" + name + "'" + did_you_mean(name, names) +
                              " (known: " + known + ")");
}

namespace {

void check_random_inputs(const GenInputs& in) {
  if (!std::isfinite(in.scalar.lo) || !std::isfinite(in.scalar.hi) || !(in.scalar.lo < in.scalar.hi))
    throw std::invalid_argument(
        fmt::format("--lo ({}) must be below --hi ({}), both finite", in.scalar.lo, in.scalar.hi));
  if (!std::isfinite(in.qk_range) || !(in.qk_range > 0))
    throw std::invalid_argument(fmt::format("--qk-range must be positive and finite, not {}", in.qk_range));
}

// The instructions the kind emits at a small n and one head (0 if it refuses that n).
double instructions_at(const GenKind& kind, GenInputs in, int64_t n) {
  in.scalar.n = in.shape.n = n;
  in.scalar.x.reset();
  in.scalar.v.reset();
  in.slots = std::min(in.slots, n);
  in.heads = 1;
  try {
    return static_cast<double>(kind.make(in).instructions.size());
  } catch (const std::exception&) {
    return 0;
  }
}

// The count at step m of a count that is a polynomial of degree <= 2 in m, from its values at m = 1, 2, 3.
// The scalar kinds repeat the same steps per element (linear in n), lab 7's per pair of rows, and the
// attention schedules per pair of query and key blocks (quadratic in n at multiples of both blocks, and
// linear in heads): measured, `gen` counts at n = 1..9 blocks fit it exactly.
double quadratic_at(const GenKind& kind, const GenInputs& in, int64_t step, double m) {
  const double one = instructions_at(kind, in, step), two = instructions_at(kind, in, 2 * step);
  const double three = instructions_at(kind, in, 3 * step);
  const double second_difference = std::max(0.0, three - 2 * two + one);
  return one + (two - one) * (m - 1) + second_difference * (m - 1) * (m - 2) / 2;
}

// A lower bound on the instructions the kind emits for these inputs, as a double (it may exceed int64).
double fewest_instructions(const GenKind& kind, const GenInputs& in) {
  const double n = static_cast<double>(in.scalar.n);
  if (kind.family != GenKind::Family::Attention) return std::max(n, quadratic_at(kind, in, 1, n));
  const double query_blocks = std::ceil(n / static_cast<double>(in.shape.block_q));
  const double key_blocks = std::ceil(n / static_cast<double>(in.shape.block_k));
  const double heads = static_cast<double>(in.heads);
  // At least one instruction per pair of blocks visited; causal masking visits at least a quarter of them.
  const double pairs = heads * query_blocks * key_blocks * (in.shape.causal ? 0.25 : 1.0);
  // Closer: the count at the largest multiple of both block sizes not above n (counts grow with n).
  const int64_t step = std::lcm(in.shape.block_q, in.shape.block_k);
  if (step > (int64_t{1} << 16) || in.shape.n < step) return pairs;
  const double steps = std::floor(n / static_cast<double>(step));
  return std::max(pairs, heads * quadratic_at(kind, in, step, steps));
}

}  // namespace

void check_gen_request(const GenKind& kind, const GenInputs& in, int64_t max_instructions) {
  check_random_inputs(in);
  if (kind.family == GenKind::Family::Attention) {
    if (in.shape.n < 1 || in.shape.d < 1 || in.heads < 1 || in.shape.block_q < 1 || in.shape.block_k < 1)
      throw std::invalid_argument("n, d, heads and the block sizes must be positive");
    const double elements =
        static_cast<double>(in.heads) * static_cast<double>(in.shape.n) * static_cast<double>(in.shape.d);
    if (elements > static_cast<double>(isa::kMaxTensorElements))
      throw std::invalid_argument(
          fmt::format("heads x n x d = {:.3g} elements: a tensor may have at most 2^48", elements));
  }
  const double fewest = fewest_instructions(kind, in);
  if (fewest > static_cast<double>(max_instructions))
    throw std::invalid_argument(fmt::format(
        "{} would have at least {:.3g} instructions, more than the {} a run reads; generate a smaller "
        "shape, or raise the limit with --max-instructions N here and in run",
        kind.name, fewest, max_instructions));
}

}  // namespace attnsim::cli
