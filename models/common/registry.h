// Maps the `type:` name in a YAML config to a factory. Each model family (dram, regfile, ...) has one
// registry; models register in register_builtin_models() (explicit, so static linking cannot drop them).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "models/common/params.h"

namespace attnsim {

// Machine-wide facts a model may need when it is built (e.g. the core clock, to turn GB/s into bytes per
// cycle).
struct BuildContext {
  double clock_ghz = 1.0;
};

template <class Base>
class Registry {
 public:
  using Factory =
      std::function<std::unique_ptr<Base>(const char* instance_name, ParamReader&, const BuildContext&)>;

  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  void add(const std::string& type, std::string description, Factory factory) {
    entries_[type] = {std::move(description), std::move(factory)};
  }

  // Reads `type:` from the reader (default_type when absent) and builds the model.
  std::unique_ptr<Base> create(const char* instance_name, ParamReader& params,
                               const std::string& default_type, const BuildContext& context) {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    std::string type = params.choice("type", default_type, names, "model implementation");
    return entries_.at(type).factory(instance_name, params, context);
  }

  std::map<std::string, std::string> types() const {
    std::map<std::string, std::string> out;
    for (const auto& [name, entry] : entries_) out[name] = entry.description;
    return out;
  }

 private:
  struct Entry {
    std::string description;
    Factory factory;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace attnsim
