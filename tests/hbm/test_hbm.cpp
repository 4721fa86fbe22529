#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "models/hbm/hbm_presets.h"
#include "models/hbm/hbm_timing.h"

namespace attnsim::hbm {

// Readable test names in ctest output instead of gtest's byte dumps.
void PrintTo(const HbmPreset& preset, std::ostream* os) {
  *os << preset.name;
}

namespace {

// A small configuration with round numbers so each expectation is a short formula of these names.
constexpr double kClockGhz = 1.0;
constexpr uint64_t kCyclesPerNs = 1;  // at kClockGhz
constexpr uint32_t kChannels = 4;
constexpr uint64_t kChannelBytesPerCycle = 16;
constexpr uint64_t kSector = 32;
constexpr uint64_t kInterleave = 256;
constexpr uint64_t kLatencyNs = 100;
constexpr uint64_t kCapacity = 1ull << 20;
constexpr uint64_t kIssue = 1000;
constexpr uint64_t kSmallBytes = 4;

constexpr uint64_t kLatencyCycles = kLatencyNs * kCyclesPerNs;
constexpr uint64_t kSectorCycles = kSector / kChannelBytesPerCycle;
static_assert(kSector % kChannelBytesPerCycle == 0, "keep the sector time a whole number of cycles");

HbmParams small_params() {
  HbmParams p;
  p.capacity_bytes = kCapacity;
  p.peak_bandwidth_gbps = kChannels * kChannelBytesPerCycle * kClockGhz;  // GB/s = bytes/cycle * GHz
  p.channels = kChannels;
  p.interleave_bytes = kInterleave;
  p.access_granularity_bytes = kSector;
  p.latency_ns = kLatencyNs;
  return p;
}

// Bank-mode configuration: one channel so addresses are channel-local, and distinct timings so a
// wrong sum cannot match by accident.
constexpr uint32_t kBanks = 4;
constexpr uint64_t kRowBytes = 1024;
constexpr uint64_t kTrcdNs = 14;
constexpr uint64_t kTrpNs = 12;
constexpr uint64_t kTclNs = 10;
constexpr uint64_t kTrcdCycles = kTrcdNs * kCyclesPerNs;
constexpr uint64_t kTrpCycles = kTrpNs * kCyclesPerNs;
constexpr uint64_t kTclCycles = kTclNs * kCyclesPerNs;

HbmParams bank_params() {
  HbmParams p = small_params();
  p.channels = 1;
  p.peak_bandwidth_gbps = kChannelBytesPerCycle * kClockGhz;
  p.bank.enabled = true;
  p.bank.banks_per_channel = kBanks;
  p.bank.row_bytes = kRowBytes;
  p.bank.t_rcd_ns = kTrcdNs;
  p.bank.t_rp_ns = kTrpNs;
  p.bank.t_cl_ns = kTclNs;
  return p;
}

// Bytes of [0, end) that interleaving gives `channel`: a slot per whole pass over the channels
// plus its clipped slot in the last partial pass.
uint64_t channel_share(const HbmParams& p, uint64_t end, uint32_t channel) {
  const uint64_t pass_bytes = p.interleave_bytes * p.channels;
  const uint64_t slot_begin = channel * p.interleave_bytes;
  const uint64_t partial = end % pass_bytes;
  const uint64_t in_partial = partial <= slot_begin ? 0 : std::min(partial - slot_begin, p.interleave_bytes);
  return end / pass_bytes * p.interleave_bytes + in_partial;
}

uint64_t total_transferred(const HbmTiming& hbm) {
  return hbm.bytes_read_transferred() + hbm.bytes_written_transferred();
}

TEST(HbmTiming, SingleSectorReadCostsLatencyPlusSectorTime) {
  HbmTiming hbm(small_params(), kClockGhz);
  EXPECT_DOUBLE_EQ(hbm.latency_cycles(), kLatencyCycles);
  EXPECT_DOUBLE_EQ(hbm.sector_transfer_cycles(), kSectorCycles);
  EXPECT_EQ(hbm.transfer(0, kSector, /*is_write=*/false, kIssue), kIssue + kLatencyCycles + kSectorCycles);
  EXPECT_EQ(hbm.reads(), 1u);
  EXPECT_EQ(hbm.bytes_read_transferred(), kSector);
}

TEST(HbmTiming, SubSectorReadTransfersWholeSector) {
  HbmTiming hbm(small_params(), kClockGhz);
  EXPECT_EQ(hbm.transfer(0, kSmallBytes, false, kIssue), kIssue + kLatencyCycles + kSectorCycles);
  EXPECT_EQ(hbm.bytes_read_requested(), kSmallBytes);
  EXPECT_EQ(hbm.bytes_read_transferred(), kSector);
}

TEST(HbmTiming, UnalignedReadIsRoundedOutAtBothEnds) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t straddling_addr = kSector - kSmallBytes / 2;  // half in each of two sectors
  const uint64_t sectors_touched = 2;
  EXPECT_EQ(hbm.transfer(straddling_addr, kSmallBytes, false, kIssue),
            kIssue + kLatencyCycles + sectors_touched * kSectorCycles);
  EXPECT_EQ(hbm.bytes_read_requested(), kSmallBytes);
  EXPECT_EQ(hbm.bytes_read_transferred(), sectors_touched * kSector);
}

TEST(HbmTiming, WritesAreCountedApartFromReads) {
  HbmTiming hbm(small_params(), kClockGhz);
  hbm.transfer(0, kSmallBytes, /*is_write=*/true, kIssue);
  EXPECT_EQ(hbm.writes(), 1u);
  EXPECT_EQ(hbm.reads(), 0u);
  EXPECT_EQ(hbm.bytes_written_requested(), kSmallBytes);
  EXPECT_EQ(hbm.bytes_written_transferred(), kSector);
  EXPECT_EQ(hbm.bytes_read_transferred(), 0u);
}

TEST(HbmTiming, ZeroByteTransferIsFree) {
  HbmTiming hbm(small_params(), kClockGhz);
  EXPECT_EQ(hbm.transfer(0, 0, false, kIssue), kIssue);
  EXPECT_EQ(hbm.reads(), 0u);
}

TEST(HbmTiming, AddressesInterleaveAcrossChannels) {
  HbmTiming hbm(small_params(), kClockGhz);
  for (uint64_t chunk = 0; chunk < 2 * kChannels; ++chunk) {
    EXPECT_EQ(hbm.channel_of(chunk * kInterleave), chunk % kChannels);
    EXPECT_EQ(hbm.channel_of(chunk * kInterleave + kInterleave - 1), chunk % kChannels);
  }
}

TEST(HbmTiming, LargeTransferSpreadsEvenlyOverChannels) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t passes = 8;
  const uint64_t bytes = passes * kChannels * kInterleave;
  const uint64_t per_channel_cycles = passes * kInterleave / kChannelBytesPerCycle;
  EXPECT_EQ(hbm.transfer(0, bytes, false, kIssue), kIssue + kLatencyCycles + per_channel_cycles);
  for (uint32_t channel = 0; channel < kChannels; ++channel) {
    EXPECT_DOUBLE_EQ(hbm.channel_busy_cycles(channel), per_channel_cycles);
  }
}

TEST(HbmTiming, RangeStartingMidChunkSplitsAtInterleaveBoundary) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t half_chunk = kInterleave / 2;
  hbm.transfer(half_chunk, kInterleave, false, kIssue);
  EXPECT_DOUBLE_EQ(hbm.channel_busy_cycles(0), static_cast<double>(half_chunk) / kChannelBytesPerCycle);
  EXPECT_DOUBLE_EQ(hbm.channel_busy_cycles(1), static_cast<double>(half_chunk) / kChannelBytesPerCycle);
  EXPECT_DOUBLE_EQ(hbm.channel_busy_cycles(2), 0.0);
}

// Independent arithmetic for where interleaving puts each byte, checked against the model for
// ranges of every shape: inside one chunk, across a few chunks, and across many passes.
TEST(HbmTiming, PerChannelBytesMatchInterleaveArithmetic) {
  constexpr uint64_t kRanges = 2000;
  constexpr uint64_t kSeed = 12345;
  for (const HbmParams& p : {small_params(), hbm3_h100_sxm_80gb()}) {
    const uint64_t pass_bytes = p.interleave_bytes * p.channels;
    std::mt19937_64 random(kSeed);
    std::uniform_int_distribution<uint64_t> addr_of(0, 4 * pass_bytes);
    std::uniform_int_distribution<uint64_t> size_of(1, 3 * pass_bytes);
    for (uint64_t i = 0; i < kRanges; ++i) {
      HbmTiming hbm(p, kClockGhz);
      const uint64_t addr = addr_of(random);
      const uint64_t bytes = size_of(random);
      hbm.transfer(addr, bytes, false, kIssue);
      const uint64_t begin = addr / p.access_granularity_bytes * p.access_granularity_bytes;
      const uint64_t end = (addr + bytes + p.access_granularity_bytes - 1) / p.access_granularity_bytes *
                           p.access_granularity_bytes;
      for (uint32_t channel = 0; channel < p.channels; ++channel) {
        const uint64_t expected = channel_share(p, end, channel) - channel_share(p, begin, channel);
        ASSERT_DOUBLE_EQ(hbm.channel_busy_cycles(channel) * hbm.channel_bytes_per_cycle(), expected)
            << "addr " << addr << " bytes " << bytes << " channel " << channel;
      }
    }
  }
}

TEST(HbmTiming, SameChannelTransfersQueueButOtherChannelsDoNot) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t same_channel_addr = kChannels * kInterleave;  // next pass, channel 0 again
  const uint64_t other_channel_addr = kInterleave;
  EXPECT_EQ(hbm.transfer(0, kSector, false, kIssue), kIssue + kLatencyCycles + kSectorCycles);
  EXPECT_EQ(hbm.transfer(same_channel_addr, kSector, false, kIssue),
            kIssue + kLatencyCycles + 2 * kSectorCycles);
  EXPECT_EQ(hbm.transfer(other_channel_addr, kSector, false, kIssue),
            kIssue + kLatencyCycles + kSectorCycles);
}

TEST(HbmTiming, LongStreamOfFractionalCycleTransfersHasNoRoundingDrift) {
  // 10 bytes/cycle over 3 channels: a sector takes 9.6 cycles on its channel, so rounding each
  // transfer to whole cycles would drift by 0.4 cycles per sector.
  constexpr uint32_t kDriftChannels = 3;
  constexpr uint64_t kDriftPeakBytesPerCycle = 10;
  constexpr uint64_t kDriftSectors = 100'000;
  HbmParams p = small_params();
  p.channels = kDriftChannels;
  p.peak_bandwidth_gbps = kDriftPeakBytesPerCycle * kClockGhz;
  p.capacity_bytes = kDriftSectors * kDriftChannels * kInterleave;
  HbmTiming hbm(p, kClockGhz);
  const uint64_t channel_zero_stride = kDriftChannels * kInterleave;
  uint64_t last = 0;
  for (uint64_t i = 0; i < kDriftSectors; ++i)
    last = hbm.transfer(i * channel_zero_stride, kSector, false, 0);
  const uint64_t scaled_bytes = kDriftSectors * kSector * kDriftChannels;  // bytes * channels
  const uint64_t exact_data_cycles = (scaled_bytes + kDriftPeakBytesPerCycle - 1) / kDriftPeakBytesPerCycle;
  EXPECT_EQ(last, kLatencyCycles + exact_data_cycles);
}

TEST(HbmTiming, NanosecondsConvertExactlyAtFractionalClock) {
  constexpr double kFractionalClockGhz = 1.98;
  constexpr double kOneNs = 1.0;
  HbmParams p = hbm3_h100_sxm_80gb();
  p.latency_ns = kOneNs;
  HbmTiming hbm(p, kFractionalClockGhz);
  EXPECT_DOUBLE_EQ(hbm.latency_cycles(), kOneNs * kFractionalClockGhz);
}

// Streams kStreamBytes in kTransferBytes pieces, keeping `window` transfers outstanding, and
// returns the achieved bytes/cycle from first issue to last completion.
double stream_bytes_per_cycle(HbmTiming& hbm, uint64_t stream_bytes, uint64_t transfer_bytes,
                              uint64_t window) {
  std::deque<uint64_t> outstanding;
  uint64_t now = 0;
  uint64_t last_completion = 0;
  for (uint64_t addr = 0; addr < stream_bytes; addr += transfer_bytes) {
    if (outstanding.size() == window) {
      now = std::max(now, outstanding.front());
      outstanding.pop_front();
    }
    const uint64_t completion = hbm.transfer(addr, transfer_bytes, false, now);
    outstanding.push_back(completion);
    last_completion = std::max(last_completion, completion);
  }
  return static_cast<double>(stream_bytes) / static_cast<double>(last_completion);
}

constexpr uint64_t kStreamBytes = 256ull << 20;
constexpr uint64_t kTileBytes = 64ull << 10;
constexpr double kStreamClockGhz = 1.5;  // any clock; it only sets the cycle unit
constexpr double kMinStreamingEfficiency = 0.95;

// Enough transfers in flight to cover the bandwidth-latency product, plus two for slack.
uint64_t covering_window(const HbmTiming& hbm, double extra_latency_cycles) {
  const double in_flight_bytes = (hbm.latency_cycles() + extra_latency_cycles) * hbm.peak_bytes_per_cycle();
  return static_cast<uint64_t>(std::ceil(in_flight_bytes / kTileBytes)) + 2;
}

class PresetTest : public testing::TestWithParam<HbmPreset> {};

TEST_P(PresetTest, StreamingReadReachesPeak) {
  HbmTiming hbm(GetParam().params, kStreamClockGhz);
  const double achieved = stream_bytes_per_cycle(hbm, kStreamBytes, kTileBytes, covering_window(hbm, 0));
  EXPECT_GE(achieved, kMinStreamingEfficiency * hbm.peak_bytes_per_cycle());
  EXPECT_DOUBLE_EQ(hbm.achieved_bytes_per_cycle(), achieved);
  EXPECT_EQ(hbm.bytes_read_transferred(), kStreamBytes);
}

TEST_P(PresetTest, StreamingReadInBankModeReachesPeak) {
  HbmParams p = GetParam().params;
  p.bank.enabled = true;
  HbmTiming hbm(p, kStreamClockGhz);
  const double row_conflict_cycles = (p.bank.t_rp_ns + p.bank.t_rcd_ns + p.bank.t_cl_ns) * kStreamClockGhz;
  const double achieved =
      stream_bytes_per_cycle(hbm, kStreamBytes, kTileBytes, covering_window(hbm, row_conflict_cycles));
  EXPECT_GE(achieved, kMinStreamingEfficiency * hbm.peak_bytes_per_cycle());
  // Sequential streaming opens each row of each channel's share exactly once.
  uint64_t rows_opened = 0;
  for (uint32_t channel = 0; channel < p.channels; ++channel) {
    rows_opened += (channel_share(p, kStreamBytes, channel) + p.bank.row_bytes - 1) / p.bank.row_bytes;
  }
  EXPECT_EQ(hbm.row_misses(), rows_opened);
}

TEST_P(PresetTest, PeakBytesPerCycleIsBandwidthOverClock) {
  const HbmPreset& preset = GetParam();
  HbmTiming hbm(preset.params, kStreamClockGhz);
  const double expected = preset.params.peak_bandwidth_gbps / kStreamClockGhz;
  constexpr double kDoubleRoundingTolerance = 1e-12;  // the model divides exact integers in double
  EXPECT_NEAR(hbm.peak_bytes_per_cycle(), expected, expected * kDoubleRoundingTolerance);
  EXPECT_EQ(preset.params.channels, preset.stacks * preset.pseudo_channels_per_stack);
}

INSTANTIATE_TEST_SUITE_P(AllPresets, PresetTest, testing::ValuesIn(hbm_presets()),
                         [](const testing::TestParamInfo<HbmPreset>& info) {
                           return std::string(info.param.name);
                         });

TEST(HbmTiming, SingleOutstandingTransferIsLatencyBound) {
  constexpr uint64_t kFewTransfersBytes = 64 * kTileBytes;
  HbmTiming hbm(hbm3_h100_sxm_80gb(), kStreamClockGhz);
  const double achieved = stream_bytes_per_cycle(hbm, kFewTransfersBytes, kTileBytes, /*window=*/1);
  const double per_transfer_floor_cycles = hbm.latency_cycles() + kTileBytes / hbm.peak_bytes_per_cycle();
  EXPECT_LE(achieved, kTileBytes / per_transfer_floor_cycles);
}

TEST(HbmPresets, NamesAreUniqueAndLookUp) {
  std::set<std::string_view> names;
  for (const HbmPreset& preset : hbm_presets()) {
    EXPECT_TRUE(names.insert(preset.name).second) << preset.name;
    EXPECT_EQ(&hbm_preset(preset.name), &preset);
  }
  EXPECT_THROW(hbm_preset("no_such_part"), std::invalid_argument);
}

TEST(HbmPresets, DefaultParamsAreTheH100Preset) {
  EXPECT_EQ(HbmParams{}, hbm3_h100_sxm_80gb());
}

TEST(HbmBankMode, RowHitAndMissLatenciesAreTheTimingSums) {
  HbmTiming hbm(bank_params(), kClockGhz);
  const uint64_t row0_bank0 = 0;
  const uint64_t row1_bank0 = kBanks * kRowBytes;  // rows rotate over banks, so this is bank 0 again
  const uint64_t closed_row = kIssue + kTrcdCycles + kTclCycles + kSectorCycles + kLatencyCycles;
  EXPECT_EQ(hbm.transfer(row0_bank0, kSector, false, kIssue), closed_row);

  const uint64_t hit_issue = closed_row;
  const uint64_t row_hit = hit_issue + kTclCycles + kSectorCycles + kLatencyCycles;
  EXPECT_EQ(hbm.transfer(row0_bank0 + kSector, kSector, false, hit_issue), row_hit);

  const uint64_t conflict_issue = row_hit;
  const uint64_t row_conflict =
      conflict_issue + kTrpCycles + kTrcdCycles + kTclCycles + kSectorCycles + kLatencyCycles;
  EXPECT_EQ(hbm.transfer(row1_bank0, kSector, false, conflict_issue), row_conflict);

  EXPECT_EQ(hbm.row_hits(), 1u);
  EXPECT_EQ(hbm.row_misses(), 2u);
  EXPECT_EQ(hbm.row_conflicts(), 1u);
}

TEST(HbmBankMode, OtherBanksActivateWhileTheBusIsBusy) {
  HbmTiming hbm(bank_params(), kClockGhz);
  const uint64_t bank0 = 0;
  const uint64_t bank1 = kRowBytes;
  const uint64_t first = kIssue + kTrcdCycles + kTclCycles + kSectorCycles + kLatencyCycles;
  EXPECT_EQ(hbm.transfer(bank0, kSector, false, kIssue), first);
  // Bank 1 activates in parallel, so it only waits for bank 0's data to clear the bus.
  EXPECT_EQ(hbm.transfer(bank1, kSector, false, kIssue), first + kSectorCycles);
}

TEST(HbmBankMode, SameBankConflictSerialisesBehindPreviousAccess) {
  HbmTiming hbm(bank_params(), kClockGhz);
  const uint64_t first_data_done = kIssue + kTrcdCycles + kTclCycles + kSectorCycles;
  EXPECT_EQ(hbm.transfer(0, kSector, false, kIssue), first_data_done + kLatencyCycles);
  EXPECT_EQ(hbm.transfer(kBanks * kRowBytes, kSector, false, kIssue),
            first_data_done + kTrpCycles + kTrcdCycles + kTclCycles + kSectorCycles + kLatencyCycles);
}

TEST(HbmCapacity, AccessPastCapacityThrowsOutOfRange) {
  HbmTiming hbm(small_params(), kClockGhz);
  EXPECT_NO_THROW(hbm.transfer(kCapacity - kSector, kSector, false, kIssue));
  EXPECT_THROW(hbm.transfer(kCapacity, kSmallBytes, false, kIssue), std::out_of_range);
  try {
    hbm.transfer(kCapacity - kSmallBytes, 2 * kSmallBytes, false, kIssue);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& error) {
    EXPECT_NE(std::string(error.what()).find("capacity_bytes"), std::string::npos) << error.what();
  }
  const uint64_t rows = 4;
  const uint64_t stride = kCapacity / (rows - 1);  // last row starts at capacity
  EXPECT_THROW(hbm.transfer2d(0, rows, kSector, stride, false, kIssue), std::out_of_range);
}

TEST(HbmTiming, InvalidParametersAreRejected) {
  HbmParams misaligned_interleave = small_params();
  misaligned_interleave.interleave_bytes = kSector + kSmallBytes;
  EXPECT_THROW(HbmTiming(misaligned_interleave, kClockGhz), std::invalid_argument);
  HbmParams no_channels = small_params();
  no_channels.channels = 0;
  EXPECT_THROW(HbmTiming(no_channels, kClockGhz), std::invalid_argument);
  EXPECT_THROW(HbmTiming(small_params(), 0.0), std::invalid_argument);
}

TEST(HbmTiming, ResetStatsKeepsChannelsBusy) {
  HbmTiming hbm(small_params(), kClockGhz);
  hbm.transfer(0, kSector, false, kIssue);
  hbm.reset_stats();
  EXPECT_EQ(hbm.reads(), 0u);
  EXPECT_EQ(hbm.bytes_read_transferred(), 0u);
  EXPECT_DOUBLE_EQ(hbm.channel_busy_cycles(0), 0.0);
  EXPECT_EQ(hbm.transfer(0, kSector, false, kIssue), kIssue + kLatencyCycles + 2 * kSectorCycles);
}

TEST(HbmTransfer2d, PartialSectorRowsAreRoundedOutPerRow) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t rows = 8;
  const uint64_t row_bytes = kSector + kSmallBytes;  // spills into a second sector
  const uint64_t stride = kInterleave;
  const uint64_t sectors_per_row = (row_bytes + kSector - 1) / kSector;
  hbm.transfer2d(0, rows, row_bytes, stride, false, kIssue);
  EXPECT_EQ(hbm.bytes_read_requested(), rows * row_bytes);
  EXPECT_EQ(hbm.bytes_read_transferred(), rows * sectors_per_row * kSector);
}

TEST(HbmTransfer2d, ContiguousRowsAreOneRange) {
  HbmTiming rows_model(small_params(), kClockGhz);
  HbmTiming range_model(small_params(), kClockGhz);
  const uint64_t rows = 16;
  const uint64_t row_bytes = kSector + kSmallBytes;
  EXPECT_EQ(rows_model.transfer2d(0, rows, row_bytes, row_bytes, false, kIssue),
            range_model.transfer(0, rows * row_bytes, false, kIssue));
  EXPECT_EQ(total_transferred(rows_model), total_transferred(range_model));
}

TEST(HbmTransfer2d, ChannelsItDoesNotTouchStayIdle) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t rows = 8;
  const uint64_t channel_zero_stride = kChannels * kInterleave;
  hbm.transfer2d(0, rows, kSector, channel_zero_stride, false, kIssue);
  // Calls may come out of issue order: an earlier request to another channel must not wait.
  const uint64_t earlier_issue = 0;
  EXPECT_EQ(hbm.transfer(kInterleave, kSector, false, earlier_issue),
            earlier_issue + kLatencyCycles + kSectorCycles);
}

TEST(HbmTransfer2d, OverlappingRowsAreRejected) {
  HbmTiming hbm(small_params(), kClockGhz);
  const uint64_t rows = 2;
  EXPECT_THROW(hbm.transfer2d(0, rows, kSector, kSector / 2, false, kIssue), std::invalid_argument);
}

}  // namespace

struct StridedCase {
  const char* name;
  HbmParams params;
  double clock_ghz;
  uint64_t addr;
  uint64_t rows;
  uint64_t row_bytes;
  uint64_t stride;
};

void PrintTo(const StridedCase& c, std::ostream* os) {
  *os << c.name;
}

namespace {

class StridedTest : public testing::TestWithParam<StridedCase> {};

// transfer2d must time and count exactly like issuing each row as its own transfer.
TEST_P(StridedTest, MatchesOneTransferPerRow) {
  const StridedCase& c = GetParam();
  HbmTiming strided(c.params, c.clock_ghz);
  HbmTiming per_row(c.params, c.clock_ghz);
  // A first transfer so channels start unevenly busy.
  strided.transfer(0, kTileBytes / 2, false, kIssue);
  per_row.transfer(0, kTileBytes / 2, false, kIssue);
  const uint64_t strided_done = strided.transfer2d(c.addr, c.rows, c.row_bytes, c.stride, false, kIssue);
  uint64_t per_row_done = kIssue;
  for (uint64_t row = 0; row < c.rows; ++row) {
    per_row_done =
        std::max(per_row_done, per_row.transfer(c.addr + row * c.stride, c.row_bytes, false, kIssue));
  }
  EXPECT_EQ(strided_done, per_row_done);
  EXPECT_EQ(strided.bytes_read_transferred(), per_row.bytes_read_transferred());
  for (uint32_t channel = 0; channel < c.params.channels; ++channel) {
    EXPECT_DOUBLE_EQ(strided.channel_busy_cycles(channel), per_row.channel_busy_cycles(channel)) << channel;
  }
  EXPECT_EQ(strided.row_hits(), per_row.row_hits());
}

HbmParams with_bank_mode(HbmParams p) {
  p.bank.enabled = true;
  return p;
}

// Misaligned starts and strides that are not multiples of the interleave exercise the per-row
// rounding and the wrap-around of channel slots.
constexpr uint64_t kOddAddr = 3 * kSector + kSmallBytes;
constexpr uint64_t kOddStride = 1000;
constexpr uint64_t kOddRows = 37;  // rows * stride spans many interleave passes of small_params()
constexpr uint64_t kOddRowBytes = 3 * kSector;
constexpr uint64_t kManyRows = 300;
constexpr uint64_t kRaggedRowBytes = 5 * kSector + 1;  // spills one byte into a sixth sector
constexpr uint64_t kRaggedStride = 7 * kInterleave + kSector;
// A 64 x 64 bf16 tile of a row-major 4096-wide bf16 matrix.
constexpr uint64_t kBf16Bytes = 2;
constexpr uint64_t kTileRows = 64;
constexpr uint64_t kTileRowBytes = 64 * kBf16Bytes;
constexpr uint64_t kMatrixRowBytes = 4096 * kBf16Bytes;

INSTANTIATE_TEST_SUITE_P(
    Cases, StridedTest,
    testing::Values(
        StridedCase{"small_odd", small_params(), kClockGhz, kOddAddr, kOddRows, kOddRowBytes, kOddStride},
        StridedCase{"small_odd_bank", bank_params(), kClockGhz, kOddAddr, kOddRows, kOddRowBytes, kOddStride},
        StridedCase{"h100_tile", hbm3_h100_sxm_80gb(), kStreamClockGhz, kMatrixRowBytes, kTileRows,
                    kTileRowBytes, kMatrixRowBytes},
        StridedCase{"h100_tile_bank", with_bank_mode(hbm3_h100_sxm_80gb()), kStreamClockGhz, kMatrixRowBytes,
                    kTileRows, kTileRowBytes, kMatrixRowBytes},
        StridedCase{"h200_odd", hbm3e_h200_141gb(), kStreamClockGhz, kOddAddr, kManyRows, kRaggedRowBytes,
                    kRaggedStride}),
    [](const testing::TestParamInfo<StridedCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnsim::hbm
