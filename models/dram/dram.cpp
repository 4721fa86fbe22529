#include "models/dram/dram.h"

#include "isa/init.h"
#include "models/common/registry.h"

namespace attnsim {

Dram::Dram(sc_core::sc_module_name instance, const Params& params) : Component(instance), params_(params) {
  stats_.add(&reads, "reads", "words", "words read from DRAM (LOAD)");
  stats_.add(&writes, "writes", "words", "words written to DRAM (STORE)");
  stats_.add_vector(&reads_per_tensor, &names_, "reads_per_tensor", "words", "DRAM reads by tensor");
  stats_.add_vector(&writes_per_tensor, &names_, "writes_per_tensor", "words", "DRAM writes by tensor");
}

void Dram::allocate(const isa::Program& program, Dtype default_dtype, bool symbolic) {
  int64_t total = 0;
  for (const auto& t : program.tensors) total += t.elements();
  if (total > params_.capacity_words)
    throw InputError(program.file, {},
                     "the trace's tensors need " + std::to_string(total) +
                         " words but dram.capacity_words is " + std::to_string(params_.capacity_words));
  words.assign(static_cast<size_t>(total), 0.0);
  if (symbolic) symbols_.assign(static_cast<size_t>(total), nullptr);
  reads_per_tensor.assign(program.tensors.size(), 0);
  writes_per_tensor.assign(program.tensors.size(), 0);
  bases_.clear();
  sizes_.clear();
  dtypes_.clear();
  names_.clear();
  int64_t next = 0;
  for (const auto& t : program.tensors) {
    Dtype dtype = t.dtype.value_or(default_dtype);
    bases_.push_back(next);
    sizes_.push_back(t.elements());
    dtypes_.push_back(dtype);
    names_.push_back(t.name);
    isa::materialize(t, dtype, words.data() + next);
    if (symbolic) {
      std::vector<int64_t> index(t.shape.size(), 0);
      for (int64_t i = 0; i < t.elements(); ++i) {
        symbols_[next + i] = symbolic::leaf(symbolic::element_name(t.name, index));
        for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
          if (++index[d] < t.shape[d]) break;
          index[d] = 0;
        }
      }
    }
    next += t.elements();
  }
}

std::vector<double> Dram::read_tensor(int tensor) const {
  auto begin = words.begin() + bases_[tensor];
  return std::vector<double>(begin, begin + sizes_[tensor]);
}

void register_dram_models() {
  Registry<Dram>::instance().add(
      "word", "word-addressed DRAM with fixed load/store latency",
      [](const char* instance, ParamReader& p, const BuildContext&) {
        Dram::Params params;
        params.load_latency = p.get<int64_t>("load_latency", 1, "cycles", "cycles a LOAD occupies", 1, kMaxLatency);
        params.store_latency = p.get<int64_t>("store_latency", 1, "cycles", "cycles a STORE occupies", 1, kMaxLatency);
        params.capacity_words = p.get<int64_t>("capacity_words", 1ll << 32, "words", "words of storage", 1);
        return std::make_unique<Dram>(instance, params);
      });
}

}  // namespace attnsim
