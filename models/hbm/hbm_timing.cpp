#include "models/hbm/hbm_timing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

namespace attnsim::hbm {
namespace {

constexpr double kKhzPerGhz = 1e6;
constexpr double kMbpsPerGbps = 1e3;
constexpr uint64_t kKhzPerGhzInt = 1'000'000;
// bytes/cycle of one channel = bandwidth_Bps / (channels * clock_hz)
//                            = bandwidth_mbps * 1e6 / (channels * clock_khz * 1e3),
// so a cycle is bandwidth_mbps * kMegaOverKilo ticks and a channel byte channels * clock_khz ticks.
constexpr uint64_t kMegaOverKilo = 1'000;
// Every stored time stays below kTickLimit, so adding one call's worth of work (itself bounded by
// kTickLimit) cannot wrap 64 bits before finish() notices.
constexpr uint64_t kTickLimit = 1ull << 62;
// ~34 s of simulated time at 2 GHz: far longer than any cycle-level run.
constexpr uint64_t kMinHorizonCycles = 1ull << 36;
constexpr uint64_t kNoOpenRow = std::numeric_limits<uint64_t>::max();

uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw std::invalid_argument(std::string("HbmTiming: ") + what + " overflows 64 bits");
  }
  return product;
}

void require(bool ok, const char* message) {
  if (!ok) throw std::invalid_argument(std::string("HbmTiming: ") + message);
}

// Bytes of [0, offset) that fall into the channel whose slot in one interleave pass starts at
// slot_begin, for offset within a single pass.
uint64_t clamp_slot(uint64_t offset, uint64_t slot_begin, uint64_t interleave) {
  return std::min(std::max(offset, slot_begin) - slot_begin, interleave);
}

}  // namespace

HbmTiming::HbmTiming(const HbmParams& params, double core_clock_ghz) : params_(params) {
  require(std::isfinite(core_clock_ghz) && core_clock_ghz > 0, "core_clock_ghz must be > 0");
  require(std::isfinite(params.peak_bandwidth_gbps) && params.peak_bandwidth_gbps > 0,
          "peak_bandwidth_gbps must be > 0");
  require(params.channels > 0, "channels must be > 0");
  require(params.capacity_bytes > 0, "capacity_bytes must be > 0");
  require(params.access_granularity_bytes > 0, "access_granularity_bytes must be > 0");
  require(params.interleave_bytes > 0 && params.interleave_bytes % params.access_granularity_bytes == 0,
          "interleave_bytes must be a positive multiple of access_granularity_bytes");
  require(params.capacity_bytes % params.access_granularity_bytes == 0,
          "capacity_bytes must be a multiple of access_granularity_bytes");
  require(std::isfinite(params.latency_ns) && params.latency_ns >= 0, "latency_ns must be >= 0");
  const HbmBankParams& bank = params.bank;
  if (bank.enabled) {
    require(bank.banks_per_channel > 0, "bank.banks_per_channel must be > 0");
    require(bank.row_bytes > 0 && bank.row_bytes % params.access_granularity_bytes == 0,
            "bank.row_bytes must be a positive multiple of access_granularity_bytes");
    require(std::isfinite(bank.t_rcd_ns) && std::isfinite(bank.t_rp_ns) && std::isfinite(bank.t_cl_ns) &&
                bank.t_rcd_ns >= 0 && bank.t_rp_ns >= 0 && bank.t_cl_ns >= 0,
            "bank timings must be finite and >= 0");
  }
  auto divisor = [](uint64_t value) {
    return Divisor{value, std::has_single_bit(value) ? std::countr_zero(value) : -1};
  };
  sector_ = divisor(params.access_granularity_bytes);
  interleave_ = divisor(params.interleave_bytes);
  period_bytes_ = checked_mul(params.interleave_bytes, params.channels, "interleave_bytes * channels");

  require(core_clock_ghz * kKhzPerGhz < static_cast<double>(kTickLimit), "core_clock_ghz is too large");
  require(params.peak_bandwidth_gbps * kMbpsPerGbps < static_cast<double>(kTickLimit),
          "peak_bandwidth_gbps is too large");
  clock_khz_ = static_cast<uint64_t>(std::llround(core_clock_ghz * kKhzPerGhz));
  bandwidth_mbps_ = static_cast<uint64_t>(std::llround(params.peak_bandwidth_gbps * kMbpsPerGbps));
  require(clock_khz_ > 0, "core_clock_ghz is below the 1 kHz resolution");
  require(bandwidth_mbps_ > 0, "peak_bandwidth_gbps is below the 1 MB/s resolution");

  uint64_t cycle_ticks = checked_mul(bandwidth_mbps_, kMegaOverKilo, "bandwidth");
  uint64_t byte_ticks = checked_mul(params.channels, clock_khz_, "channels * clock");
  const uint64_t common = std::gcd(cycle_ticks, byte_ticks);
  cycle_ticks /= common;
  byte_ticks /= common;
  // Scale so a nanosecond (clock_khz / 1e6 cycles) is also a whole number of ticks, keeping the
  // ns-valued latencies exact.
  const uint64_t ns_numerator_mod =
      (cycle_ticks % kKhzPerGhzInt) * (clock_khz_ % kKhzPerGhzInt) % kKhzPerGhzInt;
  const uint64_t ns_scale = kKhzPerGhzInt / std::gcd(ns_numerator_mod, kKhzPerGhzInt);
  ticks_per_cycle_ = checked_mul(cycle_ticks, ns_scale, "ticks per cycle");
  ticks_per_channel_byte_ = checked_mul(byte_ticks, ns_scale, "ticks per byte");
  ticks_per_ns_ = checked_mul(ticks_per_cycle_, clock_khz_, "ticks per ns") / kKhzPerGhzInt;
  require(ticks_per_cycle_ <= kTickLimit / kMinHorizonCycles,
          "the core clock (clock_ghz) and peak_bandwidth_gbps leave too short a time horizon; round them "
          "(e.g. to MHz and GB/s) so they share more common factors");
  max_issue_cycle_ = kTickLimit / ticks_per_cycle_;
  max_bytes_per_channel_call_ = kTickLimit / ticks_per_channel_byte_;

  // Fixed latencies may take at most a quarter of the tick range each.
  const double max_latency_ns = static_cast<double>(kTickLimit / 4) / static_cast<double>(ticks_per_ns_);
  require(params.latency_ns < max_latency_ns, "latency_ns is too large");
  require(!bank.enabled || bank.t_rcd_ns + bank.t_rp_ns + bank.t_cl_ns < max_latency_ns,
          "bank timings are too large");
  latency_ticks_ = ns_to_ticks(params.latency_ns);
  t_rcd_ticks_ = ns_to_ticks(bank.t_rcd_ns);
  t_rp_ticks_ = ns_to_ticks(bank.t_rp_ns);
  t_cl_ticks_ = ns_to_ticks(bank.t_cl_ns);

  channel_free_.assign(params.channels, 0);
  channel_bytes_.assign(params.channels, 0);
  diff_scratch_.assign(params.channels + 1, 0);
  point_scratch_.assign(params.channels, 0);
  if (bank.enabled) {
    const size_t slots = static_cast<size_t>(params.channels) * bank.banks_per_channel;
    open_row_.assign(slots, kNoOpenRow);
    row_ready_.assign(slots, 0);
    bank_last_data_.assign(slots, 0);
  }
}

HbmTiming::Ticks HbmTiming::ns_to_ticks(double ns) const {
  if (!(ns > 0)) return 0;
  return static_cast<Ticks>(std::llround(static_cast<long double>(ns) * ticks_per_ns_));
}

double HbmTiming::core_clock_ghz() const {
  return static_cast<double>(clock_khz_) / kKhzPerGhz;
}

double HbmTiming::channel_bytes_per_cycle() const {
  return static_cast<double>(ticks_per_cycle_) / static_cast<double>(ticks_per_channel_byte_);
}

double HbmTiming::peak_bytes_per_cycle() const {
  return channel_bytes_per_cycle() * params_.channels;
}

double HbmTiming::latency_cycles() const {
  return static_cast<double>(latency_ticks_) / static_cast<double>(ticks_per_cycle_);
}

double HbmTiming::sector_transfer_cycles() const {
  return static_cast<double>(params_.access_granularity_bytes) / channel_bytes_per_cycle();
}

uint32_t HbmTiming::channel_of(uint64_t addr) const {
  return static_cast<uint32_t>(interleave_.quotient(addr) % params_.channels);
}

double HbmTiming::channel_busy_cycles(uint32_t channel) const {
  if (channel >= params_.channels) throw std::out_of_range("HbmTiming::channel_busy_cycles: no such channel");
  // long double: the byte count times ticks per byte may pass 2^64 over a long run.
  const long double busy = static_cast<long double>(channel_bytes_[channel]) * ticks_per_channel_byte_;
  return static_cast<double>(busy / ticks_per_cycle_);
}

double HbmTiming::achieved_bytes_per_cycle() const {
  if (!window_open_ || last_completion_cycle_ <= first_issue_cycle_) return 0.0;
  const uint64_t bytes = bytes_read_transferred_ + bytes_written_transferred_;
  return static_cast<double>(bytes) / static_cast<double>(last_completion_cycle_ - first_issue_cycle_);
}

double HbmTiming::achieved_bandwidth_gbps() const {
  return achieved_bytes_per_cycle() * core_clock_ghz();
}

void HbmTiming::reset_stats() {
  bytes_read_requested_ = bytes_read_transferred_ = 0;
  bytes_written_requested_ = bytes_written_transferred_ = 0;
  reads_ = writes_ = 0;
  row_hits_ = row_misses_ = row_conflicts_ = 0;
  first_issue_cycle_ = last_completion_cycle_ = 0;
  window_open_ = false;
  std::fill(channel_bytes_.begin(), channel_bytes_.end(), 0);
}

uint64_t HbmTiming::sector_ceil(uint64_t addr) const {
  const uint64_t rem = sector_.remainder(addr);
  return rem == 0 ? addr : addr + (sector_.value - rem);
}

void HbmTiming::check_range(uint64_t addr, uint64_t bytes) const {
  const uint64_t capacity = params_.capacity_bytes;
  if (addr <= capacity && bytes <= capacity - addr) return;
  std::ostringstream message;
  message << "HbmTiming: access of " << bytes << " bytes at 0x" << std::hex << addr
          << " reaches past capacity_bytes 0x" << capacity << std::dec << " (" << capacity << " bytes)";
  throw std::out_of_range(message.str());
}

HbmTiming::Ticks HbmTiming::issue_ticks(uint64_t issue_cycle) const {
  if (issue_cycle > max_issue_cycle_) {
    throw std::overflow_error("HbmTiming: issue_cycle " + std::to_string(issue_cycle) +
                              " is past the time horizon " + std::to_string(max_issue_cycle_));
  }
  return issue_cycle * ticks_per_cycle_;
}

template <typename Visit>
void HbmTiming::for_each_channel_range(uint64_t begin, uint64_t end, Visit&& visit) const {
  const uint64_t interleave = params_.interleave_bytes;
  const uint64_t channels = params_.channels;
  const uint64_t first_chunk = interleave_.quotient(begin);
  const uint64_t last_chunk = interleave_.quotient(end - 1);
  if (last_chunk - first_chunk + 1 < channels) {
    // Fewer chunks than channels: every chunk lands on a distinct channel, so walk the chunks.
    uint64_t pass = first_chunk / channels;
    uint32_t channel = static_cast<uint32_t>(first_chunk % channels);
    for (uint64_t chunk = first_chunk; chunk <= last_chunk; ++chunk) {
      const uint64_t chunk_begin = chunk * interleave;
      const uint64_t lo = std::max(begin, chunk_begin);
      const uint64_t hi = std::min(end, chunk_begin + interleave);
      const uint64_t local = pass * interleave + (lo - chunk_begin);
      visit(channel, local, local + (hi - lo));
      if (++channel == channels) {
        channel = 0;
        ++pass;
      }
    }
    return;
  }
  // Every channel is touched: its local range is [below(begin), below(end)), where below(x) counts
  // the channel's bytes under address x: whole passes plus its clipped slot in the partial pass.
  const uint64_t begin_base = begin / period_bytes_ * interleave;
  const uint64_t begin_offset = begin % period_bytes_;
  const uint64_t end_base = end / period_bytes_ * interleave;
  const uint64_t end_offset = end % period_bytes_;
  uint64_t slot_begin = 0;
  for (uint32_t channel = 0; channel < channels; ++channel, slot_begin += interleave) {
    const uint64_t lo = begin_base + clamp_slot(begin_offset, slot_begin, interleave);
    const uint64_t hi = end_base + clamp_slot(end_offset, slot_begin, interleave);
    visit(channel, lo, hi);
  }
}

HbmTiming::Ticks HbmTiming::occupy_banked(uint32_t channel, uint64_t local_begin, uint64_t local_end,
                                          Ticks issue) {
  const uint64_t row_bytes = params_.bank.row_bytes;
  const uint64_t banks = params_.bank.banks_per_channel;
  Ticks done = issue;
  uint64_t row_index = local_begin / row_bytes;
  for (uint64_t pos = local_begin; pos < local_end; ++row_index) {
    const uint64_t segment_end = std::min(local_end, (row_index + 1) * row_bytes);
    const uint64_t row = row_index / banks;
    const size_t slot = static_cast<size_t>(channel) * banks + row_index % banks;
    if (open_row_[slot] == row) {
      ++row_hits_;
    } else {
      ++row_misses_;
      // Activate once the bank is idle; a conflict first precharges after the open row's last data.
      Ticks activate = std::max(issue, bank_last_data_[slot]);
      if (open_row_[slot] != kNoOpenRow) {
        activate += t_rp_ticks_;
        ++row_conflicts_;
      }
      row_ready_[slot] = activate + t_rcd_ticks_;
      open_row_[slot] = row;
    }
    // Column reads to an open row pipeline, so tCL is a latency rather than bank occupancy; other
    // banks activate while this one's data is on the bus. Only data transfer serialises the channel.
    const Ticks column_issue = std::max(issue, row_ready_[slot]);
    const Ticks data_start = std::max(column_issue + t_cl_ticks_, channel_free_[channel]);
    const uint64_t bytes = segment_end - pos;
    done = data_start + bytes * ticks_per_channel_byte_;
    channel_free_[channel] = done;
    bank_last_data_[slot] = done;
    channel_bytes_[channel] += bytes;
    pos = segment_end;
  }
  return done;
}

HbmTiming::Ticks HbmTiming::serve_range(uint64_t begin, uint64_t end, Ticks issue) {
  // One range never puts more than its own bytes on a channel, so one check bounds every channel.
  if (end - begin > max_bytes_per_channel_call_)
    throw std::overflow_error("HbmTiming: transfer too large to time");
  Ticks done = issue;
  if (params_.bank.enabled) {
    for_each_channel_range(begin, end, [&](uint32_t channel, uint64_t lo, uint64_t hi) {
      done = std::max(done, occupy_banked(channel, lo, hi, issue));
    });
    return done;
  }
  // Hot path: local copies, because stores through the uint64_t channel arrays would otherwise
  // force members (also uint64_t) to be reloaded on every channel.
  Ticks* const free_at = channel_free_.data();
  uint64_t* const bytes_on = channel_bytes_.data();
  const Ticks per_byte = ticks_per_channel_byte_;
  auto occupy_run = [&done, issue, free_at, bytes_on, per_byte](uint64_t first, uint64_t last,
                                                                uint64_t bytes) {
    const Ticks busy = bytes * per_byte;
    for (uint64_t channel = first; channel < last; ++channel) {
      const Ticks finished = std::max(issue, free_at[channel]) + busy;
      free_at[channel] = finished;
      bytes_on[channel] += bytes;
      done = std::max(done, finished);
    }
  };
  const uint64_t channels = params_.channels;
  const uint64_t interleave = params_.interleave_bytes;
  const uint64_t first_chunk = interleave_.quotient(begin);
  const uint64_t last_chunk = interleave_.quotient(end - 1);
  const uint64_t chunks = last_chunk - first_chunk + 1;
  if (chunks < channels) {
    // Each chunk is on its own channel: a partial first chunk, whole middle chunks on consecutive
    // channels (wrapping at most once), and a partial last chunk.
    const uint64_t first_channel = first_chunk % channels;
    if (chunks == 1) {
      occupy_run(first_channel, first_channel + 1, end - begin);
      return done;
    }
    occupy_run(first_channel, first_channel + 1, (first_chunk + 1) * interleave - begin);
    const uint64_t middle_first = first_channel + 1 == channels ? 0 : first_channel + 1;
    const uint64_t middle_count = chunks - 2;
    const uint64_t before_wrap = std::min(middle_count, channels - middle_first);
    occupy_run(middle_first, middle_first + before_wrap, interleave);
    occupy_run(0, middle_count - before_wrap, interleave);
    uint64_t last_channel = first_channel + chunks - 1;
    if (last_channel >= channels) last_channel -= channels;
    occupy_run(last_channel, last_channel + 1, end - last_chunk * interleave);
    return done;
  }
  // Every channel is touched. A channel's bytes are the whole passes plus its slot of the partial
  // end pass minus its slot of the partial begin pass, which is constant between the two boundary
  // channels, so the channels split into at most five runs of equal size.
  const uint64_t whole_passes = (end / period_bytes_ - begin / period_bytes_) * interleave;
  const uint64_t begin_offset = begin % period_bytes_;
  const uint64_t end_offset = end % period_bytes_;
  const uint64_t begin_slot = interleave_.quotient(begin_offset);
  const uint64_t end_slot = interleave_.quotient(end_offset);
  auto bytes_of = [&](uint64_t channel) {
    const uint64_t slot_begin = channel * interleave;
    return whole_passes + clamp_slot(end_offset, slot_begin, interleave) -
           clamp_slot(begin_offset, slot_begin, interleave);
  };
  uint64_t bounds[] = {0, begin_slot, begin_slot + 1, end_slot, end_slot + 1, channels};
  std::sort(std::begin(bounds), std::end(bounds));
  for (size_t i = 0; i + 1 < std::size(bounds); ++i) {
    const uint64_t first = bounds[i];
    const uint64_t last = std::min(bounds[i + 1], channels);
    if (first < last) occupy_run(first, last, bytes_of(first));
  }
  return done;
}

HbmTiming::Ticks HbmTiming::serve_rows_aggregated(uint64_t addr, uint64_t rows, uint64_t row_bytes,
                                                  uint64_t stride_bytes, Ticks issue, uint64_t& transferred) {
  // Per-channel byte counts of all rows in O(1) per row: a row adds whole passes to every channel,
  // and each pass-relative end offset adds a full slot to the channels before it and a partial
  // slot to the channel it falls in (difference array + point array).
  // Local copies: stores through the scratch arrays would otherwise force member reloads.
  int64_t* const diff = diff_scratch_.data();
  int64_t* const point = point_scratch_.data();
  const Divisor interleave = interleave_;
  const int64_t slot = static_cast<int64_t>(interleave.value);
  auto add_prefix = [diff, point, interleave, slot](uint64_t offset, int64_t sign) {
    const uint64_t full_slots = interleave.quotient(offset);
    diff[0] += sign * slot;
    diff[full_slots] -= sign * slot;
    point[full_slots] += sign * static_cast<int64_t>(interleave.remainder(offset));
  };
  // Row starts and ends advance by a fixed stride, so track them as (pass, offset in pass)
  // incrementally instead of dividing by the (rarely power-of-two) pass size every row.
  const uint64_t period = period_bytes_;
  const uint64_t stride_passes = stride_bytes / period;
  const uint64_t stride_offset = stride_bytes % period;
  uint64_t start_pass = addr / period;
  uint64_t start_offset = addr % period;
  uint64_t end_pass = (addr + row_bytes) / period;
  uint64_t end_offset = (addr + row_bytes) % period;
  auto advance = [&](uint64_t& pass, uint64_t& offset) {
    pass += stride_passes;
    offset += stride_offset;
    if (offset >= period) {
      offset -= period;
      ++pass;
    }
  };
  uint64_t uniform = 0;
  for (uint64_t row = 0; row < rows; ++row) {
    // The pass size is a whole number of sectors, so sector rounding stays within the pass offset.
    const uint64_t begin_offset = sector_floor(start_offset);
    uint64_t rounded_end_pass = end_pass;
    uint64_t rounded_end_offset = sector_ceil(end_offset);
    if (rounded_end_offset == period) {
      rounded_end_offset = 0;
      ++rounded_end_pass;
    }
    transferred += (rounded_end_pass - start_pass) * period + rounded_end_offset - begin_offset;
    uniform += (rounded_end_pass - start_pass) * interleave.value;
    add_prefix(rounded_end_offset, +1);
    add_prefix(begin_offset, -1);
    advance(start_pass, start_offset);
    advance(end_pass, end_offset);
  }
  if (transferred > max_bytes_per_channel_call_)
    throw std::overflow_error("HbmTiming: transfer too large to time");
  Ticks done = issue;
  Ticks* const free_at = channel_free_.data();
  uint64_t* const bytes_on = channel_bytes_.data();
  const Ticks per_byte = ticks_per_channel_byte_;
  const uint64_t channels = params_.channels;
  int64_t running = 0;
  for (uint64_t channel = 0; channel < channels; ++channel) {
    running += diff[channel];
    // running + point may be negative when rows cross passes; `uniform` covers it, and unsigned
    // wrap-around makes the sum exact.
    const uint64_t bytes = uniform + static_cast<uint64_t>(running + point[channel]);
    // Untouched channels keep their busy-until time (a zero-byte visit would pull it up to issue).
    const Ticks finished =
        bytes > 0 ? std::max(issue, free_at[channel]) + bytes * per_byte : free_at[channel];
    free_at[channel] = finished;
    bytes_on[channel] += bytes;
    if (bytes > 0) done = std::max(done, finished);
    diff[channel] = 0;
    point[channel] = 0;
  }
  diff[channels] = 0;
  return done;
}

uint64_t HbmTiming::finish(Ticks data_done, uint64_t issue_cycle, bool is_write, uint64_t requested,
                           uint64_t transferred) {
  const Ticks complete = data_done + latency_ticks_;
  if (complete > kTickLimit) throw std::overflow_error("HbmTiming: completion is past the time horizon");
  const uint64_t completion = (complete + ticks_per_cycle_ - 1) / ticks_per_cycle_;
  if (is_write) {
    ++writes_;
    bytes_written_requested_ += requested;
    bytes_written_transferred_ += transferred;
  } else {
    ++reads_;
    bytes_read_requested_ += requested;
    bytes_read_transferred_ += transferred;
  }
  if (!window_open_) {
    first_issue_cycle_ = issue_cycle;
    last_completion_cycle_ = completion;
    window_open_ = true;
  } else {
    first_issue_cycle_ = std::min(first_issue_cycle_, issue_cycle);
    last_completion_cycle_ = std::max(last_completion_cycle_, completion);
  }
  return completion;
}

uint64_t HbmTiming::transfer(uint64_t addr, uint64_t bytes, bool is_write, uint64_t issue_cycle) {
  if (bytes == 0) return issue_cycle;
  check_range(addr, bytes);
  const uint64_t begin = sector_floor(addr);
  const uint64_t end = sector_ceil(addr + bytes);
  const Ticks done = serve_range(begin, end, issue_ticks(issue_cycle));
  return finish(done, issue_cycle, is_write, bytes, end - begin);
}

uint64_t HbmTiming::transfer2d(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                               bool is_write, uint64_t issue_cycle) {
  if (rows == 0 || row_bytes == 0) return issue_cycle;
  if (rows == 1 || stride_bytes == row_bytes) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(rows, row_bytes, &bytes)) {
      throw std::out_of_range("HbmTiming::transfer2d: rows * row_bytes overflows 64 bits");
    }
    return transfer(addr, bytes, is_write, issue_cycle);
  }
  if (stride_bytes < row_bytes) {
    throw std::invalid_argument("HbmTiming::transfer2d: stride_bytes must be >= row_bytes (rows overlap)");
  }
  uint64_t last_row_offset = 0;
  uint64_t last_row_addr = 0;
  if (__builtin_mul_overflow(rows - 1, stride_bytes, &last_row_offset) ||
      __builtin_add_overflow(addr, last_row_offset, &last_row_addr)) {
    throw std::out_of_range("HbmTiming::transfer2d: last row address overflows 64 bits");
  }
  check_range(last_row_addr, row_bytes);  // rows ascend, so the last row bounds them all

  const Ticks issue = issue_ticks(issue_cycle);
  uint64_t transferred = 0;
  Ticks done = issue;
  if (params_.bank.enabled) {
    // Row-buffer state depends on access order, so bank mode walks the rows in order.
    for (uint64_t row = 0; row < rows; ++row) {
      const uint64_t row_addr = addr + row * stride_bytes;
      const uint64_t begin = sector_floor(row_addr);
      const uint64_t end = sector_ceil(row_addr + row_bytes);
      transferred += end - begin;
      done = std::max(done, serve_range(begin, end, issue));
    }
  } else {
    done = serve_rows_aggregated(addr, rows, row_bytes, stride_bytes, issue, transferred);
  }
  return finish(done, issue_cycle, is_write, rows * row_bytes, transferred);
}

}  // namespace attnsim::hbm
