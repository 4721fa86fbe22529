// A small helper for writing tile-program generators: declare tensors and buffers, make operands for
// buffer views and tensor row slices (each distinct view shared), emit instructions.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "isa/program.h"

namespace attnsim::traces {

using isa::Opcode;
using isa::Operand;

class Builder {
 public:
  explicit Builder(std::string file) { p.file = std::move(file); }

  int tensor(const std::string& name, int64_t rows, int64_t cols, Dtype dtype, bool random, uint64_t seed) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = {rows, cols};
    t.dtype = dtype;
    if (random) {
      t.init.kind = isa::TensorInit::Kind::Random;
      t.init.seed = seed;
      t.init.lo = -1.0;
      t.init.hi = 1.0;
    }
    return p.add_tensor(std::move(t));
  }
  int buffer(const std::string& name, int64_t rows, int64_t cols, Dtype dtype) {
    isa::BufferDecl b;
    b.name = name;
    b.rows = rows;
    b.cols = cols;
    b.dtype = dtype;
    p.buffers.push_back(std::move(b));
    return static_cast<int>(p.buffers.size()) - 1;
  }
  // A view of the top-left rows x cols of a buffer (ragged edge tiles use partial views).
  Operand buf(int buffer, int64_t rows = -1, int64_t cols = -1, bool transpose = false) {
    isa::TileRef t = p.buffer_tile(buffer, transpose);
    if (rows >= 0) t.rows = rows;
    if (cols >= 0) t.cols = cols;
    // Buffer views repeat in every block: share one TileRef per distinct view.
    auto key = std::make_tuple(buffer, t.rows, t.cols, transpose);
    auto [it, inserted] = views_.try_emplace(key, 0);
    if (inserted) it->second = p.add_tile(t);
    return Operand::tile(it->second);
  }
  // A 1-D tensor of n values (row statistics such as m, l, D); its slices are rows x 1 tiles.
  int vector_tensor(const std::string& name, int64_t n, Dtype dtype) {
    isa::TensorDecl t;
    t.name = name;
    t.shape = {n};
    t.dtype = dtype;
    return p.add_tensor(std::move(t));
  }
  // Rows [row0, row0 + rows) of a tensor, all columns (a 1-D tensor gives rows x 1).
  Operand rows_of(int tensor, int64_t row0, int64_t rows, bool transpose = false) {
    isa::TileRef t = p.tensor_rows(tensor, row0, rows, transpose);
    return shared(t);
  }
  // Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a 2-D tensor (e.g. a tile of S in HBM).
  Operand slice(int tensor, int64_t row0, int64_t rows, int64_t col0, int64_t cols, bool transpose = false) {
    isa::TileRef t = p.tensor_rows(tensor, row0, rows, transpose);
    t.col0 = col0;
    t.cols = cols;
    return shared(t);
  }
  void check(const std::string& function, int target, std::vector<int> args) {
    isa::Check c;
    c.function = function;
    c.target = target;
    c.args = std::move(args);
    p.checks.push_back(std::move(c));
  }
  void emit(Opcode op, std::initializer_list<Operand> operands) { p.emit(op, operands); }
  isa::Program take() { return std::move(p); }

  isa::Program p;

 private:
  // Tensor slices repeat too (K block j is read by every query block): one TileRef per distinct slice.
  Operand shared(const isa::TileRef& t) {
    auto key = std::make_tuple(t.index, t.offset, t.row0, t.rows, t.col0, t.cols, t.transpose);
    auto [it, inserted] = slices_.try_emplace(key, 0);
    if (inserted) it->second = p.add_tile(t);
    return Operand::tile(it->second);
  }

  std::map<std::tuple<int, int64_t, int64_t, bool>, int> views_;
  std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, bool>, int> slices_;
};

}  // namespace attnsim::traces
