#include "isa/assembler.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "isa/suggest.h"

namespace attnsim::isa {

const std::vector<CheckFunction>& check_functions() {
  static const std::vector<CheckFunction> functions = {
      {"matmul", 2, "C = A x B for 2-D A, B"},
      {"softmax", 1, "softmax over the last dimension"},
      {"attend", 2, "o = sum_j softmax(x)_j * v_j (one query: scores x, values v)"},
      {"attention", 3, "O = softmax(Q K^T) V for Q, K, V of shape [n][d] (Q already scaled)"},
      {"attention_causal", 3, "as attention, with key j hidden from query i when j > i"},
      {"attention_grad_q", 4, "dQ of attention(Q, K, V) for upstream gradient dO: args Q, K, V, dO"},
      {"attention_grad_k", 4, "dK of attention(Q, K, V) for upstream gradient dO: args Q, K, V, dO"},
      {"attention_grad_v", 4, "dV of attention(Q, K, V) for upstream gradient dO: args Q, K, V, dO"},
      {"attention_causal_grad_q", 4, "dQ of attention_causal: args Q, K, V, dO"},
      {"attention_causal_grad_k", 4, "dK of attention_causal: args Q, K, V, dO"},
      {"attention_causal_grad_v", 4, "dV of attention_causal: args Q, K, V, dO"},
  };
  return functions;
}

std::optional<Opcode> find_opcode(std::string_view text) {
  for (const auto& entry : kOpcodes) {
    if (entry.mnemonic.size() != text.size()) continue;
    bool same = true;
    for (size_t i = 0; i < text.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(text[i])) == entry.mnemonic[i];
    if (same) return entry.op;
  }
  return std::nullopt;
}

namespace {

// A cursor over one line that knows its column, so every error can point at the offending character.
class LineCursor {
 public:
  LineCursor(std::string_view line, int line_no, const std::string& file)
      : line_(line), line_no_(line_no), file_(file) {}

  void skip_space() {
    while (pos_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= line_.size();
  }
  char peek() {
    skip_space();
    return pos_ < line_.size() ? line_[pos_] : '\0';
  }
  SourceLoc loc() {
    skip_space();
    return {line_no_, static_cast<int>(pos_) + 1};
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, std::string_view what) {
    SourceLoc where = loc();
    if (!accept(c)) fail(where, "expected '" + std::string(1, c) + "' " + std::string(what) + found());
  }
  std::string found() {
    if (at_end()) return ", found end of line";
    return ", found '" + std::string(1, line_[pos_]) + "'";
  }
  // [A-Za-z_][A-Za-z0-9_]*
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    if (pos_ < line_.size() &&
        (std::isalpha(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '_')) {
      ++pos_;
      while (pos_ < line_.size() &&
             (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '_'))
        ++pos_;
    }
    return std::string(line_.substr(start, pos_ - start));
  }
  // The identifier at the cursor, left unread.
  std::string peek_identifier() {
    const size_t start = pos_;
    std::string word = identifier();
    pos_ = start;
    return word;
  }
  std::optional<int64_t> integer() {
    skip_space();
    int64_t value = 0;
    auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), value);
    if (ec != std::errc()) return std::nullopt;
    pos_ = static_cast<size_t>(end - line_.data());
    return value;
  }
  std::optional<uint64_t> unsigned_integer() {
    skip_space();
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), value);
    if (ec != std::errc()) return std::nullopt;
    const char* stop = line_.data() + line_.size();
    if (end != stop && (std::isalnum(static_cast<unsigned char>(*end)) || *end == '.')) return std::nullopt;
    pos_ = static_cast<size_t>(end - line_.data());
    return value;
  }
  std::optional<double> number() {
    skip_space();
    // from_chars for double accepts "inf"/"nan" and exponents; a leading '+' is allowed for symmetry.
    size_t start = pos_;
    if (pos_ < line_.size() && line_[pos_] == '+') ++pos_;
    double value = 0;
    auto [end, ec] = std::from_chars(line_.data() + pos_, line_.data() + line_.size(), value);
    if (ec != std::errc()) {
      pos_ = start;
      return std::nullopt;
    }
    pos_ = static_cast<size_t>(end - line_.data());
    return value;
  }
  [[noreturn]] void fail(SourceLoc where, const std::string& message) {
    throw InputError(file_, where, message);
  }

 private:
  std::string_view line_;
  size_t pos_ = 0;
  int line_no_;
  const std::string& file_;
};

std::optional<int> parse_register_name(std::string_view name) {
  if (name.size() < 2 || (name[0] != 'R' && name[0] != 'r')) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return value;
}

class Assembler {
 public:
  Assembler(std::string_view text, const std::string& file, int64_t max_instructions)
      : text_(text), max_instructions_(max_instructions) {
    program_.file = file;
  }

  Program run() {
    size_t start = 0;
    while (start <= text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      assemble_line(text_.substr(start, end - start));
      if (end == text_.size()) break;
      start = end + 1;
    }
    check_grids_complete();
    return std::move(program_);
  }

  // Line by line from `in`, handing the instructions to `handler` every `chunk` of them; the returned
  // header has none.
  Program run_streamed(std::istream& in, const ChunkHandler& handler, size_t chunk) {
    handler_ = &handler;
    chunk_ = chunk;
    std::string line;
    while (std::getline(in, line)) assemble_line(line);
    if (in.bad()) throw InputError(program_.file, {line_no_, 1}, "read error");
    flush();
    return std::move(program_);
  }

 private:
  void assemble_line(std::string_view line) {
    if (line_no_ == std::numeric_limits<int>::max())
      throw InputError(program_.file, {line_no_, 1}, "a trace has at most 2^31 - 1 lines");
    ++line_no_;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineCursor cursor(line, line_no_, program_.file);
    if (!cursor.at_end()) parse_line(cursor);
  }

  void flush() {
    (*handler_)(program_, program_.instructions);
    program_.instructions.clear();
    flushed_ = true;
  }

 private:
  void parse_line(LineCursor& c) {
    if (c.peek() == '.') {
      SourceLoc where = c.loc();
      c.accept('.');
      std::string directive = c.identifier();
      if (handler_) check_streamable(c, where, directive);
      if (directive == "tensor") return parse_tensor(c);
      if (directive == "check") return parse_check(c);
      if (directive == "buffer") return parse_buffer(c);
      if (directive == "kernel") return parse_kernel(c);
      if (directive == "block") return parse_block(c);
      if (directive == "group") return parse_group(c);
      c.fail(where, "unknown directive '." + directive +
                        "' (known: .tensor, .buffer, .kernel, .block, .group, .check)");
    }
    parse_instruction(c);
  }

  void parse_tensor(LineCursor& c) {
    TensorDecl decl;
    decl.loc = c.loc();
    decl.name = c.identifier();
    if (decl.name.empty()) c.fail(decl.loc, "expected a tensor name after .tensor" + c.found());
    check_new_name(c, decl.name, decl.loc);
    if (c.peek() != '[') c.fail(c.loc(), "expected a shape like [2][2] after the tensor name" + c.found());
    while (c.peek() == '[') {
      c.accept('[');
      SourceLoc dim_loc = c.loc();
      auto extent = c.integer();
      if (!extent || *extent <= 0) c.fail(dim_loc, "a tensor dimension must be a positive integer");
      decl.shape.push_back(*extent);
      check_size(c, dim_loc, decl.shape, "tensor");
      c.expect(']', "to close the dimension");
    }
    if (std::isalpha(static_cast<unsigned char>(c.peek())) && !is_tensor_attribute(c.peek_identifier())) {
      SourceLoc type_loc = c.loc();
      std::string word = c.identifier();
      if (word == "fill") {
        parse_fill(c, decl);
      } else if (word != "random") {
        auto dtype = parse_dtype(word);
        if (!dtype) c.fail(type_loc, "unknown dtype '" + word + "' (known: f16, bf16, f32, f64)");
        decl.dtype = dtype;
      } else {
        parse_random(c, decl);
      }
    }
    if (c.accept('=')) {
      if (decl.init.kind != TensorInit::Kind::Zeros)
        c.fail(decl.loc,
               "tensor '" + decl.name + "' has two initialisers (random(...) and = {...}); keep one");
      parse_values(c, decl);
    } else if (std::isalpha(static_cast<unsigned char>(c.peek())) &&
               !is_tensor_attribute(c.peek_identifier())) {
      SourceLoc word_loc = c.loc();
      std::string word = c.identifier();
      if (word != "random" && word != "fill")
        c.fail(word_loc,
               "expected '= {values}', 'random(...)', 'fill(...)', 'coherent' or 'heads_inner', found '" +
                   word + "'");
      if (decl.init.kind != TensorInit::Kind::Zeros)
        c.fail(word_loc, "tensor '" + decl.name + "' has two initialisers; keep one");
      if (word == "fill")
        parse_fill(c, decl);
      else
        parse_random(c, decl);
    }
    parse_tensor_attributes(c, decl);
    if (!c.at_end()) c.fail(c.loc(), "unexpected text after the tensor declaration");
    program_.tensors.push_back(std::move(decl));
  }

  static bool is_tensor_attribute(const std::string& word) {
    return word == "coherent" || word == "heads_inner";
  }

  // `coherent` and `heads_inner`, each at most once, in either order.
  void parse_tensor_attributes(LineCursor& c, TensorDecl& decl) {
    while (std::isalpha(static_cast<unsigned char>(c.peek()))) {
      SourceLoc word_loc = c.loc();
      const std::string word = c.identifier();
      if (!is_tensor_attribute(word))
        c.fail(word_loc,
               "unexpected text after the tensor declaration (attributes: 'coherent', 'heads_inner')");
      if (word == "coherent") {
        if (decl.coherent) c.fail(word_loc, "'coherent' given twice");
        decl.coherent = true;
      } else {
        parse_heads_inner(c, decl, word_loc);
      }
    }
  }

  // `heads_inner` (every head a row: [n][heads][cols]) or `heads_inner(H)` ([heads / H][n][H][cols]).
  void parse_heads_inner(LineCursor& c, TensorDecl& decl, SourceLoc word_loc) {
    if (decl.heads_inner) c.fail(word_loc, "'heads_inner' given twice");
    if (decl.shape.size() != 3)
      c.fail(word_loc, "'heads_inner' needs a [heads][n][cols] tensor (3 dimensions)");
    decl.heads_inner = decl.shape[0];
    if (!c.accept('(')) return;
    SourceLoc at = c.loc();
    auto group = c.integer();
    if (!group || *group <= 0 || decl.shape[0] % *group != 0)
      c.fail(at, "heads_inner(H): H must be a positive divisor of the " + std::to_string(decl.shape[0]) +
                     " heads");
    decl.heads_inner = *group;
    c.expect(')', "to close heads_inner(H)");
  }

  void check_size(LineCursor& c, SourceLoc where, const std::vector<int64_t>& shape, const char* what) {
    int64_t elements = 1;
    for (int64_t extent : shape)
      if (__builtin_mul_overflow(elements, extent, &elements) || elements > kMaxTensorElements)
        c.fail(where, std::string("the ") + what + " has more than 2^48 elements");
  }

  void check_new_name(LineCursor& c, const std::string& name, SourceLoc where) {
    if (parse_register_name(name)) c.fail(where, "'" + name + "' is a register name; pick another");
    if (program_.find_tensor(name) >= 0) c.fail(where, "'" + name + "' is already declared as a tensor");
    if (program_.find_buffer(name) >= 0) c.fail(where, "'" + name + "' is already declared as a buffer");
  }

  // .buffer NAME[rows][cols] [dtype] [sram|regs]
  void parse_buffer(LineCursor& c) {
    BufferDecl decl;
    decl.loc = c.loc();
    decl.name = c.identifier();
    if (decl.name.empty()) c.fail(decl.loc, "expected a buffer name after .buffer" + c.found());
    check_new_name(c, decl.name, decl.loc);
    std::vector<int64_t> shape;
    while (c.peek() == '[') {
      c.accept('[');
      SourceLoc dim_loc = c.loc();
      auto extent = c.integer();
      if (!extent || *extent <= 0) c.fail(dim_loc, "a buffer dimension must be a positive integer");
      shape.push_back(*extent);
      check_size(c, dim_loc, shape, "buffer");
      c.expect(']', "to close the dimension");
    }
    if (shape.empty() || shape.size() > 2)
      c.fail(decl.loc, "a buffer has one or two dimensions, e.g. .buffer S[64][64] or .buffer m[64]");
    decl.rows = shape[0];
    decl.cols = shape.size() == 2 ? shape[1] : 1;
    while (!c.at_end()) {
      SourceLoc word_loc = c.loc();
      std::string word = c.identifier();
      if (word == "sram")
        decl.space = BufferDecl::Space::Sram;
      else if (word == "regs")
        decl.space = BufferDecl::Space::Regs;
      else if (auto dtype = parse_dtype(word))
        decl.dtype = dtype;
      else
        c.fail(word_loc, "expected a dtype (f16, bf16, f32, f64) or a space (sram, regs)" +
                             (word.empty() ? c.found() : ", found '" + word + "'"));
    }
    program_.buffers.push_back(std::move(decl));
  }

  // ---- kernels and thread blocks ----

  // What the assembler tracks per declared kernel, beside Program::kernels.
  struct KernelState {
    SourceLoc loc;                                // of the name in `.kernel NAME ...`
    bool started = false;                         // a `.block` of it was seen
    std::unordered_map<int64_t, int> seen_lines;  // linear block index -> line of its `.block`
  };

  static constexpr int64_t kMaxGridExtent = (int64_t{1} << 31) - 1;
  static constexpr int64_t kMaxGridBlocks = int64_t{1} << 48;

  static std::string grid_text(const std::array<int64_t, 3>& grid) {
    return std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" + std::to_string(grid[2]);
  }
  static std::string block_text(const std::string& kernel, const std::array<int64_t, 3>& index) {
    return kernel + "(" + std::to_string(index[0]) + ", " + std::to_string(index[1]) + ", " +
           std::to_string(index[2]) + ")";
  }

  // .kernel NAME grid(X[, Y[, Z]]) [k_loops(rolled | unrolled)] [warps(W, R)]
  void parse_kernel(LineCursor& c) {
    KernelDecl decl;
    KernelState state;
    state.loc = c.loc();
    decl.name = c.identifier();
    if (decl.name.empty()) c.fail(state.loc, "expected a kernel name after .kernel" + c.found());
    if (kernel_index_.contains(decl.name))
      c.fail(state.loc, "kernel '" + decl.name + "' is already declared");
    SourceLoc grid_loc = c.loc();
    if (c.identifier() != "grid")
      c.fail(grid_loc,
             "expected grid(X[, Y[, Z]]) after the kernel name, e.g. .kernel " + decl.name + " grid(4, 2)");
    c.expect('(', "after grid");
    for (size_t dim = 0; dim < 3; ++dim) {
      if (dim > 0 && !c.accept(',')) break;
      SourceLoc extent_loc = c.loc();
      auto extent = c.integer();
      if (!extent || *extent < 1 || *extent > kMaxGridExtent)
        c.fail(extent_loc, "a grid extent must be an integer from 1 to 2^31-1");
      decl.grid[dim] = *extent;
    }
    c.expect(')', "to close grid(...)");
    KernelOptionsSeen seen;
    while (!c.at_end()) parse_kernel_option(c, decl, seen);
    int64_t blocks = 1;
    for (int64_t extent : decl.grid)
      if (__builtin_mul_overflow(blocks, extent, &blocks) || blocks > kMaxGridBlocks)
        c.fail(grid_loc, "kernel '" + decl.name + "' has more than 2^48 thread blocks");
    kernel_index_.emplace(decl.name, static_cast<int32_t>(program_.kernels.size()));
    program_.kernels.push_back(std::move(decl));
    kernel_states_.push_back(std::move(state));
  }

  struct KernelOptionsSeen {
    bool k_loops = false, warps = false, mma = false, softmax = false, exp = false, overhead = false;
  };

  // k_loops(rolled | unrolled), warps(W, R), mma(M, N, K), softmax(iterative), exp(accurate) or
  // overhead(KEY=VALUE, ...) after a kernel's grid, each at most once.
  static void parse_kernel_option(LineCursor& c, KernelDecl& decl, KernelOptionsSeen& seen) {
    const SourceLoc loc = c.loc();
    const std::string option = c.identifier();
    bool* flag = option == "k_loops"    ? &seen.k_loops
                 : option == "warps"    ? &seen.warps
                 : option == "mma"      ? &seen.mma
                 : option == "softmax"  ? &seen.softmax
                 : option == "exp"      ? &seen.exp
                 : option == "overhead" ? &seen.overhead
                                        : nullptr;
    if (!flag)
      c.fail(loc,
             "unexpected text after the kernel declaration (only k_loops(rolled | unrolled), warps(W, R), "
             "mma(M, N, K), softmax(iterative), exp(accurate) and overhead(fixed=F, ldmatrix_address=A, "
             "copy_address=C, red_bytes=R) may follow the grid)");
    if (*flag) c.fail(loc, option + "(...) is given twice");
    *flag = true;
    if (option == "k_loops")
      parse_k_loops(c, decl);
    else if (option == "warps")
      parse_warps(c, decl);
    else if (option == "mma")
      parse_mma(c, decl);
    else if (option == "overhead")
      parse_overhead(c, decl.overhead);
    else if (option == "softmax") {
      parse_word(c, option, "iterative");
      decl.iterative_softmax = true;
    } else {
      parse_word(c, option, "accurate");
      decl.accurate_exp = true;
    }
  }

  // mma(M, N, K): the kernel's mma instruction shape (KernelDecl::mma).
  static void parse_mma(LineCursor& c, KernelDecl& decl) {
    c.expect('(', "after mma");
    for (size_t dim = 0; dim < 3; ++dim) {
      if (dim > 0) c.expect(',', "between an mma shape's M, N and K, e.g. mma(16, 8, 8)");
      const SourceLoc loc = c.loc();
      const auto extent = c.integer();
      if (!extent || *extent < 1 || *extent > 256) c.fail(loc, "an mma extent: an integer from 1 to 256");
      decl.mma[dim] = *extent;
    }
    c.expect(')', "to close mma(...)");
  }

  // overhead(KEY=VALUE, ...): what the kernel's code spends beside its tile instructions (isa::CodeOverhead),
  // KEY one of fixed, ldmatrix_address, copy_address (instructions, 0 to 1000) and red_bytes (bytes, 1 to
  // 1000), each at most once.
  static void parse_overhead(LineCursor& c, CodeOverhead& overhead) {
    c.expect('(', "after overhead");
    do {
      const SourceLoc key_loc = c.loc();
      const std::string key = c.identifier();
      double* field = key == "fixed"              ? &overhead.fixed_per_warp
                      : key == "ldmatrix_address" ? &overhead.address_per_ldmatrix
                      : key == "copy_address"     ? &overhead.address_per_copy
                      : key == "red_bytes"        ? &overhead.red_bytes
                                                  : nullptr;
      if (!field)
        c.fail(key_loc,
               "expected fixed, ldmatrix_address, copy_address or red_bytes in overhead(...)" + c.found());
      if (*field >= 0) c.fail(key_loc, key + " is given twice in overhead(...)");
      c.expect('=', "after " + key);
      const SourceLoc value_loc = c.loc();
      const auto value = c.number();
      if (key == "red_bytes" && (!value || !(*value >= 1 && *value <= 1000)))
        c.fail(value_loc, "red_bytes: bytes from 1 to 1000, e.g. overhead(red_bytes=128)");
      if (!value || !(*value >= 0 && *value <= 1000))
        c.fail(value_loc, key + ": instructions from 0 to 1000, e.g. overhead(" + key + "=0.5)");
      *field = *value;
    } while (c.accept(','));
    c.expect(')', "to close overhead(...)");
  }

  // OPTION(WORD), the one word such an option takes: softmax(iterative), exp(accurate).
  static void parse_word(LineCursor& c, const std::string& option, const std::string& word) {
    c.expect('(', "after " + option);
    const SourceLoc value_loc = c.loc();
    if (c.identifier() != word) c.fail(value_loc, "expected " + option + "(" + word + ")" + c.found());
    c.expect(')', "to close " + option + "(...)");
  }

  // warps(W, R): the block's W warps share a product's output in bands of R rows (KernelDecl::warps).
  static void parse_warps(LineCursor& c, KernelDecl& decl) {
    c.expect('(', "after warps");
    const SourceLoc warps_loc = c.loc();
    const auto warps = c.integer();
    if (!warps || *warps < 1 || *warps > 64) c.fail(warps_loc, "a block's warps: an integer from 1 to 64");
    c.expect(',', "between the warps and their rows, e.g. warps(8, 32)");
    const SourceLoc rows_loc = c.loc();
    const auto rows = c.integer();
    if (!rows || *rows < 1 || *rows > 4096) c.fail(rows_loc, "a warp's rows: an integer from 1 to 4096");
    c.expect(')', "to close warps(...)");
    decl.warps = *warps;
    decl.warp_rows = *rows;
  }

  static void parse_k_loops(LineCursor& c, KernelDecl& decl) {
    c.expect('(', "after k_loops");
    const SourceLoc value_loc = c.loc();
    const std::string value = c.identifier();
    if (value != "rolled" && value != "unrolled")
      c.fail(value_loc, "expected k_loops(rolled) or k_loops(unrolled)" + c.found());
    decl.rolled_k_loops = value == "rolled";
    c.expect(')', "to close k_loops(...)");
  }

  // .group N: the instructions up to the next .group or .block run as instruction group N of their block.
  void parse_group(LineCursor& c) {
    SourceLoc value_loc = c.loc();
    auto value = c.integer();
    if (!value) c.fail(value_loc, "expected a group number after .group" + c.found());
    if (*value < 0 || *value >= kInstructionGroups)
      c.fail(value_loc, "group " + std::to_string(*value) + " out of range: a block has groups 0 to " +
                            std::to_string(kInstructionGroups - 1));
    if (!c.at_end()) c.fail(c.loc(), "unexpected text after the group");
    group_ = static_cast<uint8_t>(*value);
  }

  // .block NAME(x[, y[, z]]): the instructions from here to the next .block are thread block (x, y, z).
  void parse_block(LineCursor& c) {
    group_ = 0;  // every block starts in group 0
    SourceLoc name_loc = c.loc();
    std::string name = c.identifier();
    if (name.empty()) c.fail(name_loc, "expected a kernel name after .block" + c.found());
    auto found = kernel_index_.find(name);
    if (found == kernel_index_.end())
      c.fail(name_loc,
             "undeclared kernel '" + name + "' (declare it first with .kernel " + name + " grid(...))");
    const int32_t kernel = found->second;
    const KernelDecl& decl = program_.kernels[static_cast<size_t>(kernel)];
    KernelState& state = kernel_states_[static_cast<size_t>(kernel)];

    c.expect('(', "after the kernel name (the block index, e.g. " + name + "(0, 1))");
    std::array<int64_t, 3> index{0, 0, 0};
    SourceLoc index_loc = c.loc();
    for (size_t dim = 0; dim < 3; ++dim) {
      if (dim > 0 && !c.accept(',')) break;
      SourceLoc value_loc = c.loc();
      auto value = c.integer();
      if (!value) c.fail(value_loc, "expected an integer block index" + c.found());
      if (*value < 0 || *value >= decl.grid[dim])
        c.fail(value_loc, "block index " + std::to_string(*value) + " out of range for dimension " +
                              std::string(1, "xyz"[dim]) + " of kernel '" + name + "' (grid " +
                              grid_text(decl.grid) + ")");
      index[dim] = *value;
    }
    c.expect(')', "to close the block index");
    if (!c.at_end()) c.fail(c.loc(), "unexpected text after the block");

    if (program_.blocks.empty() && !program_.instructions.empty())
      throw InputError(program_.file, program_.instructions.front().loc,
                       "instruction before the first .block (line " + std::to_string(name_loc.line) +
                           "): in a trace with thread blocks every instruction belongs to one");
    if (current_kernel_ != kernel) {
      if (state.started)
        c.fail(name_loc, "kernel '" + name + "' reappears after the blocks of kernel '" +
                             program_.kernels[static_cast<size_t>(current_kernel_)].name +
                             "'; a kernel's blocks must be contiguous (kernels run one after another)");
      if (kernel < current_kernel_)
        c.fail(name_loc, "kernel '" + name + "' is declared before kernel '" +
                             program_.kernels[static_cast<size_t>(current_kernel_)].name +
                             "', so its blocks must come first (kernels run in the order they are declared)");
      state.started = true;
      current_kernel_ = kernel;
    }
    const int64_t linear = index[0] + decl.grid[0] * (index[1] + decl.grid[1] * index[2]);
    auto [seen, inserted] = state.seen_lines.try_emplace(linear, name_loc.line);
    if (!inserted)
      c.fail(index_loc, "block " + block_text(name, index) + " appears twice (first at line " +
                            std::to_string(seen->second) + ")");
    program_.blocks.push_back({program_.instructions.size(), kernel, index, false, false, {}});
  }

  // Every declared kernel must list all grid.x * grid.y * grid.z of its blocks.
  void check_grids_complete() {
    for (size_t k = 0; k < program_.kernels.size(); ++k) {
      const KernelDecl& decl = program_.kernels[k];
      const KernelState& state = kernel_states_[k];
      const int64_t have = static_cast<int64_t>(state.seen_lines.size());
      if (have == 0)
        throw InputError(program_.file, state.loc,
                         "kernel '" + decl.name + "' has no .block (its grid " + grid_text(decl.grid) +
                             " needs " + std::to_string(decl.blocks()) + " blocks)");
      if (have == decl.blocks()) continue;
      int64_t first = 0;  // the first missing block in launch order (x fastest)
      while (state.seen_lines.contains(first)) ++first;
      const std::array<int64_t, 3> index{first % decl.grid[0], first / decl.grid[0] % decl.grid[1],
                                         first / decl.grid[0] / decl.grid[1]};
      throw InputError(program_.file, state.loc,
                       "kernel '" + decl.name + "' is missing " + std::to_string(decl.blocks() - have) +
                           " of its " + std::to_string(decl.blocks()) + " blocks (grid " +
                           grid_text(decl.grid) + "), the first " + block_text(decl.name, index));
    }
  }

  bool accept_transpose(LineCursor& c) {
    if (!c.accept('^')) return false;
    SourceLoc where = c.loc();
    if (c.identifier() != "T") c.fail(where, "expected T after ^ (transpose)");
    return true;
  }

  struct DimSpec {
    int64_t begin = 0, end = 0;
    bool range = false;
  };

  // Inside [...]: i, a:b, a:, :b or : per dimension; both t[0][1:3] and t[0, 1:3] are accepted.
  std::vector<DimSpec> parse_dims(LineCursor& c, const std::string& name, const std::vector<int64_t>& shape) {
    std::vector<DimSpec> dims;
    while (c.accept('[')) {
      do {
        SourceLoc spec_loc = c.loc();
        size_t dim = dims.size();
        if (dim >= shape.size())
          c.fail(spec_loc, "'" + name + "' has " + std::to_string(shape.size()) + " dimension(s)");
        const int64_t extent = shape[dim];
        DimSpec spec;
        std::optional<int64_t> first;
        if (c.peek() != ':') {
          first = c.integer();
          if (!first) c.fail(spec_loc, "expected an integer index or a range a:b" + c.found());
        }
        if (c.accept(':')) {
          spec.range = true;
          spec.begin = first.value_or(0);
          spec.end = extent;
          if (c.peek() != ',' && c.peek() != ']') {
            SourceLoc end_loc = c.loc();
            auto last = c.integer();
            if (!last) c.fail(end_loc, "expected the end of the range" + c.found());
            spec.end = *last;
          }
          if (spec.begin < 0 || spec.end > extent || spec.begin >= spec.end)
            c.fail(spec_loc, "range " + std::to_string(spec.begin) + ":" + std::to_string(spec.end) +
                                 " out of range for dimension " + std::to_string(dim) + " of '" + name +
                                 "' (size " + std::to_string(extent) + ")");
        } else {
          if (*first < 0 || *first >= extent)
            c.fail(spec_loc, "index " + std::to_string(*first) + " out of range for dimension " +
                                 std::to_string(dim) + " of '" + name + "' (size " + std::to_string(extent) +
                                 ")");
          // After the check: an index of INT64_MAX would overflow the + 1.
          spec.begin = *first;
          spec.end = *first + 1;
        }
        dims.push_back(spec);
      } while (c.accept(','));
      c.expect(']', "to close the index");
    }
    return dims;
  }

  // fill(v): every element v, e.g. fill(-inf) for a running max kept in memory.
  void parse_fill(LineCursor& c, TensorDecl& decl) {
    decl.init.kind = TensorInit::Kind::Fill;
    c.expect('(', "after fill");
    SourceLoc value_loc = c.loc();
    auto value = c.number();
    if (!value) c.fail(value_loc, "expected a number in fill(...)" + c.found());
    decl.init.lo = *value;
    c.expect(')', "to close fill(...)");
  }

  void parse_random(LineCursor& c, TensorDecl& decl) {
    decl.init.kind = TensorInit::Kind::Random;
    c.expect('(', "after random");
    bool first = true;
    while (!c.accept(')')) {
      if (!first) c.expect(',', "between random() arguments");
      first = false;
      SourceLoc key_loc = c.loc();
      std::string key = c.identifier();
      c.expect('=', "after '" + key + "'");
      SourceLoc value_loc = c.loc();
      if (key == "seed") {
        // Parsed as an integer: a double would silently change seeds above 2^53.
        auto seed = c.unsigned_integer();
        if (!seed) c.fail(value_loc, "seed must be an integer from 0 to 2^64-1");
        decl.init.seed = *seed;
        continue;
      }
      auto value = c.number();
      if (!value) c.fail(value_loc, "expected a number for '" + key + "'");
      if (key == "lo") {
        decl.init.lo = *value;
      } else if (key == "hi") {
        decl.init.hi = *value;
      } else {
        c.fail(key_loc, "unknown random() argument '" + key + "' (known: seed, lo, hi)");
      }
    }
    if (!(decl.init.lo < decl.init.hi)) c.fail(decl.loc, "random(): lo must be less than hi");
  }

  void parse_values(LineCursor& c, TensorDecl& decl) {
    decl.init.kind = TensorInit::Kind::Values;
    SourceLoc open = c.loc();
    c.expect('{', "to open the value list");
    while (!c.accept('}')) {
      if (!decl.init.values.empty()) c.expect(',', "between values");
      SourceLoc value_loc = c.loc();
      auto value = c.number();
      if (!value) c.fail(value_loc, "expected a number" + c.found());
      decl.init.values.push_back(*value);
    }
    if (static_cast<int64_t>(decl.init.values.size()) != decl.elements())
      c.fail(open, "tensor '" + decl.name + "' has " + std::to_string(decl.elements()) + " elements but " +
                       std::to_string(decl.init.values.size()) + " values are given");
  }

  void parse_check(LineCursor& c) {
    Check check;
    check.loc = c.loc();
    check.target = tensor_ref(c, "check target");
    c.expect('=', "after the check target");
    SourceLoc fn_loc = c.loc();
    check.function = c.identifier();
    const CheckFunction* fn = nullptr;
    for (const auto& f : check_functions())
      if (f.name == check.function) fn = &f;
    if (!fn) {
      std::string known;
      std::vector<std::string> names;
      for (const auto& f : check_functions()) {
        known += (known.empty() ? "" : ", ") + std::string(f.name);
        names.emplace_back(f.name);
      }
      c.fail(fn_loc, "unknown check function '" + check.function + "'" + did_you_mean(check.function, names) +
                         " (known: " + known + ")");
    }
    c.expect('(', "after the function name");
    while (!c.accept(')')) {
      if (!check.args.empty()) c.expect(',', "between arguments");
      check.args.push_back(tensor_ref(c, "argument"));
    }
    if (static_cast<int>(check.args.size()) != fn->arity)
      c.fail(fn_loc, check.function + "() takes " + std::to_string(fn->arity) + " argument(s), " +
                         std::to_string(check.args.size()) + " given");
    if (!c.at_end()) c.fail(c.loc(), "unexpected text after the check");
    program_.checks.push_back(std::move(check));
  }

  int tensor_ref(LineCursor& c, std::string_view what) {
    SourceLoc where = c.loc();
    std::string name = c.identifier();
    if (name.empty()) c.fail(where, "expected a tensor name as " + std::string(what) + c.found());
    int index = program_.find_tensor(name);
    if (index < 0) c.fail(where, "undeclared tensor '" + name + "'" + did_you_mean(name, tensor_names()));
    return index;
  }

  // Candidates for "did you mean": what the name could have been meant as at that position.
  static std::vector<std::string> opcode_names() {
    std::vector<std::string> names;
    for (const auto& spec : kOpcodes) names.emplace_back(spec.mnemonic);
    return names;
  }
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> names;
    for (const auto& t : program_.tensors) names.push_back(t.name);
    return names;
  }
  // Registers up to R31 (a typo such as RO or R1O), then the tensors and buffers.
  std::vector<std::string> operand_names() const {
    std::vector<std::string> names;
    for (int r = 0; r < 32; ++r) names.push_back("R" + std::to_string(r));
    for (const auto& t : program_.tensors) names.push_back(t.name);
    for (const auto& b : program_.buffers) names.push_back(b.name);
    return names;
  }

  void parse_instruction(LineCursor& c) {
    Instruction inst;
    inst.loc = c.loc();
    inst.group = group_;
    std::string name = c.identifier();
    if (name.empty()) c.fail(inst.loc, "expected an instruction" + c.found());
    auto op = find_opcode(name);
    if (!op) c.fail(inst.loc, "unknown opcode '" + name + "'" + did_you_mean(name, opcode_names()));
    inst.op = *op;
    const OpcodeInfo& spec = info(inst.op);
    size_t given = 0;
    if (!c.at_end()) {
      do {
        Operand operand = parse_operand(c);
        if (given < inst.operand_slots.size()) inst.push(operand);
        ++given;
      } while (c.accept(','));
    }
    if (!c.at_end()) c.fail(c.loc(), "expected ',' between operands" + c.found());
    if (given != spec.operand_count)
      c.fail(inst.loc, std::string(spec.mnemonic) + " takes " + std::to_string(spec.operand_count) +
                           " operands, " + std::to_string(given) + " given (" + std::string(spec.semantics) +
                           ")");
    // An instruction without operands (FENCE) takes the program's form: tiles once it declares a buffer.
    bool tile_form = inst.operand_count == 0 && !program_.buffers.empty();
    for (const auto& operand : inst.operands()) tile_form = tile_form || operand.kind == Operand::Kind::Tile;
    if (tile_form) {
      check_tile_form(c, inst);
    } else {
      if (spec.tile_only)
        c.fail(inst.loc, std::string(spec.mnemonic) +
                             " works on tiles (.buffer operands): " + std::string(spec.semantics));
      for (size_t i = 0; i < inst.operand_count; ++i) {
        const Operand& operand = inst.operand(i);
        bool want_reg = spec.roles[i] == OperandRole::Reg;
        bool ok = want_reg ? operand.kind == Operand::Kind::Register : operand.kind == Operand::Kind::Memory;
        if (!ok)
          c.fail(operand.loc(), std::string(spec.mnemonic) + " operand " + std::to_string(i + 1) +
                                    " must be a " + (want_reg ? "register" : "memory reference like x[0]") +
                                    " (" + std::string(spec.semantics) + ")");
      }
    }
    if (instructions_ >= max_instructions_)
      c.fail(inst.loc, fmt::format("the trace has more than {} instructions, the most a run reads; raise the "
                                   "limit with --max-instructions N",
                                   max_instructions_));
    ++instructions_;
    program_.instructions.push_back(std::move(inst));
    if (handler_ && program_.instructions.size() >= chunk_) flush();
  }

  // A streamed trace's memory is laid out from its header when its first chunk runs, and only scalar
  // traces stream (tile programs carry tables of tiles and blocks).
  void check_streamable(LineCursor& c, SourceLoc where, const std::string& directive) {
    if (directive == "buffer" || directive == "kernel" || directive == "block" || directive == "group")
      c.fail(where, "." + directive + " in a trace that began as a scalar trace of more than " +
                        std::to_string(chunk_) +
                        " instructions: long traces stream, and only scalar ones can");
    if (flushed_)
      c.fail(where, "." + directive + " after the first " + std::to_string(chunk_) +
                        " instructions: a long trace streams, so it declares its tensors and checks before "
                        "them");
  }

  Operand parse_operand(LineCursor& c) {
    Operand operand;
    operand.set_loc(c.loc());
    const char first = c.peek();
    if (std::isdigit(static_cast<unsigned char>(first)) || first == '-' || first == '+') {
      auto value = c.integer();
      if (!value) c.fail(operand.loc(), "expected an integer immediate" + c.found());
      operand.kind = Operand::Kind::Immediate;
      operand.flat = *value;
      return operand;
    }
    std::string name = c.identifier();
    if (name.empty())
      c.fail(operand.loc(), "expected a register, a memory reference or a buffer" + c.found());
    if (int buffer = program_.find_buffer(name); buffer >= 0) {
      const BufferDecl& decl = program_.buffers[buffer];
      TileRef tile = program_.buffer_tile(buffer);
      if (c.peek() == '[') {
        auto dims = parse_dims(c, name, {decl.rows, decl.cols});
        if (dims.size() >= 1) tile.row0 = dims[0].begin, tile.rows = dims[0].end - dims[0].begin;
        if (dims.size() >= 2) tile.col0 = dims[1].begin, tile.cols = dims[1].end - dims[1].begin;
      }
      tile.transpose = accept_transpose(c);
      operand.kind = Operand::Kind::Tile;
      operand.tensor = program_.add_tile(tile);
      return operand;
    }
    if (c.peek() != '[') {
      auto reg = parse_register_name(name);
      if (!reg) {
        if (program_.find_tensor(name) >= 0)
          c.fail(operand.loc(),
                 "tensor '" + name + "' needs indices, e.g. " + name + "[0] or " + name + "[0:8, :]");
        c.fail(operand.loc(), "'" + name + "' is not a register (R0, R1, ...), a buffer or a tensor" +
                                  did_you_mean(name, operand_names()));
      }
      operand.kind = Operand::Kind::Register;
      operand.reg = *reg;
      return operand;
    }
    operand.tensor = program_.find_tensor(name);
    if (operand.tensor < 0)
      c.fail(operand.loc(), "undeclared tensor '" + name + "'" + did_you_mean(name, tensor_names()) +
                                " (declare it with .tensor, or .buffer for on-chip)");
    const TensorDecl& decl = program_.tensors[operand.tensor];
    auto dims = parse_dims(c, name, decl.shape);
    bool transpose = accept_transpose(c);
    if (dims.size() != decl.shape.size())
      c.fail(operand.loc(), "tensor '" + name + "' has " + std::to_string(decl.shape.size()) +
                                " dimension(s), " + std::to_string(dims.size()) + " index(es) given");
    bool any_range = false;
    for (const auto& d : dims) any_range = any_range || d.range;
    if (!any_range && !transpose) {
      operand.kind = Operand::Kind::Memory;
      for (size_t d = 0; d < dims.size(); ++d) operand.flat = operand.flat * decl.shape[d] + dims[d].begin;
      if (decl.heads_inner) operand.flat = decl.memory_index(dims[0].begin, dims[1].begin, dims[2].begin);
      return operand;
    }
    // A tile: the last two dimensions are rows and columns (a 1-D tensor gives a column, rows x 1);
    // any dimensions before them must be single indices.
    const size_t rank = dims.size();
    TileRef tile;
    tile.index = operand.tensor;
    tile.transpose = transpose;
    const size_t row_dim = rank >= 2 ? rank - 2 : 0;
    for (size_t d = 0; d < row_dim; ++d) {
      if (dims[d].range)
        c.fail(operand.loc(), "only the last two dimensions of '" + name + "' may be ranges");
      tile.offset = tile.offset * decl.shape[d] + dims[d].begin;
    }
    int64_t plane = 1;
    for (size_t d = row_dim; d < rank; ++d) plane *= decl.shape[d];
    tile.offset *= plane;
    tile.row0 = dims[row_dim].begin;
    tile.rows = dims[row_dim].end - dims[row_dim].begin;
    if (rank >= 2) {
      tile.col0 = dims[rank - 1].begin;
      tile.cols = dims[rank - 1].end - dims[rank - 1].begin;
      tile.row_stride = decl.shape[rank - 1];
    }
    if (decl.heads_inner) {  // head h's rows lie H rows of cols apart, from its group's and its own place
      tile.offset = decl.memory_index(dims[0].begin, 0, 0);
      tile.row_stride = decl.heads_inner * decl.shape[2];
    }
    operand.kind = Operand::Kind::Tile;
    operand.tensor = program_.add_tile(tile);
    return operand;
  }

  // Shapes and operand kinds of the tile form; the scalar form is checked by operand roles.
  void check_tile_form(LineCursor& c, const Instruction& inst) {
    const OpcodeInfo& spec = info(inst.op);
    const std::string op(spec.mnemonic);
    auto tile = [&](size_t i) -> const TileRef& { return program_.tiles[inst.operand(i).tensor]; };
    auto shape = [&](size_t i) {
      return std::to_string(tile(i).out_rows()) + "x" + std::to_string(tile(i).out_cols());
    };
    auto at = [&](size_t i) { return inst.operand(i).loc(); };
    auto want_kind = [&](size_t i, Operand::Kind kind, const char* what) {
      if (inst.operand(i).kind != kind)
        c.fail(at(i), op + " operand " + std::to_string(i + 1) + " must be " + what);
    };
    auto want_buffer = [&](size_t i, bool may_transpose) {
      want_kind(i, Operand::Kind::Tile, "an on-chip buffer (tile form)");
      if (!tile(i).is_buffer)
        c.fail(at(i), op + " operand " + std::to_string(i + 1) +
                          " must be an on-chip buffer; LOAD the tensor slice into a .buffer first");
      if (!may_transpose && tile(i).transpose) c.fail(at(i), op + " cannot transpose this operand");
    };
    auto same_shape = [&](size_t a, size_t b) {
      if (tile(a).out_rows() != tile(b).out_rows() || tile(a).out_cols() != tile(b).out_cols())
        c.fail(at(b), op + ": shapes differ (" + shape(a) + " and " + shape(b) + ")");
    };
    // Element-wise operands broadcast to the destination: same shape, rows x 1, 1 x cols or 1 x 1.
    auto broadcastable = [&](size_t a, size_t d) {
      const int64_t r = tile(a).out_rows(), k = tile(a).out_cols();
      const int64_t dr = tile(d).out_rows(), dk = tile(d).out_cols();
      if ((r == dr || r == 1) && (k == dk || k == 1)) return;
      c.fail(at(a), op + ": a " + shape(a) + " operand does not broadcast to the " + shape(d) +
                        " destination (allowed: same shape, " + std::to_string(dr) + "x1, 1x" +
                        std::to_string(dk) + ", 1x1)");
    };
    switch (inst.op) {
      case Opcode::Load:
        want_kind(0, Operand::Kind::Tile, "a tensor slice");
        if (tile(0).is_buffer) c.fail(at(0), "LOAD reads a tensor slice from memory, not a buffer");
        want_buffer(1, false);
        same_shape(0, 1);
        break;
      case Opcode::Store:
      case Opcode::StoreAdd:
        want_buffer(0, false);
        want_kind(1, Operand::Kind::Tile, "a tensor slice");
        if (tile(1).is_buffer) c.fail(at(1), op + " writes a tensor slice in memory, not a buffer");
        if (tile(1).transpose) c.fail(at(1), op + " cannot transpose its destination");
        same_shape(0, 1);
        break;
      case Opcode::MacZ:
      case Opcode::Mac: {
        const size_t d = inst.operand_count - 1;
        want_buffer(0, true);
        want_buffer(1, true);
        for (size_t i = 2; i <= d; ++i) want_buffer(i, false);
        if (tile(0).out_cols() != tile(1).out_rows())
          c.fail(at(1), op + ": inner dimensions differ (" + shape(0) + " times " + shape(1) + ")");
        if (tile(d).out_rows() != tile(0).out_rows() || tile(d).out_cols() != tile(1).out_cols())
          c.fail(at(d), op + ": the product is " + std::to_string(tile(0).out_rows()) + "x" +
                            std::to_string(tile(1).out_cols()) + " but the destination is " + shape(d));
        if (d == 3) same_shape(2, 3);
        break;
      }
      case Opcode::Max:
      case Opcode::Sub:
      case Opcode::Add:
      case Opcode::Mul:
      case Opcode::Div:
        for (size_t i = 0; i < 3; ++i) want_buffer(i, false);
        broadcastable(0, 2);
        broadcastable(1, 2);
        break;
      case Opcode::Exp:
      case Opcode::Mov:
        want_buffer(0, false);
        want_buffer(1, false);
        broadcastable(0, 1);
        break;
      case Opcode::RowMax:
      case Opcode::RowSum:
        want_buffer(0, false);
        want_buffer(1, false);
        if (tile(1).out_rows() != tile(0).out_rows() || tile(1).out_cols() != 1)
          c.fail(at(1), op + ": the destination must be " + std::to_string(tile(0).out_rows()) +
                            "x1, found " + shape(1));
        break;
      case Opcode::Lock:
      case Opcode::Unlock:
        want_kind(0, Operand::Kind::Tile, "a tensor slice (the lock's word in memory)");
        if (tile(0).is_buffer) c.fail(at(0), op + " takes a lock in memory, not a buffer");
        if (tile(0).transpose || tile(0).out_rows() != 1)
          c.fail(at(0),
                 op + ": the lock is one row of a tensor (its first element names it), found " + shape(0));
        if (inst.op == Opcode::Lock) {
          want_kind(1, Operand::Kind::Immediate,
                    "an integer (cycles between attempts, after each round trip)");
          if (inst.operand(1).flat < 0 || inst.operand(1).flat > (int64_t{1} << 32))
            c.fail(at(1), op + " backoff: 0 to 2^32 cycles");
        }
        break;
      case Opcode::Fence:
        break;
      case Opcode::Mask:
        want_buffer(0, false);
        want_kind(1, Operand::Kind::Immediate, "an integer (the tile's first query row)");
        want_kind(2, Operand::Kind::Immediate, "an integer (the tile's first key column)");
        // Positions in a sequence no tensor can exceed, so `col0 + j > row0 + i` cannot overflow.
        for (size_t i : {size_t{1}, size_t{2}})
          if (inst.operand(i).flat < -kMaxTensorElements || inst.operand(i).flat > kMaxTensorElements)
            c.fail(at(i), op + " operand " + std::to_string(i + 1) +
                              " is a row or column position, from -2^48 to 2^48 (the most elements a "
                              "tensor has)");
        break;
    }
  }

  std::string_view text_;
  int64_t max_instructions_;
  int line_no_ = 0;
  int64_t instructions_ = 0;
  const ChunkHandler* handler_ = nullptr;  // streaming: where each chunk goes
  size_t chunk_ = 0;
  bool flushed_ = false;
  Program program_;
  std::unordered_map<std::string, int32_t> kernel_index_;
  std::vector<KernelState> kernel_states_;  // parallel to program_.kernels
  int32_t current_kernel_ = -1;             // the kernel of the last .block
  uint8_t group_ = 0;                       // the instruction group of the lines that follow (.group)
};

}  // namespace

Program assemble(std::string_view text, const std::string& file_name, int64_t max_instructions) {
  return Assembler(text, file_name, max_instructions).run();
}

Program assemble_stream(std::istream& in, const std::string& file_name, int64_t max_instructions,
                        size_t chunk_instructions, const ChunkHandler& handler) {
  return Assembler({}, file_name, max_instructions).run_streamed(in, handler, chunk_instructions);
}

Program assemble_file(const std::string& path, int64_t max_instructions) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {}, "cannot open trace file: " + system_reason(errno));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path, {}, "not a regular file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, {}, "read error");
  return assemble(buffer.str(), path, max_instructions);
}

}  // namespace attnsim::isa
