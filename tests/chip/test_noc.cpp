// The on-chip network on its own: a core's port, its store rate, and loads that leave behind stores.
#include <gtest/gtest.h>

#include "models/noc/noc.h"

namespace attnsim {
namespace {

// A next level that answers after a fixed time and takes everything at once.
class FixedLevel : public MemoryLevel {
 public:
  uint64_t access(const MemAccess& a, uint64_t issue) override {
    atomic_reads += a.atomic_read ? 1 : 0;
    return issue + 100;
  }
  int atomic_reads = 0;  // accesses that arrived marked as an atomic's read
};

MemAccess tile(uint64_t bytes, bool write, int core = 0) {
  return MemAccess{0, 0, 1, bytes, bytes, write, core};
}

struct Rig {
  explicit Rig(const Noc::Params& p) : noc("noc", p) {
    noc.set_next(&next);
    noc.reset({"T"}, 2);
  }
  FixedLevel next;
  Noc noc;
};

Noc::Params gpu_like() {
  Noc::Params p;
  p.core_bytes_per_cycle = 64;
  p.core_write_bytes_per_cycle = 32;
  p.loads_wait_for_stores = true;
  p.window_cycles = 1;
  return p;
}

TEST(Noc, StoresLeaveAtTheirOwnRate) {
  Rig rig(gpu_like());
  EXPECT_EQ(rig.noc.access(tile(16384, true), 0), 512u);         // 16 KiB at 32 B/cycle (the next level: 100)
  EXPECT_EQ(rig.noc.access(tile(8192, false), 0), 512u + 128u);  // behind it: 8 KiB at 64 B/cycle
  EXPECT_EQ(rig.noc.load_cycles_behind_stores, 512u);
}

TEST(Noc, ALoadOfAnotherCoreOrBeforeTheStoresDoesNotWait) {
  Rig rig(gpu_like());
  rig.noc.access(tile(16384, true, 0), 0);
  EXPECT_EQ(rig.noc.access(tile(8192, false, 1), 0), 128u);  // core 1's port is its own
  EXPECT_EQ(rig.noc.load_cycles_behind_stores, 0u);
}

// One port of 64 B/cycle shared by loads and stores, no other option.
Noc::Params one_port() {
  Noc::Params p;
  p.core_bytes_per_cycle = 64;
  p.window_cycles = 1;
  return p;
}

TEST(Noc, WithoutTheOptionsLoadsAndStoresShareOnePortAndOverlap) {
  Rig rig(one_port());
  EXPECT_EQ(rig.noc.access(tile(16384, true), 0), 256u);
  EXPECT_EQ(rig.noc.access(tile(8192, false), 0), 256u + 128u);  // the port's bandwidth, not the order
  EXPECT_EQ(rig.noc.load_cycles_behind_stores, 0u);
}

// STORE_ADD's read of the old tile: with the atomics in L2 only the L2 sees it, still marked as an atomic's
// read (served at the line's home); added at the core, it crosses the network as a plain read.
TEST(Noc, AnAtomicsReadCrossesOnlyWhenTheCoreAdds) {
  for (bool in_l2 : {false, true}) {
    Noc::Params p = gpu_like();
    p.atomics_in_l2 = in_l2;
    Rig rig(p);
    MemAccess read = tile(4096, false);
    read.atomic_read = true;
    rig.noc.access(read, 0);
    EXPECT_EQ(rig.noc.bytes_read, in_l2 ? 0u : 4096u) << in_l2;
    EXPECT_EQ(rig.next.atomic_reads, in_l2 ? 1 : 0) << in_l2;
  }
}

// A lone 8 KiB load behind a level that answers after 100 cycles: the port's 128 cycles overlap the level's
// 100 unless the data cross the port after the level has served them; stores are not affected.
TEST(Noc, LoadDataAfterTheLevelAddLatencyAndTransfer) {
  Noc::Params p = one_port();
  Rig overlapped(p);
  EXPECT_EQ(overlapped.noc.access(tile(8192, false), 0), 128u);
  p.load_data_after_level = true;
  Rig after(p);
  EXPECT_EQ(after.noc.access(tile(8192, false), 0), 100u + 128u);
  EXPECT_EQ(after.noc.access(tile(8192, false, 1), 1000), 1000u + 100u + 128u);  // another core's port
  EXPECT_EQ(after.noc.access(tile(8192, false), 0), 100u + 256u);     // behind the first on the same port
  EXPECT_EQ(after.noc.access(tile(8192, true), 2000), 2000u + 128u);  // a store's data leave first
}

}  // namespace
}  // namespace attnsim
