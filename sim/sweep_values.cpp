// The sweep's input side: value lists and ranges, size suffixes, keys, the YAML spec, the cartesian product.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>

#include "isa/diagnostics.h"
#include "isa/suggest.h"
#include "sim/config.h"
#include "sim/sweep.h"

namespace attnsim {

namespace {

// A sweep of more values than this is a typo in a range (a step of 1 over bytes), not a plan.
constexpr size_t kMaxValuesPerAxis = 10000;
constexpr size_t kMaxPoints = 1000000;

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    items.push_back(trim(text.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return items;
    start = at + 1;
  }
}

std::optional<double> parse_number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

// `A..B*R` or `A..B+S`, both bounds byte counts or integers.
std::vector<std::string> expand_range(const std::string& item) {
  const size_t dots = item.find("..");
  const size_t op = item.find_first_of("*+", dots);
  if (op == std::string::npos)
    throw std::invalid_argument("range '" + item + "' needs a step: A..B*ratio or A..B+step");
  const auto from = parse_size(trim(item.substr(0, dots)));
  const auto to = parse_size(trim(item.substr(dots + 2, op - dots - 2)));
  const auto step = parse_size(trim(item.substr(op + 1)));
  if (!from || !to || !step)
    throw std::invalid_argument("range '" + item + "': bounds and step must be integers");
  if (*from > *to) throw std::invalid_argument("range '" + item + "' runs backwards");
  const bool geometric = item[op] == '*';
  if (geometric ? (*step < 2 || *from < 1) : *step < 1)
    throw std::invalid_argument(
        "range '" + item +
        "': " + (geometric ? "the ratio must be 2 or more and A at least 1" : "the step must be 1 or more"));
  std::vector<std::string> values;
  for (int64_t v = *from; v <= *to; v = geometric ? v * *step : v + *step) {
    values.push_back(std::to_string(v));
    if (values.size() > kMaxValuesPerAxis)
      throw std::invalid_argument(fmt::format("range '{}' has more than {} values", item, kMaxValuesPerAxis));
    if (v > std::numeric_limits<int64_t>::max() / 2 / *step) break;  // the next step would overflow
  }
  return values;
}

}  // namespace

std::optional<int64_t> parse_size(const std::string& text) {
  static const std::vector<std::pair<std::string, int64_t>> suffixes = {
      {"KiB", 1LL << 10}, {"MiB", 1LL << 20}, {"GiB", 1LL << 30},
      {"KB", 1000},       {"MB", 1000000},    {"GB", 1000000000}};
  int64_t scale = 1;
  std::string number = text;
  for (const auto& [suffix, factor] : suffixes)
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      scale = factor;
      number = trim(text.substr(0, text.size() - suffix.size()));
      break;
    }
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  const auto value = parse_number(number);
  if (!value) return std::nullopt;
  const double bytes = *value * double(scale);
  // A fraction is fine with a suffix (1.5KiB) as long as it lands on a whole byte.
  if (bytes != std::floor(bytes) || bytes > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::vector<std::string> parse_sweep_values(const std::string& text) {
  std::vector<std::string> values;
  for (const auto& item : split(text, ',')) {
    if (item.empty()) throw std::invalid_argument("empty value in '" + text + "'");
    if (item.find("..") != std::string::npos) {
      for (auto& v : expand_range(item)) values.push_back(std::move(v));
      continue;
    }
    const bool has_suffix = item.find_first_of("KMG") != std::string::npos && item.ends_with("B");
    const auto size = parse_size(item);
    if (has_suffix && !size) throw std::invalid_argument("not a byte count: '" + item + "'");
    values.push_back(size ? std::to_string(*size) : item);
  }
  std::set<std::string> seen;
  for (const auto& v : values)
    if (!seen.insert(v).second)
      throw std::invalid_argument("value " + v + " appears twice in '" + text + "'");
  if (values.size() > kMaxValuesPerAxis)
    throw std::invalid_argument(fmt::format("'{}' has more than {} values", text, kMaxValuesPerAxis));
  return values;
}

const std::vector<std::string>& sweep_option_keys() {
  static const std::vector<std::string> keys = {"N",       "d",       "heads", "batch", "causal", "schedule",
                                                "block-q", "block-k", "block", "dtype", "values", "backward"};
  return keys;
}

namespace {

// Throws unless `key` is a dotted config key or a compare option the sweep knows.
void check_key(const std::string& key) {
  if (key.empty()) throw InputError("attnsim sweep", {}, "empty key");
  if (key.find('.') != std::string::npos) return;  // the config loader checks it, with its own did-you-mean
  const auto& keys = sweep_option_keys();
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  std::string hint = did_you_mean(key, keys);
  throw InputError("attnsim sweep", {},
                   "unknown key '" + key + "'" + hint +
                       " (a config key is dotted, sram.capacity_bytes; options: N, d, heads, batch, causal, "
                       "schedule, block-q, block-k, block, dtype, values, backward)");
}

}  // namespace

SweepAxis parse_sweep_axis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError("attnsim sweep", {}, "--sweep '" + text + "': expected key=values");
  SweepAxis axis{trim(text.substr(0, eq)), {}};
  check_key(axis.key);
  try {
    axis.values = parse_sweep_values(text.substr(eq + 1));
  } catch (const std::invalid_argument& e) {
    throw InputError("attnsim sweep", {}, "--sweep " + axis.key + ": " + e.what());
  }
  for (const auto& v : axis.values) option_args(axis.key, v);  // a bad value is an input error now
  return axis;
}

std::vector<std::string> option_args(const std::string& key, const std::string& value) {
  const auto bad = [&](const std::string& why) {
    return InputError("attnsim sweep", {}, key + "=" + value + ": " + why);
  };
  if (key.find('.') != std::string::npos) {
    const auto size = parse_size(value);
    return {"-p", key + "=" + (size ? std::to_string(*size) : value)};
  }
  if (key == "causal" || key == "backward") {
    if (value == "true" || value == "on" || value == "yes" || value == "1") return {"--" + key};
    if (value == "false" || value == "off" || value == "no" || value == "0") return {};
    throw bad("expected true or false");
  }
  if (key == "values" && value != "auto" && value != "on" && value != "off")
    throw bad("expected auto, on or off");
  const bool integer =
      key == "N" || key == "d" || key == "heads" || key == "batch" || key.starts_with("block");
  if (integer && (value.empty() || value.find_first_not_of("0123456789") != std::string::npos))
    throw bad("expected a whole number");
  return {"--" + key, value};
}

namespace {

// A YAML value as sweep text: a scalar as written, a sequence as a comma list of its scalars.
SourceLoc loc_of(const YAML::Node& node) {
  return {node.Mark().line + 1, node.Mark().column + 1};
}

std::string yaml_values(const std::string& path, const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) return node.Scalar();
  if (!node.IsSequence() || node.size() == 0)
    throw InputError(path, loc_of(node), key + ": expected a value, a range or a list of them");
  std::string text;
  for (const auto& item : node) {
    if (!item.IsScalar()) throw InputError(path, loc_of(item), key + ": list items must be values or ranges");
    text += (text.empty() ? "" : ",") + item.Scalar();
  }
  return text;
}

// A spec entry's value as text; an InputError at the value when it is not a single value.
std::string spec_scalar(const std::string& path, const YAML::Node& value, const std::string& name) {
  if (!value.IsScalar()) throw InputError(path, loc_of(value), name + ": expected a single value");
  return value.Scalar();
}

}  // namespace

void read_sweep_spec(const std::string& path, SweepSpec& spec) {
  const YAML::Node root = load_yaml_file(path, "sweep file");
  if (!root.IsMap())
    throw InputError(path, {}, "expected a map with config:, sweep:, fixed:, output:, jobs:");
  for (const auto& entry : root) {
    const std::string name = spec_scalar(path, entry.first, "a key");
    const YAML::Node& value = entry.second;
    if (name == "config") {
      const std::string config = spec_scalar(path, value, name);
      if (spec.config_path.empty()) spec.config_path = config;
    } else if (name == "output") {
      const std::string output = spec_scalar(path, value, name);
      if (spec.output.empty()) spec.output = output;
    } else if (name == "jobs") {
      int jobs = -1;
      if (!value.IsScalar() || !YAML::convert<int>::decode(value, jobs) || jobs < 0)
        throw InputError(path, loc_of(value), "jobs: must be 0 (all cores) or a positive whole number");
      if (spec.jobs == 0) spec.jobs = jobs;
    } else if (name == "sweep" || name == "fixed") {
      if (!value.IsMap()) throw InputError(path, loc_of(value), name + ": expected a map of key: values");
      for (const auto& item : value) {
        const std::string key = spec_scalar(path, item.first, "a key");
        const std::string values = yaml_values(path, item.second, name + "." + key);
        try {  // the command line's errors, placed at the spec's line
          if (name == "sweep") {
            spec.axes.push_back(parse_sweep_axis(key + "=" + values));
          } else {
            check_key(key);
            spec.fixed.emplace_back(key, values);
          }
        } catch (const InputError& e) {
          throw InputError(path, loc_of(item.first), e.message());
        }
      }
    } else {
      throw InputError(
          path, loc_of(entry.first),
          "unknown key '" + name + "'" + did_you_mean(name, {"config", "sweep", "fixed", "output", "jobs"}));
    }
  }
}

std::vector<std::vector<std::pair<std::string, std::string>>> sweep_points(
    const std::vector<SweepAxis>& axes) {
  size_t count = 1;
  for (const auto& axis : axes) {
    count *= axis.values.size();
    if (count > kMaxPoints)
      throw InputError("attnsim sweep", {}, fmt::format("more than {} points", kMaxPoints));
  }
  std::vector<std::vector<std::pair<std::string, std::string>>> points(count);
  for (size_t i = 0; i < count; ++i) {
    size_t rest = i;  // mixed-radix digits, the last axis fastest
    for (size_t a = axes.size(); a-- > 0;) {
      points[i].emplace_back(axes[a].key, axes[a].values[rest % axes[a].values.size()]);
      rest /= axes[a].values.size();
    }
    std::reverse(points[i].begin(), points[i].end());
  }
  return points;
}

}  // namespace attnsim
