// Loads a machine YAML file and applies `-p key.path=value` overrides before any model reads it, so an
// override of a key that does not exist is rejected exactly like a typo in the file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "models/common/params.h"

namespace attnsim {

struct MachineConfig {
  std::shared_ptr<ConfigSource> source;
  YAML::Node root;
};

MachineConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace attnsim
