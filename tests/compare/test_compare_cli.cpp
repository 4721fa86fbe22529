// `attnsim compare` and `attnsim plan` through the real binary: a schedule that does not fit gets its row and
// the exit status says so, --csv, --per-tensor, progress lines, both spellings of the sequence length, and
// the plan search's best candidate against a closed form.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/csv_cells.h"
#include "tests/common/run_cli.h"

namespace {

namespace fs = std::filesystem;
using attnsim::testing::CliOutcome;

const std::string kSm = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100-sm.yaml";

class CompareCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attnsim-compare-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  CliOutcome run(const std::vector<std::string>& args) { return attnsim::testing::run_cli(args, dir_); }
  fs::path dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

using attnsim::testing::csv_cells;

// CSV rows as maps from the header's names.
std::vector<std::map<std::string, std::string>> csv(const std::string& text) {
  const auto lines = lines_of(text);
  std::vector<std::map<std::string, std::string>> rows;
  if (lines.empty()) return rows;
  const auto header = csv_cells(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto cells = csv_cells(lines[i]);
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < cells.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

// flash1 at 128 x 128 needs its K/V pair twice, Q_i and O_i twice, S and P: more than 227 KB; flash2 fits
// (216,064 bytes by hand, tests/planner). The row that did not fit says why; the other ran; exit 1.
TEST_F(CompareCli, ScheduleThatDoesNotFitGetsItsRowAndExitOne) {
  const CliOutcome o = run(
      {"compare", "-c", kSm, "--N", "256", "--block", "128", "--schedule", "flash1", "--schedule", "flash2"});
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.out.find("flash1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("did not run: buffers need"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("attnsim compare: flash1 did not run:"), std::string::npos) << o.err;
  // flash2's row has figures: its HBM read for N = 256, d = 64, f16 at B_r = 128: Q once, K and V
  // 256 / 128 = 2 times: 32 KB x (1 + 2 x 2) = 163.8 KB.
  const auto lines = lines_of(o.out);
  bool flash2_row = false;
  for (const auto& line : lines)
    if (line.rfind("flash2 ", 0) == 0) {
      flash2_row = true;
      EXPECT_NE(line.find("163.8 KB"), std::string::npos) << line;
    }
  EXPECT_TRUE(flash2_row) << o.out;
}

// When nothing runs there is nothing to compare: the rows with their reasons, exit 2.
TEST_F(CompareCli, NoScheduleFitsExitsTwo) {
  const CliOutcome o = run({"compare", "-c", kSm, "--N", "256", "--block", "64", "-p",
                            "sram.capacity_bytes=1024", "--schedule", "flash1", "--schedule", "flash2"});
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.out.find("flash1"), std::string::npos);
  EXPECT_NE(o.err.find("flash2 did not run:"), std::string::npos) << o.err;
  EXPECT_NE(lines_of(o.err).back().find("sram.capacity_bytes is 1024"), std::string::npos) << o.err;
}

// --csv: the sweep's columns, a line per schedule; a schedule that did not run is `failed` with its reason.
TEST_F(CompareCli, CsvHasTheSweepColumnsAndFailedRows) {
  const CliOutcome o = run({"compare", "-c", kSm, "--N", "256", "--block", "128", "--schedule", "flash2",
                            "--schedule", "flash1", "--csv"});
  EXPECT_EQ(o.status, 1) << o.err;
  const auto rows = csv(o.out);
  ASSERT_EQ(rows.size(), 2u) << o.out;
  EXPECT_EQ(rows[0].at("schedule"), "flash2");
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[0].at("block_q"), "128");
  // HBM bytes by hand: reads Q + 2 x (K + V) = 5 x 32768, writes O = 32768.
  EXPECT_EQ(rows[0].at("hbm_read_bytes"), "163840");
  EXPECT_EQ(rows[0].at("hbm_write_bytes"), "32768");
  EXPECT_EQ(rows[0].at("sram_bytes"), "232448");
  EXPECT_EQ(rows[1].at("schedule"), "flash1");
  EXPECT_EQ(rows[1].at("status"), "failed");
  EXPECT_EQ(rows[1].at("hbm_read_bytes"), "");
  EXPECT_NE(rows[1].at("reason").find("buffers need"), std::string::npos) << rows[1].at("reason");
}

// --per-tensor: per schedule and tensor; flash2 on one core reads Q once, K and V N / B_r times, writes O
// once.
TEST_F(CompareCli, PerTensorBytes) {
  const CliOutcome o = run({"compare", "-c", kSm, "--N", "256", "--block", "64", "--schedule", "flash2",
                            "--per-tensor", "--csv", "--values", "off"});
  EXPECT_EQ(o.status, 0) << o.err;
  const auto rows = csv(o.out);
  std::map<std::string, std::map<std::string, std::string>> by_tensor;
  for (const auto& r : rows) by_tensor[r.at("tensor")] = r;
  ASSERT_TRUE(by_tensor.count("Q") && by_tensor.count("K") && by_tensor.count("V") && by_tensor.count("O"))
      << o.out;
  const int64_t tensor = 256 * 64 * 2;  // N x d x f16
  EXPECT_EQ(by_tensor["Q"].at("hbm_read_bytes"), std::to_string(tensor));
  EXPECT_EQ(by_tensor["K"].at("hbm_read_bytes"), std::to_string(4 * tensor));  // 256 / 64 query blocks
  EXPECT_EQ(by_tensor["V"].at("hbm_read_bytes"), std::to_string(4 * tensor));
  EXPECT_EQ(by_tensor["O"].at("hbm_write_bytes"), std::to_string(tensor));
  EXPECT_EQ(by_tensor["Q"].at("hbm_write_bytes"), "0");
  // The table form names the same figures.
  const CliOutcome table = run({"compare", "-c", kSm, "--N", "256", "--block", "64", "--schedule", "flash2",
                                "--per-tensor", "--values", "off"});
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.out.find("bytes per tensor"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("131.1 KB"), std::string::npos) << table.out;  // K: 4 x 32,768
}

// Progress lines on stderr, plain when stderr is a file: one as each schedule starts and one as it ends.
TEST_F(CompareCli, ProgressLinesWhenAskedAndNoneWhenOff) {
  const std::vector<std::string> args = {"compare", "-c",         kSm,      "--N",        "128",   "--block",
                                         "64",      "--schedule", "flash1", "--schedule", "flash2"};
  auto with = args;
  with.insert(with.end(), {"--progress", "on", "--jobs", "1"});
  const CliOutcome on = run(with);
  EXPECT_EQ(on.status, 0) << on.err;
  const auto lines = lines_of(on.err);
  ASSERT_EQ(lines.size(), 4u) << on.err;
  EXPECT_EQ(lines[0], "compare: [1/2] flash1 running");
  EXPECT_EQ(lines[1].rfind("compare: [1/2] flash1 done in ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "compare: [2/2] flash2 running");
  EXPECT_EQ(lines[3].rfind("compare: [2/2] flash2 done in ", 0), 0u) << lines[3];
  EXPECT_EQ(on.err.find('\r'), std::string::npos);  // no terminal redraws in a file
  auto without = args;
  without.insert(without.end(), {"--progress", "off"});
  const CliOutcome off = run(without);
  EXPECT_EQ(off.status, 0);
  EXPECT_EQ(off.err, "");
  EXPECT_EQ(off.out, on.out);
  // Side by side (--jobs 2) a schedule's line says it started when its child does and ended when it
  // ends, so the four lines may interleave; each schedule's start comes before its end.
  auto parallel = args;
  parallel.insert(parallel.end(), {"--progress", "on", "--jobs", "2"});
  const CliOutcome two = run(parallel);
  EXPECT_EQ(two.status, 0) << two.err;
  const std::string& err = two.err;
  for (const std::string name : {"[1/2] flash1", "[2/2] flash2"}) {
    const size_t started = err.find("compare: " + name + " running\n"),
                 ended = err.find("compare: " + name + " done in ");
    EXPECT_NE(started, std::string::npos) << err;
    EXPECT_NE(ended, std::string::npos) << err;
    EXPECT_LT(started, ended) << err;
  }
  EXPECT_EQ(lines_of(err).size(), 4u) << err;
  EXPECT_EQ(two.out, on.out);
}

// The sequence length is --N in compare, sweep and plan, --n in gen; each accepts the other spelling.
TEST_F(CompareCli, BothSpellingsOfTheSequenceLength) {
  const CliOutcome upper =
      run({"compare", "-c", kSm, "--N", "128", "--block", "64", "--schedule", "flash2", "--json"});
  const CliOutcome lower =
      run({"compare", "-c", kSm, "--n", "128", "--block", "64", "--schedule", "flash2", "--json"});
  const CliOutcome assigned =
      run({"compare", "-c", kSm, "--n=128", "--block", "64", "--schedule", "flash2", "--json"});
  EXPECT_EQ(upper.status, 0) << upper.err;
  EXPECT_NE(upper.out.find("\"n\": 128"), std::string::npos);
  const auto without_host_time = [](std::string s) {
    std::string out;
    for (const auto& line : lines_of(s))
      if (line.find("host_seconds") == std::string::npos) out += line + "\n";
    return out;
  };
  EXPECT_EQ(without_host_time(lower.out), without_host_time(upper.out));
  EXPECT_EQ(without_host_time(assigned.out), without_host_time(upper.out));
  const CliOutcome gen_lower = run({"gen", "flash2", "--n", "128", "--block", "64"});
  const CliOutcome gen_upper = run({"gen", "flash2", "--N", "128", "--block", "64"});
  EXPECT_EQ(gen_lower.status, 0) << gen_lower.err;
  // The first line records the command as given; the trace after it is the same.
  EXPECT_EQ(gen_lower.out.substr(gen_lower.out.find('\n')), gen_upper.out.substr(gen_upper.out.find('\n')));
  EXPECT_NE(gen_lower.out.find("[128][64]"), std::string::npos);
  const CliOutcome both_buffers =
      run({"compare", "-c", kSm, "--N", "128", "--single-buffer", "--double-buffer"});
  EXPECT_EQ(both_buffers.status, 2);
}

// plan on one SM, N = 256, least HBM bytes: no schedule can move less than the compulsory |Q|+|K|+|V|+|O| =
// 4 x 256 x 64 x 2 = 131,072 bytes, and flash2 with B_r = N (one query block: K and V read once) moves
// exactly that. So the best row is flash2 256 x something at 131.1 KB, and the ranking never goes down.
TEST_F(CompareCli, PlanFindsTheCompulsoryTrafficOnOneCore) {
  const CliOutcome o = run({"plan", "-c", kSm, "--N", "256", "--d", "64", "--jobs", "2", "--top", "50"});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto lines = lines_of(o.out);
  ASSERT_GE(lines.size(), 4u) << o.out;
  EXPECT_NE(lines[0].find("objective: least HBM bytes"), std::string::npos) << lines[0];
  const std::string best = lines[3];
  EXPECT_NE(best.find("flash2"), std::string::npos) << best;
  EXPECT_NE(best.find(" 256x"), std::string::npos) << best;
  EXPECT_NE(best.find("131.1 KB"), std::string::npos) << best;
  // Every row ranks at or after the one above it by the printed ratio to the best.
  double previous = 0;
  size_t rows = 0;
  for (size_t i = 3; i < lines.size(); ++i) {
    std::istringstream cells(lines[i]);
    std::vector<std::string> words;
    for (std::string w; cells >> w;) words.push_back(w);
    if (words.empty() || words[0] != std::to_string(rows + 1)) break;
    ++rows;
    // "vs best" is the column after "time us": find the first word of the form d.ddd after the cycles.
    double ratio = 0;
    for (size_t w = 4; w < words.size(); ++w)
      if (words[w].size() == 5 && words[w][1] == '.') {
        ratio = std::stod(words[w]);
        break;
      }
    EXPECT_GE(ratio, previous) << lines[i];
    EXPECT_GE(ratio, 1.0) << lines[i];
    previous = ratio;
  }
  EXPECT_GE(rows, 10u) << o.out;
  // The rules' own choices are among the candidates and named.
  EXPECT_NE(o.out.find("hardware rule"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("paper rule"), std::string::npos) << o.out;
  // plan: a line per finished candidate on stderr.
  EXPECT_NE(o.err.find("plan: "), std::string::npos);
}

TEST_F(CompareCli, PlanRefusesDramOnOneCore) {
  const CliOutcome o = run({"plan", "-c", kSm, "--N", "256", "--objective", "dram"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--objective dram needs a whole-chip config"), std::string::npos) << o.err;
}

}  // namespace

namespace {

// compare's JSON without the host's wall times, the one field that differs between runs.
std::string without_host_seconds(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text);
  for (auto& row : j["schedules"]) row.erase("host_seconds");
  return j.dump(1);
}

}  // namespace

// Schedules run side by side in child processes hand back exactly the rows one process computes one after
// another: every figure, value error and per-tensor byte, on a whole chip (with its kernels and blocks)
// and on one core, forward and backward.
TEST_F(CompareCli, JobsGiveTheRowsOfOneProcess) {
  const std::string chip = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  for (const std::vector<std::string>& shape :
       {std::vector<std::string>{"-c", chip, "--N", "256", "--heads", "2", "--causal"},
        std::vector<std::string>{"-c", kSm, "--N", "256"},
        std::vector<std::string>{"-c", chip, "--N", "128", "--backward"}}) {
    std::vector<std::string> args = {"compare", "--values", "on", "--json", "--per-tensor"};
    args.insert(args.end(), shape.begin(), shape.end());
    std::vector<std::string> one = args, two = args;
    one.insert(one.end(), {"--jobs", "1", "--threads", "1"});
    two.insert(two.end(), {"--jobs", "3", "--threads", "2"});
    const CliOutcome a = run(one), b = run(two);
    ASSERT_EQ(a.status, 0) << a.err;
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_NE(a.out.find("\"max_rel_error\""), std::string::npos);  // values were checked
    EXPECT_EQ(without_host_seconds(a.out), without_host_seconds(b.out)) << shape[1];
  }
}

// Past auto's budget (5 heads x 4096^2 scores > 8192^2) the values come from the first head simulated
// alone: every count and time is the timing-only run's, every error the one-head run's, and the table
// says so.
TEST_F(CompareCli, AutoChecksTheFirstHeadAloneBeyondItsBudget) {
  const std::string chip = std::string(ATTNSIM_SOURCE_DIR) + "/configs/h100.yaml";
  const std::vector<std::string> shape = {"compare",    "-c",           chip,         "--N",
                                          "4096",       "--causal",     "--schedule", "flash2",
                                          "--schedule", "naive-online", "--json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = shape;
    args.insert(args.end(), more.begin(), more.end());
    const CliOutcome r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json sampled = with({"--heads", "5"}), timing = with({"--heads", "5", "--values", "off"}),
                       one_head = with({"--heads", "1", "--values", "on"});
  EXPECT_EQ(sampled["value_heads"], 1);
  EXPECT_EQ(timing["value_heads"], 0);
  EXPECT_EQ(one_head["value_heads"], 1);
  for (size_t i = 0; i < 2; ++i) {
    nlohmann::json s = sampled["schedules"][i], t = timing["schedules"][i], o = one_head["schedules"][i];
    SCOPED_TRACE(s["schedule"].get<std::string>());
    ASSERT_TRUE(s.contains("max_rel_error"));
    EXPECT_FALSE(t.contains("max_rel_error"));
    EXPECT_EQ(s.at("max_rel_error"), o.at("max_rel_error"));
    EXPECT_NE(s.at("sm_l2_bytes_read"), o.at("sm_l2_bytes_read"));  // the counts are not the one head's
    for (const char* key : {"max_rel_error", "max_abs_error", "passed", "host_seconds"}) s.erase(key);
    t.erase("host_seconds");
    EXPECT_EQ(s, t);
  }
  const CliOutcome table =
      run({"compare", "-c", chip, "--N", "4096", "--heads", "5", "--schedule", "flash2"});
  EXPECT_NE(table.out.find("batch x heads = 1 x 5, not causal, f16, values of the first head of 5\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("max err: the first head's values, from a run of that head alone"),
            std::string::npos);
}

TEST_F(CompareCli, JobsMustBeZeroOrMore) {
  const CliOutcome r = run({"compare", "-c", kSm, "--N", "64", "--jobs", "-1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--jobs and --threads must be 0 (all cores) or more"), std::string::npos) << r.err;
}
