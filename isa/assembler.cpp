#include "isa/assembler.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace attnsim::isa {

const std::vector<CheckFunction>& check_functions() {
  static const std::vector<CheckFunction> functions = {
      {"matmul", 2, "C = A x B for 2-D A, B"},
      {"softmax", 1, "softmax over the last dimension"},
      {"attend", 2, "o = sum_j softmax(x)_j * v_j (one query: scores x, values v)"},
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

int Program::max_register() const {
  int highest = -1;
  for (const auto& inst : instructions)
    for (const auto& op : inst.operands())
      if (op.kind == Operand::Kind::Register && op.reg > highest) highest = op.reg;
  return highest;
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
    if (pos_ < line_.size() && (std::isalpha(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '_')) {
      ++pos_;
      while (pos_ < line_.size() &&
             (std::isalnum(static_cast<unsigned char>(line_[pos_])) || line_[pos_] == '_'))
        ++pos_;
    }
    return std::string(line_.substr(start, pos_ - start));
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
  Assembler(std::string_view text, const std::string& file) : text_(text) { program_.file = file; }

  Program run() {
    int line_no = 0;
    size_t start = 0;
    while (start <= text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(start, end - start);
      ++line_no;
      if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      LineCursor cursor(line, line_no, program_.file);
      if (!cursor.at_end()) parse_line(cursor);
      if (end == text_.size()) break;
      start = end + 1;
    }
    return std::move(program_);
  }

 private:
  void parse_line(LineCursor& c) {
    if (c.peek() == '.') {
      SourceLoc where = c.loc();
      c.accept('.');
      std::string directive = c.identifier();
      if (directive == "tensor") return parse_tensor(c, where);
      if (directive == "check") return parse_check(c, where);
      c.fail(where, "unknown directive '." + directive + "' (known: .tensor, .check)");
    }
    parse_instruction(c);
  }

  void parse_tensor(LineCursor& c, SourceLoc where) {
    TensorDecl decl;
    decl.loc = c.loc();
    decl.name = c.identifier();
    if (decl.name.empty()) c.fail(decl.loc, "expected a tensor name after .tensor" + c.found());
    if (parse_register_name(decl.name)) c.fail(decl.loc, "'" + decl.name + "' is a register name; pick another");
    if (program_.find_tensor(decl.name) >= 0) c.fail(decl.loc, "tensor '" + decl.name + "' is declared twice");
    if (c.peek() != '[') c.fail(c.loc(), "expected a shape like [2][2] after the tensor name" + c.found());
    while (c.peek() == '[') {
      c.accept('[');
      SourceLoc dim_loc = c.loc();
      auto extent = c.integer();
      if (!extent || *extent <= 0) c.fail(dim_loc, "a tensor dimension must be a positive integer");
      decl.shape.push_back(*extent);
      c.expect(']', "to close the dimension");
    }
    if (std::isalpha(static_cast<unsigned char>(c.peek()))) {
      SourceLoc type_loc = c.loc();
      std::string word = c.identifier();
      if (word != "random") {
        auto dtype = parse_dtype(word);
        if (!dtype) c.fail(type_loc, "unknown dtype '" + word + "' (known: f16, bf16, f32, f64)");
        decl.dtype = dtype;
      } else {
        parse_random(c, decl);
      }
    }
    if (c.accept('=')) {
      if (decl.init.kind == TensorInit::Kind::Random)
        c.fail(decl.loc, "tensor '" + decl.name + "' has two initialisers (random(...) and = {...}); keep one");
      parse_values(c, decl);
    } else if (std::isalpha(static_cast<unsigned char>(c.peek()))) {
      SourceLoc word_loc = c.loc();
      std::string word = c.identifier();
      if (word != "random") c.fail(word_loc, "expected '= {values}' or 'random(...)', found '" + word + "'");
      if (decl.init.kind == TensorInit::Kind::Random)
        c.fail(word_loc, "tensor '" + decl.name + "' has two random(...) initialisers");
      parse_random(c, decl);
    }
    if (!c.at_end()) c.fail(c.loc(), "unexpected text after the tensor declaration");
    (void)where;
    program_.tensors.push_back(std::move(decl));
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

  void parse_check(LineCursor& c, SourceLoc where) {
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
      for (const auto& f : check_functions()) known += (known.empty() ? "" : ", ") + std::string(f.name);
      c.fail(fn_loc, "unknown check function '" + check.function + "' (known: " + known + ")");
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
    (void)where;
    program_.checks.push_back(std::move(check));
  }

  int tensor_ref(LineCursor& c, std::string_view what) {
    SourceLoc where = c.loc();
    std::string name = c.identifier();
    if (name.empty()) c.fail(where, "expected a tensor name as " + std::string(what) + c.found());
    int index = program_.find_tensor(name);
    if (index < 0) c.fail(where, "undeclared tensor '" + name + "'");
    return index;
  }

  void parse_instruction(LineCursor& c) {
    Instruction inst;
    inst.loc = c.loc();
    std::string name = c.identifier();
    if (name.empty()) c.fail(inst.loc, "expected an instruction" + c.found());
    auto op = find_opcode(name);
    if (!op) c.fail(inst.loc, "unknown opcode '" + name + "'");
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
    for (size_t i = 0; i < inst.operand_count; ++i) {
      const Operand& operand = inst.operand(i);
      bool want_reg = spec.roles[i] == OperandRole::Reg;
      bool is_reg = operand.kind == Operand::Kind::Register;
      if (want_reg != is_reg)
        c.fail(operand.loc, std::string(spec.mnemonic) + " operand " + std::to_string(i + 1) + " must be a " +
                                (want_reg ? "register" : "memory reference like x[0]") + " (" +
                                std::string(spec.semantics) + ")");
    }
    program_.instructions.push_back(std::move(inst));
  }

  Operand parse_operand(LineCursor& c) {
    Operand operand;
    operand.loc = c.loc();
    std::string name = c.identifier();
    if (name.empty()) c.fail(operand.loc, "expected a register or a memory reference" + c.found());
    if (c.peek() != '[') {
      auto reg = parse_register_name(name);
      if (!reg) {
        if (program_.find_tensor(name) >= 0)
          c.fail(operand.loc, "tensor '" + name + "' needs indices, e.g. " + name + "[0]");
        c.fail(operand.loc, "'" + name + "' is not a register (R0, R1, ...)");
      }
      operand.kind = Operand::Kind::Register;
      operand.reg = *reg;
      return operand;
    }
    operand.kind = Operand::Kind::Memory;
    operand.tensor = program_.find_tensor(name);
    if (operand.tensor < 0) c.fail(operand.loc, "undeclared tensor '" + name + "' (declare it with .tensor)");
    const TensorDecl& decl = program_.tensors[operand.tensor];
    // Both a[0][1] and a[0, 1] are accepted.
    size_t rank = 0;
    while (c.accept('[')) {
      do {
        SourceLoc index_loc = c.loc();
        auto index = c.integer();
        if (!index) c.fail(index_loc, "expected an integer index" + c.found());
        size_t dim = rank++;
        if (dim >= decl.shape.size())
          c.fail(index_loc, "tensor '" + name + "' has " + std::to_string(decl.shape.size()) + " dimension(s)");
        if (*index < 0 || *index >= decl.shape[dim])
          c.fail(index_loc, "index " + std::to_string(*index) + " out of range for dimension " +
                                std::to_string(dim) + " of '" + name + "' (size " +
                                std::to_string(decl.shape[dim]) + ")");
        operand.flat = operand.flat * decl.shape[dim] + *index;
      } while (c.accept(','));
      c.expect(']', "to close the index");
    }
    if (rank != decl.shape.size())
      c.fail(operand.loc, "tensor '" + name + "' has " + std::to_string(decl.shape.size()) + " dimension(s), " +
                              std::to_string(rank) + " index(es) given");
    return operand;
  }

  std::string_view text_;
  Program program_;
};

}  // namespace

Program assemble(std::string_view text, const std::string& file_name) { return Assembler(text, file_name).run(); }

Program assemble_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {}, "cannot open trace file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return assemble(buffer.str(), path);
}

}  // namespace attnsim::isa
