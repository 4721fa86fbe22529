// Typed statistics: a model keeps plain counters as members (cheap to bump on the hot path) and registers
// each once with a name, unit and description; the group turns them into JSON when asked.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnsim {

class StatGroup {
 public:
  explicit StatGroup(std::string name) : name_(std::move(name)) {}

  void add(const uint64_t* value, std::string name, std::string unit, std::string description) {
    entries_.push_back({std::move(name), std::move(unit), std::move(description),
                        [value] { return nlohmann::json(*value); }});
  }
  // One counter per label (e.g. per tensor); labels are looked up only when dumping.
  void add_vector(const std::vector<uint64_t>* values, const std::vector<std::string>* labels,
                  std::string name, std::string unit, std::string description) {
    entries_.push_back({std::move(name), std::move(unit), std::move(description), [values, labels] {
                          nlohmann::json out = nlohmann::json::object();
                          for (size_t i = 0; i < values->size() && i < labels->size(); ++i)
                            out[(*labels)[i]] = (*values)[i];
                          return out;
                        }});
  }
  // A derived value (utilisation, bandwidth) computed from other stats when dumped.
  void add_formula(std::function<nlohmann::json()> formula, std::string name, std::string unit,
                   std::string description) {
    entries_.push_back({std::move(name), std::move(unit), std::move(description), std::move(formula)});
  }

  const std::string& name() const { return name_; }

  nlohmann::json to_json() const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& e : entries_)
      out[e.name] = {{"value", e.read()}, {"unit", e.unit}, {"description", e.description}};
    return out;
  }

 private:
  struct Entry {
    std::string name, unit, description;
    std::function<nlohmann::json()> read;
  };
  std::string name_;
  std::vector<Entry> entries_;
};

}  // namespace attnsim
