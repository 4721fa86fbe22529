// `attnsim run --vcd`: the waveform of a lab run, read back by a small VCD parser (IEEE 1364 text: $var
// declarations, #time lines, value changes), against the lab handouts' cycle counts and values.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/run.h"

namespace attnsim {
namespace {

const std::string kRoot = ATTNSIM_SOURCE_DIR;

struct Vcd {
  std::string timescale;
  std::map<std::string, std::string> code_of;  // "regs.R2" -> its identifier code
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> changes;  // code -> (time, value)
  uint64_t last_time = 0;

  // Changes of one signal, time and value (numbers as written: "r19" -> "19", "b100" -> "4").
  std::vector<std::pair<uint64_t, std::string>> of(const std::string& name) const {
    auto code = code_of.find(name);
    if (code == code_of.end()) {
      ADD_FAILURE() << "no signal " << name;
      return {};
    }
    auto it = changes.find(code->second);
    return it == changes.end() ? std::vector<std::pair<uint64_t, std::string>>{} : it->second;
  }
};

std::string number(const std::string& token) {
  if (token[0] == 'r') return token.substr(1);
  if (token[0] == 'b') return std::to_string(std::stoull(token.substr(1), nullptr, 2));
  return token;
}

Vcd parse(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  Vcd vcd;
  std::vector<std::string> scopes;
  uint64_t now = 0;
  bool body = false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "$timescale") words >> vcd.timescale;
    if (first == "$scope") scopes.push_back((words >> first >> first, first));
    if (first == "$upscope") scopes.pop_back();
    if (first == "$var") {
      std::string type, bits, code, name;
      words >> type >> bits >> code >> name;
      vcd.code_of[scopes.back() + "." + name] = code;
    }
    if (first == "$enddefinitions") body = true;
    if (!body || first.empty() || first[0] == '$') continue;
    if (first[0] == '#') {
      now = vcd.last_time = std::stoull(first.substr(1));
    } else if (first[0] == 'r' || first[0] == 'b') {
      std::string code;
      words >> code;
      vcd.changes[code].push_back({now, number(first)});
    } else {
      vcd.changes[first.substr(1)].push_back({now, first.substr(0, 1)});
    }
  }
  return vcd;
}

using Changes = std::vector<std::pair<uint64_t, std::string>>;

// Lab 1 (docs/labs/01-c00.md): 7 one-cycle steps; R2 = a00·b00 = 1·5 after step 3 and c00 = 19 after step 6;
// 4 LOADs (steps 1, 2, 4, 5), one STORE (step 7); the MAC busy in steps 3 and 6.
TEST(Vcd, LabOneSignalsChangeAtTheHandoutsCycles) {
  RunOptions o;
  o.config_path = kRoot + "/configs/toy-3reg.yaml";
  o.vcd = ::testing::TempDir() + "lab1.vcd";
  RunResult r = run_trace_file(kRoot + "/labs/01-c00/c00.trace", o);
  Vcd vcd = parse(o.vcd);
  EXPECT_EQ(vcd.timescale, "1ns");
  EXPECT_EQ(vcd.last_time, 7u);
  EXPECT_EQ(vcd.of("regs.R2"), (Changes{{3, "5"}, {6, "19"}}));
  EXPECT_EQ(vcd.of("dram.reads"), (Changes{{0, "0"}, {1, "1"}, {2, "2"}, {4, "3"}, {5, "4"}}));
  EXPECT_EQ(vcd.of("dram.writes"), (Changes{{0, "0"}, {7, "1"}}));
  EXPECT_EQ(vcd.of("units.mac_busy"), (Changes{{0, "0"}, {2, "1"}, {3, "0"}, {5, "1"}, {6, "0"}}));
  EXPECT_TRUE(r.notes.empty());
}

// Lab 3's pipelined run (docs/labs/03-matmul-outer.md, try 2): the second LOAD issues one cycle after the
// first, so the DRAM port is busy without a break from 0 until the second load is done (latency 4: cycle 5).
TEST(Vcd, PipelinedLoadsOverlap) {
  RunOptions o;
  o.config_path = kRoot + "/configs/toy-6reg.yaml";
  o.overrides = {"dram.load_latency=4", "sequencer.issue=pipelined"};
  o.vcd = ::testing::TempDir() + "lab3.vcd";
  run_trace_file(kRoot + "/labs/03-matmul-outer/matmul_outer.trace", o);
  Vcd vcd = parse(o.vcd);
  EXPECT_EQ(vcd.last_time, 46u);  // the handout's 46 cycles
  const Changes dram = vcd.of("units.dram_busy");
  ASSERT_GE(dram.size(), 3u);
  EXPECT_EQ(dram[1], (std::pair<uint64_t, std::string>{0, "1"}));
  EXPECT_EQ(dram[2], (std::pair<uint64_t, std::string>{5, "0"}));
  EXPECT_EQ(vcd.of("dram.reads").back().second, "10");  // LOAD 10
}

// Lab 7, inner order (docs/labs/07-loop-order.md): 3088 cycles, LOAD 160, STORE 8, sram peak 148 bytes; the
// first row load takes 1 cycle of bandwidth plus 10 of latency.
TEST(Vcd, LabSevenTileMachine) {
  RunOptions o;
  o.config_path = kRoot + "/configs/toy-tile.yaml";
  o.vcd = ::testing::TempDir() + "lab7.vcd";
  run_trace_file(kRoot + "/labs/07-loop-order/inner_product_n8.trace", o);
  Vcd vcd = parse(o.vcd);
  EXPECT_EQ(vcd.last_time, 3088u);
  EXPECT_EQ(vcd.of("hbm.reads").back().second, "160");
  EXPECT_EQ(vcd.of("hbm.writes").back().second, "8");
  EXPECT_EQ(vcd.of("sram.occupied_bytes").back().second, "148");
  const Changes dma = vcd.of("units.dma_busy");
  ASSERT_GE(dma.size(), 2u);
  EXPECT_EQ(dma[1], (std::pair<uint64_t, std::string>{0, "1"}));
  EXPECT_EQ(vcd.of("hbm.reads")[1], (std::pair<uint64_t, std::string>{11, "1"}));
}

// Bounded like --timeline: beyond the limit nothing more is drawn, and the run says so.
TEST(Vcd, StopsAtTheLimitAndSaysSo) {
  RunOptions o;
  o.config_path = kRoot + "/configs/toy-3reg.yaml";
  o.vcd = ::testing::TempDir() + "limit.vcd";
  o.vcd_limit = 3;
  RunResult r = run_trace_file(kRoot + "/labs/01-c00/c00.trace", o);
  Vcd vcd = parse(o.vcd);
  EXPECT_EQ(vcd.last_time, 3u);  // three one-cycle steps
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("--vcd stopped after 3 instructions (4 more not drawn"), std::string::npos)
      << r.notes[0];
}

}  // namespace
}  // namespace attnsim
