// The L2 probe (traces/l2_probe.h) on the whole H100 against the same probe measured on an H100
// (validation/l2_probe.cu, validation/data/h100_l2_probe.csv): the capacity that one SM's data, every SM's
// data and private data see, and the thrashing past it. These rows are what identified the L2's
// partition behaviour (far_data: copy) and its LRU replacement.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "traces/l2_probe.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

const std::string kSource = std::string(ATTNSIM_SOURCE_DIR) + "/";

struct ProbeRow {
  traces::ProbeShape shape;
  double dram_read = 0;
};

std::vector<ProbeRow> measured_rows() {
  std::ifstream in(kSource + "validation/data/h100_l2_probe.csv");
  std::string line;
  std::getline(in, line);  // header: mode,bytes,passes,blocks,dram_read_bytes,...
  std::vector<ProbeRow> rows;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string mode, bytes, passes, blocks, dram;
    std::getline(cells, mode, ','), std::getline(cells, bytes, ','), std::getline(cells, passes, ',');
    std::getline(cells, blocks, ','), std::getline(cells, dram, ',');
    ProbeRow r;
    r.shape.mode = *traces::find_probe_mode(mode);
    r.shape.bytes = std::stoull(bytes);
    r.shape.passes = std::stoll(passes);
    r.shape.blocks = std::stoll(blocks);
    r.dram_read = std::stod(dram);
    rows.push_back(r);
  }
  return rows;
}

double simulated_dram_read(Machine& machine, const traces::ProbeShape& shape) {
  const isa::Program p = traces::stream_program([&] { return traces::l2_probe(shape); });
  machine.load(p, false, true);
  machine.run();
  return static_cast<double>(total(summarize_chip(*machine.chip(), p, machine.clock_ghz()).dram_read));
}

// Single, private and in-step shared readers with one block per SM: within 10% of the measured DRAM reads,
// except private data at 32 and 40 MiB (simulated 1.22x and 1.35x: the GPU keeps more of it than two
// partitions of copies and LRU allow; docs/chip.md). Out-of-step readers (spread) and two blocks per SM are
// not asserted: the GPU's co-resident blocks drift apart, which the model does not yet do.
TEST(L2Probe, MatchesTheH100Measurements) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  const auto rows = measured_rows();
  ASSERT_GE(rows.size(), 30u);
  int compared = 0;
  for (const ProbeRow& r : rows) {
    const bool known_miss = r.shape.mode == traces::ProbeMode::Private &&
                            (r.shape.bytes == 32u << 20 || r.shape.bytes == 40u << 20);
    if (r.shape.mode == traces::ProbeMode::Spread || r.shape.blocks > 132 || known_miss) continue;
    const double predicted = simulated_dram_read(machine, r.shape);
    EXPECT_NEAR(predicted / r.dram_read, 1.0, 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB x" << r.shape.passes
        << ", " << r.shape.blocks << " blocks: simulated " << predicted << ", measured " << r.dram_read;
    ++compared;
  }
  EXPECT_EQ(compared, 25);
}

}  // namespace
}  // namespace attnsim
