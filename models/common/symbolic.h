// Symbolic values: instead of numbers, registers and memory carry expressions (a00, a00·b00 + a01·b10,
// e^(x0−m)) so a register table reads like the seed's. Nodes are shared and immutable.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnsim::symbolic {

struct Node;
using Expr = std::shared_ptr<const Node>;

struct Node {
  enum class Kind : uint8_t { Leaf, Constant, Add, Sub, Mul, Div, Max, Exp } kind;
  std::string name;        // Leaf
  double value = 0;        // Constant
  std::vector<Expr> args;  // operators; Add, Mul, Max are n-ary (flattened)
};

Expr leaf(std::string name);
Expr constant(double value);
Expr add(const Expr& a, const Expr& b);
Expr sub(const Expr& a, const Expr& b);
Expr mul(const Expr& a, const Expr& b);
Expr div(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr exp(const Expr& a);

// Names given to nodes when they were stored (c[0][0] -> "c00"), printed instead of their expansion.
using Aliases = std::unordered_map<const Node*, std::string>;

// Renders with ·, −, e^(...); output longer than max_chars is cut with "…".
std::string render(const Expr& e, const Aliases& aliases, size_t max_chars = 48);

// Display name of a memory element, as the seed writes it: a[0][1] -> a01, x[3] -> x3; indices of two or
// more digits keep brackets: x[12] -> x[12].
std::string element_name(const std::string& tensor, const std::vector<int64_t>& indices);

// Number of terminal columns a UTF-8 string occupies (one per code point is enough for ·, −, …).
size_t display_width(const std::string& s);

}  // namespace attnsim::symbolic
