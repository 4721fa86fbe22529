// Sram: static buffer layout, the over-capacity error, port timing and the YAML factory.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "models/common/registry.h"
#include "models/sram/sram.h"
#include "tests/mem_units/config_reader.h"

namespace attnsim {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kCapacity = 228 * kKiB;  // H100 shared memory per SM
constexpr uint64_t kTile = 16 * kKiB;       // a 64 x 64 fp32 Q/K/V/O tile
constexpr uint64_t kScores = 64 * kKiB;     // a 128 x 128 fp32 score tile
constexpr uint64_t kAlign = 128;

Sram::Params params_with(uint64_t capacity, uint64_t alignment) {
  Sram::Params p;
  p.capacity_bytes = capacity;
  p.alignment_bytes = alignment;
  return p;
}

TEST(Sram, OverCapacityErrorNamesEveryBufferTotalAndCapacity) {
  Sram sram("sram", params_with(kCapacity, kAlign));
  // Sizes are multiples of the alignment, so the total is their plain sum. dP is the first that does not
  // fit: Qi..P take 3 tiles + 2 score tiles = 176 KiB, dP would end at 240 KiB > 228 KiB.
  const std::vector<BufferRequest> buffers = {
      {"Qi", kTile, {3, 1}},  {"Kj", kTile, {4, 1}},   {"Vj", kTile, {5, 1}}, {"S", kScores, {6, 1}},
      {"P", kScores, {7, 1}}, {"dP", kScores, {8, 1}}, {"Oi", kTile, {9, 1}},
  };
  const uint64_t total = 4 * kTile + 3 * kScores;
  ASSERT_GT(total, kCapacity);
  try {
    sram.allocate(buffers, "attn.s");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(),
              fmt::format("buffers need {} bytes but sram.capacity_bytes is {}: Qi {}, Kj {}, Vj {}, "
                          "S {}, P {}, dP {}, Oi {}",
                          total, kCapacity, kTile, kTile, kTile, kScores, kScores, kScores, kTile));
    EXPECT_EQ(e.file(), "attn.s");
    EXPECT_EQ(e.loc().line, 8);  // dP's .buffer line
  }
  // A failed allocation leaves nothing allocated.
  EXPECT_EQ(sram.allocated_bytes, 0u);
  EXPECT_EQ(sram.buffer_count, 0u);
}

TEST(Sram, ExactFitIsAccepted) {
  Sram sram("sram", params_with(2 * kTile, kAlign));
  const auto offsets = sram.allocate({{"A", kTile, {}}, {"B", kTile, {}}}, "t.s");
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, kTile}));
  EXPECT_EQ(sram.allocated_bytes, 2 * kTile);
  EXPECT_EQ(sram.peak_occupancy_bytes, 2 * kTile);
}

TEST(Sram, BuffersStartAlignedAndPaddingCounts) {
  Sram sram("sram", params_with(kCapacity, kAlign));
  constexpr uint64_t kOdd = 100;  // < one alignment unit
  constexpr uint64_t kByte = 1;
  constexpr uint64_t kWhole = kAlign;
  constexpr uint64_t kLast = 5;
  const auto offsets = sram.allocate(
      {{"a", kOdd, {}}, {"b", kByte, {}}, {"c", kWhole, {}}, {"empty", 0, {}}, {"d", kLast, {}}}, "t.s");
  // Each start rounds the previous end up to the alignment; an empty buffer takes no space.
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, kAlign, 2 * kAlign, 3 * kAlign, 3 * kAlign}));
  for (uint64_t offset : offsets) EXPECT_EQ(offset % kAlign, 0u);
  EXPECT_EQ(sram.allocated_bytes, 3 * kAlign + kLast);
  EXPECT_EQ(sram.peak_occupancy_bytes, sram.allocated_bytes);
  EXPECT_EQ(sram.buffer_count, 5u);
}

TEST(Sram, PaddingThatOverflowsIsReportedWithTheAlignment) {
  // Two 100-byte buffers fit in 256 bytes packed but not at 256-byte alignment (the second ends at 356).
  constexpr uint64_t kCap = 256;
  constexpr uint64_t kBig = 256;
  constexpr uint64_t kSize = 100;
  Sram sram("sram", params_with(kCap, kBig));
  try {
    sram.allocate({{"x", kSize, {1, 1}}, {"y", kSize, {2, 1}}}, "t.s");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(),
              fmt::format("buffers need {} bytes (with {}-byte alignment) but sram.capacity_bytes is "
                          "{}: x {}, y {}",
                          kBig + kSize, kBig, kCap, kSize, kSize));
    EXPECT_EQ(e.loc().line, 2);
  }
}

TEST(Sram, AccessCyclesRoundUpPerPort) {
  Sram::Params p;
  p.bytes_per_cycle = 128;
  p.ports = 4;  // access_cycles is per port: more ports do not shorten one access
  Sram sram("sram", p);
  EXPECT_EQ(sram.access_cycles(0), 0u);
  EXPECT_EQ(sram.access_cycles(1), 1u);
  EXPECT_EQ(sram.access_cycles(128), 1u);
  EXPECT_EQ(sram.access_cycles(129), 2u);
  EXPECT_EQ(sram.access_cycles(64 * kKiB), 64 * kKiB / 128);
}

TEST(Sram, FractionalBytesPerCycle) {
  Sram::Params p;
  p.bytes_per_cycle = 0.5;
  Sram sram("sram", p);
  EXPECT_EQ(sram.access_cycles(3), 6u);
  Sram::Params q;
  q.bytes_per_cycle = 48.0;  // 96 bytes is exactly 2 cycles; 97 needs a third
  Sram sram2("sram2", q);
  EXPECT_EQ(sram2.access_cycles(96), 2u);
  EXPECT_EQ(sram2.access_cycles(97), 3u);
}

TEST(Sram, BandwidthFormulasUseElapsedAndPorts) {
  Sram::Params p;
  p.ports = 2;
  p.bytes_per_cycle = 64;
  Sram sram("sram", p);
  constexpr uint64_t kRead = 3000;
  constexpr uint64_t kWritten = 1000;
  constexpr uint64_t kElapsed = 100;
  sram.record_read(kRead);
  sram.record_write(kWritten);
  sram.set_elapsed(kElapsed);
  const auto stats = sram.stats().to_json();
  EXPECT_EQ(stats["bytes_read"]["value"], kRead);
  EXPECT_EQ(stats["bytes_written"]["value"], kWritten);
  EXPECT_DOUBLE_EQ(stats["average_bytes_per_cycle"]["value"].get<double>(),
                   double(kRead + kWritten) / kElapsed);
  EXPECT_DOUBLE_EQ(stats["bandwidth_utilisation"]["value"].get<double>(),
                   double(kRead + kWritten) / (2 * 64.0 * kElapsed));
  EXPECT_EQ(stats["bytes_read"]["unit"], "bytes");
}

TEST(Sram, FactoryReadsTypedParamsWithDefaults) {
  register_sram_models();
  auto p = test::reader_for("type: scratchpad\ncapacity_bytes: 4096\nports: 2\n", "sram");
  auto sram = Registry<Sram>::instance().create("sram", p, "scratchpad", BuildContext{});
  p.finish();
  const Sram::Params defaults;
  EXPECT_EQ(sram->params().capacity_bytes, 4096u);
  EXPECT_EQ(sram->params().ports, 2);
  EXPECT_EQ(sram->params().bytes_per_cycle, defaults.bytes_per_cycle);
  EXPECT_EQ(sram->params().alignment_bytes, defaults.alignment_bytes);
  EXPECT_EQ(sram->params().banks, defaults.banks);
  for (const ParamDoc& doc : p.docs()) {
    EXPECT_FALSE(doc.description.empty()) << doc.key;
    EXPECT_FALSE(doc.unit.empty()) << doc.key;
  }
}

TEST(Sram, FactoryRejectsNonPositiveBandwidth) {
  register_sram_models();
  auto p = test::reader_for("bytes_per_cycle: 0\n", "sram");
  EXPECT_THROW(Registry<Sram>::instance().create("sram", p, "scratchpad", BuildContext{}), InputError);
}

}  // namespace
}  // namespace attnsim
