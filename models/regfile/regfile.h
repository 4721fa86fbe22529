// The register file: on the toy machine it is the whole on-chip store. Reading a register that was never
// written is an error unless the config allows it (then it reads 0).
#pragma once

#include <vector>

#include "models/common/component.h"
#include "models/common/params.h"
#include "models/common/symbolic.h"

namespace attnsim {

class RegisterFile : public Component {
 public:
  struct Params {
    int64_t count = 3;
    bool allow_uninitialized_read = false;
  };

  RegisterFile(sc_core::sc_module_name instance, const Params& params);
  const Params& params() const { return params_; }
  int count() const { return static_cast<int>(params_.count); }

  void reset(bool symbolic);

  // Direct access for the sequencer's hot loop.
  std::vector<double> values;
  std::vector<symbolic::Expr> symbols;
  std::vector<uint8_t> written;
  uint64_t reads = 0;
  uint64_t writes = 0;

 private:
  Params params_;
};

void register_regfile_models();

}  // namespace attnsim
