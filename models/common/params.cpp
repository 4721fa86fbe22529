#include "models/common/params.h"

#include <algorithm>

#include <fmt/format.h>

#include <cmath>

#include "isa/suggest.h"

namespace attnsim {

ParamReader::ParamReader(YAML::Node node, std::string key_path, std::shared_ptr<const ConfigSource> source)
    : node_(node),
      key_path_(std::move(key_path)),
      source_(std::move(source)),
      effective_(std::make_shared<nlohmann::json>(nlohmann::json::object())),
      docs_(std::make_shared<std::vector<ParamDoc>>()),
      declared_(std::make_shared<std::set<std::string>>()),
      here_(effective_.get()) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) fail_node(node_, key_path_, "expected a map of parameters");
}

ParamReader::ParamReader(const ParamReader& parent, YAML::Node node, const std::string& name)
    : node_(node),
      key_path_(parent.path_of(name)),
      source_(parent.source_),
      effective_(parent.effective_),
      docs_(parent.docs_),
      declared_(std::make_shared<std::set<std::string>>()),
      here_(&(*parent.here_)[name]) {
  *here_ = nlohmann::json::object();
  if (node_ && !node_.IsNull() && !node_.IsMap()) fail_node(node_, key_path_, "expected a map of parameters");
}

void ParamReader::fail_node(const YAML::Node& node, const std::string& key,
                            const std::string& message) const {
  if (auto it = source_->overrides.find(key); it != source_->overrides.end())
    throw InputError("-p " + it->second, {}, key + ": " + message);
  SourceLoc loc;
  if (node && !node.Mark().is_null()) loc = {node.Mark().line + 1, node.Mark().column + 1};
  throw InputError(source_->file, loc, key + ": " + message);
}

void ParamReader::fail_combination(const std::vector<std::string>& also, const std::string& message) const {
  const std::string section = key_path_ + ".";
  for (const auto& [key, text] : source_->overrides) {
    const bool involved =
        key.rfind(section, 0) == 0 || std::find(also.begin(), also.end(), key) != also.end();
    if (involved) throw InputError("-p " + text, {}, key_path_ + ": " + message);
  }
  fail_node(node_, key_path_, message);
}

void ParamReader::fail(const std::string& name, const std::string& message) const {
  YAML::Node value = (node_ && node_.IsMap()) ? node_[name] : YAML::Node();
  fail_node(value ? value : node_, path_of(name), message);
}

YAML::Node ParamReader::lookup(const std::string& name) {
  declared_->insert(name);
  if (!node_ || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  // Through a const handle: yaml-cpp's non-const operator[] would add the key (as null) to the config.
  const YAML::Node& config = node_;
  return config[name];
}

bool ParamReader::has(const std::string& name) const {
  return node_ && node_.IsMap() && node_[name].IsDefined();
}

namespace {

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, int64_t>) return "integer";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_same_v<T, std::string>) return "string";
}

std::string article(const std::string& noun) {
  return (noun[0] == 'i' ? "an " : "a ") + noun;
}

// Every string read here goes into the effective config, which is written as JSON (--stats-json, sweeps),
// and nlohmann::json refuses to write a string that is not UTF-8. Overlong forms, surrogates and code
// points past U+10FFFF are refused as it refuses them.
bool is_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    // How many continuation bytes the lead byte announces; -1: not a lead byte.
    const int extra = lead < 0x80             ? 0
                      : (lead & 0xE0) == 0xC0 ? 1
                      : (lead & 0xF0) == 0xE0 ? 2
                      : (lead & 0xF8) == 0xF0 ? 3
                                              : -1;
    if (extra < 0 || s.size() - i <= static_cast<size_t>(extra)) return false;
    uint32_t code = extra == 0 ? lead : lead & (0x7F >> (extra + 1));
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += 1 + static_cast<size_t>(extra);
  }
  return true;
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else
    return fmt::format("{}", v);
}

}  // namespace

template <class T>
T ParamReader::get(const std::string& name, T default_value, std::string_view unit,
                   std::string_view description, std::optional<double> min, std::optional<double> max) {
  const size_t doc_index = docs_->size();
  docs_->push_back(
      {path_of(name), type_name<T>(), show(default_value), "", std::string(unit), std::string(description)});
  YAML::Node value = lookup(name);
  T result = default_value;
  if (value && value.IsNull())
    fail_node(value, path_of(name),
              "has no value (remove the key to use the default, " + show(default_value) + ")");
  if (value) {
    if (!value.IsScalar()) fail_node(value, path_of(name), "expected " + article(type_name<T>()) + " value");
    try {
      if constexpr (std::is_same_v<T, int64_t>) {
        // yaml-cpp happily truncates 1.5 to 1; insist on an integer literal.
        const std::string& text = value.Scalar();
        size_t used = 0;
        long long parsed = std::stoll(text, &used, 10);  // base 10: "010" is ten, not eight
        if (used != text.size()) throw YAML::BadConversion(value.Mark());
        result = parsed;
      } else {
        result = value.as<T>();
      }
    } catch (const std::exception&) {
      fail_node(value, path_of(name),
                "expected " + article(type_name<T>()) + ", found '" + value.Scalar() + "'");
    }
  }
  if constexpr (std::is_same_v<T, std::string>) {
    if (!is_utf8(result)) fail_node(value, path_of(name), "is not valid UTF-8 text");
  }
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (std::isnan(static_cast<double>(result))) fail_node(value, path_of(name), "must be a number");
    if (min && static_cast<double>(result) < *min)
      fail_node(value, path_of(name), fmt::format("must be at least {}, found {}", *min, result));
    if (max && static_cast<double>(result) > *max)
      fail_node(value, path_of(name), fmt::format("must be at most {}, found {}", *max, result));
  }
  (*here_)[name] = result;
  (*docs_)[doc_index].value = show(result);
  return result;
}

template bool ParamReader::get<bool>(const std::string&, bool, std::string_view, std::string_view,
                                     std::optional<double>, std::optional<double>);
template int64_t ParamReader::get<int64_t>(const std::string&, int64_t, std::string_view, std::string_view,
                                           std::optional<double>, std::optional<double>);
template double ParamReader::get<double>(const std::string&, double, std::string_view, std::string_view,
                                         std::optional<double>, std::optional<double>);
template std::string ParamReader::get<std::string>(const std::string&, std::string, std::string_view,
                                                   std::string_view, std::optional<double>,
                                                   std::optional<double>);

std::string ParamReader::choice(const std::string& name, const std::string& default_value,
                                const std::vector<std::string>& choices, std::string_view description) {
  std::string joined;
  for (const auto& c : choices) joined += (joined.empty() ? "" : " | ") + c;
  std::string value = get<std::string>(name, default_value, joined, description);
  for (const auto& c : choices)
    if (c == value) return value;
  fail(name, "'" + value + "' is not one of: " + joined);
}

ParamReader ParamReader::child(const std::string& name, std::string_view description) {
  docs_->push_back({path_of(name), "map", "", "", "", std::string(description)});
  return ParamReader(*this, lookup(name), name);
}

void ParamReader::finish() const {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar()) fail_node(entry.first, key_path_, "keys must be plain names");
    std::string key = entry.first.as<std::string>();
    if (declared_->count(key)) continue;
    std::string known;
    for (const auto& k : *declared_) known += (known.empty() ? "" : ", ") + k;
    const std::vector<std::string> names(declared_->begin(), declared_->end());
    fail_node(entry.first, path_of(key),
              "unknown key" + did_you_mean(key, names) + " (known here: " + known + ")");
  }
}

}  // namespace attnsim
