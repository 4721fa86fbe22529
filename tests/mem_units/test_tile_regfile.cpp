// TileRegisterFile: whole-register allocation, its error, port timing and the YAML factory.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "models/common/registry.h"
#include "models/regfile/tile_regfile.h"
#include "tests/mem_units/config_reader.h"

namespace attnsim {
namespace {

constexpr int64_t kCount = 8;
constexpr int64_t kWidth = 4096;
constexpr int64_t kReadPorts = 2;
constexpr int64_t kWritePorts = 1;

TileRegisterFile::Params small() {
  TileRegisterFile::Params p;
  p.count = kCount;
  p.width_bytes = kWidth;
  p.read_ports = kReadPorts;
  p.write_ports = kWritePorts;
  return p;
}

TEST(TileRegfile, BuffersGetWholeConsecutiveRegisters) {
  TileRegisterFile regs("vregs", small());
  constexpr uint64_t kAcc = 4 * kWidth;    // exactly 4 registers
  constexpr uint64_t kRowStat = 512;       // part of one register still takes a whole one
  constexpr uint64_t kSpill = kWidth + 1;  // one byte over: 2 registers
  const auto first = regs.allocate({{"acc", kAcc, {}}, {"m", kRowStat, {}}, {"x", kSpill, {}}}, "t.s");
  EXPECT_EQ(first, (std::vector<uint64_t>{0, 4, 5}));
  EXPECT_EQ(regs.registers_used, 4u + 1u + 2u);
  EXPECT_EQ(regs.buffer_count, 3u);
  EXPECT_DOUBLE_EQ(regs.stats().to_json()["occupancy"]["value"].get<double>(), 7.0 / kCount);
}

TEST(TileRegfile, RunningOutNamesEveryBuffer) {
  TileRegisterFile regs("vregs", small());
  constexpr uint64_t kAcc = 6 * kWidth;
  constexpr uint64_t kM = 100;
  constexpr uint64_t kL = 2 * kWidth;
  try {
    regs.allocate({{"acc", kAcc, {2, 1}}, {"m", kM, {3, 1}}, {"l", kL, {4, 1}}}, "t.s");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    // acc and m take 7 of 8 registers; l needs 2 more.
    EXPECT_EQ(e.message(),
              fmt::format("buffers need 9 registers of {} bytes but vregs.count is {}: acc {} (6 regs), "
                          "m {} (1 reg), l {} (2 regs)",
                          kWidth, kCount, kAcc, kM, kL));
    EXPECT_EQ(e.loc().line, 4);
  }
  EXPECT_EQ(regs.registers_used, 0u);
}

TEST(TileRegfile, AccessCyclesUseTheSidesPorts) {
  TileRegisterFile regs("vregs", small());
  constexpr uint64_t kBytes = 4 * kWidth;
  EXPECT_EQ(regs.access_cycles(kBytes, /*is_write=*/false), kBytes / (kWidth * kReadPorts));
  EXPECT_EQ(regs.access_cycles(kBytes, /*is_write=*/true), kBytes / (kWidth * kWritePorts));
  EXPECT_EQ(regs.access_cycles(kBytes + 1, false), kBytes / (kWidth * kReadPorts) + 1);
  EXPECT_EQ(regs.access_cycles(1, true), 1u);
  EXPECT_EQ(regs.access_cycles(0, true), 0u);
}

TEST(TileRegfile, FactoryRegistersVectorRegs) {
  register_tile_regfile_models();
  auto p = test::reader_for("type: vector_regs\ncount: 64\nwidth_bytes: 512\n", "vregs");
  auto regs = Registry<TileRegisterFile>::instance().create("vregs", p, "vector_regs", BuildContext{});
  p.finish();
  const TileRegisterFile::Params defaults;
  EXPECT_EQ(regs->params().count, 64);
  EXPECT_EQ(regs->params().width_bytes, 512);
  EXPECT_EQ(regs->params().read_ports, defaults.read_ports);
  EXPECT_EQ(regs->params().write_ports, defaults.write_ports);
}

TEST(TileRegfile, TrafficStats) {
  TileRegisterFile regs("vregs", small());
  regs.record_read(3 * kWidth);
  regs.record_write(kWidth);
  regs.set_elapsed(10);
  const auto stats = regs.stats().to_json();
  EXPECT_EQ(stats["bytes_read"]["value"], 3 * kWidth);
  EXPECT_EQ(stats["bytes_written"]["value"], kWidth);
  EXPECT_DOUBLE_EQ(stats["read_utilisation"]["value"].get<double>(),
                   3.0 * kWidth / (kWidth * kReadPorts * 10.0));
  EXPECT_DOUBLE_EQ(stats["write_utilisation"]["value"].get<double>(),
                   1.0 * kWidth / (kWidth * kWritePorts * 10.0));
}

}  // namespace
}  // namespace attnsim
