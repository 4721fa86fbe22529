// A hot buffer read by every SM, then a kernel, then the buffer again: how much of it the kernel pushed out
// of the L2 (traces/hot_part.h), against validation/data/h200_memeff_room.csv (validation/
// memeff_room_probe.py on an H200, 2026-11-30: the buffer alone, a plain read of 8, 16 or 24 MiB between,
// and one wave of the memory-efficient backward between; docs/validation.md, "Room in the L2, measured by a
// hot buffer").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/chip_report.h"
#include "sim/config.h"
#include "sim/machine.h"
#include "sim/validate.h"
#include "traces/hot_part.h"
#include "traces/l2_probe.h"

namespace attnsim {
namespace {

const std::string kSource = std::string(ATTNSIM_SOURCE_DIR) + "/";

traces::ProbeShape private_read(double mib) {
  traces::ProbeShape shape;
  shape.mode = traces::ProbeMode::Private;
  shape.bytes = static_cast<uint64_t>(mib * (1 << 20));
  shape.passes = 1;
  shape.blocks = 128;  // 2, 8, 16 and 24 MiB are whole 16 KiB chunks a block: every line read once
  return shape;
}

TEST(HotPart, BracketKeepsTheKernelsTensorsFirstAndReadsIntoTheirLargestBuffer) {
  const isa::Program probe = traces::l2_probe(private_read(8));
  const isa::Program p = traces::hot_part_bracket(probe, 4u << 20, 132);  // 256 chunks over 132 blocks
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].name, "hot_read");
  EXPECT_EQ(p.kernels[1].name, probe.kernels[0].name);
  EXPECT_EQ(p.kernels[2].name, "hot_read");
  ASSERT_EQ(p.tensors.size(), probe.tensors.size() + 1);
  for (size_t t = 0; t < probe.tensors.size(); ++t) EXPECT_EQ(p.tensors[t].name, probe.tensors[t].name);
  EXPECT_EQ(p.tensors.back().name, traces::kHotPartTensor);
  EXPECT_EQ(p.buffers.size(), probe.buffers.size());  // the hot reads load into the probe's buffer
  // 4 MiB in the probe buffer's 16 KiB chunks, each read once by one of 132 blocks, twice.
  EXPECT_EQ(p.instructions.size(), probe.instructions.size() + 2 * 256);
  EXPECT_EQ(p.blocks.size(), probe.blocks.size() + 2 * 132);
  EXPECT_THROW(traces::hot_part_bracket(probe, 1u << 20, 132), std::invalid_argument);  // < 1 chunk a block
}

// The first read by the blocks on cores 66-131 only: a grid of one block per core, the others empty; the
// second read by every block.
TEST(HotPart, TheFirstReadCanBeOnePartitionsCores) {
  const isa::Program probe = traces::l2_probe(private_read(8));
  const traces::HotReaders side{132, 66, 66};
  const isa::Program p =
      traces::hot_part_bracket(probe, 4u << 20, 132, Dtype::F16, traces::HotReread::All, side);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.instructions.size(), probe.instructions.size() + 2 * 256);
  int64_t first_reader = -1;  // the first block of the first kernel with instructions
  for (size_t b = 0; b + 1 < p.blocks.size() && first_reader < 0; ++b)
    if (p.blocks[b].kernel == 0 && p.blocks[b + 1].instruction > p.blocks[b].instruction)
      first_reader = p.blocks[b].index[0];
  EXPECT_EQ(first_reader, 66);
  EXPECT_THROW(traces::hot_part_bracket(probe, 4u << 20, 132, Dtype::F16, traces::HotReread::All,
                                        traces::HotReaders{132, 100, 66}),
               std::invalid_argument);
}

// The GPU's lost fraction of the hot buffer for (what ran between, R MiB, what was read again) in `file`
// (older files have no reread column: all of it).
std::map<std::tuple<std::string, int, std::string>, double> measured_losses(const std::string& file) {
  std::ifstream in(kSource + "validation/data/" + file);
  std::string line;
  std::getline(in, line);
  const bool has_reread = line.find("reread") != std::string::npos;
  std::map<std::tuple<std::string, int, std::string>, double> out;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::vector<std::string> v;
    for (std::string cell; std::getline(cells, cell, ',');) v.push_back(cell);
    out[{v[0], std::stoi(v[1]), has_reread ? v[2] : "all"}] = std::stod(v.back());
  }
  return out;
}

// The model's lost fraction: the hot buffer read by 132 cores, a private read of plain_mib by 132 blocks,
// the buffer (or a half's sample) read again.
double simulated_loss(double plain_mib, int hot_mib, traces::HotReread reread) {
  Machine machine(load_config(kSource + "configs/h200.yaml", {"chip.l2_between_kernels=keep"}));
  const uint64_t hot = static_cast<uint64_t>(hot_mib) << 20;
  const isa::Program p =
      traces::hot_part_bracket(traces::l2_probe(private_read(plain_mib)), hot, 132, Dtype::F16, reread);
  machine.load(p, false, true);
  machine.run();
  const ChipSummary s = summarize_chip(*machine.chip(), p, machine.clock_ghz());
  return (static_cast<double>(s.dram_read.at(traces::kHotPartTensor)) - static_cast<double>(hot)) /
         static_cast<double>(traces::hot_reread_bytes(p, reread));
}

std::string between_name(double plain_mib) {
  return plain_mib < 4 ? "nothing" : fmt::format("plain_{}MiB", static_cast<int>(plain_mib));
}

struct RoomRow {
  double plain_mib;  // the private read between; 2 (one 16 KiB chunk a block) stands for nothing
  int hot_mib;
  double low, high;  // the model's lost fraction over the GPU's, or (GPU under 1%) the model's alone
};

void PrintTo(const RoomRow& r, std::ostream* os) {
  *os << r.plain_mib << " MiB between, hot " << r.hot_mib;
}

class HotBufferOnTheH200 : public ::testing::TestWithParam<RoomRow> {};

// The buffer alone (2 MiB between) leaves as on the GPU up to 36 MiB of it (its 1.5 x with copies past 54
// MiB of the 60): 0.003, 0.022, 0.075 against 0.0005, 0.021, 0.059; at 40 MiB the model loses more (0.337
// against 0.221). With a plain read between, the GPU loses the hot buffer sooner than the model: a plain 16
// MiB, hot 24 and 28 MiB, 0.150 and 0.585 against 0.260 and 0.670; a plain 24 MiB, hot 16 MiB, 0.177 against
// 0.350; a plain 8 MiB, hot 32 MiB, 0.125 against 0.356 (thirty-fourth session: the open question of
// docs/validation.md, "Room in the L2, measured by a hot buffer"). The bands hold today's figures so that a
// change that moves them says so.
TEST_P(HotBufferOnTheH200, LosesWhatTheGpuLoses) {
  const RoomRow& want = GetParam();
  const double gpu =
      measured_losses("h200_memeff_room.csv").at({between_name(want.plain_mib), want.hot_mib, "all"});
  const double lost = simulated_loss(want.plain_mib, want.hot_mib, traces::HotReread::All);
  std::printf("hot %d MiB after %s: model %.4f, GPU %.4f\n", want.hot_mib,
              between_name(want.plain_mib).c_str(), lost, gpu);
  if (gpu < 0.01) {
    EXPECT_GT(lost, want.low);
    EXPECT_LT(lost, want.high);
    return;
  }
  EXPECT_GT(lost / gpu, want.low);
  EXPECT_LT(lost / gpu, want.high);
}

INSTANTIATE_TEST_SUITE_P(H200, HotBufferOnTheH200,
                         ::testing::Values(RoomRow{2, 28, 0.0, 0.01}, RoomRow{2, 32, 0.85, 1.25},
                                           RoomRow{2, 36, 1.1, 1.45}, RoomRow{2, 40, 1.4, 1.7},
                                           RoomRow{16, 24, 0.45, 0.7}, RoomRow{16, 28, 0.75, 1.0},
                                           RoomRow{24, 16, 0.4, 0.62}, RoomRow{8, 32, 0.25, 0.45}),
                         [](const auto& info) {
                           return fmt::format("plain{}_hot{}", static_cast<int>(info.param.plain_mib),
                                              info.param.hot_mib);
                         });

// Every 5th line of the hot buffer's first or second half read again (validation/data/
// h200_memeff_room_placement.csv, another H200, 2026-11-30): few fills, so the read shows what the L2 held
// before it. Both lose the first half, read first, and keep the second (under 0.03), as LRU does. Alone
// the first half's losses are the GPU's (36 and 40 MiB: 0.051 and 0.143 against 0.044 and 0.137: the whole
// buffer's re-read at 40 MiB misses by more, 0.337 against 0.221, in the re-read's own evictions). After a
// plain read the GPU has already lost 1.5-2 times the model's share: a plain 16 MiB and R 24, a plain 24
// and R 16, a plain 8 and R 32: 0.125, 0.165, 0.092 against 0.190, 0.284, 0.189 (the open question of
// docs/validation.md, "Room in the L2, measured by a hot buffer").
struct HalfRow {
  double plain_mib;
  int hot_mib;
  double low, high;  // the model's first-half share over the GPU's
};

void PrintTo(const HalfRow& r, std::ostream* os) {
  *os << r.plain_mib << " MiB between, hot " << r.hot_mib;
}

class HotBufferHalvesOnTheH200 : public ::testing::TestWithParam<HalfRow> {};

TEST_P(HotBufferHalvesOnTheH200, TheFirstHalfGoesFirst) {
  const HalfRow& want = GetParam();
  const auto gpu = measured_losses("h200_memeff_room_placement.csv");
  const std::string between = between_name(want.plain_mib);
  const double gpu_first = gpu.at({between, want.hot_mib, "first_half"});
  const double gpu_second = gpu.at({between, want.hot_mib, "second_half"});
  const double first = simulated_loss(want.plain_mib, want.hot_mib, traces::HotReread::FirstHalf);
  std::printf("hot %d MiB after %s, first half: model %.4f, GPU %.4f (second half: GPU %.4f)\n", want.hot_mib,
              between.c_str(), first, gpu_first, gpu_second);
  EXPECT_LT(gpu_second, 0.03);
  EXPECT_GT(first / gpu_first, want.low);
  EXPECT_LT(first / gpu_first, want.high);
}

TEST(HotBufferHalvesOnTheH200, TheSecondHalfStays) {
  EXPECT_LT(simulated_loss(24, 16, traces::HotReread::SecondHalf), 0.03);
}

INSTANTIATE_TEST_SUITE_P(H200, HotBufferHalvesOnTheH200,
                         ::testing::Values(HalfRow{2, 36, 0.9, 1.4}, HalfRow{2, 40, 0.9, 1.2},
                                           HalfRow{16, 24, 0.5, 0.8}, HalfRow{24, 16, 0.45, 0.7},
                                           HalfRow{8, 32, 0.35, 0.6}),
                         [](const auto& info) {
                           return fmt::format("plain{}_hot{}", static_cast<int>(info.param.plain_mib),
                                              info.param.hot_mib);
                         });

// The plain read by one block or by 8 (validation/data/h200_memeff_room_copies.csv, another H200). CUDA hands
// a launch's first blocks to a run of SMs of one L2 partition (core_partitions of the green-context rows), so
// the GPU's 8 blocks read as its one: the first half lost within 0.01 (plain 24 MiB, R 12: 0.288 and 0.291).
// The model on the presets' core % 2 spreads its 8 over both partitions (0.052 there, 0.193 for one block);
// on the SMs' own attachment (runs of 32, 48, 16, 18 and 18 SMs: the 132-SM row of
// h200_memeff_sms_cases.csv) its 8 read as its one, 0.238, and its five rows come within 0.01-0.06 of the
// GPU's (docs/validation.md, "Room in the L2, measured by a hot buffer").
TEST(HotBufferReaders, OnTheGpuEightBlocksReadAsOne) {
  const auto gpu = measured_losses("h200_memeff_room_copies.csv");
  for (const auto& [x, r] :
       std::vector<std::pair<int, int>>{{16, 24}, {24, 16}, {8, 32}, {16, 20}, {24, 12}}) {
    const double one = gpu.at({fmt::format("plain_{}MiB_by1", x), r, "first_half"});
    const double eight = gpu.at({fmt::format("plain_{}MiB_by8", x), r, "first_half"});
    EXPECT_NEAR(one, eight, 0.01) << x << " MiB then " << r;
  }
}

// The first half's share lost after 8 blocks read 24 MiB, the hot buffer 12 MiB, on `attachment` (empty:
// the presets').
double eight_blocks_loss(const std::string& attachment) {
  std::vector<std::string> overrides = {"chip.l2_between_kernels=keep"};
  if (!attachment.empty()) overrides.push_back("l2.core_partitions=" + attachment);
  traces::ProbeShape eight = private_read(24);
  eight.blocks = 8;
  Machine machine(load_config(kSource + "configs/h200.yaml", overrides));
  const uint64_t hot = 12u << 20;
  const isa::Program p =
      traces::hot_part_bracket(traces::l2_probe(eight), hot, 132, Dtype::F16, traces::HotReread::FirstHalf);
  machine.load(p, false, true);
  machine.run();
  const ChipSummary s = summarize_chip(*machine.chip(), p, machine.clock_ghz());
  return (static_cast<double>(s.dram_read.at(traces::kHotPartTensor)) - static_cast<double>(hot)) /
         static_cast<double>(traces::hot_reread_bytes(p, traces::HotReread::FirstHalf));
}

TEST(HotBufferReaders, OnTheSmsOwnAttachmentEightBlocksReadAsTheGpus) {
  std::string attachment;
  for (const Measurement& m : read_measurements(kSource + "validation/data/h200_memeff_sms_cases.csv"))
    if (m.sm_count == 132) attachment = m.core_partitions;
  ASSERT_EQ(attachment.size(), 132u);
  const double gpu = measured_losses("h200_memeff_room_copies.csv").at({"plain_24MiB_by8", 12, "first_half"});
  const double lost = eight_blocks_loss(attachment);
  std::printf("plain 24 MiB by 8 blocks, R 12, first half: model %.4f, GPU %.4f\n", lost, gpu);
  EXPECT_GT(lost / gpu, 0.75);
  EXPECT_LT(lost / gpu, 1.1);
}

TEST(HotBufferReaders, OnAlternatingPartitionsEightBlocksSpreadTheirCopies) {
  const double lost = eight_blocks_loss("");
  std::printf("plain 24 MiB by 8 blocks on core %% 2, R 12, first half: %.4f\n", lost);
  EXPECT_LT(lost, 0.1);
}

// The hot buffer and the plain one each read by one L2 partition's SMs or by every SM
// (validation/data/h200_memeff_room_partitions.csv, ROOM_SET=partitions, another H200, 2026-11-30: the two
// sides of 66 SMs found by timing pairs of SMs; each buffer's lines taken in order, a warp each), then the
// hot buffer's first half sampled back by every SM. A and B swapped agree within 0.015 on the GPU. The model:
// one block per core, cores 0-65 on one partition and 66-131 on the other; the hot buffer read by one side's
// cores (HotReaders) or by all, the plain one by 64 blocks (one side) or 128 (both), in private 16 KiB
// chunks.
double sided_loss(const std::string& hot_by, const std::string& plain_by, int plain_mib, int hot_mib) {
  // The model's plain read is by the first cores: a plain read by B is one by A with the sides swapped.
  const bool swap = plain_by == "B";
  const std::string hot = swap && hot_by != "all" ? (hot_by == "A" ? "B" : "A") : hot_by;
  traces::ProbeShape plain = private_read(plain_mib);
  plain.blocks = plain_by == "all" ? 128 : 64;
  const traces::HotReaders readers = hot == "all" ? traces::HotReaders{}
                                     : hot == "A" ? traces::HotReaders{132, 0, 66}
                                                  : traces::HotReaders{132, 66, 66};
  Machine machine(load_config(
      kSource + "configs/h200.yaml",
      {"chip.l2_between_kernels=keep", "l2.core_partitions=" + std::string(66, '0') + std::string(66, '1')}));
  const uint64_t bytes = static_cast<uint64_t>(hot_mib) << 20;
  const isa::Program p = traces::hot_part_bracket(traces::l2_probe(plain), bytes, 132, Dtype::F16,
                                                  traces::HotReread::FirstHalf, readers);
  machine.load(p, false, true);
  machine.run();
  const ChipSummary s = summarize_chip(*machine.chip(), p, machine.clock_ghz());
  return (static_cast<double>(s.dram_read.at(traces::kHotPartTensor)) - static_cast<double>(bytes)) /
         static_cast<double>(traces::hot_reread_bytes(p, traces::HotReread::FirstHalf));
}

struct SideRow {
  std::string hot_by, plain_by;  // A, B or all
  int plain_mib, hot_mib;
};

void PrintTo(const SideRow& r, std::ostream* os) {
  *os << "hot " << r.hot_mib << " MiB by " << r.hot_by << ", plain " << r.plain_mib << " by " << r.plain_by;
}

std::string side_row_name(const ::testing::TestParamInfo<SideRow>& info) {
  const SideRow& r = info.param;
  return fmt::format("hot{}_{}_plain{}_{}", r.hot_mib, r.hot_by, r.plain_mib, r.plain_by);
}

std::vector<SideRow> side_rows(const std::vector<std::pair<std::string, std::string>>& sides) {
  std::vector<SideRow> out;
  for (const auto& [hot_by, plain_by] : sides)
    for (const auto& [x, r] :
         std::vector<std::pair<int, int>>{{16, 24}, {24, 16}, {8, 32}, {16, 20}, {24, 12}})
      out.push_back({hot_by, plain_by, x, r});
  return out;
}

std::string swapped(const std::string& side) {
  return side == "A" ? "B" : side == "B" ? "A" : side;
}

// Where one buffer's readers sit on one side, the model loses what the GPU loses, within 0.08 on all 40
// rows (the largest misses: hot by A, plain by B, 24 / 12 MiB: 0.190 against 0.128 and 0.118; plain and hot
// by A, 16 / 20: 0.324 against 0.374): which side's lines and copies push the older buffer out is the
// model's. Each model row stands for two GPU rows, the sides swapped.
class HotBufferSides : public ::testing::TestWithParam<SideRow> {};

TEST_P(HotBufferSides, OneSidesReadersTakeTheRoomTheModelGivesThem) {
  const SideRow& row = GetParam();
  const auto gpu = measured_losses("h200_memeff_room_partitions.csv");
  const double lost = sided_loss(row.hot_by, row.plain_by, row.plain_mib, row.hot_mib);
  for (const auto& [hot_by, plain_by] :
       {std::pair{row.hot_by, row.plain_by}, std::pair{swapped(row.hot_by), swapped(row.plain_by)}}) {
    const double measured = gpu.at({fmt::format("plain_{}MiB_by{}_hot_by{}", row.plain_mib, plain_by, hot_by),
                                    row.hot_mib, "first_half"});
    std::printf("hot %d MiB by %s, plain %d MiB by %s: model %.4f, GPU %.4f\n", row.hot_mib, hot_by.c_str(),
                row.plain_mib, plain_by.c_str(), lost, measured);
    EXPECT_NEAR(lost, measured, 0.08) << hot_by << " " << plain_by;
  }
}

INSTANTIATE_TEST_SUITE_P(H200, HotBufferSides,
                         ::testing::ValuesIn(side_rows({{"all", "A"}, {"A", "A"}, {"A", "B"}, {"A", "all"}})),
                         side_row_name);

// Both buffers read by every SM: the GPU loses 1.3-2.3 times the model's share (its mean of two trials,
// h200_memeff_room_partitions_takes.csv, after a warm-up trial: a process's first profiled re-read reads
// high, 0.77 in both files against 0.19 after). Line by line, as the GPU's warps take them
// (validation/room_lines_trace.py), the model comes closer but still short (0.147, 0.204, 0.111, 0.038,
// 0.059 against 0.194, 0.288, 0.178, 0.049, 0.080), and a hashed set index overshoots (0.283, 0.331, 0.236,
// 0.108, 0.135): the GPU's knee is softer than the model's paired sets make it, whichever side reads.
class HotBufferBothSides : public ::testing::TestWithParam<SideRow> {};

TEST_P(HotBufferBothSides, LoseMoreOnTheGpu) {
  const SideRow& row = GetParam();
  const auto gpu = measured_losses("h200_memeff_room_partitions_takes.csv");
  const std::string name = fmt::format("plain_{}MiB_byall_hot_byall_take1_r", row.plain_mib);
  const double measured =
      (gpu.at({name + "1", row.hot_mib, "first_half"}) + gpu.at({name + "2", row.hot_mib, "first_half"})) / 2;
  const double lost = sided_loss("all", "all", row.plain_mib, row.hot_mib);
  std::printf("hot %d MiB, plain %d MiB, both by every SM: model %.4f, GPU %.4f\n", row.hot_mib,
              row.plain_mib, lost, measured);
  EXPECT_GT(lost / measured, 0.4);
  EXPECT_LT(lost / measured, 0.85);
}

INSTANTIATE_TEST_SUITE_P(H200, HotBufferBothSides, ::testing::ValuesIn(side_rows({{"all", "all"}})),
                         side_row_name);

}  // namespace
}  // namespace attnsim
