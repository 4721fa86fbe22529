// The kinds `attnsim gen` knows, in one list: `gen --help` prints it and an unknown kind's error names every
// entry of it, so the two cannot disagree.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "isa/program.h"
#include "traces/attention_forward.h"
#include "traces/scalar.h"
#include "traces/tile.h"

namespace attnsim::cli {

// Everything gen's options can set; each kind reads what it needs.
struct GenInputs {
  traces::ScalarInputs scalar;
  traces::AttentionShape shape;  // n and seed copied from `scalar`
  int64_t heads = 1;
  traces::BreakIt breaks;
  double qk_range = 1.0;
  int64_t slots = 0;       // outer-product: output rows kept on chip
  bool registers = false;  // flash2, two-pass, flash1: S, P, O_i and the statistics in the tile register file
  bool ping_pong = false;  // flash2: the query block's halves in instruction groups of their own
  bool sum_after_product = false;  // flash2: the row sum after P V_j (ForwardShape::sum_after_product)
  bool d_given = false;            // lab 7 kinds default to d = 4 and f32, not the tile kinds' 64 and f16
  bool dtype_given = false;
};

struct GenKind {
  enum class Family { Scalar, Lab7, Attention };
  Family family;
  std::string name;
  std::string description;
  std::function<isa::Program(const GenInputs&)> make;  // throws std::invalid_argument for bad inputs
};

const std::vector<GenKind>& gen_kinds();
// Throws std::invalid_argument naming every kind when `name` is not one.
const GenKind& find_gen_kind(const std::string& name);

// Refuses, before anything is generated, inputs out of range and a program `run` would refuse: one with
// more than `max_instructions` instructions (by a lower bound on its count: every attention schedule
// issues at least one instruction per query block and key block it visits) or a tensor beyond the
// assembler's size. Throws std::invalid_argument.
void check_gen_request(const GenKind& kind, const GenInputs& in, int64_t max_instructions);

}  // namespace attnsim::cli
