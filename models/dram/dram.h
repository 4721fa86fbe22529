// Off-chip memory of the scalar (toy) machine: word-addressed, one word per tensor element, counting reads
// and writes per tensor. The sequencer reaches the words directly (TLM-DMI style) so a LOAD costs no call.
#pragma once

#include <string>
#include <vector>

#include "isa/program.h"
#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/symbolic.h"

namespace attnsim {

class Dram : public Component {
 public:
  struct Params {
    int64_t load_latency = 1;   // cycles
    int64_t store_latency = 1;  // cycles
    int64_t capacity_words = 1ll << 32;
  };

  Dram(sc_core::sc_module_name instance, const Params& params);

  // Lays the program's tensors out one after another and writes their initial contents (rounded to each
  // tensor's dtype). Symbolic mode names every element (a[0][1] -> a01) instead.
  void allocate(const isa::Program& program, Dtype default_dtype, bool symbolic);

  const Params& params() const { return params_; }
  int64_t base(int tensor) const { return bases_[tensor]; }
  Dtype dtype(int tensor) const { return dtypes_[tensor]; }
  const std::vector<std::string>& tensor_names() const { return names_; }

  // Values of one tensor after (or before) a run, row-major.
  std::vector<double> read_tensor(int tensor) const;
  const std::vector<symbolic::Expr>& symbols() const { return symbols_; }

  // Direct access for the sequencer's hot loop.
  std::vector<double> words;
  std::vector<symbolic::Expr> symbols_;
  std::vector<uint64_t> reads_per_tensor;
  std::vector<uint64_t> writes_per_tensor;
  uint64_t reads = 0;
  uint64_t writes = 0;

 private:
  Params params_;
  std::vector<int64_t> bases_;
  std::vector<int64_t> sizes_;
  std::vector<Dtype> dtypes_;
  std::vector<std::string> names_;
};

void register_dram_models();

}  // namespace attnsim
