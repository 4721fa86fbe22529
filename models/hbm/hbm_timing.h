// HBM timing model: per-channel bandwidth occupancy plus a fixed access latency, with an optional
// open-page bank/row-buffer mode. Pure C++ (no SystemC) so it can sit behind any front end.
// See docs/models/hbm.md for the timing rules and what is not modelled.
#pragma once

#include <cstdint>
#include <vector>

namespace attnsim::hbm {

enum class PagePolicy { kOpenPage };

// Bank/row-buffer timing, used only when `enabled`. Times in nanoseconds.
struct HbmBankParams {
  bool enabled = false;
  uint32_t banks_per_channel = 16;
  uint64_t row_bytes = 1024;  // row-buffer (page) size of one bank of one channel
  double t_rcd_ns = 14.0;     // activate -> column command
  double t_rp_ns = 14.0;      // precharge -> activate
  double t_cl_ns = 14.0;      // column command -> first data
  PagePolicy policy = PagePolicy::kOpenPage;

  bool operator==(const HbmBankParams&) const = default;
};

// Defaults equal the H100 SXM 80 GB preset (hbm3_h100_sxm_80gb() in hbm_presets.h, which cites the
// sources); a test keeps the two in step.
struct HbmParams {
  uint64_t capacity_bytes = 80ull << 30;
  double peak_bandwidth_gbps = 3350.0;     // GB/s, 1 GB = 1e9 bytes, summed over all channels
  uint32_t channels = 160;                 // independent channels (HBM pseudo-channels)
  uint64_t interleave_bytes = 256;         // contiguous bytes mapped to one channel before the next
  uint64_t access_granularity_bytes = 32;  // sector: requests are rounded out to whole sectors
  double latency_ns = 500.0;               // fixed request-to-data latency added after transfer
  HbmBankParams bank;

  bool operator==(const HbmParams&) const = default;
};

class HbmTiming {
 public:
  // Throws std::invalid_argument for inconsistent parameters. The clock is quantised to 1 kHz and
  // the bandwidth to 1 MB/s; all later timing is exact rational arithmetic on those values.
  // transfer calls throw std::overflow_error past the time horizon (at least 2^36 cycles).
  HbmTiming(const HbmParams& params, double core_clock_ghz);

  // Moves [addr, addr + bytes) rounded out to whole sectors; returns the completion cycle.
  // Throws std::out_of_range if the range reaches past capacity_bytes. A zero-byte transfer
  // costs nothing and completes at issue_cycle.
  uint64_t transfer(uint64_t addr, uint64_t bytes, bool is_write, uint64_t issue_cycle);

  // `rows` rows of `row_bytes` each, row r starting at addr + r * stride_bytes, all issued at
  // issue_cycle; each row is rounded out to sectors on its own. stride_bytes == row_bytes is one
  // contiguous range (rounded once). Requires stride_bytes >= row_bytes when rows > 1.
  uint64_t transfer2d(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes, bool is_write,
                      uint64_t issue_cycle);

  const HbmParams& params() const { return params_; }
  double core_clock_ghz() const;
  double peak_bytes_per_cycle() const;
  double channel_bytes_per_cycle() const;
  double latency_cycles() const;
  double sector_transfer_cycles() const;  // one sector on one channel: the burst time
  uint32_t channel_of(uint64_t addr) const;

  uint64_t bytes_read_requested() const { return bytes_read_requested_; }
  uint64_t bytes_read_transferred() const { return bytes_read_transferred_; }
  uint64_t bytes_written_requested() const { return bytes_written_requested_; }
  uint64_t bytes_written_transferred() const { return bytes_written_transferred_; }
  uint64_t reads() const { return reads_; }
  uint64_t writes() const { return writes_; }
  // Data-bus time only; in bank mode activate/precharge time is not counted as busy.
  double channel_busy_cycles(uint32_t channel) const;
  // Counted per row segment (a channel's bytes within one row), not per burst.
  uint64_t row_hits() const { return row_hits_; }
  uint64_t row_misses() const { return row_misses_; }        // segments that needed an activate
  uint64_t row_conflicts() const { return row_conflicts_; }  // misses that also had to precharge

  // The stats window runs from the earliest issue to the latest completion since the last
  // reset_stats(); achieved bandwidth counts transferred (sector-rounded) bytes over it.
  uint64_t first_issue_cycle() const { return first_issue_cycle_; }
  uint64_t last_completion_cycle() const { return last_completion_cycle_; }
  double achieved_bytes_per_cycle() const;
  double achieved_bandwidth_gbps() const;
  // Clears counters but keeps channel and bank state, so a window can start mid-run.
  void reset_stats();

 private:
  // Time in ticks: one core cycle and one byte on one channel are both whole numbers of ticks, so
  // fractional bytes/cycle never accumulates rounding. Ticks stay below kTickLimit (2^62), which
  // the constructor checks leaves at least 2^36 cycles of simulated time; 64-bit arithmetic keeps
  // the per-channel loop cheap.
  using Ticks = uint64_t;

  // Division by a constant that is usually a power of two (sector, interleave): shift and mask
  // when it is, since these sit on the per-row and per-chunk paths.
  struct Divisor {
    uint64_t value = 1;
    int shift = -1;  // log2(value), or -1 if value is not a power of two
    uint64_t quotient(uint64_t x) const { return shift >= 0 ? x >> shift : x / value; }
    uint64_t remainder(uint64_t x) const { return shift >= 0 ? x & (value - 1) : x % value; }
  };

  uint64_t sector_floor(uint64_t addr) const { return addr - sector_.remainder(addr); }
  uint64_t sector_ceil(uint64_t addr) const;
  void check_range(uint64_t addr, uint64_t bytes) const;
  Ticks issue_ticks(uint64_t issue_cycle) const;
  Ticks ns_to_ticks(double ns) const;
  uint64_t finish(Ticks data_done, uint64_t issue_cycle, bool is_write, uint64_t requested,
                  uint64_t transferred);

  // Calls visit(channel, local_begin, local_end) once per channel touched by the sector-aligned
  // range [begin, end), with the channel-local byte range it covers (contiguous by construction).
  template <typename Visit>
  void for_each_channel_range(uint64_t begin, uint64_t end, Visit&& visit) const;
  Ticks occupy_banked(uint32_t channel, uint64_t local_begin, uint64_t local_end, Ticks issue);
  // Serves the sector-aligned range [begin, end); returns when its last byte leaves the channels.
  Ticks serve_range(uint64_t begin, uint64_t end, Ticks issue);
  Ticks serve_rows_aggregated(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                              Ticks issue, uint64_t& transferred);

  HbmParams params_;
  Divisor sector_;
  Divisor interleave_;
  uint64_t period_bytes_;  // interleave_bytes * channels: one pass over all channels
  uint64_t clock_khz_;
  uint64_t bandwidth_mbps_;
  Ticks ticks_per_cycle_;
  Ticks ticks_per_channel_byte_;
  Ticks ticks_per_ns_;
  uint64_t max_issue_cycle_;
  uint64_t max_bytes_per_channel_call_;
  Ticks latency_ticks_;
  Ticks t_rcd_ticks_;
  Ticks t_rp_ticks_;
  Ticks t_cl_ticks_;

  std::vector<Ticks> channel_free_;
  std::vector<uint64_t> channel_bytes_;
  // Bank state, indexed [channel * banks_per_channel + bank].
  std::vector<uint64_t> open_row_;  // kNoOpenRow while precharged
  std::vector<Ticks> row_ready_;    // open row accepts column commands from here (activate + tRCD)
  std::vector<Ticks> bank_last_data_;
  std::vector<int64_t> diff_scratch_;  // transfer2d per-channel byte accumulation
  std::vector<int64_t> point_scratch_;

  uint64_t bytes_read_requested_ = 0;
  uint64_t bytes_read_transferred_ = 0;
  uint64_t bytes_written_requested_ = 0;
  uint64_t bytes_written_transferred_ = 0;
  uint64_t reads_ = 0;
  uint64_t writes_ = 0;
  uint64_t row_hits_ = 0;
  uint64_t row_misses_ = 0;
  uint64_t row_conflicts_ = 0;
  uint64_t first_issue_cycle_ = 0;
  uint64_t last_completion_cycle_ = 0;
  bool window_open_ = false;
};

}  // namespace attnsim::hbm
