#include "sim/config.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace attnsim {

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

void apply_override(YAML::Node& root, const std::string& text, ConfigSource& source) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("-p " + text, {}, "expected key.path=value, e.g. -p regfile.count=6");
  std::string key = text.substr(0, eq);
  std::string value = text.substr(eq + 1);
  auto parts = split_path(key);
  for (const auto& part : parts)
    if (part.empty()) throw InputError("-p " + text, {}, "empty component in key path '" + key + "'");
  // yaml-cpp nodes are handles: reset() re-points a handle, whereas `=` would overwrite the node it names.
  YAML::Node node;
  node.reset(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = node[parts[i]];
    if (!child.IsDefined() || child.IsNull()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = node[parts[i]];
    if (!next.IsMap())
      throw InputError("-p " + text, {},
                       "'" + parts[i] + "' in '" + key + "' is a value, not a map of parameters");
    node.reset(next);
  }
  try {
    node[parts.back()] = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError("-p " + text, {}, "cannot parse value '" + value + "': " + e.msg);
  }
  source.overrides[key] = text;
}

void reject_duplicate_keys(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) {
    for (const auto& item : node) reject_duplicate_keys(item, path);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& entry : node) {
    const YAML::Mark mark = entry.first.Mark();
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const auto [first, inserted] = seen.emplace(key, mark);
    if (!inserted)
      throw InputError(path, {mark.line + 1, mark.column + 1},
                       "key '" + key + "' is given twice in this map (first at line " +
                           std::to_string(first->second.line + 1) + ")");
    reject_duplicate_keys(entry.second, path);
  }
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {}, "cannot open " + what + ": " + system_reason(errno));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path, {}, what + " is not a regular file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, {}, "cannot read " + what);
  return buffer.str();
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_input_file(path, what);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(path, {e.mark.line + 1, e.mark.column + 1}, "YAML syntax: " + e.msg);
  }
  reject_duplicate_keys(root, path);
  return root;
}

MachineConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  MachineConfig config;
  config.source = std::make_shared<ConfigSource>();
  config.source->file = path;
  config.root = load_yaml_file(path, "config file");
  if (!config.root.IsMap()) throw InputError(path, {}, "a machine config must be a YAML map");
  for (const auto& text : overrides) apply_override(config.root, text, *config.source);
  return config;
}

}  // namespace attnsim
