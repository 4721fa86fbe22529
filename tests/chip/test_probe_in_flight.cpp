// The L2 probe's chunks in flight (traces::ProbeShape::in_flight, `attnsim probe --in-flight`): the model's
// twin of validation/pace_probe.cu's UNROLL. One 16 KiB chunk in flight leaves a lone SM bound by the round
// trip; enough of them leave it bound by its L1 <- L2 port (noc.core_bytes_per_cycle).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <stdexcept>

#include "isa/diagnostics.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/probe_compare.h"
#include "traces/l2_probe.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

const std::string kSource = std::string(ATTNSIM_SOURCE_DIR) + "/";

traces::ProbeShape single(uint64_t mib, int64_t passes, int64_t in_flight) {
  traces::ProbeShape s;
  s.mode = traces::ProbeMode::Single;
  s.bytes = mib << 20;
  s.passes = passes;
  s.in_flight = in_flight;
  return s;
}

// The SRAM buffer each LOAD of the program writes, in program order.
std::vector<int> load_destinations(const isa::Program& p) {
  std::vector<int> buffers;
  for (const isa::Instruction& ins : p.instructions)
    if (ins.op == isa::Opcode::Load) {
      const isa::TileRef& to = p.tiles[static_cast<size_t>(ins.operand(1).tensor)];
      EXPECT_TRUE(to.is_buffer);
      buffers.push_back(to.index);
    }
  return buffers;
}

TEST(ProbeInFlight, LoadsTakeTheBuffersInTurn) {
  const isa::Program one = traces::l2_probe(single(1, 1, 1));
  const isa::Program three = traces::l2_probe(single(1, 1, 3));
  const std::vector<int> a = load_destinations(one), b = load_destinations(three);
  ASSERT_EQ(a.size(), 64u);  // 1 MiB of 16 KiB chunks
  ASSERT_EQ(b.size(), 64u);
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), 1u);
  for (size_t i = 3; i < b.size(); ++i) EXPECT_EQ(b[i], b[i - 3]) << "load " << i;
  EXPECT_NE(b[0], b[1]);
  EXPECT_NE(b[1], b[2]);
  EXPECT_NE(b[0], b[2]);
}

TEST(ProbeInFlight, IsRefusedOutsideTheReadingModesAndRange) {
  EXPECT_THROW(traces::l2_probe(single(1, 1, 0)), std::invalid_argument);
  EXPECT_THROW(traces::l2_probe(single(1, 1, traces::kMaxProbeInFlight + 1)), std::invalid_argument);
  traces::ProbeShape heads;
  heads.mode = traces::ProbeMode::Heads;
  heads.in_flight = 2;
  EXPECT_THROW(traces::l2_probe(heads), std::invalid_argument);
  traces::ProbeShape stores = single(1, 1, 2);
  stores.mode = traces::ProbeMode::WritePrivate;
  EXPECT_THROW(traces::l2_probe(stores), std::invalid_argument);
}

// One SM reading 64 MiB (past the L2: every chunk from DRAM): the pace of a second pass, in bytes per core
// cycle. One chunk in flight waits out DRAM's latency every 16 KiB; eight keep the SM's port busy.
TEST(ProbeInFlight, ChunksInFlightTakeALoneMissingSmToItsPort) {
  const MachineConfig config = load_config(kSource + "configs/h100.yaml", {});
  const double port = config.root["noc"]["core_bytes_per_cycle"].as<double>();
  Machine machine(config);
  const auto cycles = [&](int64_t passes, int64_t in_flight) {
    const isa::Program p =
        traces::stream_program([&] { return traces::l2_probe(single(64, passes, in_flight)); });
    machine.load(p, false, true);
    machine.run();
    return static_cast<double>(summarize_chip(*machine.chip(), p, machine.clock_ghz()).cycles);
  };
  const double pass = 64.0 * (1 << 20);
  const double one_in_flight = pass / (cycles(2, 1) - cycles(1, 1));
  const double eight_in_flight = pass / (cycles(2, 8) - cycles(1, 8));
  std::printf("a lone SM missing: %.1f B/clk with one chunk in flight, %.1f with eight (port %.0f)\n",
              one_in_flight, eight_in_flight, port);
  EXPECT_LT(one_in_flight, 0.3 * port);
  EXPECT_GT(eight_in_flight, 0.9 * port);
  EXPECT_LE(eight_in_flight, port * 1.001);
}

// validation/tight_probe.cu on an H100 (validation/data/h100_tight_probe.csv): the l2 probe's reading modes
// as tight loops, four chunks a block in flight (the file's in_flight column). Where every SM reads its own
// part, or one SM reads alone, or every SM's reads fit the L2, the DRAM bytes are the footprint's and the
// model's within 3%; each SM streaming its own part takes the GPU's time within 10% (DRAM-bound). One SM
// alone runs at the network port's 64 B/clk where the GPU's reads 116-126 (validation/data/
// h100_pace_probe_base.csv): not asserted. Out-of-step readers past 24 MiB (spread) are not asserted either:
// the model reads 2.3-7.3 times the GPU's DRAM bytes there (docs/chip.md, "One SM's pace, measured").
TEST(ProbeInFlight, TightReadersReadWhatTheH100Reads) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const MeasuredProbe& m : read_measured_probes(kSource + "validation/data/h100_tight_probe.csv")) {
    const bool spread_fits = m.shape.mode == traces::ProbeMode::Spread && m.shape.bytes <= (16u << 20);
    if (m.shape.mode == traces::ProbeMode::Spread && !spread_fits) continue;
    ASSERT_EQ(m.shape.in_flight, 4) << "line " << m.line;
    const isa::Program p = traces::stream_program([&] { return traces::l2_probe(m.shape); });
    machine.load(p, false, true);
    machine.run();
    const ChipSummary s = summarize_chip(*machine.chip(), p, machine.clock_ghz());
    const std::string row = "line " + std::to_string(m.line);
    EXPECT_NEAR(static_cast<double>(total(s.dram_read)) / m.dram_read, 1.0, 0.03) << row;
    if (m.shape.mode == traces::ProbeMode::Private) {
      ASSERT_TRUE(m.time_ns.has_value());
      EXPECT_NEAR(s.seconds * 1e9 / *m.time_ns, 1.0, 0.10) << row;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 7);
}

// Readers that sleep between chunks (validation/tight_probe.cu's SLEEP_NS) are not simulated: a measured file
// with such rows is refused at the first of them, not run as unslept readers.
TEST(ProbeInFlight, SleepingReadersAreRefusedNotRunAsUnslept) {
  try {
    read_measured_probes(kSource + "validation/data/h100_tight_probe_sleep.csv");
    FAIL() << "the sleeping rows were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h100_tight_probe_sleep.csv:3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sleep_ns"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnsim
