#include "sim/cli/gen_kinds.h"

#include <fmt/format.h>

#include <stdexcept>

#include "isa/suggest.h"
#include "traces/attention_backward.h"
#include "traces/loop_order.h"

namespace attnsim::cli {

namespace {

constexpr int64_t kLab7D = 4;  // lab 7's rows: d = 4, so a 1 x 4 f32 row is the toy tile machine's 16 bytes

traces::ForwardShape forward_shape(const GenInputs& in) {
  traces::ForwardShape f;
  static_cast<traces::AttentionShape&>(f) = in.shape;
  f.heads = in.heads;
  f.breaks = in.breaks;
  f.qk_range = in.qk_range;
  f.accumulators_in_registers = in.registers;
  f.ping_pong = in.ping_pong;
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
    kinds.push_back({name, fmt::format("{} ({} registers)", g.description, g.registers),
                     [name](const GenInputs& in) { return traces::generate_scalar(name, in.scalar); }});
  }
}

void add_lab7_kinds(std::vector<GenKind>& kinds) {
  kinds.push_back(
      {"inner-product",
       "lab 7: attention by rows in FlashAttention-2 order, --n rows, --d 4 (configs/toy-tile.yaml)",
       [](const GenInputs& in) {
         return traces::inner_product_attention(in.scalar.n, lab7_d(in), loop_order_options(in, false));
       }});
  kinds.push_back(
      {"outer-product", "lab 7: the same in FlashAttention-1 order; --slots R keeps R output rows on chip",
       [](const GenInputs& in) {
         return traces::outer_product_attention(in.scalar.n, lab7_d(in), loop_order_options(in, true));
       }});
}

void add_tile_kinds(std::vector<GenKind>& kinds) {
  kinds.push_back({"flash2-forward", "tiled attention, FlashAttention-2 loop order (tile machines)",
                   [](const GenInputs& in) {
                     return traces::forward_program(traces::ForwardSchedule::Flash2, forward_shape(in));
                   }});
  for (auto f : traces::all_forward_schedules())
    kinds.push_back({std::string(traces::schedule_name(f)), "forward attention schedule (docs/schedules.md)",
                     [f](const GenInputs& in) { return traces::forward_program(f, forward_shape(in)); }});
  for (auto b : {traces::BackwardSchedule::Flash2, traces::BackwardSchedule::Flash2NoD,
                 traces::BackwardSchedule::Naive})
    kinds.push_back({std::string(traces::schedule_name(b)), "backward attention schedule (docs/schedules.md)",
                     [b](const GenInputs& in) {
                       traces::BackwardShape shape;
                       static_cast<traces::AttentionShape&>(shape) = in.shape;
                       shape.heads = in.heads;
                       return traces::backward_program(b, shape);
                     }});
  kinds.push_back({"standard-attention", "attention with all of S on chip (seed 003's standard)",
                   [](const GenInputs& in) {
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

}  // namespace attnsim::cli
