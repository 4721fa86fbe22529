// DmaEngine: setup + HBM/SRAM timing of one transfer, the queue limit, busy-cycle accounting and the
// bandwidth a long stream reaches.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "models/common/registry.h"
#include "models/dma/dma.h"
#include "models/hbm/hbm.h"
#include "models/hbm/hbm_presets.h"
#include "models/sram/sram.h"
#include "tests/mem_units/config_reader.h"

namespace attnsim {
namespace {

// A small HBM with round numbers: 4 channels of 16 bytes/cycle at 1 GHz, 100 ns (= 100 cycles) latency.
constexpr double kClockGhz = 1.0;
constexpr uint32_t kChannels = 4;
constexpr uint64_t kChannelBytesPerCycle = 16;
constexpr uint64_t kSector = 32;
constexpr uint64_t kInterleave = 256;
constexpr uint64_t kLatencyCycles = 100;  // latency_ns at 1 GHz
constexpr uint64_t kSetup = 7;
constexpr uint64_t kSramBytesPerCycle = 128;

// One interleave chunk on every channel: the transfer splits evenly and takes chunk / rate on each.
constexpr uint64_t kTile = kChannels * kInterleave;
constexpr uint64_t kTileDataCycles = kInterleave / kChannelBytesPerCycle;
constexpr uint64_t kTileCycles = kSetup + kTileDataCycles + kLatencyCycles;  // the single-transfer time
static_assert(kTile / kSramBytesPerCycle < kTileDataCycles + kLatencyCycles, "HBM must be the slower side");

Hbm::Params small_hbm() {
  Hbm::Params p;
  p.preset = "custom";
  p.timing.capacity_bytes = 1ull << 20;
  p.timing.peak_bandwidth_gbps = kChannels * kChannelBytesPerCycle * kClockGhz;
  p.timing.channels = kChannels;
  p.timing.interleave_bytes = kInterleave;
  p.timing.access_granularity_bytes = kSector;
  p.timing.latency_ns = static_cast<double>(kLatencyCycles) / kClockGhz;
  return p;
}

Sram::Params sram_params(double bytes_per_cycle) {
  Sram::Params p;
  p.bytes_per_cycle = bytes_per_cycle;
  return p;
}

DmaEngine::Params dma_params(int64_t depth, int64_t setup) {
  DmaEngine::Params p;
  p.queue_depth = depth;
  p.setup_cycles = setup;
  return p;
}

DmaEngine::Transfer load(uint64_t addr, uint64_t bytes) {
  DmaEngine::Transfer t;
  t.tensor = 0;
  t.addr = addr;
  t.rows = 1;
  t.row_bytes = bytes;
  t.stride_bytes = bytes;
  return t;
}

struct Rig {
  Hbm hbm{"hbm", small_hbm(), kClockGhz};
  Sram sram{"sram", sram_params(kSramBytesPerCycle)};
  DmaEngine dma;
  explicit Rig(int64_t depth, int64_t setup = kSetup) : dma("dma", dma_params(depth, setup)) {
    hbm.allocate({"T"}, {64 * kTile}, "t.s");
  }
};

TEST(Dma, SingleLoadCompletesAfterSetupAndHbmTime) {
  Rig rig(8);
  constexpr uint64_t kReady = 40;
  const auto t = rig.dma.submit(kReady, load(0, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(t.start, kReady);
  EXPECT_EQ(t.done, kReady + kTileCycles);
  EXPECT_EQ(rig.dma.transfers, 1u);
  EXPECT_EQ(rig.dma.bytes_loaded, kTile);
  EXPECT_EQ(rig.sram.bytes_written, kTile);  // a load writes SRAM
  EXPECT_EQ(rig.sram.bytes_read, 0u);
  EXPECT_EQ(rig.hbm.bytes_read_per_tensor[0], kTile);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, 0u);
}

TEST(Dma, SlowSramSideDecidesCompletion) {
  constexpr double kSlowSram = 2;  // 1024 bytes take 512 cycles, more than the HBM side's 116
  static_assert(kTile / 2 > kTileDataCycles + kLatencyCycles);
  Hbm hbm("hbm", small_hbm(), kClockGhz);
  hbm.allocate({"T"}, {kTile}, "t.s");
  Sram sram("sram", sram_params(kSlowSram));
  DmaEngine dma("dma", dma_params(8, kSetup));
  DmaEngine::Transfer store = load(0, kTile);
  store.is_write = true;
  const auto t = dma.submit(0, store, hbm, sram);
  EXPECT_EQ(t.done, kSetup + kTile / 2);
  EXPECT_EQ(dma.bytes_stored, kTile);
  EXPECT_EQ(sram.bytes_read, kTile);  // a store reads SRAM
  EXPECT_EQ(hbm.bytes_written_per_tensor[0], kTile);
}

// STORE_ADD's transfer: the tile read and then written back, both issued at the start, in one queue slot.
// On every channel the write's data follows the read's and the two latencies overlap, so it takes one
// tile's data time more than a store. The SRAM tile is read once and never written.
TEST(Dma, AccumulateReadsThenWritesTheTileInOneSlot) {
  Rig rig(1);
  constexpr uint64_t kReady = 40;
  const auto t = rig.dma.submit_accumulate(kReady, load(0, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(t.start, kReady);
  EXPECT_EQ(t.done, kReady + kSetup + 2 * kTileDataCycles + kLatencyCycles);
  EXPECT_EQ(rig.dma.transfers, 1u);
  EXPECT_EQ(rig.dma.bytes_loaded, kTile);
  EXPECT_EQ(rig.dma.bytes_stored, kTile);
  EXPECT_EQ(rig.sram.bytes_read, kTile);
  EXPECT_EQ(rig.sram.bytes_written, 0u);
  EXPECT_EQ(rig.hbm.bytes_read_per_tensor[0], kTile);
  EXPECT_EQ(rig.hbm.bytes_written_per_tensor[0], kTile);
  // One slot: a load behind it in the depth-1 queue starts when it is done.
  const auto next = rig.dma.submit(kReady, load(kTile, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(next.start, t.done);
}

TEST(Dma, QueueDepthOneSerialisesTwoLoads) {
  Rig rig(1);
  const auto a = rig.dma.submit(0, load(0, kTile), rig.hbm, rig.sram);
  const auto b = rig.dma.submit(0, load(kTile, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(a.done, kTileCycles);
  EXPECT_EQ(b.start, a.done);  // waits for the only slot
  EXPECT_EQ(b.done, 2 * kTileCycles);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, kTileCycles);
  EXPECT_EQ(rig.dma.busy_cycles, 2 * kTileCycles);
}

TEST(Dma, DeepQueueOverlapsTwoLoads) {
  Rig rig(8);
  const auto a = rig.dma.submit(0, load(0, kTile), rig.hbm, rig.sram);
  const auto b = rig.dma.submit(0, load(kTile, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(b.start, 0u);
  EXPECT_EQ(a.done, kTileCycles);
  // Both use every channel, so b's data follows a's on each channel; the latencies overlap.
  EXPECT_EQ(b.done, kSetup + 2 * kTileDataCycles + kLatencyCycles);
  EXPECT_LT(b.done, 2 * kTileCycles);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, 0u);
}

TEST(Dma, FullQueueWaitsForTheEarliestCompletionNotTheOldest) {
  Rig rig(2, 0);
  // A spans channels 0-2; B is one sector on idle channel 3, so B finishes first though submitted second.
  constexpr uint64_t kLong = 3 * kInterleave;
  const auto a = rig.dma.submit(0, load(0, kLong), rig.hbm, rig.sram);
  const auto b = rig.dma.submit(0, load(kLong, kSector), rig.hbm, rig.sram);
  EXPECT_EQ(a.done, kInterleave / kChannelBytesPerCycle + kLatencyCycles);
  EXPECT_EQ(b.done, kSector / kChannelBytesPerCycle + kLatencyCycles);
  const auto c = rig.dma.submit(0, load(4 * kInterleave, kSector), rig.hbm, rig.sram);
  EXPECT_EQ(c.start, b.done);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, b.done);
}

TEST(Dma, CompletedTransfersFreeTheirSlots) {
  Rig rig(1);
  const auto a = rig.dma.submit(0, load(0, kTile), rig.hbm, rig.sram);
  const auto b = rig.dma.submit(a.done, load(kTile, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(b.start, a.done);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, 0u);
}

// Transfers of one chunk on different channels do not interact, so each takes kChunkCycles.
constexpr uint64_t kChunkCycles = kSetup + kInterleave / kChannelBytesPerCycle + kLatencyCycles;

TEST(Dma, OverlappingTransfersAreBusyOnce) {
  Rig rig(8);
  rig.dma.submit(0, load(0, kInterleave), rig.hbm, rig.sram);            // channel 0
  rig.dma.submit(0, load(kInterleave, kInterleave), rig.hbm, rig.sram);  // channel 1
  EXPECT_EQ(rig.dma.busy_cycles, kChunkCycles);
  constexpr uint64_t kLater = 50;  // partly overlapping: adds only the part past the first two
  static_assert(kLater < kChunkCycles);
  rig.dma.submit(kLater, load(2 * kInterleave, kInterleave), rig.hbm, rig.sram);  // channel 2
  EXPECT_EQ(rig.dma.busy_cycles, kLater + kChunkCycles);
  constexpr uint64_t kAfterGap = 1000;  // idle gap: not counted
  rig.dma.submit(kAfterGap, load(3 * kInterleave, kInterleave), rig.hbm, rig.sram);
  EXPECT_EQ(rig.dma.busy_cycles, kLater + 2 * kChunkCycles);

  constexpr uint64_t kElapsed = 2000;
  rig.dma.set_elapsed(kElapsed);
  EXPECT_DOUBLE_EQ(rig.dma.stats().to_json()["utilisation"]["value"].get<double>(),
                   double(kLater + 2 * kChunkCycles) / kElapsed);
}

TEST(Dma, ResetClearsQueueAndStats) {
  Rig rig(1);
  rig.dma.submit(0, load(0, kTile), rig.hbm, rig.sram);
  rig.dma.reset();
  EXPECT_EQ(rig.dma.transfers, 0u);
  EXPECT_EQ(rig.dma.busy_cycles, 0u);
  // The slot is free again: a submit at 0 does not wait (the HBM channels still are busy, though).
  const auto b = rig.dma.submit(0, load(kTile, kTile), rig.hbm, rig.sram);
  EXPECT_EQ(b.start, 0u);
  EXPECT_EQ(rig.dma.queue_full_stall_cycles, 0u);
}

// A long stream on the H100 preset. Little's law: to keep the channels busy the queue must hold
// bandwidth x latency bytes; the stream must also be long enough that the one exposed latency is small.
constexpr double kH100ClockGhz = 1.98;
constexpr uint64_t kStreamBytes = 64 * 1024;

struct Stream {
  uint64_t first_start = 0;
  uint64_t last_done = 0;
  uint64_t bytes = 0;
};

Stream run_stream(Hbm& hbm, DmaEngine& dma, Sram& sram, uint64_t transfers) {
  hbm.allocate({"K"}, {transfers * kStreamBytes}, "t.s");
  Stream s;
  for (uint64_t i = 0; i < transfers; ++i) {
    const auto t = dma.submit(0, load(i * kStreamBytes, kStreamBytes), hbm, sram);
    if (i == 0) s.first_start = t.start;
    s.last_done = std::max(s.last_done, t.done);
    s.bytes += kStreamBytes;
  }
  return s;
}

TEST(Dma, LongStreamReachesPeakHbmBandwidth) {
  const hbm::HbmParams h100 = hbm::hbm3_h100_sxm_80gb();
  const double bytes_per_ns = h100.peak_bandwidth_gbps;  // GB/s = bytes/ns
  const double in_flight_bytes = bytes_per_ns * h100.latency_ns;
  const int64_t depth = 2 * static_cast<int64_t>(std::ceil(in_flight_bytes / kStreamBytes) + 1);
  // Time >= latency + N * bytes / peak, so 95% needs N * bytes / peak >= 19 * latency.
  constexpr double kTarget = 0.95;
  const double min_transfers = kTarget / (1 - kTarget) * in_flight_bytes / kStreamBytes;
  constexpr uint64_t kTransfers = 1024;
  ASSERT_GT(kTransfers, 1.5 * min_transfers);

  Hbm::Params hp;
  hp.preset = "hbm3_h100_sxm_80gb";
  hp.timing = h100;
  Hbm hbm("hbm", hp, kH100ClockGhz);
  // An SRAM port that can absorb the stream (SRAM port contention is not modelled, so this only keeps the
  // test honest about what it shows).
  Sram sram("sram", sram_params(std::ceil(h100.peak_bandwidth_gbps / kH100ClockGhz)));
  DmaEngine dma("dma", dma_params(depth, 0));
  const Stream s = run_stream(hbm, dma, sram, kTransfers);

  const double gbps =
      static_cast<double>(s.bytes) / static_cast<double>(s.last_done - s.first_start) * kH100ClockGhz;
  EXPECT_GE(gbps, kTarget * h100.peak_bandwidth_gbps);
  EXPECT_LE(gbps, h100.peak_bandwidth_gbps * (1 + 1e-9));
  const auto stats = hbm.stats().to_json();
  EXPECT_NEAR(stats["achieved_bandwidth_gbps"]["value"].get<double>(), gbps, 1e-9 * gbps);
  EXPECT_NEAR(stats["peak_bandwidth_fraction"]["value"].get<double>(), gbps / h100.peak_bandwidth_gbps, 1e-9);
  EXPECT_EQ(stats["transferred_read"]["value"], s.bytes);  // 64 KiB aligned: no sector overhead
}

TEST(Dma, ShallowQueueIsLatencyBound) {
  // With `depth` slots, each held at least one latency, at most depth * bytes move per latency.
  const hbm::HbmParams h100 = hbm::hbm3_h100_sxm_80gb();
  constexpr int64_t kDepth = 8;
  const double bound_gbps = kDepth * static_cast<double>(kStreamBytes) / h100.latency_ns;
  ASSERT_LT(bound_gbps, h100.peak_bandwidth_gbps);
  Hbm::Params hp;
  hp.timing = h100;
  Hbm hbm("hbm", hp, kH100ClockGhz);
  Sram sram("sram", sram_params(std::ceil(h100.peak_bandwidth_gbps / kH100ClockGhz)));
  DmaEngine dma("dma", dma_params(kDepth, 0));
  const Stream s = run_stream(hbm, dma, sram, 256);
  const double gbps =
      static_cast<double>(s.bytes) / static_cast<double>(s.last_done - s.first_start) * kH100ClockGhz;
  EXPECT_LE(gbps, bound_gbps);
  EXPECT_GT(dma.queue_full_stall_cycles, 0u);
}

TEST(Dma, FactoryReadsQueueParams) {
  register_dma_models();
  auto p = test::reader_for("type: queue\nqueue_depth: 4\nsetup_cycles: 12\n", "dma");
  auto dma = Registry<DmaEngine>::instance().create("dma", p, "queue", BuildContext{});
  p.finish();
  EXPECT_EQ(dma->params().queue_depth, 4);
  EXPECT_EQ(dma->params().setup_cycles, 12);
  auto bad = test::reader_for("queue_depth: 0\n", "dma2");
  EXPECT_THROW(Registry<DmaEngine>::instance().create("dma2", bad, "queue", BuildContext{}), InputError);
}

}  // namespace
}  // namespace attnsim
