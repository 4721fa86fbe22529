#include "sim/reference.h"

#include "traces/attention_math.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <string>

namespace attnsim {

Dtype compute_dtype_of(const isa::Program& program, Dtype machine_dtype) {
  if (program.buffers.empty()) return machine_dtype;
  Dtype least = Dtype::F64;
  for (const auto& b : program.buffers) {
    const Dtype d = b.dtype.value_or(machine_dtype);
    if (tolerance_for(d) > tolerance_for(least)) least = d;
  }
  return least;
}

double tolerance_for(Dtype dtype) {
  switch (dtype) {
    case Dtype::F64:
      return 1e-12;
    case Dtype::F32:
      return 1e-5;
    case Dtype::F16:
      return 5e-3;
    case Dtype::BF16:
      return 4e-2;
  }
  return 0;
}

namespace {

std::vector<double> softmax_rows(const std::vector<double>& x, int64_t row_length) {
  std::vector<double> out(x.size());
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(row_length)) {
    double m = -INFINITY;
    for (int64_t j = 0; j < row_length; ++j) m = std::max(m, x[start + j]);
    double sum = 0;
    for (int64_t j = 0; j < row_length; ++j) sum += std::exp(x[start + j] - m);
    for (int64_t j = 0; j < row_length; ++j) out[start + j] = std::exp(x[start + j] - m) / sum;
  }
  return out;
}

// Which gradient an attention_[causal_]grad_{q,k,v} check asks for.
struct AttentionGrad {
  bool causal = false;
  char which = 'q';  // 'q', 'k' or 'v'
};

std::optional<AttentionGrad> attention_grad_kind(const std::string& function) {
  for (bool causal : {false, true})
    for (char which : {'q', 'k', 'v'})
      if (function == std::string(causal ? "attention_causal_grad_" : "attention_grad_") + which)
        return AttentionGrad{causal, which};
  return std::nullopt;
}

// One head of the attention backward in float64 (seed 000): P = softmax(Q K^T) row by row, dP = dO V^T,
// D_i = sum_j P_ij dP_ij, dS = P * (dP - D), then dQ = dS K, dK = dS^T Q, dV = P^T dO. D is taken from P and
// dP rather than from a stored O, so the reference does not share the D_i identity with the schedules
// under test. q is [n][d], k [m][d], v [m][dv], dout [n][dv]; out is dQ, dK or dV, accumulated into.
void attention_grad_head(const AttentionGrad& g, const double* q, const double* k, const double* v,
                         const double* dout, int64_t n, int64_t keys, int64_t d, int64_t dv, double* out) {
  std::vector<double> p(static_cast<size_t>(keys)), dp(static_cast<size_t>(keys));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t visible = g.causal ? std::min(keys, i + 1) : keys;
    double row_max = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      p[j] = dot;
      row_max = std::max(row_max, dot);
    }
    double sum = 0;
    for (int64_t j = 0; j < visible; ++j) sum += (p[j] = std::exp(p[j] - row_max));
    double row_d = 0;
    for (int64_t j = 0; j < visible; ++j) {
      p[j] /= sum;
      double dot = 0;
      for (int64_t c = 0; c < dv; ++c) dot += dout[i * dv + c] * v[j * dv + c];
      dp[j] = dot;
      row_d += p[j] * dot;
    }
    for (int64_t j = 0; j < visible; ++j) {
      const double ds = p[j] * (dp[j] - row_d);
      if (g.which == 'q')
        for (int64_t c = 0; c < d; ++c) out[i * d + c] += ds * k[j * d + c];
      else if (g.which == 'k')
        for (int64_t c = 0; c < d; ++c) out[j * d + c] += ds * q[i * d + c];
      else
        for (int64_t c = 0; c < dv; ++c) out[j * dv + c] += p[j] * dout[i * dv + c];
    }
  }
}

}  // namespace

namespace {

// The first element whose own relative error (on the check's scale) fails the tolerance; the largest error
// when none does alone (cannot happen with one scale, kept as a fallback).
CheckResult::Element first_wrong_element(const isa::TensorDecl& target, const std::vector<double>& reference,
                                         const std::vector<double>& got, double scale, double tolerance) {
  size_t index = 0;
  double worst = -1;
  for (size_t i = 0; i < reference.size(); ++i) {
    double err = std::abs(got[i] - reference[i]);
    if (std::isnan(err)) err = INFINITY;
    if ((scale > 0 ? err / scale : err) > tolerance) {
      index = i;
      break;
    }
    if (err > worst) worst = err, index = i;
  }
  std::string name = target.name;
  std::vector<int64_t> indices(target.shape.size());
  size_t rest = index;
  for (size_t d = target.shape.size(); d-- > 0;) {
    indices[d] = static_cast<int64_t>(rest % static_cast<size_t>(target.shape[d]));
    rest /= static_cast<size_t>(target.shape[d]);
  }
  for (int64_t k : indices) name += "[" + std::to_string(k) + "]";
  return {name, reference[index], got[index]};
}

}  // namespace

namespace {

// The float64 reference of one check, from its arguments' initial contents.
std::vector<double> compute_reference(const isa::Program& program, const isa::Check& check,
                                      const std::vector<std::vector<double>>& initial) {
  const auto& target = program.tensors[check.target];
  auto shape_error = [&](const std::string& what) {
    throw InputError(program.file, check.loc, check.function + "(): " + what);
  };
  auto arg = [&](size_t i) -> const isa::TensorDecl& { return program.tensors[check.args[i]]; };
  std::vector<double> reference;
  if (check.function == "matmul") {
    const auto& a = arg(0);
    const auto& b = arg(1);
    if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0])
      shape_error("needs A[m][k] and B[k][n]");
    const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    if (target.elements() != m * n) shape_error("the target must have m*n elements");
    reference.assign(static_cast<size_t>(m * n), 0.0);
    const auto& av = initial[check.args[0]];
    const auto& bv = initial[check.args[1]];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += av[i * k + p] * bv[p * n + j];
        reference[i * n + j] = sum;
      }
  } else if (check.function == "softmax") {
    const auto& x = arg(0);
    if (x.elements() != target.elements()) shape_error("the target must have as many elements as the input");
    reference = softmax_rows(initial[check.args[0]], x.shape.back());
  } else if (check.function == "attend") {
    const auto& x = arg(0);
    const auto& v = arg(1);
    const int64_t n = x.elements();
    if (v.shape[0] != n) shape_error("v's first dimension must equal the number of scores");
    const int64_t d = v.elements() / n;
    if (target.elements() != d) shape_error("the target must have one element per column of v");
    auto p = softmax_rows(initial[check.args[0]], n);
    reference.assign(static_cast<size_t>(d), 0.0);
    const auto& vv = initial[check.args[1]];
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < d; ++c) reference[c] += p[j] * vv[j * d + c];
  } else if (check.function == "attention" || check.function == "attention_causal") {
    const bool causal = check.function == "attention_causal";
    const auto& q = arg(0);
    const auto& k = arg(1);
    const auto& v = arg(2);
    // [n][d], or [heads][n][d] with independent heads (batch x heads flattened into one dimension).
    const size_t rank = q.shape.size();
    if (rank < 2 || rank > 3 || k.shape.size() != rank || v.shape.size() != rank ||
        q.shape[rank - 1] != k.shape[rank - 1] || k.shape[rank - 2] != v.shape[rank - 2] ||
        (rank == 3 && (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0])))
      shape_error("needs Q[n][d], K[m][d] and V[m][dv], or the same with a leading [heads] dimension");
    const int64_t heads = rank == 3 ? q.shape[0] : 1;
    const int64_t n = q.shape[rank - 2], d = q.shape[rank - 1], keys = k.shape[rank - 2],
                  dv = v.shape[rank - 1];
    if (target.elements() != heads * n * dv) shape_error("the target must be [heads] x n x dv");
    reference.assign(static_cast<size_t>(heads * n * dv), 0.0);
    traces::attention_f64(initial[check.args[0]].data(), initial[check.args[1]].data(),
                          initial[check.args[2]].data(), heads, n, keys, d, dv, causal, reference.data());
  } else if (const auto grad = attention_grad_kind(check.function)) {
    const auto& q = arg(0);
    const auto& k = arg(1);
    const auto& v = arg(2);
    const auto& dout = arg(3);
    // [n][d], or [heads][n][d] with independent heads, as for attention().
    const size_t rank = q.shape.size();
    if (rank < 2 || rank > 3 || k.shape.size() != rank || v.shape.size() != rank ||
        dout.shape.size() != rank || q.shape[rank - 1] != k.shape[rank - 1] ||
        k.shape[rank - 2] != v.shape[rank - 2] || dout.shape[rank - 2] != q.shape[rank - 2] ||
        dout.shape[rank - 1] != v.shape[rank - 1] ||
        (rank == 3 && (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || dout.shape[0] != q.shape[0])))
      shape_error(
          "needs Q[n][d], K[m][d], V[m][dv] and dO[n][dv], or the same with a leading [heads] dimension");
    const int64_t heads = rank == 3 ? q.shape[0] : 1;
    const int64_t n = q.shape[rank - 2], d = q.shape[rank - 1], keys = k.shape[rank - 2],
                  dv = v.shape[rank - 1];
    const int64_t rows = grad->which == 'q' ? n : keys, cols = grad->which == 'v' ? dv : d;
    if (target.elements() != heads * rows * cols)
      shape_error(std::string("the target must be [heads] x ") + (grad->which == 'q' ? "n x d" : "m x d") +
                  (grad->which == 'v' ? "v" : ""));
    reference.assign(static_cast<size_t>(heads * rows * cols), 0.0);
    for (int64_t h = 0; h < heads; ++h)
      attention_grad_head(
          *grad, initial[check.args[0]].data() + h * n * d, initial[check.args[1]].data() + h * keys * d,
          initial[check.args[2]].data() + h * keys * dv, initial[check.args[3]].data() + h * n * dv, n, keys,
          d, dv, reference.data() + h * rows * cols);
  }
  return reference;
}

// compare checks every schedule against the same inputs, so the last few references are kept, keyed by the
// check's function, the shapes of its target and arguments and the arguments' initial values: each is
// computed once per command instead of once per schedule (at N = 8192 the reference is seconds of work).
class ReferenceMemo {
 public:
  const std::vector<double>& get(const isa::Program& program, const isa::Check& check,
                                 const std::vector<std::vector<double>>& initial) {
    for (const Entry& e : entries_)
      if (matches(e, program, check, initial)) return e.reference;
    if (entries_.size() == kEntries) entries_.erase(entries_.begin());
    Entry e;
    e.function = check.function;
    e.target_shape = program.tensors[check.target].shape;
    for (int a : check.args) {
      e.arg_shapes.push_back(program.tensors[a].shape);
      e.arg_values.push_back(initial[a]);
    }
    e.reference = compute_reference(program, check, initial);
    entries_.push_back(std::move(e));
    return entries_.back().reference;
  }

 private:
  static constexpr size_t kEntries = 4;  // the backward's dQ, dK, dV checks alternate
  struct Entry {
    std::string function;
    std::vector<int64_t> target_shape;
    std::vector<std::vector<int64_t>> arg_shapes;
    std::vector<std::vector<double>> arg_values;
    std::vector<double> reference;
  };
  static bool matches(const Entry& e, const isa::Program& program, const isa::Check& check,
                      const std::vector<std::vector<double>>& initial) {
    if (e.function != check.function || e.target_shape != program.tensors[check.target].shape ||
        e.arg_shapes.size() != check.args.size())
      return false;
    for (size_t i = 0; i < check.args.size(); ++i)
      if (e.arg_shapes[i] != program.tensors[check.args[i]].shape ||
          e.arg_values[i] != initial[check.args[i]])
        return false;
    return true;
  }
  std::deque<Entry> entries_;
};

ReferenceMemo& memo() {
  static ReferenceMemo references;
  return references;
}

// The checks' functions read [heads][n][cols]: a heads_inner argument's contents reordered to that (only
// the check's arguments are filled in `scratch`, indexed as `initial`).
const std::vector<std::vector<double>>& logical_initial(const isa::Program& program, const isa::Check& check,
                                                        const std::vector<std::vector<double>>& initial,
                                                        std::vector<std::vector<double>>& scratch) {
  bool any = false;
  for (int a : check.args) any = any || program.tensors[a].heads_inner;
  if (!any) return initial;
  scratch.assign(initial.size(), {});
  for (int a : check.args) scratch[a] = isa::logical_order(program.tensors[a], initial[a]);
  return scratch;
}

}  // namespace

void warm_reference(const isa::Program& program, const isa::Check& check,
                    const std::vector<std::vector<double>>& initial) {
  std::vector<std::vector<double>> scratch;
  memo().get(program, check, logical_initial(program, check, initial, scratch));
}

CheckResult evaluate_check(const isa::Program& program, const isa::Check& check,
                           const std::vector<std::vector<double>>& initial,
                           const std::vector<std::vector<double>>& final, Dtype compute_dtype) {
  const auto& target = program.tensors[check.target];
  auto arg = [&](size_t i) -> const isa::TensorDecl& { return program.tensors[check.args[i]]; };
  std::vector<std::vector<double>> scratch;
  const std::vector<double>& reference =
      memo().get(program, check, logical_initial(program, check, initial, scratch));
  std::vector<double> reordered;
  const std::vector<double>& got = target.heads_inner
                                       ? (reordered = isa::logical_order(target, final[check.target]))
                                       : final[check.target];
  CheckResult result;
  result.description = target.name + " = " + check.function + "(";
  for (size_t i = 0; i < check.args.size(); ++i) result.description += (i ? ", " : "") + arg(i).name;
  result.description += ")";
  double scale = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    scale = std::max(scale, std::abs(reference[i]));
    double err = std::abs(got[i] - reference[i]);
    if (std::isnan(err)) err = INFINITY;
    result.max_abs_error = std::max(result.max_abs_error, err);
  }
  result.max_rel_error = scale > 0 ? result.max_abs_error / scale : result.max_abs_error;
  // The target's own storage dtype also limits accuracy.
  Dtype storage = target.dtype.value_or(compute_dtype);
  result.tolerance = std::max(tolerance_for(compute_dtype), tolerance_for(storage));
  result.passed = result.max_rel_error <= result.tolerance;
  if (!result.passed)
    result.first_wrong = first_wrong_element(target, reference, got, scale, result.tolerance);
  return result;
}

}  // namespace attnsim
