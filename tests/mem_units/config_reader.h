// A ParamReader over inline YAML, as the machine loader would build one for a component's subtree.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

#include "models/common/params.h"

namespace attnsim::test {

inline ParamReader reader_for(const std::string& yaml, const std::string& key) {
  auto source = std::make_shared<ConfigSource>();
  source->file = "machine.yaml";
  return ParamReader(yaml.empty() ? YAML::Node() : YAML::Load(yaml), key, source);
}

}  // namespace attnsim::test
