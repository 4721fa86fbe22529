#include "models/common/symbolic.h"

#include <fmt/format.h>

namespace attnsim::symbolic {

namespace {

Expr make(Node::Kind kind, std::vector<Expr> args) {
  auto n = std::make_shared<Node>();
  n->kind = kind;
  n->args = std::move(args);
  return n;
}

// Flattens nested n-ary nodes of the same kind: max(max(x0, x1), x2) -> max(x0, x1, x2). Only while the
// result stays small: flattening copies the arguments, so unbounded flattening makes a long running max or
// sum quadratic in memory; past the cap the node nests (tables truncate long expressions anyway).
constexpr size_t kMaxFlattened = 16;
Expr nary(Node::Kind kind, const Expr& a, const Expr& b, const Aliases* none = nullptr) {
  std::vector<Expr> args;
  for (const Expr& e : {a, b}) {
    if (e->kind == kind && args.size() + e->args.size() < kMaxFlattened)
      args.insert(args.end(), e->args.begin(), e->args.end());
    else
      args.push_back(e);
  }
  (void)none;
  return make(kind, std::move(args));
}

int precedence(Node::Kind k) {
  switch (k) {
    case Node::Kind::Add:
    case Node::Kind::Sub:
      return 1;
    case Node::Kind::Mul:
    case Node::Kind::Div:
      return 2;
    default:
      return 3;
  }
}

class Renderer {
 public:
  Renderer(const Aliases& aliases, size_t budget) : aliases_(aliases), budget_(budget) {}

  void emit(const Expr& e, int parent_precedence, bool top) {
    if (full()) return;
    if (!top) {
      if (auto it = aliases_.find(e.get()); it != aliases_.end()) return put(it->second);
    }
    int p = precedence(e->kind);
    bool paren = p < parent_precedence;
    if (paren) put("(");
    switch (e->kind) {
      case Node::Kind::Leaf:
        put(e->name);
        break;
      case Node::Kind::Constant:
        put(fmt::format("{}", e->value));
        break;
      case Node::Kind::Add:
        join(e, " + ", p);
        break;
      case Node::Kind::Mul:
        join(e, "·", p + 1);
        break;
      case Node::Kind::Sub:
        emit(e->args[0], p, false);
        put(" − ");
        emit(e->args[1], p + 1, false);
        break;
      case Node::Kind::Div:
        emit(e->args[0], p, false);
        put("/");
        emit(e->args[1], p + 1, false);
        break;
      case Node::Kind::Max:
        put("max(");
        join(e, ", ", 0);
        put(")");
        break;
      case Node::Kind::Exp:
        put("e^(");
        emit(e->args[0], 0, false);
        put(")");
        break;
    }
    if (paren) put(")");
  }

  std::string result() const { return truncated_ ? out_ + "…" : out_; }

 private:
  void join(const Expr& e, const char* sep, int child_precedence) {
    for (size_t i = 0; i < e->args.size(); ++i) {
      if (i) put(sep);
      emit(e->args[i], child_precedence, false);
    }
  }
  bool full() const { return truncated_; }
  void put(const std::string& s) {
    if (truncated_) return;
    if (display_width(out_) + display_width(s) > budget_) {
      truncated_ = true;
      return;
    }
    out_ += s;
  }

  const Aliases& aliases_;
  size_t budget_;
  std::string out_;
  bool truncated_ = false;
};

}  // namespace

bool is_constant(const Expr& e, double v);

Expr leaf(std::string name) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Leaf;
  n->name = std::move(name);
  return n;
}
Expr constant(double value) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Constant;
  n->value = value;
  return n;
}
Expr add(const Expr& a, const Expr& b) {
  if (a->kind == Node::Kind::Constant && a->value == 0) return b;
  if (b->kind == Node::Kind::Constant && b->value == 0) return a;
  return nary(Node::Kind::Add, a, b);
}
bool is_constant(const Expr& e, double v) {
  return e->kind == Node::Kind::Constant && e->value == v;
}

// Only the identities the seed's tables rely on (1·x = x, x + 0 = x); no general algebra.
Expr mul(const Expr& a, const Expr& b) {
  if (is_constant(a, 1)) return b;
  if (is_constant(b, 1)) return a;
  return nary(Node::Kind::Mul, a, b);
}
Expr max(const Expr& a, const Expr& b) {
  if (a == b) return a;
  return nary(Node::Kind::Max, a, b);
}
Expr sub(const Expr& a, const Expr& b) {
  if (a == b) return constant(0);
  return make(Node::Kind::Sub, {a, b});
}
Expr div(const Expr& a, const Expr& b) {
  return make(Node::Kind::Div, {a, b});
}
Expr exp(const Expr& a) {
  if (a->kind == Node::Kind::Constant && a->value == 0) return constant(1);
  return make(Node::Kind::Exp, {a});
}

std::string render(const Expr& e, const Aliases& aliases, size_t max_chars) {
  if (!e) return "";
  if (auto it = aliases.find(e.get()); it != aliases.end()) return it->second;
  Renderer r(aliases, max_chars);
  r.emit(e, 0, true);
  return r.result();
}

std::string element_name(const std::string& tensor, const std::vector<int64_t>& indices) {
  bool compact = true;
  for (int64_t i : indices) compact = compact && i < 10;
  std::string out = tensor;
  for (int64_t i : indices) out += compact ? fmt::format("{}", i) : fmt::format("[{}]", i);
  return out;
}

size_t display_width(const std::string& s) {
  size_t width = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++width;
  return width;
}

}  // namespace attnsim::symbolic
