// The bandwidth calendar: throughput, and requests that arrive out of time order (temporal decoupling).
#include <gtest/gtest.h>

#include "models/common/bandwidth_calendar.h"

namespace attnsim {
namespace {

constexpr double kBytesPerCycle = 100;
constexpr uint64_t kWindow = 10;

TEST(BandwidthCalendar, AloneARequestTakesBytesOverBandwidth) {
  BandwidthCalendar c(kBytesPerCycle, kWindow);
  EXPECT_EQ(c.serve(0, 2500), 25u);  // 2500 bytes at 100 bytes/cycle
  EXPECT_EQ(c.serve(100, 0), 100u);  // nothing to move: done on arrival
}

TEST(BandwidthCalendar, BackToBackRequestsShareTheBandwidth) {
  BandwidthCalendar c(kBytesPerCycle, kWindow);
  EXPECT_EQ(c.serve(0, 1000), 10u);
  EXPECT_EQ(c.serve(0, 1000), 20u);  // the first window is full: the second request takes the next
}

TEST(BandwidthCalendar, ALateArrivalForAnEarlierTimeIsNotQueuedBehindLaterBookings) {
  BandwidthCalendar c(kBytesPerCycle, kWindow);
  c.serve(500, 1000);                   // a core that ran ahead booked cycles 500..510
  EXPECT_EQ(c.serve(100, 1000), 110u);  // one behind it in local time still finds cycles 100..110 free
}

TEST(BandwidthCalendar, MidWindowArrivalUsesOnlyTheTimeLeftInItsWindow) {
  BandwidthCalendar c(kBytesPerCycle, kWindow);
  EXPECT_EQ(c.serve(5, 1000), 15u);  // 500 bytes fit in cycles 5..10, the rest in the next window
}

TEST(BandwidthCalendar, ForgottenWindowsAreServedFromTheEarliestOpenOne) {
  BandwidthCalendar c(kBytesPerCycle, kWindow);
  c.forget_before(100);
  EXPECT_EQ(c.serve(20, 1000), 110u);
}

}  // namespace
}  // namespace attnsim
