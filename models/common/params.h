// Typed model parameters read from a YAML subtree: each has a default, a unit and a description, and keys
// nobody declared are rejected with the file:line:col (or the -p override) that introduced them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "isa/diagnostics.h"

namespace attnsim {

// Upper bound for latency parameters: far from overflowing cycle sums, and it fits the decoded 32-bit field.
inline constexpr double kMaxLatency = double(1 << 30);

// Where config text came from, so errors can name the file or the -p override.
struct ConfigSource {
  std::string file;
  std::map<std::string, std::string> overrides;  // key path -> "key=value" as typed
};

struct ParamDoc {
  std::string key;  // full key path
  std::string type;
  std::string default_value;
  std::string value;  // what this config (with overrides) set
  std::string unit;
  std::string description;
};

class ParamReader {
 public:
  ParamReader(YAML::Node node, std::string key_path, std::shared_ptr<const ConfigSource> source);

  // A scalar parameter. T: bool, int64_t, double, std::string. min/max bound numeric values.
  template <class T>
  T get(const std::string& name, T default_value, std::string_view unit, std::string_view description,
        std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);

  // A string parameter restricted to a set of choices.
  std::string choice(const std::string& name, const std::string& default_value,
                     const std::vector<std::string>& choices, std::string_view description);

  // A nested map (e.g. `dram:` inside the machine); absent means all defaults.
  ParamReader child(const std::string& name, std::string_view description);
  bool has(const std::string& name) const;

  // Rejects keys that no get()/child() declared. Call after reading everything.
  void finish() const;

  [[noreturn]] void fail(const std::string& name, const std::string& message) const;
  [[noreturn]] void fail_node(const YAML::Node& node, const std::string& key,
                              const std::string& message) const;
  // An error about a combination of parameters (this section's and `also`, e.g. clock_ghz): blames the
  // first of them a -p override set, else this section of the file.
  [[noreturn]] void fail_combination(const std::vector<std::string>& also, const std::string& message) const;

  const std::string& key_path() const { return key_path_; }
  nlohmann::json& effective() { return *effective_; }
  const std::vector<ParamDoc>& docs() const { return *docs_; }

 private:
  std::string path_of(const std::string& name) const {
    return key_path_.empty() ? name : key_path_ + "." + name;
  }
  YAML::Node lookup(const std::string& name);

  YAML::Node node_;
  std::string key_path_;
  std::shared_ptr<const ConfigSource> source_;
  std::shared_ptr<nlohmann::json> effective_;
  std::shared_ptr<std::vector<ParamDoc>> docs_;
  std::shared_ptr<std::set<std::string>> declared_;
  nlohmann::json* here_;  // this reader's object inside *effective_

  ParamReader(const ParamReader& parent, YAML::Node node, const std::string& name);
};

}  // namespace attnsim
