#include "models/hbm/hbm.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "models/common/registry.h"
#include "models/hbm/hbm_presets.h"

namespace attnsim {

Hbm::Hbm(sc_core::sc_module_name instance, const Params& params, double core_clock_ghz)
    : Component(instance),
      params_(params),
      core_clock_ghz_(core_clock_ghz),
      timing_(std::make_unique<hbm::HbmTiming>(params.timing, core_clock_ghz)) {
  stats_.add(&bytes_read, "bytes_read", "bytes", "bytes the program read (LOADs), before sector rounding");
  stats_.add(&bytes_written, "bytes_written", "bytes",
             "bytes the program wrote (STOREs), before sector rounding");
  stats_.add(&transferred_read, "transferred_read", "bytes",
             "bytes read from the devices: requests rounded out to sectors");
  stats_.add(&transferred_written, "transferred_written", "bytes",
             "bytes written to the devices: requests rounded out to sectors");
  stats_.add_vector(&bytes_read_per_tensor, &tensor_names, "bytes_read_per_tensor", "bytes",
                    "bytes_read by tensor");
  stats_.add_vector(&bytes_written_per_tensor, &tensor_names, "bytes_written_per_tensor", "bytes",
                    "bytes_written by tensor");
  stats_.add_vector(&transferred_read_per_tensor, &tensor_names, "transferred_read_per_tensor", "bytes",
                    "transferred_read by tensor");
  stats_.add_vector(&transferred_written_per_tensor, &tensor_names, "transferred_written_per_tensor", "bytes",
                    "transferred_written by tensor");
  // Derived from the timing model's window (earliest issue to latest completion), which allocate()
  // restarts together with the counters above.
  stats_.add_formula(
      [this] { return timing_->achieved_bandwidth_gbps(); }, "achieved_bandwidth_gbps", "GB/s",
      "(transferred_read + transferred_written) / (last completion - first issue), 1 GB = 1e9 B");
  stats_.add_formula(
      [this] { return timing_->achieved_bandwidth_gbps() / params_.timing.peak_bandwidth_gbps; },
      "peak_bandwidth_fraction", "fraction", "achieved_bandwidth_gbps / peak_bandwidth_gbps");
  stats_.add_formula(
      [this] {
        const uint64_t moved = transferred_read + transferred_written;
        return moved ? static_cast<double>(bytes_read + bytes_written) / static_cast<double>(moved) : 1.0;
      },
      "sector_efficiency", "fraction",
      "(bytes_read + bytes_written) / (transferred_read + transferred_written)");
}

std::vector<uint64_t> Hbm::allocate(const std::vector<std::string>& names, const std::vector<uint64_t>& bytes,
                                    const std::string& file) {
  if (names.size() != bytes.size())
    throw std::invalid_argument(
        fmt::format("{}: {} tensor names but {} sizes", name(), names.size(), bytes.size()));
  // Interleave alignment (at least) puts every tensor's first byte on a chunk boundary, as a real
  // allocator's page alignment would, so a tensor's channel spread does not depend on its neighbours' sizes.
  const uint64_t align =
      params_.tensor_alignment_bytes ? params_.tensor_alignment_bytes : params_.timing.interleave_bytes;
  const uint64_t capacity = params_.timing.capacity_bytes;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  std::vector<uint64_t> bases;
  bases.reserve(bytes.size());
  uint64_t end = params_.first_tensor_address;
  bool saturated = false;
  for (uint64_t size : bytes) {
    const uint64_t rem = end % align;
    uint64_t base = end;
    if (rem != 0) saturated = saturated || __builtin_add_overflow(end, align - rem, &base);
    bases.push_back(base);
    saturated = saturated || __builtin_add_overflow(base, size, &end);
    if (saturated) end = kMax;
  }
  if (end > capacity) {
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      list += fmt::format("{}{} {}", list.empty() ? "" : ", ", names[i], bytes[i]);
    throw InputError(
        file, {},
        fmt::format("tensors need {} bytes (each aligned to {} bytes) but {}.capacity_bytes is {}: {}",
                    saturated ? "more than 2^64" : std::to_string(end), align, basename(), capacity, list));
  }
  file_ = file;
  tensor_names = names;
  bytes_read_per_tensor.assign(names.size(), 0);
  bytes_written_per_tensor.assign(names.size(), 0);
  transferred_read_per_tensor.assign(names.size(), 0);
  transferred_written_per_tensor.assign(names.size(), 0);
  bytes_read = bytes_written = transferred_read = transferred_written = 0;
  // A fresh timing model: the program's cycle 0 must not see channels busy from an earlier run.
  timing_ = std::make_unique<hbm::HbmTiming>(params_.timing, core_clock_ghz_);
  if (calendar_window_) use_calendar(calendar_window_);
  return bases;
}

void Hbm::set_core_clock_ghz(double ghz) {
  hbm::HbmTiming check(params_.timing, ghz);  // throws on a clock the timing model cannot use
  core_clock_ghz_ = ghz;
}

void Hbm::use_calendar(uint64_t window_cycles) {
  calendar_window_ = window_cycles;
  const double bytes_per_cycle = params_.timing.peak_bandwidth_gbps / core_clock_ghz_;  // GB/s / GHz
  calendar_.reset();
  channel_calendars_.clear();
  if (params_.chip_channels == Params::ChipChannels::Pooled) {
    calendar_ = std::make_unique<BandwidthCalendar>(bytes_per_cycle, window_cycles);
    return;
  }
  channel_calendars_.reserve(params_.timing.channels);
  for (uint32_t c = 0; c < params_.timing.channels; ++c)
    channel_calendars_.emplace_back(bytes_per_cycle / params_.timing.channels, window_cycles);
}

void Hbm::forget_before(uint64_t cycle) {
  if (calendar_) calendar_->forget_before(cycle);
  for (BandwidthCalendar& c : channel_calendars_) c.forget_before(cycle);
}

uint32_t Hbm::chip_channel_of(uint64_t addr) const {
  const uint64_t channels = params_.timing.channels;
  uint64_t unit = addr / params_.timing.interleave_bytes;
  // Hashed: each pass over the channels XORs a multiplicative hash of its index (Knuth's 2^32 / phi) into
  // the unit, so that streams a multiple of a pass apart do not meet on the same channels in step.
  if (params_.chip_channels == Params::ChipChannels::Hashed) unit ^= (unit / channels * 0x9E3779B1ull) >> 7;
  return static_cast<uint32_t>(unit % channels);
}

// Books [begin, end) (sector-aligned) on the channels its interleave units go to; returns when the last
// byte is through.
uint64_t Hbm::serve_on_channels(uint64_t begin, uint64_t end, uint64_t issue_cycle) {
  const uint64_t unit = params_.timing.interleave_bytes;
  uint64_t accepted = issue_cycle;
  for (uint64_t at = begin; at < end;) {
    const uint64_t piece_end = std::min(end, (at / unit + 1) * unit);
    accepted = std::max(accepted, channel_calendars_[chip_channel_of(at)].serve(issue_cycle, piece_end - at));
    at = piece_end;
  }
  return accepted;
}

// Sector-rounded bytes of each row through the calendar; the completion adds the fixed latency.
uint64_t Hbm::calendar_transfer(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                                uint64_t issue_cycle, uint64_t& transferred) {
  const uint64_t sector = params_.timing.access_granularity_bytes;
  const uint64_t end = addr + (rows ? (rows - 1) * stride_bytes + row_bytes : 0);
  if (end > params_.timing.capacity_bytes || end < addr)
    throw InputError(
        file_, {},
        fmt::format("access of {} rows of {} bytes from address {} reaches past {}.capacity_bytes", rows,
                    row_bytes, addr, basename()));
  transferred = 0;
  uint64_t on_channels = issue_cycle;
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t begin = (addr + r * stride_bytes) / sector * sector;
    const uint64_t end = (addr + r * stride_bytes + row_bytes + sector - 1) / sector * sector;
    transferred += end - begin;
    if (!calendar_) on_channels = std::max(on_channels, serve_on_channels(begin, end, issue_cycle));
  }
  const double latency = params_.timing.latency_ns * core_clock_ghz_;
  accepted_ = calendar_ ? calendar_->serve(issue_cycle, transferred) : on_channels;
  return accepted_ + static_cast<uint64_t>(std::ceil(latency));
}

uint64_t Hbm::transfer2d(int tensor, uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride_bytes,
                         bool is_write, uint64_t issue_cycle) {
  if (tensor < -1 || tensor >= static_cast<int>(tensor_names.size()))
    throw std::invalid_argument(
        fmt::format("{}: tensor index {} but {} tensors are allocated", name(), tensor, tensor_names.size()));
  const uint64_t before = is_write ? timing_->bytes_written_transferred() : timing_->bytes_read_transferred();
  uint64_t done = 0;
  uint64_t calendar_bytes = 0;
  try {
    if (calendar_window_)
      done = calendar_transfer(addr, rows, row_bytes, stride_bytes, issue_cycle, calendar_bytes);
    else
      done = timing_->transfer2d(addr, rows, row_bytes, stride_bytes, is_write, issue_cycle);
  } catch (const std::out_of_range& e) {
    throw InputError(
        file_, {},
        fmt::format("{} of tensor {}: {} rows of {} bytes every {} bytes from address {} reach past "
                    "{}.capacity_bytes ({}): {}",
                    is_write ? "store" : "load", tensor >= 0 ? tensor_names[tensor] : "(none)", rows,
                    row_bytes, stride_bytes, addr, basename(), params_.timing.capacity_bytes, e.what()));
  } catch (const std::invalid_argument& e) {
    throw InputError(file_, {},
                     fmt::format("{} of tensor {}: {}", is_write ? "store" : "load",
                                 tensor >= 0 ? tensor_names[tensor] : "(none)", e.what()));
  }
  const uint64_t transferred =
      calendar_window_
          ? calendar_bytes
          : (is_write ? timing_->bytes_written_transferred() : timing_->bytes_read_transferred()) - before;
  const uint64_t requested = rows * row_bytes;  // fits: the timing model checked the range
  if (is_write) {
    bytes_written += requested;
    transferred_written += transferred;
  } else {
    bytes_read += requested;
    transferred_read += transferred;
  }
  if (tensor >= 0) {
    if (is_write) {
      bytes_written_per_tensor[tensor] += requested;
      transferred_written_per_tensor[tensor] += transferred;
    } else {
      bytes_read_per_tensor[tensor] += requested;
      transferred_read_per_tensor[tensor] += transferred;
    }
  }
  return done;
}

void register_hbm_models() {
  std::vector<std::string> preset_names;
  for (const hbm::HbmPreset& preset : hbm::hbm_presets()) preset_names.emplace_back(preset.name);
  Registry<Hbm>::instance().add(
      "hbm", "HBM: per-channel bandwidth, fixed latency, optional open-page banks (docs/models/hbm.md)",
      [preset_names](const char* instance, ParamReader& p, const BuildContext& ctx) {
        Hbm::Params params;
        // The preset is read first: it supplies the default of every key below.
        params.preset = p.choice("preset", Hbm::Params{}.preset, preset_names,
                                 "named HBM part (hbm_presets.h); the keys below override single fields");
        const hbm::HbmParams& d = hbm::hbm_preset(params.preset).params;
        hbm::HbmParams& t = params.timing;
        t = d;
        t.capacity_bytes = static_cast<uint64_t>(p.get<int64_t>(
            "capacity_bytes", static_cast<int64_t>(d.capacity_bytes), "bytes", "addressable HBM size", 1));
        t.peak_bandwidth_gbps = p.get<double>("peak_bandwidth_gbps", d.peak_bandwidth_gbps, "GB/s",
                                              "peak bandwidth summed over channels, 1 GB = 1e9 bytes", 1e-3);
        t.channels = static_cast<uint32_t>(p.get<int64_t>(
            "channels", d.channels, "channels", "independent channels (HBM pseudo-channels)", 1, 1 << 16));
        t.interleave_bytes = static_cast<uint64_t>(p.get<int64_t>(
            "interleave_bytes", static_cast<int64_t>(d.interleave_bytes), "bytes",
            "contiguous bytes on one channel before the next; a multiple of the sector", 1, 1ll << 40));
        t.access_granularity_bytes = static_cast<uint64_t>(
            p.get<int64_t>("access_granularity_bytes", static_cast<int64_t>(d.access_granularity_bytes),
                           "bytes", "sector: every request is rounded out to whole sectors", 1, 1ll << 30));
        t.latency_ns = p.get<double>("latency_ns", d.latency_ns, "ns",
                                     "fixed latency added after the last byte moves", 0);
        t.bank.enabled =
            p.get<bool>("bank_mode", d.bank.enabled, "", "model open-page banks and row buffers");
        t.bank.banks_per_channel =
            static_cast<uint32_t>(p.get<int64_t>("banks_per_channel", d.bank.banks_per_channel, "banks",
                                                 "banks of one channel (bank_mode)", 1, 1 << 16));
        t.bank.row_bytes = static_cast<uint64_t>(p.get<int64_t>(
            "row_bytes", static_cast<int64_t>(d.bank.row_bytes), "bytes",
            "row-buffer size of one bank (bank_mode); a multiple of the sector", 1, 1ll << 30));
        t.bank.t_rcd_ns =
            p.get<double>("t_rcd_ns", d.bank.t_rcd_ns, "ns", "activate to column command (bank_mode)", 0);
        t.bank.t_rp_ns =
            p.get<double>("t_rp_ns", d.bank.t_rp_ns, "ns", "precharge to activate (bank_mode)", 0);
        t.bank.t_cl_ns =
            p.get<double>("t_cl_ns", d.bank.t_cl_ns, "ns", "column command to first data (bank_mode)", 0);
        params.tensor_alignment_bytes = static_cast<uint64_t>(
            p.get<int64_t>("tensor_alignment_bytes", 0, "bytes",
                           "every tensor starts at a multiple of this (a multiple of interleave_bytes; 0: "
                           "interleave_bytes); 2097152: the 2 MiB boundary PyTorch's caching allocator gives "
                           "a tensor of over 10 MiB, here every tensor's",
                           0, 1ll << 40));
        if (params.tensor_alignment_bytes % t.interleave_bytes != 0)
          p.fail("tensor_alignment_bytes", fmt::format("{} is not a multiple of interleave_bytes ({})",
                                                       params.tensor_alignment_bytes, t.interleave_bytes));
        params.first_tensor_address = static_cast<uint64_t>(
            p.get<int64_t>("first_tensor_address", 0, "bytes",
                           "where the first tensor starts (rounded up to the alignment): memory an earlier "
                           "allocation holds, to see how much a figure moves with the placement",
                           0, 1ll << 50));
        const std::string channels = p.choice(
            "chip_channels", "pooled", {"pooled", "interleaved", "hashed"},
            "whole-chip runs: DRAM bandwidth as one calendar over all channels (pooled), or one per channel, "
            "addresses dealt by interleave_bytes (interleaved, as the single-core timing deals them) or "
            "each pass over the channels hashed (hashed); per channel, requests at different addresses "
            "queue apart");
        params.chip_channels = channels == "pooled"        ? Hbm::Params::ChipChannels::Pooled
                               : channels == "interleaved" ? Hbm::Params::ChipChannels::Interleaved
                                                           : Hbm::Params::ChipChannels::Hashed;
        try {
          return std::make_unique<Hbm>(instance, params, ctx.clock_ghz);
        } catch (const std::invalid_argument& e) {
          // HbmTiming checks the combination (sector divides interleave, clock range, ...).
          p.fail_combination({"clock_ghz"}, e.what());
        }
      });
}

}  // namespace attnsim
