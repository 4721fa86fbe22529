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

// The whole contents of a user's input file (`what` names it in errors: "config file"); an InputError when
// it cannot be opened or is not a regular file (a directory, a FIFO).
std::string read_input_file(const std::string& path, const std::string& what);

// A YAML file parsed, with its syntax errors and any key given twice in one map reported at file:line:col.
// (yaml-cpp keeps both entries and `node[key]` finds the first, so the second would be silently ignored.)
YAML::Node load_yaml_file(const std::string& path, const std::string& what);

}  // namespace attnsim
