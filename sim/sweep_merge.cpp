// `attnsim sweep merge OUT SHARD...`: the shards of one sweep (--shard K/N) back into one result, in point
// order, checked for missing, doubled and foreign points. The JSON Lines records are the source of truth, as
// on resume: OUT.csv is rebuilt from them.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "isa/diagnostics.h"
#include "sim/run.h"
#include "sim/sweep.h"
#include "sim/sweep_output.h"

namespace attnsim {

namespace {

namespace fs = std::filesystem;

struct Found {
  nlohmann::json record;
  std::string where;  // file:line, for the error that names a duplicate
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string point_text(const nlohmann::json& point) {
  std::string text;
  for (const auto& [key, value] : point.items())
    text +=
        (text.empty() ? "" : " ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  return text;
}

}  // namespace

int merge_sweep(const std::string& output, const std::vector<std::string>& shards) {
  const std::string where = "attnsim sweep merge";
  if (shards.empty()) throw InputError(where, {}, "no shards: attnsim sweep merge OUT SHARD...");
  const std::string out_stem = sweep_output_stem(output);
  std::map<std::string, std::string> given;  // canonical path -> as given
  std::map<size_t, Found> found;             // by the point's index in the whole sweep
  nlohmann::json reference;                  // the first record's sweep and shard count
  std::string reference_where;
  for (const auto& shard : shards) {
    const fs::path path = sweep_output_stem(shard) + ".jsonl";
    if (!fs::exists(path)) throw InputError(path.string(), {}, "no such file (did that shard run?)");
    const std::string canonical = fs::weakly_canonical(path).string();
    if (canonical == fs::weakly_canonical(out_stem + ".jsonl").string())
      throw InputError(path.string(), {}, "is the merge's own output; choose another OUT");
    if (!given.emplace(canonical, shard).second)
      throw InputError(path.string(), {}, "given twice (as " + given[canonical] + " and " + shard + ")");
    std::string text = read_text(path);
    if (!text.empty() && text.back() != '\n') {  // a task killed mid-write: its point counts as missing
      std::cerr << fmt::format("sweep merge: {}: ignoring an unfinished last line\n", path.string());
      text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    }
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      const std::string at = fmt::format("{}:{}", path.string(), number);
      auto record = nlohmann::json::parse(line, nullptr, false);
      if (record.is_discarded() || !record.is_object() || !record.contains("point"))
        throw InputError(path.string(), {number, 1}, "not a sweep record");
      const nlohmann::json s = record.value("shard", nlohmann::json());
      if (!s.is_object() || !s["point"].is_number_unsigned() || !s["count"].is_number_unsigned() ||
          !s["index"].is_number_unsigned() || !s["points"].is_number_unsigned())
        throw InputError(path.string(), {number, 1},
                         "not a shard's record (written by a sweep without --shard K/N)");
      const nlohmann::json identity = {
          {"sweep", record["sweep"]}, {"count", s["count"]}, {"points", s["points"]}, {"chip", s["chip"]}};
      if (reference.is_null()) {
        reference = identity;
        reference_where = at;
      } else if (identity != reference) {
        throw InputError(path.string(), {number, 1},
                         "belongs to another sweep or another split than " + reference_where + ": " +
                             identity.dump() + " vs " + reference.dump());
      }
      const size_t index = s["point"].get<size_t>(), count = s["count"].get<size_t>();
      if (count == 0 || index >= s["points"].get<size_t>() || index % count + 1 != s["index"].get<size_t>())
        throw InputError(path.string(), {number, 1}, "shard numbers do not add up: " + s.dump());
      if (const auto it = found.find(index); it != found.end())
        throw InputError(path.string(), {number, 1},
                         fmt::format("point {} ({}) is also at {}: each point must be in one shard only",
                                     index, point_text(record["point"]), it->second.where));
      record.erase("shard");  // what is left is what an unsharded sweep writes
      found.emplace(index, Found{std::move(record), at});
    }
  }
  if (reference.is_null()) throw InputError(where, {}, "the shards hold no records (did they run?)");
  const size_t count = reference["count"].get<size_t>(), points = reference["points"].get<size_t>();
  if (found.size() < points) {
    std::map<size_t, std::vector<size_t>> missing;  // shard -> point indices
    for (size_t i = 0; i < points; ++i)
      if (!found.count(i)) missing[i % count + 1].push_back(i);
    std::string list;
    for (const auto& [shard, indices] : missing)
      list += fmt::format("\n  shard {}/{}: {} of its points missing (point {}{})", shard, count,
                          indices.size(), indices.front(), indices.size() > 1 ? ", ..." : "");
    throw InputError(
        where, {},
        fmt::format("{} of {} points missing, nothing written:{}\n  rerun each such shard (the same "
                    "sweep command with --shard K/{} resumes it), then merge again",
                    points - found.size(), points, list, count));
  }
  const auto keys = reference["sweep"]["keys"].get<std::vector<std::string>>();
  const bool chip = reference["chip"].get<bool>();
  std::string jsonl, csv = csv_header(keys, chip);
  size_t failed = 0;
  for (const auto& [index, f] : found) {
    jsonl += json_text(f.record) + "\n";
    csv += csv_rows(f.record, keys, chip);
    failed += f.record.value("status", "") != "ok";
  }
  write_files_atomically({{out_stem + ".csv", csv}, {out_stem + ".jsonl", jsonl}});
  std::cerr << fmt::format(
      "sweep merge: {} files, {} points of {} shards, {} failed; wrote {}.csv and {}.jsonl\n", shards.size(),
      points, count, failed, out_stem, out_stem);
  return failed ? 1 : 0;
}

}  // namespace attnsim
