// Hbm component: preset + override params, tensor layout, the per-tensor ledger with sector rounding, and
// error translation. The timing itself is tested in tests/hbm against hbm_timing.h.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/common/registry.h"
#include "models/hbm/hbm.h"
#include "models/hbm/hbm_presets.h"
#include "tests/mem_units/config_reader.h"

namespace attnsim {
namespace {

constexpr double kClockGhz = 1.0;
constexpr uint32_t kChannels = 4;
constexpr uint64_t kChannelBytesPerCycle = 16;
constexpr uint64_t kSector = 32;
constexpr uint64_t kInterleave = 256;
constexpr uint64_t kLatencyNs = 100;
constexpr uint64_t kCapacity = 1ull << 20;

Hbm::Params small_params() {
  Hbm::Params p;
  p.preset = "custom";
  p.timing.capacity_bytes = kCapacity;
  p.timing.peak_bandwidth_gbps = kChannels * kChannelBytesPerCycle * kClockGhz;
  p.timing.channels = kChannels;
  p.timing.interleave_bytes = kInterleave;
  p.timing.access_granularity_bytes = kSector;
  p.timing.latency_ns = kLatencyNs;
  return p;
}

std::unique_ptr<Hbm> build(ParamReader& p) {
  register_hbm_models();
  BuildContext ctx;
  ctx.clock_ghz = 1.5;
  return Registry<Hbm>::instance().create("hbm", p, "hbm", ctx);
}

const ParamDoc& doc(const ParamReader& p, const std::string& key) {
  auto it = std::find_if(p.docs().begin(), p.docs().end(), [&](const ParamDoc& d) { return d.key == key; });
  if (it == p.docs().end()) throw std::runtime_error("no doc for " + key);
  return *it;
}

TEST(HbmComponent, DefaultIsTheH100Preset) {
  auto p = test::reader_for("", "hbm");
  auto hbm = build(p);
  p.finish();
  EXPECT_EQ(hbm->params().preset, "hbm3_h100_sxm_80gb");
  EXPECT_EQ(hbm->params().timing, hbm::hbm3_h100_sxm_80gb());
  EXPECT_EQ(Hbm::Params{}.timing, hbm::hbm3_h100_sxm_80gb());
  EXPECT_DOUBLE_EQ(hbm->timing().core_clock_ghz(), 1.5);  // from the BuildContext
}

TEST(HbmComponent, PresetFillsEveryField) {
  for (const hbm::HbmPreset& preset : hbm::hbm_presets()) {
    auto p = test::reader_for(fmt::format("type: hbm\npreset: {}\n", preset.name), "hbm");
    auto hbm = build(p);
    p.finish();
    EXPECT_EQ(hbm->params().preset, preset.name);
    EXPECT_EQ(hbm->params().timing, preset.params) << preset.name;
    EXPECT_EQ(hbm->timing().params(), preset.params) << preset.name;
  }
}

TEST(HbmComponent, SingleKeyOverridesOnlyThatField) {
  constexpr double kLatency = 250;
  auto p = test::reader_for(fmt::format("preset: hbm2_a100_40gb\nlatency_ns: {}\n", kLatency), "hbm");
  auto hbm = build(p);
  p.finish();
  hbm::HbmParams expected = hbm::hbm2_a100_40gb();
  expected.latency_ns = kLatency;
  EXPECT_EQ(hbm->params().timing, expected);
}

TEST(HbmComponent, BankKeysOverrideTheBankFields) {
  auto p =
      test::reader_for("preset: hbm3e_h200_141gb\nbank_mode: true\nt_rp_ns: 9\nrow_bytes: 2048\n", "hbm");
  auto hbm = build(p);
  p.finish();
  hbm::HbmParams expected = hbm::hbm3e_h200_141gb();
  expected.bank.enabled = true;
  expected.bank.t_rp_ns = 9;
  expected.bank.row_bytes = 2048;
  EXPECT_EQ(hbm->params().timing, expected);
}

TEST(HbmComponent, KeyDefaultsAreThePresetsValues) {
  auto p = test::reader_for("preset: hbm2_a100_40gb\n", "hbm");
  auto hbm = build(p);
  const hbm::HbmParams a100 = hbm::hbm2_a100_40gb();
  EXPECT_EQ(doc(p, "hbm.peak_bandwidth_gbps").default_value, fmt::format("{}", a100.peak_bandwidth_gbps));
  EXPECT_EQ(doc(p, "hbm.channels").default_value, fmt::format("{}", a100.channels));
  EXPECT_EQ(doc(p, "hbm.capacity_bytes").default_value, fmt::format("{}", a100.capacity_bytes));
  EXPECT_EQ(doc(p, "hbm.peak_bandwidth_gbps").unit, "GB/s");
  EXPECT_EQ(p.effective()["peak_bandwidth_gbps"], a100.peak_bandwidth_gbps);
}

TEST(HbmComponent, UnknownKeyIsRejectedByFinish) {
  auto p = test::reader_for("preset: hbm2_a100_40gb\nlatency: 250\n", "hbm");
  auto hbm = build(p);
  try {
    p.finish();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("hbm.latency: unknown key"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("latency_ns"), std::string::npos) << e.what();  // the known keys are listed
    EXPECT_EQ(e.loc().line, 2);
  }
}

TEST(HbmComponent, UnknownPresetListsTheKnownOnes) {
  auto p = test::reader_for("preset: hbm4_imaginary\n", "hbm");
  try {
    build(p);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    for (const hbm::HbmPreset& preset : hbm::hbm_presets())
      EXPECT_NE(e.message().find(std::string(preset.name)), std::string::npos) << e.what();
  }
}

TEST(HbmComponent, InconsistentOverrideIsAnInputError) {
  // The interleave must be a multiple of the 32-byte sector.
  auto p = test::reader_for("interleave_bytes: 48\n", "hbm");
  EXPECT_THROW(build(p), InputError);
}

TEST(HbmComponent, TensorsAreAlignedToTheInterleave) {
  Hbm hbm("hbm", small_params(), kClockGhz);
  constexpr uint64_t kA = 100;
  constexpr uint64_t kB = kInterleave;
  constexpr uint64_t kC = 1;
  const auto bases = hbm.allocate({"A", "B", "C"}, {kA, kB, kC}, "t.s");
  EXPECT_EQ(bases, (std::vector<uint64_t>{0, kInterleave, 2 * kInterleave}));
  EXPECT_EQ(hbm.tensor_names, (std::vector<std::string>{"A", "B", "C"}));
}

TEST(HbmComponent, TensorAlignmentAndFirstAddressPlaceTheTensors) {
  constexpr uint64_t kAlign = 4 * kInterleave;
  Hbm::Params params = small_params();
  params.tensor_alignment_bytes = kAlign;
  params.first_tensor_address = kInterleave + 1;  // rounded up to the alignment
  Hbm hbm("hbm", params, kClockGhz);
  const auto bases = hbm.allocate({"A", "B", "C"}, {kAlign + 1, 1, kAlign}, "t.s");
  EXPECT_EQ(bases, (std::vector<uint64_t>{kAlign, 3 * kAlign, 4 * kAlign}));
}

TEST(HbmComponent, LayoutKeysAreReadAndChecked) {
  auto p = test::reader_for("tensor_alignment_bytes: 2097152\nfirst_tensor_address: 38797312\n", "hbm");
  auto hbm = build(p);
  p.finish();
  EXPECT_EQ(hbm->params().tensor_alignment_bytes, 2097152u);
  EXPECT_EQ(hbm->params().first_tensor_address, 38797312u);
  EXPECT_EQ(doc(p, "hbm.tensor_alignment_bytes").unit, "bytes");
  auto odd = test::reader_for("tensor_alignment_bytes: 1000\n", "hbm");
  try {
    build(odd);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("hbm.tensor_alignment_bytes"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("not a multiple of interleave_bytes (256)"), std::string::npos) << e.what();
    EXPECT_EQ(e.loc().line, 1);
  }
}

TEST(HbmComponent, CapacityErrorNamesTensors) {
  Hbm hbm("hbm", small_params(), kClockGhz);
  constexpr uint64_t kHalf = kCapacity / 2;
  try {
    hbm.allocate({"Q", "K", "V"}, {kHalf, kHalf, kSector}, "attn.s");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(),
              fmt::format("tensors need {} bytes (each aligned to {} bytes) but hbm.capacity_bytes is "
                          "{}: Q {}, K {}, V {}",
                          2 * kHalf + kSector, kInterleave, kCapacity, kHalf, kHalf, kSector));
    EXPECT_EQ(e.file(), "attn.s");
  }
}

// Bytes moved for one row [offset, offset + bytes) once rounded out to sectors.
constexpr uint64_t sector_rounded(uint64_t offset, uint64_t bytes) {
  const uint64_t first = offset / kSector;
  const uint64_t end = (offset + bytes + kSector - 1) / kSector;
  return (end - first) * kSector;
}

TEST(HbmComponent, LedgerCountsRequestedAndSectorRoundedBytesPerTensor) {
  Hbm hbm("hbm", small_params(), kClockGhz);
  const auto bases = hbm.allocate({"Q", "K"}, {4096, 4096}, "t.s");
  // A 2-D slice of K: 4 rows of 40 bytes starting 16 bytes into each 256-byte row. Each row [16, 56) spans
  // sectors 0 and 1, so 64 bytes move per row; 40 is not a multiple of 32, so more moves than was asked.
  constexpr uint64_t kRows = 4;
  constexpr uint64_t kRowBytes = 40;
  constexpr uint64_t kOffset = 16;
  constexpr uint64_t kStride = 256;
  static_assert(kRowBytes % kSector != 0);
  constexpr uint64_t kPerRow = sector_rounded(kOffset, kRowBytes);
  static_assert(kPerRow == 2 * kSector);
  hbm.transfer2d(1, bases[1] + kOffset, kRows, kRowBytes, kStride, /*is_write=*/false, 0);

  EXPECT_EQ(hbm.bytes_read_per_tensor, (std::vector<uint64_t>{0, kRows * kRowBytes}));
  EXPECT_EQ(hbm.transferred_read_per_tensor, (std::vector<uint64_t>{0, kRows * kPerRow}));
  EXPECT_EQ(hbm.bytes_written_per_tensor, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(hbm.bytes_read, kRows * kRowBytes);
  EXPECT_EQ(hbm.transferred_read, kRows * kPerRow);

  // A store of Q rows that are exactly one sector each, aligned: nothing extra moves.
  constexpr uint64_t kStoreRows = 3;
  hbm.transfer2d(0, bases[0], kStoreRows, kSector, 2 * kSector, /*is_write=*/true, 0);
  EXPECT_EQ(hbm.bytes_written_per_tensor, (std::vector<uint64_t>{kStoreRows * kSector, 0}));
  EXPECT_EQ(hbm.transferred_written_per_tensor, (std::vector<uint64_t>{kStoreRows * kSector, 0}));

  const auto stats = hbm.stats().to_json();
  EXPECT_EQ(stats["transferred_read_per_tensor"]["value"]["K"], kRows * kPerRow);
  EXPECT_EQ(stats["bytes_read_per_tensor"]["value"]["K"], kRows * kRowBytes);
  EXPECT_EQ(stats["bytes_written"]["value"], kStoreRows * kSector);
  EXPECT_DOUBLE_EQ(
      stats["sector_efficiency"]["value"].get<double>(),
      double(kRows * kRowBytes + kStoreRows * kSector) / double(kRows * kPerRow + kStoreRows * kSector));
}

TEST(HbmComponent, AllocateResetsTheLedger) {
  Hbm hbm("hbm", small_params(), kClockGhz);
  hbm.allocate({"A"}, {1024}, "t.s");
  hbm.transfer2d(0, 0, 1, 1024, 1024, false, 0);
  ASSERT_EQ(hbm.bytes_read, 1024u);
  hbm.allocate({"A", "B"}, {1024, 1024}, "t.s");
  EXPECT_EQ(hbm.bytes_read, 0u);
  EXPECT_EQ(hbm.bytes_read_per_tensor, (std::vector<uint64_t>{0, 0}));
  // Channels are idle again: one sector at cycle 0 costs the burst plus the latency.
  EXPECT_EQ(hbm.transfer2d(1, 1024, 1, kSector, kSector, false, 0),
            kSector / kChannelBytesPerCycle + kLatencyNs * static_cast<uint64_t>(kClockGhz));
}

TEST(HbmComponent, AccessPastCapacityIsAnInputErrorNamingTheTensor) {
  Hbm hbm("hbm", small_params(), kClockGhz);
  hbm.allocate({"Q", "K"}, {1024, 1024}, "attn.s");
  try {
    hbm.transfer2d(1, kCapacity - kSector, 2, kSector, kSector, false, 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "attn.s");
    EXPECT_NE(e.message().find("load of tensor K"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("hbm.capacity_bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(hbm.bytes_read, 0u);  // nothing is charged for a rejected transfer
}

TEST(HbmComponent, ChipChannelsKeyIsReadAndChecked) {
  auto p = test::reader_for("chip_channels: hashed\n", "hbm");
  auto hbm = build(p);
  p.finish();
  EXPECT_EQ(hbm->params().chip_channels, Hbm::Params::ChipChannels::Hashed);
  auto plain = test::reader_for("", "hbm");
  EXPECT_EQ(build(plain)->params().chip_channels, Hbm::Params::ChipChannels::Pooled);
  auto bad = test::reader_for("chip_channels: striped\n", "hbm");
  try {
    build(bad);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("hbm.chip_channels"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("pooled | interleaved | hashed"), std::string::npos) << e.what();
  }
}

// Whole-chip timing (use_calendar): a request's completion, 256 bytes at cycle 0 on small_params' four
// channels of 16 bytes a cycle each (64 pooled), plus the 100-cycle latency.
TEST(HbmComponent, PerChannelCalendarsQueueOnlyRequestsOfOneChannel) {
  constexpr uint64_t kLatency = kLatencyNs * static_cast<uint64_t>(kClockGhz);
  constexpr uint64_t kOnOneChannel = kInterleave / kChannelBytesPerCycle;          // 16 cycles
  constexpr uint64_t kPooled = kInterleave / (kChannels * kChannelBytesPerCycle);  // 4 cycles
  const uint64_t same_channel = kChannels * kInterleave, other_channel = kInterleave;
  Hbm::Params params = small_params();
  params.chip_channels = Hbm::Params::ChipChannels::Interleaved;
  Hbm split("hbm", params, kClockGhz);
  split.use_calendar(64);
  split.allocate({"X"}, {64 * kInterleave}, "t.s");
  EXPECT_EQ(split.transfer2d(0, 0, 1, kInterleave, kInterleave, false, 0), kOnOneChannel + kLatency);
  EXPECT_EQ(split.transfer2d(0, same_channel, 1, kInterleave, kInterleave, false, 0),
            2 * kOnOneChannel + kLatency);
  EXPECT_EQ(split.transfer2d(0, other_channel, 1, kInterleave, kInterleave, false, 0),
            kOnOneChannel + kLatency);
  // One calendar over all channels: every request queues behind the ones before it, at four times the rate.
  Hbm pooled("hbm", small_params(), kClockGhz);
  pooled.use_calendar(64);
  pooled.allocate({"X"}, {64 * kInterleave}, "t.s");
  EXPECT_EQ(pooled.transfer2d(0, 0, 1, kInterleave, kInterleave, false, 0), kPooled + kLatency);
  EXPECT_EQ(pooled.transfer2d(0, same_channel, 1, kInterleave, kInterleave, false, 0),
            2 * kPooled + kLatency);
  EXPECT_EQ(pooled.transfer2d(0, other_channel, 1, kInterleave, kInterleave, false, 0),
            3 * kPooled + kLatency);
  // A request over all four channels is through when its last channel is.
  EXPECT_EQ(split.transfer2d(0, 8 * kInterleave, 1, kChannels * kInterleave, 0, false, 0),
            3 * kOnOneChannel + kLatency);  // channel 0 carries its third 256 bytes
  EXPECT_EQ(split.transferred_read, 3 * kInterleave + kChannels * kInterleave);
}

TEST(HbmComponent, HashedChannelsDealEachPassToEveryChannelInAnotherOrder) {
  Hbm::Params params = small_params();
  params.chip_channels = Hbm::Params::ChipChannels::Hashed;
  const Hbm hashed("hbm", params, kClockGhz);
  params.chip_channels = Hbm::Params::ChipChannels::Interleaved;
  const Hbm interleaved("hbm", params, kClockGhz);
  int reordered = 0;
  for (uint64_t pass = 0; pass < 64; ++pass) {
    std::vector<uint32_t> seen;
    bool same = true;
    for (uint64_t c = 0; c < kChannels; ++c) {
      const uint64_t addr = (pass * kChannels + c) * kInterleave + kSector;  // any byte of the unit
      seen.push_back(hashed.chip_channel_of(addr));
      same = same && seen.back() == interleaved.chip_channel_of(addr);
      EXPECT_EQ(interleaved.chip_channel_of(addr), c);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 3})) << "pass " << pass;  // a power of two: a permutation
    if (pass == 0) {
      EXPECT_TRUE(same);  // the first pass is the interleave itself
    }
    reordered += same ? 0 : 1;
  }
  EXPECT_GT(reordered, 32);
}

}  // namespace
}  // namespace attnsim
