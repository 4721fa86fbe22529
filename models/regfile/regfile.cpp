#include "models/regfile/regfile.h"

#include "models/common/registry.h"

namespace attnsim {

RegisterFile::RegisterFile(sc_core::sc_module_name instance, const Params& params)
    : Component(instance), params_(params) {
  stats_.add(&reads, "reads", "accesses", "register operand reads");
  stats_.add(&writes, "writes", "accesses", "register writes");
  reset(false);
}

void RegisterFile::reset(bool symbolic) {
  values.assign(static_cast<size_t>(params_.count), 0.0);
  written.assign(static_cast<size_t>(params_.count), params_.allow_uninitialized_read ? 1 : 0);
  symbols.assign(symbolic ? static_cast<size_t>(params_.count) : 0,
                 symbolic ? symbolic::constant(0) : nullptr);
  reads = writes = 0;
}

void register_regfile_models() {
  Registry<RegisterFile>::instance().add(
      "regfile", "flat register file of scalar registers R0..R(count-1)",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        RegisterFile::Params params;
        params.count = p.get<int64_t>("count", 3, "registers", "number of registers", 1, 1 << 20);
        params.allow_uninitialized_read =
            p.get<bool>("allow_uninitialized_read", false, "",
                        "reading a never-written register yields 0 instead of an error");
        return std::make_unique<RegisterFile>(instance, params);
      });
}

}  // namespace attnsim
