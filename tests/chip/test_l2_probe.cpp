// The L2 probe (traces/l2_probe.h) on the whole H100 against the same probe measured on an H100
// (validation/l2_probe.cu, validation/data/h100_l2_probe.csv): the capacity that one SM's data, every SM's
// data and private data see, and the thrashing past it. These rows are what identified the L2's
// partition behaviour (far_data: copy) and its LRU replacement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "isa/diagnostics.h"
#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/probe_compare.h"
#include "traces/builder.h"
#include "traces/l2_probe.h"
#include "traces/stream.h"

namespace attnsim {
namespace {

const std::string kSource = std::string(ATTNSIM_SOURCE_DIR) + "/";

struct ProbeRow {
  traces::ProbeShape shape;
  double dram_read = 0, dram_written = 0;
  double lookup_misses = 0, fabric = 0;  // lts_tex_miss_sectors, lts_fabric_sectors where the file has them
};

// The file's rows as sim/probe_compare.h reads them (attnsim probe --measured); counters it lacks are 0.
std::vector<ProbeRow> measured_rows(const std::string& file) {
  std::vector<ProbeRow> rows;
  for (const MeasuredProbe& m : read_measured_probes(kSource + "validation/data/" + file))
    rows.push_back({m.shape, m.dram_read, m.dram_written, m.lookup_misses.value_or(0), m.fabric.value_or(0)});
  return rows;
}

std::string measured_core_partitions();

ChipSummary simulate(Machine& machine, const traces::ProbeShape& shape) {
  const isa::Program p = traces::stream_program([&] { return traces::l2_probe(shape); });
  machine.load(p, false, true);
  machine.run();
  return summarize_chip(*machine.chip(), p, machine.clock_ghz());
}

// Single, private and in-step shared readers with one block per SM: within 10% of the measured DRAM reads,
// except private data at 32 and 40 MiB (simulated 1.22x and 1.35x: the GPU keeps more of it than two
// partitions of copies and LRU allow; docs/chip.md), 24 MiB read from the allocation's start (single 1.19,
// shared 1.38 of the footprint: a pair of its pages shares sets there, as TheH100ReadsABufferOnceFromAnyStart
// shows; the model reads it once) and every SM at 28 MiB, just past a partition's 25 MiB (simulated 1.107x:
// 86.0 MB against 77.6; one SM there 1.08x; the GPU's misses rise less steeply past capacity than LRU over
// paired sets). Out-of-step readers (spread) and two blocks per SM are not asserted: the GPU's co-resident
// blocks drift apart, which the model does not yet do.
bool past_a_partition(const ProbeRow& r) {
  return r.shape.mode == traces::ProbeMode::Shared && r.shape.blocks == 132 && r.shape.bytes == (28u << 20);
}

bool colliding_start(const ProbeRow& r) {
  return r.shape.bytes == (24u << 20) && r.shape.passes == 3 &&
         (r.shape.mode == traces::ProbeMode::Single || r.shape.mode == traces::ProbeMode::Shared);
}

TEST(L2Probe, MatchesTheH100Measurements) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  const auto rows = measured_rows("h100_l2_probe.csv");
  ASSERT_GE(rows.size(), 30u);
  int compared = 0;
  for (const ProbeRow& r : rows) {
    const bool known_miss = r.shape.mode == traces::ProbeMode::Private &&
                            (r.shape.bytes == 32u << 20 || r.shape.bytes == 40u << 20);
    if (r.shape.mode == traces::ProbeMode::Spread || r.shape.blocks > 132 || known_miss || colliding_start(r))
      continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_NEAR(predicted / r.dram_read, past_a_partition(r) ? 1.107 : 1.0, past_a_partition(r) ? 0.02 : 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB x" << r.shape.passes
        << ", " << r.shape.blocks << " blocks: simulated " << predicted << ", measured " << r.dram_read;
    ++compared;
  }
  EXPECT_EQ(compared, 23);
}

// Stores: one block or every block storing its own slice leaves the same ~22.6 MB dirty in L2, the rest
// reaches DRAM while the kernel runs (l2.max_dirty_ways). Rows that write under 8 MB to DRAM are skipped
// (nothing to compare). Also the shared probe at two blocks per SM (264 blocks, one wave).
TEST(L2Probe, StoresAndTwoBlocksPerSmMatchTheH100Measurements) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_extra.csv")) {
    const bool stores =
        r.shape.mode == traces::ProbeMode::WritePrivate || r.shape.mode == traces::ProbeMode::WriteSingle;
    if (stores && r.dram_written < 8e6) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const double predicted = static_cast<double>(stores ? total(s.dram_written) : total(s.dram_read));
    const double measured = stores ? r.dram_written : r.dram_read;
    EXPECT_NEAR(predicted / measured, 1.0, 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB, " << r.shape.blocks
        << " blocks: simulated " << predicted << ", measured " << measured;
    ++compared;
  }
  EXPECT_EQ(compared, 12);
}

// Many waves of readers (validation/data/h100_l2_probe_waves.csv, 2 blocks per SM as the probe's 1,024
// threads allow): 32 MiB read once by 264 to 1,056 blocks in step costs one DRAM read of the buffer per wave
// of 264 on the GPU (what LRU over copies in both partitions leaves of a 32 MiB stream); out-of-step readers
// (spread, 528 blocks) fetch it 2.4 times. Shared within 2%, spread within 20% (simulated 1.18x). The
// 2,112-block rows, measured too (8 waves: 268.6 MB and 292.0 MB; simulated 268.4 MB and 301.8 MB), take a
// minute to simulate and are left to `attnsim probe ... -p chip.blocks_per_core=2`.
TEST(L2Probe, ManyWavesOfReadersMatchTheH100Measurements) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {"chip.blocks_per_core=2"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_waves.csv")) {
    if (r.shape.blocks > 1056) continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    const bool spread = r.shape.mode == traces::ProbeMode::Spread;
    EXPECT_NEAR(predicted / r.dram_read, 1.0, spread ? 0.20 : 0.02)
        << traces::probe_mode_name(r.shape.mode) << ", " << r.shape.blocks << " blocks: simulated "
        << predicted << ", measured " << r.dram_read;
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// One SM reading 128-byte lines scattered over 8 times their footprint (validation/l2_probe.cu, mode
// scatter): the sets they fall in are as good as random, so past about 12 MiB some sets overflow before the
// partition is full, and how many depends on the associativity (a contiguous buffer fills the sets evenly:
// the single rows at 12, 18 and 22 MiB beside them read it once). Measured 1.06 to 2.20 times the footprint
// from 16 to 40 MiB; 16 ways with copies in both partitions predict each within 3% (0.994-1.027; with
// -p l2.ways=8 the 16 and 20 MiB rows come out at 1.08, with 32 ways at 0.96 and 0.93: docs/chip.md). The
// single rows within 10% as in MatchesTheH100Measurements (22 MiB: 1.05). One block: the quantum only sets
// how often the idle cores are visited, so a long one changes no byte (checked at 8 and 40 MiB) and saves
// the suite a minute.
TEST(L2Probe, ScatteredLinesShowSixteenWays) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {"chip.quantum_cycles=100000"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_scatter.csv")) {
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    const bool scatter = r.shape.mode == traces::ProbeMode::Scatter;
    EXPECT_NEAR(predicted / r.dram_read, 1.0, scatter ? 0.04 : 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB: simulated "
        << predicted << ", measured " << r.dram_read;
    ++compared;
  }
  EXPECT_EQ(compared, 13);
}

// The H200 (60 MiB of L2, the same design): the probe measured there, against configs/h200.yaml, whose L2
// rules came from the H100 rows and whose set index from the H200's own eviction sets (paired regions).
// One SM's buffer and stores within 10%, except one SM reading or storing 32 MiB, just past a partition's
// capacity: there the GPU's misses rise more steeply than the model's (reads 1.744 of the footprint,
// simulated 1.562; stores 0.204, simulated 0.180), held in bands around today's figures. With the hashed
// index the rows at 28 and 64 MiB were the misses instead (1.15x and 0.89x).
TEST(L2Probe, TheH200RowsFollowFromTheSameRules) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  auto rows = measured_rows("h200_l2_probe.csv");
  for (const ProbeRow& r : measured_rows("h200_l2_probe_extra.csv")) rows.push_back(r);
  for (const ProbeRow& r : rows) {
    const bool stores =
        r.shape.mode == traces::ProbeMode::WritePrivate || r.shape.mode == traces::ProbeMode::WriteSingle;
    const bool one_sm =
        r.shape.mode == traces::ProbeMode::Single || r.shape.mode == traces::ProbeMode::WriteSingle;
    if ((r.shape.mode != traces::ProbeMode::Single && !stores) || (stores && r.dram_written < 5e6)) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const double predicted = static_cast<double>(stores ? total(s.dram_written) : total(s.dram_read));
    const double measured = stores ? r.dram_written : r.dram_read;
    const bool past_capacity = one_sm && r.shape.bytes == 32u << 20;
    EXPECT_NEAR(predicted / measured, past_capacity ? (stores ? 0.88 : 0.90) : 1.0,
                past_capacity ? 0.03 : 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB: simulated "
        << predicted << ", measured " << measured;
    ++compared;
  }
  EXPECT_EQ(compared, 19);
}

// Every SM reading the whole buffer from its start (shared) or its own 1/132 of it (private) on the H200:
// within 10% with the H200's set index, except shared at 32 MiB, just past a partition's capacity, where the
// SMs out of step thrash more on the GPU (2.478 of the footprint, simulated 2.125), held in a band. The
// hashed index missed shared at 28 MiB (1.32x) and private at 40 and 48 MiB (1.15x, 0.79x). Spread (block b
// starts at b/132 of the buffer) is left out, as on the H100: far past capacity the model thrashes far
// more. So are three blocks per SM (396 blocks at 32 and 48 MiB: the GPU reads 4.3 and 6.0 times the
// buffer, the model 2.1 and 3.0 with either index).
TEST(L2Probe, EverySmOfTheH200ReadsAsMeasured) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe.csv")) {
    const bool every_sm =
        r.shape.mode == traces::ProbeMode::Shared || r.shape.mode == traces::ProbeMode::Private;
    if (!every_sm || r.shape.blocks > 132) continue;
    const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
    const bool past_capacity = r.shape.mode == traces::ProbeMode::Shared && r.shape.bytes == 32u << 20;
    EXPECT_NEAR(ratio, past_capacity ? 0.86 : 1.0, past_capacity ? 0.03 : 0.10)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 17);
}

// What a hit protects (validation/data/h200_l2_probe_retouch.csv, SET=retouch on an H200): one SM reads
// part 0 again between new parts, 8 rounds, parts of 2 to 16 MiB. The GPU reads each part once up to 12
// MiB (10.005-10.024 parts' worth), then 10.79 at 14 and 12.93 at 16: a hit makes the line the most
// recent, as LRU does. Pseudo-LRU and FIFO lose part 0 well before (next test).
double retouch_reads_over_part(Machine& machine, const ProbeRow& r) {
  return static_cast<double>(total(simulate(machine, r.shape).dram_read)) /
         static_cast<double>(r.shape.bytes);
}

TEST(L2Probe, ARetouchedPartStaysAsUnderLru) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_retouch.csv")) {
    if (r.shape.mode != traces::ProbeMode::Retouch) continue;
    const double measured = r.dram_read / static_cast<double>(r.shape.bytes);
    EXPECT_NEAR(retouch_reads_over_part(machine, r) / measured, 1.0, 0.03)
        << (r.shape.bytes >> 20) << " MiB x " << r.shape.passes << ": measured " << measured << " parts";
    ++compared;
  }
  EXPECT_EQ(compared, 16);
}

// A part read 1 to 8 times and then never again goes first when a new buffer needs room
// (h200_l2_probe_stale.csv, SET=stale; hot parts of 8 to 24 MiB, buffers of 8 to 24 MiB read twice or three
// times, 32 MiB in all, past one SM's 28-30 MiB): the GPU reads the part and the buffer once each (1.002 of
// their sum on all 17 rows, one SM or every SM in step), as LRU does. A policy that protects lines by their
// past hits (RRIP's kind) would keep the dead part and let the buffer's second pass miss; the memory-
// efficient backward's waves, each leaving a wave of much-read lines behind, asked for this probe.
TEST(L2Probe, ADeadHotPartGoesFirstAsUnderLru) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_stale.csv")) {
    if (r.shape.mode != traces::ProbeMode::Stale) continue;
    const double once = static_cast<double>(r.shape.hot_bytes + r.shape.bytes);
    EXPECT_NEAR(r.dram_read / once, 1.0, 0.005) << "measured, hot " << (r.shape.hot_bytes >> 20) << " MiB";
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_NEAR(predicted / r.dram_read, 1.0, 0.01)
        << "hot " << (r.shape.hot_bytes >> 20) << " MiB x " << r.shape.hot_passes << ", then "
        << (r.shape.bytes >> 20) << " MiB x " << r.shape.passes << ", " << r.shape.blocks << " blocks";
    ++compared;
  }
  EXPECT_EQ(compared, 17);
}

// One SM reads a 12 MiB part, stores W MiB after it, reads the part again (h200_l2_probe_between.csv,
// SET=between). Were stores kept at their home partition only, the writer's partition would hold the part
// beside W/2 and keep it to W = 32 MiB; the GPU loses the part's lines homed there (half of it from DRAM
// again) from W = 20-24 MiB on, exactly where its loaded twin (rbetween) loses them: a store of a line homed
// in the other partition takes room in the writer's partition as a read's copy does (l2.store_copies).
// Within 2% from W = 24 to 40 MiB; at the knee (20) and past it (48) within 12%.
TEST(L2Probe, StoresTakeRoomInTheWritersPartitionAsLoadsDo) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_between.csv")) {
    if (r.shape.blocks != 1) continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    const bool knee = r.shape.bytes == (20u << 20) || r.shape.bytes == (48u << 20);
    EXPECT_NEAR(predicted / r.dram_read, 1.0, knee ? 0.12 : 0.025)
        << traces::probe_mode_name(r.shape.mode) << " " << (r.shape.bytes >> 20) << " MiB x "
        << r.shape.passes;
    ++compared;
  }
  EXPECT_EQ(compared, 15);
}

// The same rows with stores at home only: from W = 24 to 32 MiB the part stays whole and the model reads
// 0.66 of the measured bytes.
TEST(L2Probe, StoresAtHomeOnlyKeepThePartTheGpuLoses) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"l2.store_copies=false"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_between.csv")) {
    const bool middle = r.shape.bytes >= (24u << 20) && r.shape.bytes <= (32u << 20);
    if (r.shape.blocks != 1 || r.shape.mode != traces::ProbeMode::WriteBetween || !middle) continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_LT(predicted / r.dram_read, 0.70) << (r.shape.bytes >> 20) << " MiB x " << r.shape.passes;
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// The H100's own SET=between rows (h100_l2_probe_between.csv, 2026-12-06): one SM's stores of lines homed in
// the other partition take room in its own partition as on the H200. With l2.store_copies every one-SM row
// comes within 3.5% (the knee, W = 16 MiB, 1.034).
TEST(L2Probe, TheH100CopiesStoresAsTheH200Does) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {"l2.store_copies=true"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_between.csv")) {
    if (r.shape.blocks != 1) continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_NEAR(predicted / r.dram_read, 1.0, 0.04) << traces::probe_mode_name(r.shape.mode) << " "
                                                    << (r.shape.bytes >> 20) << " MiB x " << r.shape.passes;
    ++compared;
  }
  EXPECT_EQ(compared, 15);
}

// The H100 preset keeps stores at home (store_copies: false) because the kernel rows read closer so (DRAM
// read NRMSE 0.163 against 0.356 with copies; docs/chip.md, "Three H100 measurements"): it keeps
// the part the GPU loses, 0.66-0.70 of the measured bytes from W = 16 to 24 MiB. This test holds that
// contradiction in view; a preset that resolves it changes it.
TEST(L2Probe, TheH100PresetKeepsThePartTheGpuLoses) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_between.csv")) {
    const bool middle = r.shape.bytes >= (16u << 20) && r.shape.bytes <= (24u << 20);
    if (r.shape.blocks != 1 || r.shape.mode != traces::ProbeMode::WriteBetween || !middle) continue;
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_LT(predicted / r.dram_read, 0.70) << (r.shape.bytes >> 20) << " MiB x " << r.shape.passes;
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

// Every SM storing the same 16 MiB after the part (132 blocks): with copies kept as stores leave them the
// model loses the whole part (1.40 of the measured); dropping the other partitions' copies at a store
// (l2.copies_on_store=writer_keeps, what the H200's coherence probe found) reads 0.81 (0.84 with one DRAM
// calendar before the preset's calendar per channel). One machine a
// process (SystemC), so two tests.
double many_h100_writers_over_measured(const std::string& copies_on_store) {
  Machine machine(load_config(kSource + "configs/h100.yaml",
                              {"l2.store_copies=true", "l2.copies_on_store=" + copies_on_store}));
  for (const ProbeRow& r : measured_rows("h100_l2_probe_between.csv"))
    if (r.shape.blocks == 132 && r.shape.bytes == (16u << 20))
      return static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
  ADD_FAILURE() << "no 132-block row at 16 MiB";
  return 0;
}

TEST(L2Probe, ManyH100WritersWithKeptCopiesLoseThePart) {
  EXPECT_GT(many_h100_writers_over_measured("keep"), 1.3);
}

TEST(L2Probe, ManyH100WritersDroppingEachOthersCopiesKeepMoreOfIt) {
  EXPECT_NEAR(many_h100_writers_over_measured("writer_keeps"), 0.81, 0.03);
}

// The same rows under other replacements: at parts of 8 to 12 MiB, where the GPU reads within 1.3% of
// each part once, tree pseudo-LRU reads 1.3-2.9% more than it and FIFO 15-27% more.
void expect_retouched_part_lost(const std::string& replacement) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"l2.replacement=" + replacement}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_retouch.csv")) {
    const bool middle = r.shape.bytes >= 8u << 20 && r.shape.bytes <= 12u << 20 && r.shape.passes == 8;
    if (r.shape.mode != traces::ProbeMode::Retouch || !middle) continue;
    const double measured = r.dram_read / static_cast<double>(r.shape.bytes);
    EXPECT_GT(retouch_reads_over_part(machine, r) / measured, 1.01)
        << replacement << " " << (r.shape.bytes >> 20) << " MiB: measured " << measured << " parts";
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

TEST(L2Probe, PseudoLruLosesTheRetouchedPart) {
  expect_retouched_part_lost("plru");
}

TEST(L2Probe, FifoLosesTheRetouchedPart) {
  expect_retouched_part_lost("fifo");
}

// Dirty footprints (validation/data/h100_l2_probe_dirty.csv, SET=dirty): rewriting a footprint that fits,
// whether one SM rewrites it, every SM its own slice, or every SM by load, add and store, costs its
// compulsory reads and next to no DRAM writes (under 1 MB up to 16 MiB, GPU and model); reads of every
// rewrite row within 5% but the private read-modify-write at 32 MiB (simulated 1.19: the GPU keeps more,
// as with private reads at 32 and 40 MiB above).
TEST(L2Probe, RewrittenFootprintsCostTheirReadsOnce) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_dirty.csv")) {
    const auto mode = r.shape.mode;
    if (mode == traces::ProbeMode::WriteThenRead || mode == traces::ProbeMode::ReadThenRead) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const std::string row = std::string(traces::probe_mode_name(mode)) + " " +
                            std::to_string(r.shape.bytes >> 20) + " MiB, " + std::to_string(r.shape.blocks) +
                            " blocks";
    const bool reads = mode == traces::ProbeMode::Rmw || mode == traces::ProbeMode::RmwSpread;
    if (reads && r.shape.bytes < (32u << 20)) {
      EXPECT_NEAR(static_cast<double>(total(s.dram_read)) / r.dram_read, 1.0, 0.05) << row;
    }
    if (r.shape.bytes <= (16u << 20) && mode != traces::ProbeMode::RmwSpread) {
      EXPECT_LT(r.dram_written, 1e6) << row;
      EXPECT_LT(static_cast<double>(total(s.dram_written)), 1e6) << row;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 21);
}

// Every SM rewriting a buffer in turn, with plain loads and stores and no synchronisation (rmwspread, 1-16
// MiB, one and three passes): predicted / measured fabric sectors and read lookup misses per row under a rule
// for the copies a store finds.
struct CounterRatios {
  std::string row;
  double fabric = 0, lookup_misses = 0;
};

std::vector<CounterRatios> rewritten_buffer_ratios(const std::string& rule,
                                                   const std::string& core_partitions = "") {
  std::vector<std::string> overrides = {"l2.copies_on_store=" + rule};
  if (!core_partitions.empty()) overrides.push_back("l2.core_partitions=" + core_partitions);
  Machine machine(load_config(kSource + "configs/h100.yaml", overrides));
  std::vector<CounterRatios> out;
  for (const char* file : {"h100_l2_probe_dirty.csv", "h100_l2_probe_dirty2.csv"})
    for (const ProbeRow& r : measured_rows(file)) {
      if (r.shape.mode != traces::ProbeMode::RmwSpread) continue;
      const ChipSummary s = simulate(machine, r.shape);
      out.push_back(
          {rule + " " + std::to_string(r.shape.bytes >> 20) + " MiB x " + std::to_string(r.shape.passes),
           static_cast<double>(s.l2_fabric_sectors) / r.fabric,
           static_cast<double>(s.l2_lookup_read_miss_sectors) / r.lookup_misses});
    }
  return out;
}

// Every row's predicted / measured fabric sectors inside (fabric_low, fabric_high) and read lookup misses
// inside (misses_low, misses_high) under `rule`.
void expect_rewritten_buffer_between(const std::string& rule, double fabric_low, double fabric_high,
                                     double misses_low, double misses_high,
                                     const std::string& core_partitions = "") {
  const auto rows = rewritten_buffer_ratios(rule, core_partitions);
  EXPECT_EQ(rows.size(), 8u);
  for (const CounterRatios& r : rows) {
    EXPECT_GT(r.fabric, fabric_low) << r.row;
    EXPECT_LT(r.fabric, fabric_high) << r.row;
    EXPECT_GT(r.lookup_misses, misses_low) << r.row;
    EXPECT_LT(r.lookup_misses, misses_high) << r.row;
  }
}

constexpr double kUnbounded = 1e9;

// The GPU's partition counters lie between a store leaving the other partition's copy as it is (the
// preset's l2.copies_on_store: keep: fabric 0.79-0.91 of the measured sectors, lookup misses 0.04-0.27) and
// a store by the home side dropping it (writer_keeps, the next test: fabric 1.16-1.38, lookup misses
// 2.4-6.0). docs/chip.md, "Atomics and the copies a store finds".
TEST(L2Probe, RewrittenBufferCrossesAsIfCopiesWereKept) {
  expect_rewritten_buffer_between("keep", 0.75, 0.95, 0.0, 0.3);
}

TEST(L2Probe, RewrittenBufferCrossesLessThanIfTheHomeSideDroppedCopies) {
  expect_rewritten_buffer_between("writer_keeps", 1.1, kUnbounded, 2.0, kUnbounded);
}

// Lines written and then passed by a stream of reads (wthenread) are read again from L2 far more than lines
// read (rthenread): from 40 to 64 MiB (a quarter written, three quarters streamed once) the GPU reads
// 14-67% of the written quarter again and 74-100% of the read one. A dirty victim last written by a core of
// the other partition, written back and kept (the preset's l2.dirty_second_chance: far_writes), gives the
// written rows 1.00-1.04 of the measured DRAM reads, the read rows 0.97-1.00; the written rows' DRAM writes
// (the written quarter, cleaned while the stream passes) within 10% from 48 MiB.
TEST(L2Probe, WrittenLinesOutlastAStreamOfReads) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_dirty.csv")) {
    const bool written = r.shape.mode == traces::ProbeMode::WriteThenRead;
    if (!written && r.shape.mode != traces::ProbeMode::ReadThenRead) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const std::string row = std::string(traces::probe_mode_name(r.shape.mode)) + " " +
                            std::to_string(r.shape.bytes >> 20) + " MiB";
    const double ratio = static_cast<double>(total(s.dram_read)) / r.dram_read;
    EXPECT_NEAR(ratio, 1.0, written ? 0.06 : 0.035) << row;
    if (written && r.shape.bytes >= (48u << 20)) {
      EXPECT_NEAR(static_cast<double>(total(s.dram_written)) / r.dram_written, 1.0, 0.10) << row;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 12);
}

// The same written rows under LRU alone (dirty victims evicted like clean ones): the written quarter is lost
// as the read one is, 1.08-1.16 of the measured DRAM reads from 40 to 64 MiB. The mechanism matters.
TEST(L2Probe, LruAloneLosesTheWrittenLines) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {"l2.dirty_second_chance=none"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_dirty.csv")) {
    if (r.shape.mode != traces::ProbeMode::WriteThenRead || r.shape.bytes < (40u << 20)) continue;
    const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
    EXPECT_GT(ratio, 1.06) << (r.shape.bytes >> 20) << " MiB";
    EXPECT_LT(ratio, 1.20) << (r.shape.bytes >> 20) << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// The follow-ups (SET=dirty2, dirty3): a stream read twice past the written quarter (132 SMs), the same
// from 1, 2, 8, 33 and 66 SMs. The far-writes rule holds every written row within 8% (0.93-1.04), where a
// second chance for every dirty victim gave 1, 2 and 8 SMs 0.86-0.87 at 32-48 MiB (the GPU keeps nothing
// there: LRU is exact) and LRU alone 1.06-1.16 from 33 SMs on. The read rows at 2 and 8 blocks are the known
// miss (1.10-1.11): the GPU puts its first eight blocks on SMs 124-131 (%smid, h100_l2_probe_times_*), all
// attached to one partition, so the other keeps its home half of the data; the model spreads blocks over both
// partitions. The read row at 48 MiB streamed twice by every SM reads 1.05 of the measured (1.09 with the
// hashed set index, whose uneven sets thrash more of the stream).
TEST(L2Probe, OnlyFarWrittenLinesOutlastTheStream) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const char* file : {"h100_l2_probe_dirty2.csv", "h100_l2_probe_dirty3.csv"})
    for (const ProbeRow& r : measured_rows(file)) {
      const bool written = r.shape.mode == traces::ProbeMode::WriteThenRead;
      if (!written && r.shape.mode != traces::ProbeMode::ReadThenRead) continue;
      const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
      const std::string row = std::string(file) + " " + std::string(traces::probe_mode_name(r.shape.mode)) +
                              " " + std::to_string(r.shape.bytes >> 20) + " MiB x" +
                              std::to_string(r.shape.passes) + " " + std::to_string(r.shape.blocks) +
                              " blocks";
      if (!written && (r.shape.blocks == 2 || r.shape.blocks == 8))
        EXPECT_NEAR(ratio, 1.105, 0.03) << row;
      else
        EXPECT_NEAR(ratio, 1.0, 0.08) << row;
      ++compared;
    }
  EXPECT_EQ(compared, 30);
}

// Every SM rewriting one buffer in turn (rmwspread), the same buffer only read out of step (spread) and each
// SM rewriting its own slice (rmw), once each, 12 to 48 MiB (h100_l2_probe_rmwcap.csv, SET=rmwcap,
// 2026-12-06). Held: what the model meets. While the rewritten buffer and its copies fit (12-24 MiB) its
// reads are its footprint on both, within 1%, and its fabric sectors 0.88-0.95 of the measured (the copies
// kept at a store, as RewrittenBufferCrossesAsIfCopiesWereKept); the buffer only read, to 20 MiB, within 1%;
// each SM's own slice: reads within 2% from 20 to 40 MiB, and from 28 MiB the writes past the L2's dirty
// share within 10%. Not held (docs/validation.md, "Every SM rewriting one buffer"): past 24 MiB the GPU keeps
// the buffer every SM rewrites (28 MiB: 33.0 MB of reads against the model's 295) and the one every SM reads
// (48.7 against 156), and at 20 MiB it already writes 60.4 MB back where the model's per-set limit writes
// 0.4.
TEST(L2Probe, EverySmRewritingOneBufferReadsItOnceWhileItFits) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_rmwcap.csv")) {
    const auto mode = r.shape.mode;
    const uint64_t mib = r.shape.bytes >> 20;
    const bool rewritten_fits = mode == traces::ProbeMode::RmwSpread && r.shape.passes == 1 && mib <= 24;
    const bool read_fits = mode == traces::ProbeMode::Spread && mib <= 20;
    const bool own_slices = mode == traces::ProbeMode::Rmw;
    if (!rewritten_fits && !read_fits && !own_slices) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const std::string row = std::string(traces::probe_mode_name(mode)) + " " + std::to_string(mib) + " MiB";
    const double reads = static_cast<double>(total(s.dram_read)) / r.dram_read;
    EXPECT_NEAR(reads, 1.0, own_slices ? 0.02 : 0.01) << row;
    if (rewritten_fits) {
      const double fabric = static_cast<double>(s.l2_fabric_sectors) / r.fabric;
      EXPECT_GT(fabric, 0.88) << row;
      EXPECT_LT(fabric, 0.95) << row;
    }
    if (own_slices && mib >= 28) {
      EXPECT_NEAR(static_cast<double>(total(s.dram_written)) / r.dram_written, 1.0, 0.1) << row;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 12);
}

// Groups of SMs (1, 4 or 12 of 132), each reading the first half of its part of a buffer and rewriting the
// second half, every SM of a group out of step (rmwhalf: the memory-efficient backward's Q_i and dO_i read
// and its dQ workspace rewritten by every block of a head), once at 16 to 48 MiB in all
// (h100_l2_probe_rmwhalf.csv, SET=rmwhalf) and three times at 20 to 26 MiB (h100_l2_probe_rmwknee.csv,
// SET=rmwknee; 2026-12-06). Held: what the model meets. While the buffer and its copies fit (to 24 MiB once,
// to 22 MiB three times) its reads are its footprint, within 1% (the GPU's one-group 24 MiB row 3.5% more),
// and its fabric sectors 0.84-1.04 of the measured. Not held (docs/validation.md, "Half read, half
// rewritten"): from 26 MiB the model reads 1.5-4.5 times the GPU's bytes, as on the buffer every SM only
// reads (spread); at 24 MiB three times, one group reads 1.33 of the footprint from the allocation's start
// on the GPU (its page pair sharing sets) and once from 1 MiB in, the model the reverse (its regions'
// pieces); and the model takes 1.3-2.1 times the GPU's time.
TEST(L2Probe, HalfReadHalfRewrittenReadsItsFootprintWhileItFits) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const char* file : {"h100_l2_probe_rmwhalf.csv", "h100_l2_probe_rmwknee.csv"})
    for (const ProbeRow& r : measured_rows(file)) {
      const uint64_t mib = r.shape.bytes >> 20;
      if (r.shape.mode != traces::ProbeMode::RmwHalf || mib > (r.shape.passes == 1 ? 24u : 22u)) continue;
      const ChipSummary s = simulate(machine, r.shape);
      const std::string row = std::to_string(mib) + " MiB x" + std::to_string(r.shape.passes) + ", " +
                              std::to_string(r.shape.groups) + " groups";
      const double reads = static_cast<double>(total(s.dram_read)) / r.dram_read;
      EXPECT_NEAR(reads, 1.0, mib == 24 && r.shape.groups == 1 ? 0.04 : 0.01) << row;
      const double fabric = static_cast<double>(s.l2_fabric_sectors) / r.fabric;
      EXPECT_GT(fabric, 0.83) << row;
      EXPECT_LT(fabric, 1.05) << row;
      ++compared;
    }
  EXPECT_EQ(compared, 13);
}

std::string fenced_row_name(const ProbeRow& r) {
  return std::string(traces::probe_mode_name(r.shape.mode)) + " " + std::to_string(r.shape.bytes >> 20) +
         " MiB, " + std::to_string(r.shape.groups) + " groups";
}

// Every fence crosses the fabric on its own (h100_l2_probe_fencerate.csv, SET=fencerate, 2026-12-07): one
// SM reading 16 MiB three times with a fence every 1, 2, 4, 8, 16 or 64 chunks, and 2, 8, 33 or 132 SMs
// reading it once in step with a fence after every chunk, cross exactly 160 fabric sectors a fence more
// than without fences (the same with cp.async and weak loads: h100_l2_probe_fenceasync.csv), and read DRAM
// as without. So no copy is checked: configs/h100.yaml's fence_fabric_sectors counts them and moves no
// line. Held: fabric 0.9-1.05 of the measured on the one-SM rows (the unfenced `single` 0.92) and on 33 and
// 132 SMs in step (0.996, 0.999), DRAM reads within 2%. Left out: 2 and 8 SMs in step, whose unfenced
// crossings the model already takes 1.8 times the GPU's (`shared` rows of the same file; fences add exactly
// their 160 a fence to both), and rfenceother, whose GPU fencers fence in a timed loop, not once a chunk.
TEST(L2Probe, EveryFenceCrossesTheFabricOnItsOwn) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_fencerate.csv")) {
    if (r.shape.mode != traces::ProbeMode::ReadFence || (r.shape.blocks > 1 && r.shape.blocks < 33)) continue;
    const ChipSummary s = simulate(machine, r.shape);
    const std::string row = fenced_row_name(r) + " " + std::to_string(r.shape.blocks) +
                            " blocks, a fence every " + std::to_string(r.shape.fence_every);
    const double fabric = static_cast<double>(s.l2_fabric_sectors) / r.fabric;
    EXPECT_GT(fabric, 0.9) << row;
    EXPECT_LT(fabric, 1.05) << row;
    EXPECT_NEAR(static_cast<double>(total(s.dram_read)) / r.dram_read, 1.0, 0.02) << row;
    ++compared;
  }
  EXPECT_EQ(compared, 8);
}

// The request coalescer (l2.coalescer_entries, off in the presets): `--measured` reads the share of the SMs'
// read sectors the GPU's coalescer merged from the lrc counters (shared 32 MiB: 1 - 109,942,400 / 415,256,292
// = 0.7352), and the model merges none where the GPU merges none (one reader; readers of their own slices:
// 0.0% in h100_l2_probe_lrc.csv) but does merge in-step readers of one buffer (docs/chip.md, "The coalescer
// built, not in the presets": far more than the GPU, 98.5% against 29-32% at 8 MiB).
TEST(L2Probe, OnlyReadersOfTheSameLinesRideOnEachOthersRequests) {
  const std::vector<MeasuredProbe> rows =
      read_measured_probes(kSource + "validation/data/h100_l2_probe_lrc.csv");
  Machine machine(load_config(kSource + "configs/h100.yaml", {"l2.coalescer_entries=65536"}));
  int compared = 0;
  for (const MeasuredProbe& m : rows) {
    ASSERT_TRUE(m.coalesced_share.has_value());
    if (m.shape.mode == traces::ProbeMode::Shared && m.shape.bytes == (32u << 20)) {
      EXPECT_NEAR(*m.coalesced_share, 0.7352, 0.0001);
    }
    if (m.shape.bytes != (8u << 20) || m.shape.mode == traces::ProbeMode::Spread) continue;
    const ChipSummary s = simulate(machine, m.shape);
    const double read_sectors = static_cast<double>(total(s.sm_l2_read)) / 32;
    const double merged = static_cast<double>(s.l2_coalesced_read_sectors) / read_sectors;
    if (m.shape.mode == traces::ProbeMode::Shared) {
      EXPECT_GT(merged, 0.9);
    } else {
      EXPECT_LT(std::abs(*m.coalesced_share), 0.001) << traces::probe_mode_name(m.shape.mode);
      EXPECT_EQ(merged, 0.0) << traces::probe_mode_name(m.shape.mode);
    }
    ++compared;
  }
  EXPECT_EQ(compared, 3);
}

// Readers started STAGGER_NS apart (SET=lrcblocks) are not what the model runs: its blocks start together.
TEST(L2Probe, StaggeredReadersAreRefusedNotRunAsInStep) {
  try {
    read_measured_probes(kSource + "validation/data/h100_l2_probe_lrcblocks.csv");
    FAIL() << "the staggered rows were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h100_l2_probe_lrcblocks.csv:17:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stagger_ns"), std::string::npos) << e.what();
  }
}

// Out-of-step readers past the L2 (spread, 32 MiB x 3, 132 SMs; the GPU reads 140 MB from DRAM) over three
// quanta. One calendar over all DRAM channels serves every reader alike, so they stay evenly spaced until
// the quantum bunches them and the reads ride on the quantum (1,809 / 1,323 / 675 MB at 100 / 300 / 1,000
// cycles). A calendar per channel makes readers at different addresses queue apart: they form convoys at
// every quantum and the reads hold within a fifth (539 / 536 / 457 with hashed channels; docs/chip.md,
// "DRAM channels break the readers' step").
std::vector<double> spread_reads_over_quanta(const std::string& channels) {
  traces::ProbeShape shape;
  shape.mode = traces::ProbeMode::Spread;
  shape.bytes = 32u << 20;
  shape.passes = 3;
  shape.blocks = 132;
  Machine machine(load_config(kSource + "configs/h100.yaml", {"hbm.chip_channels=" + channels}));
  std::vector<double> reads;
  for (int64_t quantum : {100, 300, 1000}) {
    machine.chip()->set_quantum(quantum);
    reads.push_back(static_cast<double>(total(simulate(machine, shape).dram_read)) / 1e6);
  }
  return reads;
}

double max_over_min(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end());
}

TEST(L2Probe, OutOfStepReadersHoldOverTheQuantumWithADramCalendarPerChannel) {
  const std::vector<double> reads = spread_reads_over_quanta("hashed");
  EXPECT_LT(max_over_min(reads), 1.25) << reads[0] << " " << reads[1] << " " << reads[2] << " MB";
  // Still far from the GPU's 140 MB: convoys form, but fewer than on the GPU.
  for (double mb : reads) EXPECT_GT(mb, 2 * 140.1);
}

TEST(L2Probe, OutOfStepReadersRideOnTheQuantumWithOneDramCalendar) {
  const std::vector<double> reads = spread_reads_over_quanta("pooled");
  EXPECT_GT(max_over_min(reads), 2.0) << reads[0] << " " << reads[1] << " " << reads[2] << " MB";
}

// The SMs attached to SM 128's partition: the pairs whose two 20 MiB halves thrash in one partition, about
// 80 MiB of DRAM reads (on two partitions the H100 reads 120, the larger H200 42).
std::set<int> sms_sharing_128(const std::string& file) {
  std::set<int> with_128 = {128};
  std::ifstream pairs(kSource + "validation/data/" + file);
  std::string line;
  std::getline(pairs, line);  // mode,bytes,passes,blocks,dram_read_bytes,...
  while (std::getline(pairs, line)) {
    std::stringstream cells(line);
    std::string mode, bytes, passes, blocks, dram;
    std::getline(cells, mode, ','), std::getline(cells, bytes, ','), std::getline(cells, passes, ',');
    std::getline(cells, blocks, ','), std::getline(cells, dram, ',');
    if (std::abs(std::stod(dram) / (1 << 20) - 80.0) < 10.0)
      with_128.insert(std::stoi(mode.substr(mode.rfind(':') + 1)));
  }
  return with_128;
}

// Each core's partition as measured (SET=pair, h100_l2_probe_pair.csv: SM 128 and each other SM read 20 MiB
// of their own three times; 80 MiB of DRAM reads when both are attached to one partition, 120 when not),
// in the order the GPU hands the first wave's blocks to SMs (%smid, h100_l2_probe_times_*_132b.csv).
std::string measured_core_partitions() {
  const std::set<int> with_128 = sms_sharing_128("h100_l2_probe_pair.csv");
  std::string line;
  std::ifstream order(kSource + "validation/data/h100_l2_probe_times_shared_32MiB_x3_132b.csv");
  std::getline(order, line);  // block,sm,...
  std::string partitions;
  while (std::getline(order, line)) {
    const int sm = std::stoi(line.substr(line.find(',') + 1));
    partitions += with_128.count(sm) ? '0' : '1';
  }
  return partitions;
}

// Half the SMs on each partition, interleaved by TPC within every GPC: the first 8 SMs the GPU fills
// (124-131) share one. With that attachment (l2.core_partitions) the read rows at 2 and 8 blocks come to
// 1.00-1.02 of the measured (the other partition keeps its home half of the quarter) and all 42 thenread rows
// to 0.93-1.05. Not in the presets: FlashAttention-2's causal forward and the memory-efficient backward rows
// that miss move further out with it (docs/chip.md says more).
TEST(L2Probe, EightBlocksOnOnePartitionKeepTheOtherHalf) {
  const std::string partitions = measured_core_partitions();
  ASSERT_EQ(partitions.size(), 132u);
  EXPECT_EQ(std::count(partitions.begin(), partitions.end(), '0'), 66);
  EXPECT_EQ(partitions.substr(0, 8), "00000000");
  Machine machine(load_config(kSource + "configs/h100.yaml", {"l2.core_partitions=" + partitions}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_dirty3.csv")) {
    if (r.shape.mode != traces::ProbeMode::ReadThenRead || r.shape.blocks > 8) continue;
    const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
    EXPECT_NEAR(ratio, 1.0, 0.03) << (r.shape.bytes >> 20) << " MiB, " << r.shape.blocks << " blocks";
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// Lines a power-of-two stride apart spread over the sets (h200_l2_probe_copies.csv, SET=copies on an
// H200): 17 to 129 copies of 64 KiB at strides of 64 KiB to 512 MiB, three passes, are read from DRAM once
// on the GPU (1.000-1.006 of the footprint) and in the model: no address bit from 16 to 29 is left out of
// the set index (16 ways would overflow at 17 copies in one set group).
TEST(L2Probe, PowerOfTwoStridesSpreadOverTheSetsAsOnTheH200) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_copies.csv")) {
    const double footprint = static_cast<double>(r.shape.bytes * r.shape.copies);
    EXPECT_NEAR(r.dram_read / footprint, 1.0, 0.01) << "measured, " << r.shape.copies << " copies";
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    EXPECT_NEAR(predicted / r.dram_read, 1.0, 0.01)
        << r.shape.copies << " copies " << r.shape.stride_bytes << " B apart: simulated " << predicted;
    ++compared;
  }
  EXPECT_EQ(compared, 56);
}

// The heads probe reads the first bytes / (2 heads) of every head's K and V and nothing of Q and O; where
// it fits (2 heads, 24 MiB), the GPU reads it from DRAM once (h200_l2_probe_heads.csv: 1.004), and so does
// the model with the hashed set index, which fills any lines evenly (the preset's paired regions read 1.035:
// the windows' pieces of regions fill some sets first, as on the GPU at 28 MiB).
TEST(L2Probe, HeadsProbeReadsEveryHeadsWindowOfKAndV) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"l2.home=hashed", "l2.set_index=hashed"}));
  traces::ProbeShape shape;
  shape.mode = traces::ProbeMode::Heads;
  shape.heads = 2;
  shape.bytes = 24u << 20;
  const ChipSummary s = simulate(machine, shape);
  EXPECT_EQ(s.sm_l2_read.at("K"), 3u * 2u * (6u << 20));  // 3 passes over 2 heads' 6 MiB windows
  EXPECT_EQ(s.sm_l2_read.at("V"), 3u * 2u * (6u << 20));
  EXPECT_EQ(s.sm_l2_read.count("Q") ? s.sm_l2_read.at("Q") : 0u, 0u);
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h200_l2_probe_heads.csv"))
    if (r.shape.mode == traces::ProbeMode::Heads && r.shape.heads == 2 && r.shape.bytes == shape.bytes) {
      EXPECT_NEAR(static_cast<double>(total(s.dram_read)) / r.dram_read, 1.0, 0.01);
      ++compared;
    }
  EXPECT_EQ(compared, 1);
}

// One SM reading head windows (h200_l2_probe_heads.csv, _strides.csv: 56 rows, each a buffer or K and V
// windows of 2 to 16 heads at strides of 2 to 32 MiB, three passes): the root mean square over the rows of
// the DRAM reads' error over the footprint. A hashed set index fills any windows evenly: 0.250, contiguous
// buffers right, windows with far too few misses. Paired regions (the H200's structure, measured; the
// preset) 0.118. One machine a process (SystemC), so two tests.
double head_windows_rms_error(const std::vector<std::string>& overrides) {
  Machine machine(load_config(kSource + "configs/h200.yaml", overrides));
  double sum = 0;
  int rows = 0;
  for (const char* file : {"h200_l2_probe_heads.csv", "h200_l2_probe_strides.csv"})
    for (const ProbeRow& r : measured_rows(file)) {
      const double footprint = static_cast<double>(r.shape.bytes);
      const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
      sum += std::pow((predicted - r.dram_read) / footprint, 2);
      ++rows;
    }
  EXPECT_EQ(rows, 56);
  return std::sqrt(sum / rows);
}

TEST(L2Probe, HashedSetsFillHeadWindowsTooEvenly) {
  EXPECT_NEAR(head_windows_rms_error({"l2.home=hashed", "l2.set_index=hashed"}), 0.250, 0.005);
}

TEST(L2Probe, PairedRegionsFillHeadWindowsAsUnevenlyAsTheH200) {
  EXPECT_NEAR(head_windows_rms_error({}), 0.118, 0.005);
}

// The H200 (h200_l2_probe_pair.csv) attaches the same 66 SMs to SM 128's partition as the H100.
TEST(L2Probe, TheH200AttachesItsSmsAsTheH100) {
  const std::set<int> h100 = sms_sharing_128("h100_l2_probe_pair.csv");
  EXPECT_EQ(h100.size(), 66u);
  EXPECT_EQ(sms_sharing_128("h200_l2_probe_pair.csv"), h100);
}

// The in-step shared readers (one block per SM) with the measured attachment, which puts long runs of
// consecutive cores on one partition: within 10% of the measured DRAM reads, within 3% at 32 and 48 MiB,
// where each pass misses once (chip.release_order: shuffle); 24 and 28 MiB as in MatchesTheH100Measurements.
TEST(L2Probe, InStepReadersStayInStepOnTheMeasuredPartitions) {
  Machine machine(
      load_config(kSource + "configs/h100.yaml", {"l2.core_partitions=" + measured_core_partitions()}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe.csv")) {
    if (r.shape.mode != traces::ProbeMode::Shared || r.shape.blocks != 132 || colliding_start(r)) continue;
    const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
    const bool one_miss_per_pass = r.shape.bytes == (32u << 20) || r.shape.bytes == (48u << 20);
    if (past_a_partition(r))
      EXPECT_NEAR(ratio, 1.107, 0.02) << "28 MiB";
    else
      EXPECT_NEAR(ratio, 1.0, one_miss_per_pass ? 0.03 : 0.10) << (r.shape.bytes >> 20) << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 9);
}

// The rewritten buffer again, on the measured attachment. There the GPU's two counters come out together
// under one rule, a store by the home side dropping the other partition's copy (writer_keeps: copies kept
// coherent, so the next read there misses and fetches the line across the fabric): fabric 0.88-0.93 of the
// measured sectors, lookup misses 0.89-0.93 at 1 MiB, 0.68 at 2 and 0.29-0.53 from 4 MiB (where the GPU's
// blocks drift apart and the writers of a line alternate partitions more often than the model's in-step
// blocks). On core % 2 consecutive writers alternate partitions at every step and the same rule overshoots
// (lookup misses 2.4-6.0, the test above); kept copies (the presets) stay at 0.04-0.27 on either attachment.
// The presets keep core % 2 and kept copies for the attention rows (docs/chip.md, "Which partition each SM is
// attached to").
TEST(L2Probe, RewrittenBufferOnTheMeasuredPartitionsCrossesAsIfStoresDroppedCopies) {
  expect_rewritten_buffer_between("writer_keeps", 0.85, 0.97, 0.25, 1.0, measured_core_partitions());
}

TEST(L2Probe, RewrittenBufferOnTheMeasuredPartitionsMissesTooLittleWithKeptCopies) {
  expect_rewritten_buffer_between("keep", 0.75, 0.95, 0.0, 0.3, measured_core_partitions());
}

// Why the conductor shuffles: rotating the release order one core per quantum makes the core after a long
// run of the other partition's cores the first of its own partition in most quanta; it books the partition's
// bandwidth first, the cores drift apart (16% at 48 MiB, one pass) and the in-step readers fetch the buffer
// about once more in three passes (32 MiB x 3: 1.32 of the measured).
TEST(L2Probe, RotatedReleaseLetsClusteredPartitionsDrift) {
  Machine machine(
      load_config(kSource + "configs/h100.yaml",
                  {"l2.core_partitions=" + measured_core_partitions(), "chip.release_order=rotate"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe.csv")) {
    if (r.shape.mode != traces::ProbeMode::Shared || r.shape.blocks != 132 || r.shape.bytes != (32u << 20))
      continue;
    EXPECT_GT(static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read, 1.2);
    ++compared;
  }
  EXPECT_EQ(compared, 1);
}

// One SM writing, then streaming (dirty2, 1 block, 32 MiB): a second chance for every dirty victim keeps the
// written quarter, 0.87 of the measured DRAM reads; the GPU, like LRU, loses it. Why the rule is far writes.
TEST(L2Probe, OneSmKeepsNoWrittenLines) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {"l2.dirty_second_chance=all"}));
  int compared = 0;
  for (const ProbeRow& r : measured_rows("h100_l2_probe_dirty2.csv")) {
    if (r.shape.mode != traces::ProbeMode::WriteThenRead || r.shape.blocks != 1 ||
        r.shape.bytes != (32u << 20))
      continue;
    const double ratio = static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
    EXPECT_LT(ratio, 0.90);
    ++compared;
  }
  EXPECT_EQ(compared, 1);
}

// Local memory (register spills) on the H100 (validation/local_probe.cu,
// validation/data/h100_local_probe.csv): blocks of 128 threads each store a 64 KB local array once, in
// coalesced lines. Were every block's spills at addresses of its own, a grid of many waves would leave far
// more dirty lines than the L2 holds, and write them back while it runs; at one block per SM the GPU writes
// back under 2% of that, because a thread's local memory is addressed by the hardware slot it runs in and the
// next block in the slot rewrites the same lines. The model's spill stores share one row per resident block
// (ForwardShape and BackwardShape::spill_rows) and write back as little; a row per block would write back
// most of the grid.
isa::Program local_probe(int64_t blocks, int64_t rows) {
  traces::Builder b("<local probe>");
  const int64_t floats = 16384;  // 128 threads x 512 bytes
  const int local = b.tensor("local", rows, floats, Dtype::F32, false, 0);
  const int spill = b.buffer("spill", 1, floats, Dtype::F32);
  const int kernel = b.kernel("local_probe", {blocks, 1, 1});
  for (int64_t block = 0; block < blocks; ++block) {
    b.begin_block(kernel, {block, 0, 0});
    b.emit(isa::Opcode::Store, {b.buf(spill), b.rows_of(local, block % rows, 1)});
  }
  return b.take();
}

TEST(L2Probe, LocalMemoryIsReusedSlotBySlot) {
  std::ifstream in(kSource + "validation/data/h100_local_probe.csv");
  std::string line;
  std::getline(in, line);  // blocks,words_per_thread,reps,smem_kb,blocks_per_sm,stores,dram_read_bytes,...
  int compared = 0;
  Machine machine(load_config(kSource + "configs/h100.yaml", {"chip.blocks_per_core=1"}));
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::vector<std::string> c;
    for (std::string cell; std::getline(cells, cell, ',');) c.push_back(cell);
    if (c.at(5) != "coalesced" || c.at(4) != "1") continue;
    const int64_t blocks = std::stoll(c.at(0));
    const double footprint = static_cast<double>(blocks) * 65536, measured = std::stod(c.at(7));
    EXPECT_LT(measured / footprint, 0.02) << blocks << " blocks";  // the GPU reuses its slots' lines
    if (blocks < 2112) continue;  // a grid whose lines would not all fit the L2's dirty share
    for (const int64_t rows : {int64_t{132}, blocks}) {
      const isa::Program p = local_probe(blocks, rows);
      machine.load(p, false, true);
      machine.run();
      const double written = static_cast<double>(total(summarize_chip(*machine.chip(), p, 1).dram_written));
      if (rows == 132)
        EXPECT_LT(written / footprint, 0.02) << blocks << " blocks, a row per slot";
      else
        EXPECT_GT(written / footprint, 0.5) << blocks << " blocks, a row per block";
    }
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

// Probes confined to 16 or 32 SMs (validation/data/h200_l2_probe_green*.csv: run_l2_probe_green.sh runs the
// probe in CUDA green contexts; a block per SM). The SET=pair probe of 2026-11-28 put the 16 SMs all on SM
// 128's partition, yet they read as if half were on each, as the pairs probe of 2026-11-30 finds SMs 0 and 2
// to be: which partition an SM number has differs from GPU to GPU. With the presets' attachment (core % 2)
// every row is within 7% of the measured DRAM reads but two, shared reads of 28 MiB (the GPU misses before
// its capacity, 0.78) and a buffer every SM rewrites in turn at 32 MiB (the model's dirty limit cycling,
// 3.42); with all 16 attached to one partition the model reads 2.00 passes' worth where the GPU reads 3.00
// (shared) or 1.12 (private) at 40 MiB (docs/chip.md, "Sixteen SMs of a green context").
double green_ratio(Machine& machine, const ProbeRow& r) {
  return static_cast<double>(total(simulate(machine, r.shape).dram_read)) / r.dram_read;
}

// The rows measured in the green context of `sms` SMs (a block per SM, or one block: `single`).
std::vector<ProbeRow> green_rows(int sms) {
  const std::vector<std::string> files =
      sms == 16 ? std::vector<std::string>{"h200_l2_probe_green.csv", "h200_l2_probe_green_private.csv"}
                : std::vector<std::string>{"h200_l2_probe_green_private32.csv"};
  std::vector<ProbeRow> rows;
  for (const std::string& file : files)
    for (const ProbeRow& r : measured_rows(file)) rows.push_back(r);
  return rows;
}

std::string green_name(const ProbeRow& r) {
  return std::string(traces::probe_mode_name(r.shape.mode)) + " " + std::to_string(r.shape.bytes >> 20);
}

TEST(L2Probe, SixteenSmsOfAGreenContextReadAsHalfOnEachPartition) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"chip.cores=16"}));
  const std::map<std::string, double> misses = {{"shared 28", 0.78}, {"rmwspread 32", 3.42}};
  int compared = 0;
  for (const ProbeRow& r : green_rows(16)) {
    const auto miss = misses.find(green_name(r));
    const double ratio = green_ratio(machine, r);
    if (miss == misses.end()) {
      EXPECT_NEAR(ratio, 1.0, 0.07) << green_name(r) << " MiB";
    } else {
      EXPECT_NEAR(ratio, miss->second, 0.05 * miss->second) << green_name(r) << " MiB";
    }
    ++compared;
  }
  EXPECT_EQ(compared, 23);
}

TEST(L2Probe, SixteenSmsAttachedAsThePairProbeSaysReadTooLittleOrTooMuch) {
  Machine machine(load_config(kSource + "configs/h200.yaml",
                              {"chip.cores=16", "l2.core_partitions=" + std::string(16, '0')}));
  int compared = 0;
  for (const ProbeRow& r : green_rows(16)) {
    if (r.shape.bytes != 40u << 20 || r.shape.blocks != 16) continue;
    const double ratio = green_ratio(machine, r);
    if (r.shape.mode == traces::ProbeMode::Shared) {
      EXPECT_NEAR(ratio, 0.67, 0.03);  // 2.00 passes of 3.00
    }
    if (r.shape.mode == traces::ProbeMode::Private) {
      EXPECT_NEAR(ratio, 1.78, 0.05);  // 2.00 passes of 1.12
    }
    ++compared;
  }
  EXPECT_EQ(compared, 4);  // shared (twice), private, rmw
}

TEST(L2Probe, ThirtyTwoSmsOfAGreenContext) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"chip.cores=32"}));
  int compared = 0;
  for (const ProbeRow& r : green_rows(32)) {
    const bool shared = r.shape.mode == traces::ProbeMode::Shared;
    // Private 40 MiB: the GPU 1.38 passes' worth, the model 1.12.
    EXPECT_NEAR(green_ratio(machine, r), shared ? 1.0 : 0.81, shared ? 0.03 : 0.04)
        << green_name(r) << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

// The same rows with the attachment measured on the GPU they ran on (validation/data/
// h200_l2_probe_pair_gpu2921.csv, SET=pair on 2026-11-30; the green contexts' SMs from the SMIDS lines of the
// run logs): the 32-SM context is 8 SMs on SM 128's partition and 24 on the other, and private 40 MiB reads
// 1.37 passes' worth where the GPU read 1.38 (core % 2: 1.12); the 16 SMs are 8 on each.
std::string green_partitions(const std::string& run_log, size_t sms) {
  const std::set<int> with_128 = sms_sharing_128("h200_l2_probe_pair_gpu2921.csv");
  std::ifstream in(kSource + "validation/data/" + run_log);
  std::string line, partitions;
  while (partitions.empty() && std::getline(in, line)) {
    if (line.rfind("SMIDS ", 0) != 0) continue;
    std::stringstream ids(line.substr(6));
    size_t count = 0;
    ids >> count;
    for (int sm = 0; partitions.size() < count && ids >> sm;) partitions += with_128.count(sm) ? '0' : '1';
  }
  EXPECT_EQ(partitions.size(), sms);
  return partitions;
}

TEST(L2Probe, ThirtyTwoSmsOnTheirGpusAttachment) {
  const std::string partitions = green_partitions("h200_l2_probe_green_private32_run.log", 32);
  EXPECT_EQ(std::count(partitions.begin(), partitions.end(), '0'), 8);
  Machine machine(
      load_config(kSource + "configs/h200.yaml", {"chip.cores=32", "l2.core_partitions=" + partitions}));
  int compared = 0;
  for (const ProbeRow& r : green_rows(32)) {
    EXPECT_NEAR(green_ratio(machine, r), 1.0, 0.03) << green_name(r) << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

TEST(L2Probe, SixteenSmsOnTheirGpusAttachment) {
  const std::string partitions = green_partitions("h200_l2_probe_green_private_run.log", 16);
  EXPECT_EQ(partitions, "0000000011111111");
  Machine machine(
      load_config(kSource + "configs/h200.yaml", {"chip.cores=16", "l2.core_partitions=" + partitions}));
  int compared = 0;
  for (const ProbeRow& r : green_rows(16)) {
    if (r.shape.bytes != 40u << 20) continue;  // shared, private, rmw, single: 1.00, 0.92, 0.83, 1.00
    const double ratio = green_ratio(machine, r);
    EXPECT_NEAR(ratio, 1.0, r.shape.mode == traces::ProbeMode::Rmw ? 0.20 : 0.10) << green_name(r);
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

// Where a buffer starts (h200_l2_probe_offsets.csv, SET=offsets bash validation/run_l2_probe.sh on one
// H200): one SM reads 28 MiB three times from 0 to 7 MiB into its allocation, twice over. That allocation's
// pages read it once (1.011-1.017 of the footprint) from 0, 1, 2, 3, 4 and 7 MiB, 1.050 from 5 and 1.150
// from 6 (a page there shares its sets with another, in both rounds). The preset's regions of 4 MiB fill
// the sets evenly only from a region's start: 1.10-1.14 from 1, 2, 3, 5 and 7 MiB. Another H200's
// allocation (h200_l2_probe_pages.csv, below) read the same buffer 1.07-1.13 times from six of 8-15 MiB:
// how evenly a run of pages fills the sets depends on which physical pages it got.
struct OffsetRow {
  uint64_t offset = 0;
  double reads_over_footprint = 0;
};

std::vector<OffsetRow> offset_rows(uint64_t bytes, const std::string& file = "h200_l2_probe_offsets.csv") {
  std::vector<OffsetRow> rows;
  std::ifstream in(kSource + "validation/data/" + file);
  std::string line;
  std::getline(in, line);  // mode,bytes,passes,blocks,dram_read_bytes,...,offset_bytes,repeat
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream text(line);
    for (std::string cell; std::getline(text, cell, ',');) cells.push_back(cell);
    if (cells.size() != 15 || std::stoull(cells[1]) != bytes) continue;
    rows.push_back({std::stoull(cells[13]), std::stod(cells[4]) / static_cast<double>(bytes)});
  }
  return rows;
}

double single_reads_from(Machine& machine, uint64_t bytes, uint64_t offset) {
  traces::ProbeShape shape;
  shape.mode = traces::ProbeMode::Single;
  shape.bytes = bytes;
  shape.passes = 3;
  shape.blocks = 1;
  machine.set_first_tensor_address(offset);
  return static_cast<double>(total(simulate(machine, shape).dram_read)) / static_cast<double>(bytes);
}

TEST(L2Probe, PresetRegionsFillABufferEvenlyOnlyFromARegionsStart) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {}));
  constexpr uint64_t kMiB = 1u << 20;
  const auto rows = offset_rows(28 * kMiB);
  ASSERT_EQ(rows.size(), 16u);
  for (const OffsetRow& r : rows) {
    const uint64_t mib = r.offset / kMiB;
    if (mib == 6) continue;  // the GPU's collision
    EXPECT_NEAR(r.reads_over_footprint, 1.0, mib == 5 ? 0.06 : 0.02) << "measured from " << mib << " MiB";
    const double simulated = single_reads_from(machine, 28 * kMiB, r.offset);
    if (mib % 4 == 0)
      EXPECT_NEAR(simulated, r.reads_over_footprint, 0.02) << "from " << mib << " MiB";
    else  // a region's piece at either end, where this allocation's pages were even
      EXPECT_NEAR(simulated, 1.12, 0.03) << "from " << mib << " MiB, measured " << r.reads_over_footprint;
  }
}

// The H100 (h100_l2_probe_offsets.csv, one H100): one SM reads 22 or 24 MiB three times from 0 to 7 MiB into
// its allocation, twice over. 22 MiB reads once from anywhere (1.005-1.013 of the footprint), and so does
// 24 MiB from 1-7 MiB (1.009-1.016), but 1.199 from the start: there a pair of the allocation's pages share
// their sets, the rows MatchesTheH100Measurements leaves out. The preset's regions of 4 MiB (the H200's
// rule on the H100's 12,800 sets) read 22 MiB 1.00-1.04 times, 24 MiB once from 0 and 4 MiB only
// and 1.15-1.20 times from the other starts, where a region's piece lies at either end: the H100 fills its
// sets evenly from anywhere, which no region size here does (2 MiB: 1.09 from odd MiB).
TEST(L2Probe, TheH100ReadsABufferOnceFromAnyStart) {
  Machine machine(load_config(kSource + "configs/h100.yaml", {}));
  constexpr uint64_t kMiB = 1u << 20;
  for (const uint64_t mib : {22, 24}) {
    const auto rows = offset_rows(mib * kMiB, "h100_l2_probe_offsets.csv");
    ASSERT_EQ(rows.size(), 16u) << mib << " MiB";
    std::map<uint64_t, double> simulated;  // by offset: both repeats of a start read the same
    for (const OffsetRow& r : rows) {
      const uint64_t from = r.offset / kMiB;
      const std::string what = std::to_string(mib) + " MiB from " + std::to_string(from) + " MiB, measured " +
                               std::to_string(r.reads_over_footprint);
      EXPECT_NEAR(r.reads_over_footprint, mib == 24 && from == 0 ? 1.19 : 1.0, 0.02) << what;
      if (!simulated.contains(from)) simulated[from] = single_reads_from(machine, mib * kMiB, r.offset);
      if (mib == 22)
        EXPECT_NEAR(simulated[from], 1.02, 0.03) << what;
      else if (from % 4 == 0)
        EXPECT_NEAR(simulated[from], 1.0, 0.01) << what;
      else
        EXPECT_NEAR(simulated[from], 1.17, 0.035) << what;
    }
  }
}

// l2.region_bytes = 2 MiB (a region a page) fills the sets evenly from any page, as that allocation did, but
// it fills head windows (one page each, a few pages apart) evenly too, where the GPU's pages collide: the 56
// rows of PairedRegionsFillHeadWindowsAsUnevenlyAsTheH200 go from 0.118 to 0.235. Neither region fits both.
TEST(L2Probe, PageRegionsFillABufferEvenlyFromAnyPage) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"l2.region_bytes=2097152"}));
  constexpr uint64_t kMiB = 1u << 20;
  int compared = 0;
  for (const OffsetRow& r : offset_rows(28 * kMiB)) {
    if (r.offset == 6 * kMiB) continue;
    EXPECT_NEAR(single_reads_from(machine, 28 * kMiB, r.offset), r.reads_over_footprint, 0.06)
        << "from " << r.offset / kMiB << " MiB";
    ++compared;
  }
  EXPECT_EQ(compared, 14);
}

TEST(L2Probe, PageRegionsFillHeadWindowsTooEvenly) {
  EXPECT_NEAR(head_windows_rms_error({"l2.region_bytes=2097152"}), 0.235, 0.005);
}

// Pages a stride apart in one allocation (h200_l2_probe_pages.csv, SET=pages on another H200): one SM reads
// 12 or 14 windows of 2 MiB, 2 to 32 MiB apart, three times (1.000 and 1.008 of the footprint when
// contiguous, 1.107-1.674 otherwise), and 28 MiB from 8-15 MiB into its allocation (1.011-1.128). The root
// mean square over the 30 rows of the error over the footprint: the preset's regions 0.129, regions of one
// page 0.301 (they fill strided pages evenly: 1.000 at 12 windows, where the GPU reads 1.107-1.483).
double pages_rms_error(const std::vector<std::string>& overrides) {
  Machine machine(load_config(kSource + "configs/h200.yaml", overrides));
  const std::vector<ProbeRow> rows = measured_rows("h200_l2_probe_pages.csv");
  std::ifstream in(kSource + "validation/data/h200_l2_probe_pages.csv");
  std::string line;
  std::getline(in, line);  // mode,bytes,...,time_ns,offset_bytes,repeat: the offsets by row
  double sum = 0;
  for (const ProbeRow& r : rows) {
    std::getline(in, line);
    std::vector<std::string> cells;
    std::stringstream text(line);
    for (std::string cell; std::getline(text, cell, ',');) cells.push_back(cell);
    machine.set_first_tensor_address(std::stoull(cells.at(13)));
    const bool copies = r.shape.mode == traces::ProbeMode::Copies;
    const double footprint = static_cast<double>(r.shape.bytes * (copies ? r.shape.copies : 1));
    const double predicted = static_cast<double>(total(simulate(machine, r.shape).dram_read));
    sum += std::pow((predicted - r.dram_read) / footprint, 2);
  }
  EXPECT_EQ(rows.size(), 30u);
  return std::sqrt(sum / static_cast<double>(rows.size()));
}

TEST(L2Probe, PagesAStrideApartFillTheSetsAsUnevenlyAsOnTheH200) {
  EXPECT_NEAR(pages_rms_error({}), 0.129, 0.005);
}

TEST(L2Probe, PageRegionsFillPagesAStrideApartTooEvenly) {
  EXPECT_NEAR(pages_rms_error({"l2.region_bytes=2097152"}), 0.301, 0.005);
}

}  // namespace
}  // namespace attnsim
